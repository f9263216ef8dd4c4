"""PyTorch auto-instrumentation: the Timings of an unchanged training script.

``instrument()`` patches a few PyTorch entry points so that each emits a
trainprof region (names as in the report):

- ``dataloader_next``: ``next()`` on a DataLoader iterator. The first
  DataLoader iterated is the training loader: each ``next()`` on it marks a
  step boundary and each ``iter()`` of it starts an epoch (unless the script
  calls ``trainprof.step()`` / ``trainprof.epoch()`` itself).
- ``train_batch``: from the first forward after a batch is fetched to the end
  of the optimizer step (or the next fetch), with ``forward`` (the outermost
  module call: each module called outermost gets a timed call of its own, so
  that other module calls keep torch's fast path; see _TimedCall),
  ``backward`` (``Tensor.backward``) and ``optimizer_step`` inside it.
- ``step_lr_schedulers``: ``LRScheduler.step``.
- ``to_device``: ``Tensor.to`` / ``.cuda`` moving a CPU tensor to another device.
- ``from_device``: ``.item()``, ``.cpu()``, ``.tolist()``, ``.numpy()`` of a
  tensor on a GPU (or another accelerator).
- ``reduce_metrics``: ``torch.distributed`` collectives (all_reduce,
  all_gather, broadcast, reduce_scatter, barrier and their variants), and
  DistributedDataParallel's gradient all-reduce: from the moment a bucket's
  communication hook is called to the moment its future completes (the
  default all-reduce hook is registered at the first forward unless the
  script registers its own, which is then timed the same way; set
  TRAINPROF_DDP_HOOK=0 to leave DDP alone). Those spans overlap backward.

These are host times: when the CPU entered and left the region. Where the
work runs on a CUDA device (``to_device`` to a CUDA device; ``train_batch`` of
a model whose parameters are on one) the region gets a device time too: a
CUDA event is recorded on the current stream at its begin and at its end, and
the elapsed time between them is read once the end event has completed, which
this module checks at each step and each timed region, never waiting (no
synchronize is added; at exit the last few are waited for). Regions begun
while a CUDA graph is being captured get none. TRAINPROF_DEVICE_TIMES=all
times ``forward``, ``backward`` and ``optimizer_step`` on the device too (two
more events each per step); TRAINPROF_DEVICE_TIMES=0 turns device times off.

Under ``trainprof record`` this module is applied when torch is imported; call
``instrument()`` to apply it by hand. Nothing is patched otherwise.
"""

import atexit
import collections
import functools
import os
import threading
import weakref

import torch

from . import _bottleneck, _native, _state

_installed = False


class _ThreadState(threading.local):
    """This thread's instrumentation state. The class attributes are the
    defaults, so reading one never raises: a getattr() default on a plain
    threading.local costs an AttributeError, about 0.6 us, and the module
    hooks read this state on every module call."""

    depth = 0  # 1 inside a module's timed call (see _TimedCall)
    calls = 0  # module calls open on this thread, as the global hooks counted them
    generation = 0  # the hooks' registration these counts belong to
    hook_forward = False  # the global hooks opened the forward being timed
    train_batch = False  # a train_batch region is open
    batch_model = 0  # id() of the module whose forward opened it
    device_times = None  # _DeviceTimes, made on first use
    in_comm_hook = False  # inside a timed DDP communication hook


_local = _ThreadState()
_main_loader = None  # the training DataLoader (the first one iterated)
# No DataLoader before the first optimizer step (batches from a custom
# iterator, as nanoGPT's get_batch): from then on each step of that optimizer
# (held weakly: a new one takes over once it is gone; a second one stepping
# in the same iteration, as a GAN's, marks nothing) ends a training step (the
# first one, before it, is left out as warm-up), and no DataLoader marks
# steps or epochs.
_step_optimizer = None
_epochs = 0

