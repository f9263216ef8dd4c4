"""The training loop's patches of PyTorch (trainprof.torch.instrument applies
them): the DataLoader's workers' names (its passes: patches.loader), the
optimizer's step and GradScaler's, the LR schedulers, host-to-device and
device-to-host copies, and backward. See trainprof.torch for what each
region means."""

import functools

import torch

from trainprof import _native
from trainprof.patches import common as _common
from trainprof.patches.common import (
    R_BACKWARD,
    R_FROM,
    R_OPTIM,
    R_SCHED,
    R_TO,
    R_TRAIN,
    ThreadState,
    begin,
    end,
    per_thread,
)
from trainprof.patches.common import is_compiling as _is_compiling
from trainprof.patches.device import (
    DEVICE_PHASES,
    DEVICE_TIMES,
    cuda_device,
    cuda_of,
    device_begin,
    device_end,
    optimizer_device,
)
from trainprof.patches.forward import forward_unseen
from trainprof.runtime import bottleneck as _bottleneck

# ---- host regions ------------------------------------------------------------


def _end_train_batch(local):
    """Ends the train_batch open on this thread (local: its ThreadState)."""
    if local.train_batch:
        local.train_batch = False
        end(R_TRAIN)
        if local.device_times is not None:
            device_end(R_TRAIN, local)


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


def _patch_workers():
    """Names DataLoader worker processes "DL worker N" in the recording, from
    their start (their ring made at once: the stack samples of a worker are
    told apart by it)."""
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
            _native.active()
        return orig(*args, **kwargs)

    worker._worker_loop = _worker_loop


def _patch_optimizer():
    from torch.optim import optimizer as opt

    def begin_step(optimizer, local):
        local.optimizer_step = True
        local.tracker.optimizer_begins()
        if DEVICE_PHASES:
            device_begin(R_OPTIM, optimizer_device(optimizer))
        begin(R_OPTIM)

    def end_step(local):
        if local.optimizer_step:
            local.optimizer_step = False
            end(R_OPTIM)
            if local.device_times is not None:
                device_end(R_OPTIM, local)

    def pre_hook(optimizer, args, kwargs):
        # step(closure): the closure (forward and backward, as Lightning's
        # and LBFGS's steps run them) is left out of optimizer_step, which
        # times what the optimizer does after each call of it
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is None or not callable(closure):
            begin_step(optimizer, per_thread(ThreadState))
            return None

        calls = []  # the closure's calls in this step: LBFGS re-evaluates one batch

        @functools.wraps(closure)
        def timed_closure(*a, **k):
            local = per_thread(ThreadState)
            end_step(local)
            local.closure_again = bool(calls)
            calls.append(None)
            try:
                return closure(*a, **k)
            finally:
                local.closure_again = False
                begin_step(optimizer, local)

        if "closure" in kwargs:
            return args, dict(kwargs, closure=timed_closure)
        return (args[0], timed_closure, *args[2:]), kwargs

    def post_hook(optimizer, args, kwargs):
        local = per_thread(ThreadState)
        if local.optimizer_step:  # end_step(local), inline: once a step
            local.optimizer_step = False
            end(R_OPTIM)
            if local.device_times is not None:
                device_end(R_OPTIM, local)
        local.optimizer_stepped = True
        _training_step_ends(optimizer, local)

    # in C where no closure and no device time per phase is to be seen to
    # (python/trainprof/_step_hooks.c: keep the two in step); these are its twins
    opt.register_optimizer_step_pre_hook(_native.step_hook(pre_hook, "pre"))
    opt.register_optimizer_step_post_hook(_native.step_hook(post_hook, "post"))
    _patch_grad_scaler()


def _call_twin(self, *args, **kwargs):
    """A StepHook's __call__ as Python (and Dynamo) sees it: its twin's."""
    return self.twin(*args, **kwargs)


_native._step_hooks_setup(
    {
        "call": _call_twin,
        "optim": R_OPTIM,
        "optim_id": _native._region_id(R_OPTIM),
        "train": R_TRAIN,
        "train_id": _native._region_id(R_TRAIN),
        "device_phases": DEVICE_PHASES,
    }
)


