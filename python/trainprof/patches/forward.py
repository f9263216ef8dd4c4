"""forward: the outermost module call, and the train_batch it opens.

A loss module's outermost call (an instance of torch.nn.modules.loss._Loss,
CrossEntropyLoss and the like, called by the loop on the model's output) is
timed as loss, not forward: a step's forward count is then its model's
calls, and forward's distribution is the model's alone; so is a module of
the script's own class named as a loss that holds no parameter (see
region_of). A loss computed inside the model's forward (Hugging Face's
models) or by a function (F.cross_entropy) is forward's, or train_batch's,
as it runs.

Global module hooks could time it, but while any global hook exists every
module call takes torch's slow path: ~6 us more per call on a 2-core VM,
200 us a step for a model of 34 modules. So global hooks only find the
modules called outermost, and time those calls while they look; each module
found gets a timed call of its own, set as its _compiled_call_impl (the slot
of Module.compile(), which Module.__call__ calls instead of _call_impl, and
which pickling and deepcopy leave out). Once QUIET outermost calls in a row
found no new module, the global hooks go; the first iter() of every
DataLoader and every torch.compile() bring them back for as long (an
evaluation loop's model, a second network, the compiled wrapper), and the
DataLoader's passes 2, 3, 5, 9, 17... (not every one: each look costs its
steps the slow path), and a backward with no outermost call timed
with gradients on since the step or the last backward began (a model first
called after the hooks had gone), for QUIET_AGAIN calls. Every step taken while
looking takes torch's slow path: with 64 batches an epoch and 32 calls of
looking each (bench/step_cost.py, 34 modules), the mean step cost 126 us
more than plain; with 4, 76 us.

Dynamo guards on the number of global hooks: compiled code that ran once
with the hooks and once without would be compiled twice. So compiled code
never sees them: the module torch.compile() returns gets its timed call at
once, the function it returns a wrapper, and both take the hooks out of
torch's dicts for the call's duration (compiled code has no outermost call
to find inside it). Another thread's module call that began while they were
in and ends while they are out keeps its forward open: threads that call
modules while a compiled call runs on another, during discovery, are not
timed right.
"""

import functools
import weakref

import torch

from trainprof import _native
from trainprof.patches import common as _common
from trainprof.patches.common import (
    R_FORWARD,
    R_LOSS,
    R_TRAIN,
    SampleDim,
    ThreadState,
    begin,
    count_samples,
    end,
    flush_samples,
    per_thread,
    seen_module_input,
)
from trainprof.patches.common import is_compiling as _is_compiling
from trainprof.patches.device import (
    DEVICE_PHASES,
    DEVICE_TIMES,
    device_begin,
    device_end,
    module_device,
)
from trainprof.steps import facts as _facts

QUIET = 32
QUIET_AGAIN = 4
_grad_enabled = torch.is_grad_enabled
_Loss = torch.nn.modules.loss._Loss
_LOSS_CLASS_ENDINGS = ("Loss", "Criterion")


def region_of(module):
    """The region a module's outermost calls are timed as: loss for a loss
    module, forward for any other. A loss module is torch.nn's, or one of the
    script's own classes named as a loss (FocalLoss, SetCriterion: most
    custom losses are plain nn.Modules) that holds no parameter (a model
    that computes its loss inside, a ModelWithLoss, holds the model's)."""
    if isinstance(module, _Loss):
        return R_LOSS
    if type(module).__name__.endswith(_LOSS_CLASS_ENDINGS):
        if next(module.parameters(), None) is None:
            return R_LOSS
    return R_FORWARD


class Discovery:
    """The global hooks' state (one per process; changed under the GIL)."""

    handles = None  # the global hooks' handles while they are registered
    quiet = 0  # outermost calls since a module was last found
    limit = QUIET  # the hooks go once quiet reaches it
    generation = 0  # bumped at each registration: a thread's stale count is reset