R_NEXT = _native.region("dataloader_next")
R_TRAIN = _native.region("train_batch")
R_FORWARD = _native.region("forward")
R_BACKWARD = _native.region("backward")
R_OPTIM = _native.region("optimizer_step")
R_SCHED = _native.region("step_lr_schedulers")
R_TO = _native.region("to_device")
R_FROM = _native.region("from_device")
R_REDUCE = _native.region("reduce_metrics")
begin, end = _native.begin, _native.end

_COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "broadcast", "reduce",
                "reduce_scatter", "reduce_scatter_tensor", "barrier", "gather", "scatter",
                "all_to_all", "all_to_all_single", "all_gather_object", "broadcast_object_list")


# ---- device times ------------------------------------------------------------

_DEVICE_TIMES = os.environ.get("TRAINPROF_DEVICE_TIMES", "1") != "0"
_DEVICE_PHASES = _DEVICE_TIMES and os.environ.get("TRAINPROF_DEVICE_TIMES") == "all"
_PENDING_MAX = 1024  # device times awaiting their end event, per thread
_captures = 0  # CUDA graph captures under way in this process (CUDAGraph.capture_begin/end)


class _DeviceTimes:
    """One thread's CUDA-event device times: the regions open on the device,
    and those closed whose end event the device has not reached yet (oldest
    first; one stream's events complete in order). Events are reused."""

    __slots__ = ("open", "pending", "free", "pid", "skipped")

    def __init__(self):
        self.open = {}  # region -> (host start ns, start event, stream)
        self.pending = collections.deque()  # (region, host start ns, start event, end event)
        self.free = {}  # device index -> events to reuse
        self.pid = os.getpid()
        self.skipped = 0  # regions left without a device time (capture, backlog)

    def _event(self, index):
        pool = self.free.get(index)
        return pool.pop() if pool else torch.cuda.Event(enable_timing=True)

    def begin(self, region, device):
        """Records region's start event on device's current stream."""
        if _captures:  # no CUDA event call at all: querying one breaks the capture
            self.skipped += 1
            return
        if self.pending:
            self.poll()
        if len(self.pending) >= _PENDING_MAX:
            self.skipped += 1
            return
        stream = torch.cuda.current_stream(device)
        start = self._event(stream.device_index)
        start.record(stream)
        self.open[region] = (_native.now_ns(), start, stream)

    def end(self, region):
        """Records region's end event; its device time is read later."""
        entry = self.open.pop(region, None)
        if entry is None:
            return
        host_ns, start, stream = entry
        if _captures:
            self.skipped += 1
            self.free.setdefault(stream.device_index, []).append(start)
            return
        stop = self._event(stream.device_index)
        stop.record(stream)
        self.pending.append((region, host_ns, start, stop, stream.device_index))

    def poll(self, wait=False):
        """Sends the device times whose end event completed, oldest first;
        wait: waits for every end event (only once the training is over)."""
        pending = self.pending
        while pending:
            region, host_ns, start, stop, index = pending[0]
            if wait:
                stop.synchronize()
            elif not stop.query():
                return
            pending.popleft()
            try:
                elapsed_ms = start.elapsed_time(stop)
            except RuntimeError:  # recorded into a capture we did not see: no time, no reuse
                self.skipped += 1
                continue
            _native.device_time(region, host_ns, max(0, round(elapsed_ms * 1e6)))
            self.free.setdefault(index, []).extend((start, stop))


def _device_times():
    """This thread's device times, made on first use; None when turned off."""
    if not _DEVICE_TIMES:
        return None
    dt = _local.device_times
    if dt is None or dt.pid != os.getpid():  # a forked child starts afresh
        dt = _local.device_times = _DeviceTimes()
    return dt


def _cuda(device):
    """device when it is a CUDA device (a torch.device), else None."""
    return device if device is not None and device.type == "cuda" and _DEVICE_TIMES else None


def _cuda_of(tensor):
    """tensor's device when it is a CUDA device and device times are on, else
    None (is_cuda first: reading .device makes a torch.device, ~0.4 us)."""
    return tensor.device if _DEVICE_TIMES and tensor.is_cuda else None