def _training_step_ends(optimizer, local):
    """optimizer stepped (or would have, had its gradients been finite): the
    train_batch ends, and the tracker has an update (local: this thread's
    ThreadState)."""
    if local.train_batch:
        _end_train_batch(local)
    local.forward_seen = False
    local.tracker.update(optimizer)


def _patch_grad_scaler():
    """GradScaler.step skips optimizer.step() where the gradients hold inf or
    NaN (often in the first float16 steps, while it finds its scale): the
    training step ends all the same."""
    scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if scaler is None:  # torch < 2.3: torch.cuda.amp's only
        scaler = getattr(getattr(torch.cuda, "amp", None), "GradScaler", None)
    if scaler is None:
        return
    orig = scaler.step

    @functools.wraps(orig)
    def step(self, optimizer, *args, **kwargs):
        local = per_thread(ThreadState)
        local.optimizer_stepped = False
        result = orig(self, optimizer, *args, **kwargs)
        if not local.optimizer_stepped:
            _training_step_ends(optimizer, local)
        return result

    step.__trainprof_wrapped__ = orig
    scaler.step = step


def _patch_schedulers():
    from torch.optim import lr_scheduler as ls

    base = getattr(ls, "LRScheduler", None) or ls._LRScheduler
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
                device_begin(R_TO, cuda_device(target))
                begin(R_TO)
                try:
                    return orig_to(self, *args, **kwargs)
                finally:
                    end(R_TO)
                    device_end(R_TO, per_thread(ThreadState))
        return orig_to(self, *args, **kwargs)

    @functools.wraps(orig_cuda)
    def cuda(self, *args, **kwargs):
        if not self.is_cpu:
            return orig_cuda(self, *args, **kwargs)
        if DEVICE_TIMES:  # .cuda() with no device: the current CUDA device
            device_begin(R_TO, cuda_device(_target_device(args, kwargs) or torch.device("cuda")))
        begin(R_TO)
        try:
            return orig_cuda(self, *args, **kwargs)
        finally:
            end(R_TO)
            device_end(R_TO, per_thread(ThreadState))

    if _bottleneck.MODE == "replay":
        to = functools.wraps(orig_to)(_bottleneck.memoized_move(to, "to"))
        cuda = functools.wraps(orig_cuda)(_bottleneck.memoized_move(cuda, "cuda"))
    else:  # a batch's .to(device) on every step: in C where it moves nothing
        to = _native.to_filter(orig_to, to, torch.dtype)
    T.to, T.cuda = to, cuda

    # .item(), .cpu(), .tolist() and .numpy() wait for the device where the
    # tensor is on one, and return at once for a CPU tensor: optimizers call
    # item() on every parameter's CPU step count each step (AdamW: 62 calls a
    # step for a ResNet-18), so the wrapper is C (_timed_method.c: an
    # attribute read and a vectorcall a CPU call; a Python wrapper cost a
    # frame, bench/step_instructions.py, issue 56)
    for name in ("cpu", "tolist", "numpy", "item"):
        setattr(T, name, _native.timed_method(getattr(T, name), R_FROM))


def _patch_backward():
    orig = torch.Tensor.backward

    @functools.wraps(orig)
    def backward(self, *args, **kwargs):
        # traced (compiled autograd; see common.ASK_COMPILING): no discovery, no region
        if _common.ASK_COMPILING and _is_compiling():
            return orig(self, *args, **kwargs)
        local = per_thread(ThreadState)
        if local.traced or _common.COMPILER._is_compiling_flag:
            return orig(self, *args, **kwargs)
        if not local.forward_seen:
            forward_unseen()
        local.tracker.backward()
        if DEVICE_PHASES:
            device_begin(R_BACKWARD, cuda_of(self))
        begin(R_BACKWARD)
        try:
            return orig(self, *args, **kwargs)
        finally:
            end(R_BACKWARD)
            if local.device_times is not None:
                device_end(R_BACKWARD, local)
            local.forward_seen = False

    backward.__trainprof_wrapped__ = orig
    # in C where it can (python/trainprof/_timed_backward.c): this is its twin
    torch.Tensor.backward = _native.timed_backward(
        orig,
        backward,
        {
            "forward_unseen": forward_unseen,
            "region": R_BACKWARD,
            "region_id": _native._region_id(R_BACKWARD),
            "device_phases": DEVICE_PHASES,
        },
    )