def forward_begin(local, module, region, args, kwargs=None):
    """An outermost module call begins (local: this thread's ThreadState):
    region (forward, or loss: region_of(module)), and train_batch with the
    first such call in training mode with gradients on. Where optimizer
    steps end the steps (no DataLoader), the samples of a step are the
    batches its model's training calls took (each micro-batch of gradient
    accumulation; not the loss module's, and none under no_grad)."""
    grad = _grad_enabled()
    training = grad and module.training
    tracker = local.tracker
    if grad:
        local.forward_seen = True
        counted_here = tracker.forward(training)
    else:  # an evaluation's call (no_grad, inference_mode): no training work
        counted_here = False
        tracker.module_call()
    if training:
        if _facts.wants_model:
            _facts.note_model(module)
        if not local.train_batch:
            local.train_batch = True
            local.batch_model = id(module)
            device = module_device(module) if DEVICE_TIMES else None
            if device is not None:
                device_begin(R_TRAIN, device)
            begin(R_TRAIN)
        # the samples are the model's batches where no DataLoader marks the
        # steps; a closure's batch counts once
        if counted_here and local.batch_model == id(module) and not local.closure_again:
            count_samples(args or tuple((kwargs or {}).values()))
    if DEVICE_PHASES:
        device = module_device(module)
        if device is not None:
            device_begin(region, device)
    begin(region)


def forward_end(local, region):
    end(region)
    if local.device_times is not None:
        device_end(region, local)
    if local.pending is not None:  # a batch waited to know its samples' dimension
        flush_samples()


def timed_call(self, *args, **kwargs):
    """A module's own timed call (a TimedCall, self): times the module's
    outermost calls as forward (or loss: region_of), and calls what
    Module.__call__ would have (its _call_impl, or the compiled call
    Module.compile() had set). TimedCall is C (python/trainprof/_timed_call.c),
    which takes the steady state itself (forward_begin's, without device
    times per phase, once the global hooks are gone: keep the two in step)
    and this, its Python twin, for everything else; Dynamo sees this as its
    __call__ and inlines it. It holds the module weakly (no cycle keeps a
    deleted model's memory), and pickles as None, so that a module saved
    whole never needs trainprof to load."""
    module = self.module()
    call = self.inner or module._call_impl
    if _common.ASK_COMPILING and _is_compiling():  # traced (see common.ASK_COMPILING)
        return call(*args, **kwargs)
    local = per_thread(ThreadState)
    # nested, or traced by torch.compile, or by torch.export's tracing
    if local.depth or local.traced or _common.COMPILER._is_compiling_flag:
        return call(*args, **kwargs)
    local.depth = 1
    if Discovery.handles is not None:
        Discovery.quiet += 1
        if Discovery.quiet >= Discovery.limit:
            discovery_stop()
    region = self.region
    try:
        forward_begin(local, module, region, args, kwargs)
        if Discovery.handles is not None and self.compiled:
            return call_without_hooks(call, args, kwargs)
        return call(*args, **kwargs)
    finally:
        local.depth = 0
        end(region)  # forward_end(local, region), inline: twice a step
        if local.device_times is not None:
            device_end(region, local)
        if local.pending is not None:
            flush_samples()


_native._timed_call_setup(
    {
        "call": timed_call,
        "grad_enabled": _grad_enabled,
        "facts": _facts,
        "count_samples": count_samples,
        "flush_samples": flush_samples,
        "device_begin": device_begin,
        "train": R_TRAIN,
        "train_id": _native._region_id(R_TRAIN),
        "device_times": DEVICE_TIMES,
    }
)
TimedCall = _native.TimedCall


def _fast_path():
    """The C path of timed calls is taken while the global hooks are gone and
    no phase has device times (and torch's compiling flag can be relied on:
    common.ASK_COMPILING, which the C reads itself)."""
    _native._timed_call_fast(Discovery.handles is None and not DEVICE_PHASES)


def give_timed_call(module, compiled=False):
    """Makes module's calls go through a TimedCall; False where that can't
    be done (a torch without Module._compiled_call_impl)."""
    if not hasattr(type(module), "_compiled_call_impl"):
        return False
    inner = module.__dict__.get("_compiled_call_impl")
    if not isinstance(inner, TimedCall):
        module.__dict__["_compiled_call_impl"] = _native.timed_call(
            weakref.ref(module), inner, compiled, region_of(module)
        )
    return True


def call_without_hooks(call, args, kwargs):
    """call(*args, **kwargs) with the discovery hooks out of torch's global
    hook dicts (Dynamo guards on their length), put back after."""
    taken = []
    for handle in Discovery.handles:
        for ref in (handle.hooks_dict_ref, getattr(handle, "extra_dict_ref", ())):
            for r in ref if isinstance(ref, tuple) else (ref,):
                hooks = r()
                if hooks is not None and handle.id in hooks:
                    taken.append((hooks, handle.id, hooks.pop(handle.id)))
    try:
        return call(*args, **kwargs)
    finally:
        for hooks, key, value in taken:
            hooks[key] = value