def _device_begin(region, device):
    if device is not None:
        _device_times().begin(region, device)


def _device_end(region):
    dt = _local.device_times
    if dt is not None and dt.open:
        dt.end(region)


def _device_poll():
    dt = _local.device_times
    if dt is not None and dt.pending and not _captures:
        dt.poll()


def _flush_device_times():
    """At exit: waits for this thread's last end events and sends their times."""
    dt = _local.device_times
    if dt is None or dt.pid != os.getpid():
        return
    try:
        dt.poll(wait=True)
    except Exception:  # noqa: BLE001 - CUDA already torn down: those few are lost
        pass


def _patch_graph_capture():
    """Counts CUDA graph captures, so that no event is recorded into one (a
    Python flag: asking CUDA whether the stream captures costs a driver call
    per region)."""
    graph = getattr(torch.cuda, "CUDAGraph", None)
    if graph is None or not _DEVICE_TIMES:
        return
    begin_capture, end_capture = graph.capture_begin, graph.capture_end

    @functools.wraps(begin_capture)
    def capture_begin(self, *args, **kwargs):
        global _captures
        _captures += 1
        try:
            return begin_capture(self, *args, **kwargs)
        except BaseException:
            _captures -= 1
            raise

    @functools.wraps(end_capture)
    def capture_end(self, *args, **kwargs):
        global _captures
        try:
            return end_capture(self, *args, **kwargs)
        finally:
            _captures = max(0, _captures - 1)

    graph.capture_begin, graph.capture_end = capture_begin, capture_end


_first_params = {}  # id(module) -> (weakref to it, weakref to its first parameter or None)


def _module_device(module):
    """The CUDA device of a module's first parameter, else None. The
    parameter is remembered (weakly), and so is having none: finding it walks
    the module tree, ~5 us for a small model or a loss module, at every
    step. A module moved with .to() keeps its parameter objects, so the
    remembered one follows it."""
    entry = _first_params.get(id(module))
    if entry is not None and entry[0]() is module:
        if entry[1] is None:
            return None
        p = entry[1]()
        if p is not None:
            return _cuda_of(p)
    p = next(module.parameters(), None)
    if len(_first_params) >= 1024:
        _first_params.clear()
    _first_params[id(module)] = (weakref.ref(module), None if p is None else weakref.ref(p))
    return None if p is None else _cuda_of(p)


def _optimizer_device(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            return _cuda_of(p)
    return None


# ---- host regions ------------------------------------------------------------

def _end_train_batch():
    if _local.train_batch:
        _local.train_batch = False
        end(R_TRAIN)
        _device_end(R_TRAIN)


def _timed(region, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        begin(region)
        try:
            return fn(*args, **kwargs)
        finally:
            end(region)

    wrapper.__trainprof_wrapped__ = fn
    return wrapper


def _batch_size(batch, depth=0):
    """Samples in a batch: the first dimension of its first tensor, if any."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.ndim else 0
    if depth == 0 and type(batch) in (tuple, list) and batch:  # (inputs, labels): no recursion
        first = batch[0]
        if isinstance(first, torch.Tensor) and first.ndim:
            return first.shape[0]
    if depth < 3:
        if isinstance(batch, (list, tuple)):
            for item in batch:
                n = _batch_size(item, depth + 1)
                if n:
                    return n
        elif isinstance(batch, dict):
            for item in batch.values():
                n = _batch_size(item, depth + 1)
                if n:
                    return n
    return 0


def _count_samples(batch):
    n = _batch_size(batch)
    if n:
        _native.samples(n)


def _patch_dataloader():
    from torch.utils.data import dataloader as dl

    orig_iter = dl.DataLoader.__iter__
    orig_next = dl._BaseDataLoaderIter.__next__

    @functools.wraps(orig_iter)
    def __iter__(self):
        global _main_loader, _epochs
        if _main_loader is None and _step_optimizer is None:
            _main_loader = self
        it = orig_iter(self)
        # a new loop may call a module not seen yet: look for as long as at
        # the start for a new DataLoader, briefly for another pass of one
        first = self not in _seen_loaders
        if first:
            _seen_loaders.add(self)
        _discovery_start(_QUIET if first else _QUIET_AGAIN)
        main = self is _main_loader
        it._trainprof_main = main
        if main and not _state.manual_epochs:
            _native.epoch(_epochs)
            _epochs += 1
        return it

    @functools.wraps(orig_next)
    def __next__(self):
        main = getattr(self, "_trainprof_main", False)
        if main:
            _end_train_batch()
            _device_poll()
            if not _state.manual_steps:
                _native.step()
        if main and _bottleneck.active():
            batch = _bottleneck.on_fetch(lambda: _fetch(self), _native.step, _count_samples)
        else:
            batch = _fetch(self)
        if main and not _state.manual_steps:
            _count_samples(batch)
        return batch

    def _fetch(it):
        begin(R_NEXT)
        try:
            return orig_next(it)
        finally:
            end(R_NEXT)

    dl.DataLoader.__iter__ = __iter__
    dl._BaseDataLoaderIter.__next__ = __next__


def _patch_workers():
    """Names DataLoader worker processes "DL worker N" in the recording."""
    import inspect

    from torch.utils.data._utils import worker

    orig = worker._worker_loop
    try:
        params = list(inspect.signature(orig).parameters)
        position = params.index("worker_id")
    except (TypeError, ValueError):
        return

    @functools.wraps(orig)
    def _worker_loop(*args, **kwargs):
        wid = kwargs.get("worker_id", args[position] if len(args) > position else None)
        if wid is not None:
            _native.set_thread_name(f"DL worker {wid}")
        return orig(*args, **kwargs)

    worker._worker_loop = _worker_loop


# ---- forward: the outermost module call ----------------------------------------
#
# Global module hooks could time it, but while any global hook exists every
# module call takes torch's slow path: ~6 us more per call on a 2-core VM,
# 200 us a step for a model of 34 modules. So global hooks only find the
# modules called outermost, and time those calls while they look; each module
# found gets a timed call of its own, set as its _compiled_call_impl (the slot
# of Module.compile(), which Module.__call__ calls instead of _call_impl, and
# which pickling and deepcopy leave out). Once _QUIET outermost calls in a row
# found no new module, the global hooks go; the first iter() of every
# DataLoader and every torch.compile() bring them back for as long (an
# evaluation loop's model, a second network, the compiled wrapper), and each
# later iter() of a DataLoader for _QUIET_AGAIN calls (a model that joins
# later). Every step taken while looking takes torch's slow path: with 64
# batches an epoch and 32 calls of looking each (bench/step_cost.py, 34
# modules), the mean step cost 126 us more than plain; with 4, 76 us.

_QUIET = 32
_QUIET_AGAIN = 4
_seen_loaders = weakref.WeakSet()  # DataLoaders iterated at least once
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


class _Discovery:
    """The global hooks' state (one per process; changed under the GIL)."""

    handles = None  # the global hooks' handles while they are registered
    quiet = 0  # outermost calls since a module was last found
    limit = _QUIET  # the hooks go once quiet reaches it
    generation = 0  # bumped at each registration: a thread's stale count is reset


def _forward_begin(module, args, kwargs=None):
    """An outermost module call begins: forward, and train_batch with the
    first such call in training mode. Where optimizer steps end the steps (no
    DataLoader), the samples of a step are the batches its model's calls took
    (each micro-batch of gradient accumulation; not the loss module's)."""
    local = _local
    if _bottleneck.wants_model_facts:
        _bottleneck.note_model(module)
    device = _module_device(module) if _DEVICE_TIMES else None
    if module.training and not local.train_batch:
        local.train_batch = True
        local.batch_model = id(module)
        begin(R_TRAIN)
        _device_begin(R_TRAIN, device)
    if _step_optimizer is not None and local.batch_model == id(module) and module.training:
        if not _state.manual_steps:
            _count_samples(args or tuple((kwargs or {}).values()))
    begin(R_FORWARD)
    if _DEVICE_PHASES:
        _device_begin(R_FORWARD, device)


def _forward_end():
    end(R_FORWARD)
    _device_end(R_FORWARD)


class _TimedCall:
    """A module's own timed call: times the module's outermost calls as
    forward, and calls what Module.__call__ would have (its _call_impl, or
    the compiled call Module.compile() had set). Holds the module weakly (no
    cycle keeps a deleted model's memory), and pickles as None, so that a
    module saved whole never needs trainprof to load."""

    __slots__ = ("module", "inner", "__weakref__")

    def __init__(self, module, inner):
        self.module = weakref.ref(module)
        self.inner = inner

    def __call__(self, *args, **kwargs):
        call = self.inner or self.module()._call_impl
        local = _local
        if local.depth or _is_compiling():  # nested, or traced by torch.compile
            return call(*args, **kwargs)
        local.depth = 1
        if _Discovery.handles is not None:
            _Discovery.quiet += 1
            if _Discovery.quiet >= _Discovery.limit:
                _discovery_stop()
        try:
            _forward_begin(self.module(), args, kwargs)
            return call(*args, **kwargs)
        finally:
            local.depth = 0
            _forward_end()

    def __reduce__(self):
        return type(None), ()


def _give_timed_call(module):
    """Makes module's calls go through a _TimedCall; False where that can't
    be done (a torch without Module._compiled_call_impl)."""
    if not hasattr(type(module), "_compiled_call_impl"):
        return False
    inner = module.__dict__.get("_compiled_call_impl")
    if not isinstance(inner, _TimedCall):
        module.__dict__["_compiled_call_impl"] = _TimedCall(module, inner)
    return True


def _discovery_pre_hook(module, args):
    if _is_compiling():  # traced by torch.compile: a constant False, no graph break
        return
    local = _local
    if local.generation != _Discovery.generation:
        local.generation, local.calls, local.hook_forward = _Discovery.generation, 0, False
    calls = local.calls
    local.calls = calls + 1
    if calls == 0 and not local.depth:  # outermost, and no timed call of its own yet
        if _give_timed_call(module):
            _Discovery.quiet = 0
        local.hook_forward = True
        _forward_begin(module, args)


def _discovery_post_hook(module, args, output):
    if _is_compiling():
        return
    local = _local
    if local.generation != _Discovery.generation:
        return
    calls = local.calls - 1
    local.calls = calls if calls > 0 else 0
    if calls <= 0 and local.hook_forward:
        local.hook_forward = False
        _forward_end()


def _discovery_start(limit=_QUIET):
    """Registers the global hooks (at instrument(), torch.compile() and each
    DataLoader iter()), until limit outermost calls in a row find nothing
    new (a longer limit than the running one's extends it)."""
    if _Discovery.handles is not None:
        _Discovery.limit = max(_Discovery.limit, limit)
        return
    from torch.nn.modules import module as mm

    _Discovery.generation += 1
    _Discovery.quiet = 0
    _Discovery.limit = limit
    pre = mm.register_module_forward_pre_hook(_discovery_pre_hook)
    try:
        post = mm.register_module_forward_hook(_discovery_post_hook, always_call=True)
    except TypeError:  # torch < 2.1: no always_call
        post = mm.register_module_forward_hook(_discovery_post_hook)
    _Discovery.handles = (pre, post)


def _discovery_stop():
    """Removes the global hooks (only ever called from a _TimedCall: on a
    torch without timed calls the hooks stay and do all the timing)."""
    handles, _Discovery.handles = _Discovery.handles, None
    for handle in handles or ():
        handle.remove()


def _patch_compile():
    """torch.compile(module) leaves the module's own timed call out of what
    it traces (torch 2.11's dynamo compiled no graph through one), and looks
    for outermost modules again: the compiled wrapper is one."""
    compile_fn = getattr(torch, "compile", None)
    if compile_fn is None:
        return

    @functools.wraps(compile_fn)
    def compile(model=None, *args, **kwargs):
        if isinstance(model, torch.nn.Module):
            timed = model.__dict__.get("_compiled_call_impl")
            if isinstance(timed, _TimedCall):
                model.__dict__["_compiled_call_impl"] = timed.inner
            _discovery_start()
        return compile_fn(model, *args, **kwargs)

    compile.__trainprof_wrapped__ = compile_fn
    torch.compile = compile


def _patch_modules():
    import warnings

    # torch.compile's module warns that global hooks fire twice, for it and the
    # module it wraps; the depth counts above see to that, so the warning is ours
    # and not the user's to act on
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are "
                            "global hooks")
    _discovery_start()
    _patch_compile()


def _patch_optimizer():
    from torch.optim import optimizer as opt

    def pre_hook(optimizer, args, kwargs):
        begin(R_OPTIM)
        if _DEVICE_PHASES:
            _device_begin(R_OPTIM, _optimizer_device(optimizer))

    def post_hook(optimizer, args, kwargs):
        global _step_optimizer
        end(R_OPTIM)
        _device_end(R_OPTIM)
        _end_train_batch()
        if _main_loader is None and not _state.manual_steps:
            owner = _step_optimizer() if _step_optimizer is not None else None
            if owner is None:
                _step_optimizer, owner = weakref.ref(optimizer), optimizer
            if owner is optimizer:
                _native.step()

    opt.register_optimizer_step_pre_hook(pre_hook)
    opt.register_optimizer_step_post_hook(post_hook)


def _patch_schedulers():
    from torch.optim import lr_scheduler as ls

    base = getattr(ls, "LRScheduler", None) or getattr(ls, "_LRScheduler")
    base.step = _timed(R_SCHED, base.step)
    plateau = getattr(ls, "ReduceLROnPlateau", None)
    if plateau is not None and not issubclass(plateau, base):
        plateau.step = _timed(R_SCHED, plateau.step)


_named_devices = {}  # "cuda:0" -> torch.device (parsing a name costs ~1 us)


def _target_device(args, kwargs):
    """The device Tensor.to(*args, **kwargs) names, or None (a dtype only)."""
    target = kwargs.get("device", args[0] if args else None)
    if isinstance(target, torch.Tensor):
        return target.device
    if isinstance(target, torch.device):
        return target
    if isinstance(target, str):
        device = _named_devices.get(target)
        if device is None:
            device = torch.device(target)
            if len(_named_devices) < 64:
                _named_devices[target] = device
        return device
    if isinstance(target, int) and not isinstance(target, bool):  # a CUDA ordinal
        return torch.device("cuda", target)
    return None


def _patch_transfers():
    T = torch.Tensor
    orig_to, orig_cuda = T.to, T.cuda

    @functools.wraps(orig_to)
    def to(self, *args, **kwargs):
        if self.is_cpu:
            target = _target_device(args, kwargs)
            if target is not None and target.type != "cpu":
                begin(R_TO)
                _device_begin(R_TO, _cuda(target))
                try:
                    return orig_to(self, *args, **kwargs)
                finally:
                    end(R_TO)
                    _device_end(R_TO)
        return orig_to(self, *args, **kwargs)

    @functools.wraps(orig_cuda)
    def cuda(self, *args, **kwargs):
        if not self.is_cpu:
            return orig_cuda(self, *args, **kwargs)
        begin(R_TO)
        if _DEVICE_TIMES:  # .cuda() with no device: the current CUDA device
            _device_begin(R_TO, _cuda(_target_device(args, kwargs) or torch.device("cuda")))
        try:
            return orig_cuda(self, *args, **kwargs)
        finally:
            end(R_TO)
            _device_end(R_TO)

    if _bottleneck.MODE == "replay":
        to = functools.wraps(orig_to)(_bottleneck.memoized_move(to, "to"))
        cuda = functools.wraps(orig_cuda)(_bottleneck.memoized_move(cuda, "cuda"))
    T.to, T.cuda = to, cuda

    def from_device(name):
        orig = getattr(T, name)

        @functools.wraps(orig)
        def wrapper(self, *args, **kwargs):
            if self.is_cpu or self.is_meta:
                return orig(self, *args, **kwargs)
            begin(R_FROM)
            try:
                return orig(self, *args, **kwargs)
            finally:
                end(R_FROM)

        setattr(T, name, wrapper)

    for name in ("item", "cpu", "tolist", "numpy"):
        from_device(name)


def _patch_backward():
    orig = torch.Tensor.backward

    @functools.wraps(orig)
    def backward(self, *args, **kwargs):
        begin(R_BACKWARD)
        if _DEVICE_PHASES:
            _device_begin(R_BACKWARD, _cuda_of(self))
        try:
            return orig(self, *args, **kwargs)
        finally:
            end(R_BACKWARD)
            _device_end(R_BACKWARD)

    backward.__trainprof_wrapped__ = orig
    torch.Tensor.backward = backward


def _collective(fn):
    """A collective timed as reduce_metrics, unless a timed DDP communication
    hook issues it (the hook's own span covers it, launch to completion)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _local.in_comm_hook:
            return fn(*args, **kwargs)
        begin(R_REDUCE)
        try:
            return fn(*args, **kwargs)
        finally:
            end(R_REDUCE)

    wrapper.__trainprof_wrapped__ = fn
    return wrapper


def _timed_comm_hook(hook):
    """A DDP communication hook that records reduce_metrics from its call to
    the completion of the future it returns (on the thread completing it)."""

    def timed_hook(state, bucket):
        start = _native.now_ns()
        _local.in_comm_hook = True
        try:
            fut = hook(state, bucket)
        finally:
            _local.in_comm_hook = False

        def done(f):
            _native.span(R_REDUCE, start, _native.now_ns())
            return f.value()

        return fut.then(done)

    timed_hook.__trainprof_wrapped__ = hook
    functools.update_wrapper(timed_hook, hook, updated=())
    return timed_hook


def _patch_ddp():
    import os

    if os.environ.get("TRAINPROF_DDP_HOOK", "1") == "0":
        return
    try:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError:
        return
    register, forward = DDP.register_comm_hook, DDP.forward
    register_builtin = DDP._register_builtin_comm_hook

    @functools.wraps(register)
    def register_comm_hook(self, state, hook):
        self.__dict__["_trainprof_hook"] = True
        return register(self, state, _timed_comm_hook(hook))

    @functools.wraps(register_builtin)
    def register_builtin_comm_hook(self, comm_hook_type):
        self.__dict__["_trainprof_hook"] = True  # C++ hooks can't be timed
        return register_builtin(self, comm_hook_type)

    @functools.wraps(forward)
    def ddp_forward(self, *args, **kwargs):
        if not self.__dict__.get("_trainprof_hook"):
            self.__dict__["_trainprof_hook"] = True
            try:
                register(self, self.process_group, _timed_comm_hook(default_hooks.allreduce_hook))
            except Exception:  # noqa: BLE001 - an unusual DDP set-up: stay out of its way
                pass
        return forward(self, *args, **kwargs)

    DDP.register_comm_hook = register_comm_hook
    DDP._register_builtin_comm_hook = register_builtin_comm_hook
    DDP.forward = ddp_forward


def _patch_distributed():
    import torch.distributed as dist

    if not dist.is_available():
        return
    for name in _COLLECTIVES:
        fn = getattr(dist, name, None)
        if fn is not None and not hasattr(fn, "__trainprof_wrapped__"):
            setattr(dist, name, _collective(fn))
    _patch_ddp()


def instrument():
    """Applies the auto-instrumentation once; returns False if it already was."""
    global _installed
    if _installed:
        return False
    _installed = True
    for patch in (_patch_dataloader, _patch_workers, _patch_modules, _patch_backward, _patch_optimizer,
                  _patch_schedulers, _patch_transfers, _patch_distributed, _patch_graph_capture):
        patch()
    if _DEVICE_TIMES:
        atexit.register(_flush_device_times)
    return True