def without_hooks(compiled_fn):
    """A function torch.compile() returned, called without the discovery
    hooks while they look (see call_without_hooks); as is otherwise."""

    @functools.wraps(compiled_fn)
    def call(*args, **kwargs):
        if Discovery.handles is None:
            return compiled_fn(*args, **kwargs)
        return call_without_hooks(compiled_fn, args, kwargs)

    call.__trainprof_wrapped__ = compiled_fn
    return call


def discovery_pre_hook(module, args):
    if _is_compiling():  # traced by torch.compile: a constant False, no graph break
        return
    local = per_thread(ThreadState)
    if local.generation != Discovery.generation:
        local.generation, local.calls, local.hook_region = Discovery.generation, 0, None
    calls = local.calls
    local.calls = calls + 1
    if local.pending is not None and (calls or local.depth):  # an inner call: what it reads
        seen_module_input(module, args)
    if calls == 0 and not local.depth:  # outermost, and no timed call of its own yet
        if give_timed_call(module):
            Discovery.quiet = 0
        local.hook_region = region = region_of(module)
        forward_begin(local, module, region, args)


def discovery_post_hook(module, args, output):
    if _is_compiling():
        return
    local = per_thread(ThreadState)
    if local.generation != Discovery.generation:
        return
    calls = local.calls - 1
    local.calls = calls if calls > 0 else 0
    region = local.hook_region
    if calls <= 0 and region is not None:
        local.hook_region = None
        forward_end(local, region)


def discovery_start(limit=QUIET):
    """Registers the global hooks (at instrument(), torch.compile() and each
    DataLoader iter()), until limit outermost calls in a row find nothing
    new (a longer limit than the running one's extends it)."""
    if Discovery.handles is not None:
        Discovery.limit = max(Discovery.limit, limit)
        return
    from torch.nn.modules import module as mm

    Discovery.generation += 1
    SampleDim.looking = True
    Discovery.quiet = 0
    Discovery.limit = limit
    pre = mm.register_module_forward_pre_hook(discovery_pre_hook)
    try:
        post = mm.register_module_forward_hook(discovery_post_hook, always_call=True)
    except TypeError:  # torch < 2.1: no always_call
        post = mm.register_module_forward_hook(discovery_post_hook)
    Discovery.handles = (pre, post)
    _fast_path()


def forward_unseen():
    """A backward began with no outermost module call timed with gradients on
    since the step or the last backward: the module that made the loss has
    no timed call (it was first called once the global hooks had gone). The
    hooks look again for QUIET_AGAIN calls, so that the next forward is
    found."""
    discovery_start(QUIET_AGAIN)


def discovery_stop():
    """Removes the global hooks (only ever called from a TimedCall: on a
    torch without timed calls the hooks stay and do all the timing)."""
    handles, Discovery.handles = Discovery.handles, None
    SampleDim.looking = False
    for handle in handles or ():
        handle.remove()
    _fast_path()


def patch_compile():
    """torch.compile(module) leaves the module's own timed call out of what
    it traces (torch 2.11's dynamo compiled no graph through one) and gives
    the compiled wrapper one of its own; compiled calls never see the
    discovery hooks (see the module's doc). torch.compile(fn) (Module.compile()
    among its callers) returns fn compiled, in a wrapper that sees to that."""
    compile_fn = getattr(torch, "compile", None)
    if compile_fn is None:
        return

    @functools.wraps(compile_fn)
    def compile(model=None, *args, **kwargs):
        if model is None:  # @torch.compile(mode=...): the decorator calls this again
            return compile_fn(model, *args, **kwargs)
        if isinstance(model, torch.nn.Module):
            timed = model.__dict__.get("_compiled_call_impl")
            if isinstance(timed, TimedCall):
                model.__dict__["_compiled_call_impl"] = timed.inner
            compiled = compile_fn(model, *args, **kwargs)
            if isinstance(compiled, torch.nn.Module):
                give_timed_call(compiled, compiled=True)
            return compiled
        compiled = compile_fn(model, *args, **kwargs)
        return without_hooks(compiled) if callable(compiled) else compiled

    compile.__trainprof_wrapped__ = compile_fn
    torch.compile = compile


def patch_modules():
    import warnings

    # torch.compile's module warns that global hooks fire twice, for it and the
    # module it wraps; the depth counts above see to that, so the warning is ours
    # and not the user's to act on
    warnings.filterwarnings(
        "ignore",
        message=r"Using `torch.compile\(module\)` when there are "
        "global hooks",
    )
    discovery_start()
    patch_compile()
