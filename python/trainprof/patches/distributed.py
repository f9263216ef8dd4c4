"""torch.distributed's communication, timed as reduce_metrics (collectives
and point to point, work left under way timed to its completion, DDP's
gradient all-reduce through its communication hook), and each process's
rank told to the recorder (from its process group, and its index in an
mp.spawn). Applied by trainprof.torch.instrument().

On CUDA tensors (NCCL) the host sees only the launch: ProcessGroupNCCL
completes a work's future once the collective is enqueued. There the time
is the device's, between CUDA events (_torch_device: a start event before
the call, an end event on a stream that waits for the collective), and the
host span is the call alone."""

import functools
import importlib
import os

import torch

from trainprof import _native
from trainprof.patches.common import R_REDUCE, ThreadState, begin, end, per_thread
from trainprof.patches.common import is_compiling as _is_compiling
from trainprof.patches.device import cuda_of as _cuda_of
from trainprof.patches.device import device_times as _device_times
from trainprof.patches.funcol import patch_functional_collectives
from trainprof.patches.held_callbacks import held
from trainprof.startup.after_import import after_import

_Work = ()  # torch.distributed.Work, once patched (isinstance of () is False)

# torch.distributed's communication, timed as reduce_metrics: collectives
# (FSDP2 issues all_gather_single and reduce_scatter_single) and point to point
# (pipeline stages)
_COLLECTIVES = (
    "all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_coalesced",
    "all_gather_into_tensor",
    "all_gather_single",
    "broadcast",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_single",
    "barrier",
    "monitored_barrier",
    "gather",
    "scatter",
    "all_to_all",
    "all_to_all_single",
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
)
_LEAVE_WORK = ("isend", "irecv", "batch_isend_irecv")  # return work under way, always


def _tensor_device(args, kwargs):
    """The CUDA device of a communication call's first tensor (a tensor, a
    list of tensors, or a list of P2POps, as the first argument or
    `tensor`), else None: object collectives and barrier have none."""
    first = args[0] if args else kwargs.get("tensor", kwargs.get("output"))
    if type(first) in (list, tuple):
        first = first[0] if first else None
        first = getattr(first, "tensor", first)  # a P2POp
    return _cuda_of(first) if isinstance(first, torch.Tensor) else None


def _device_start(device):
    """(this thread's device times, a start event) on device's current
    stream, or None (no CUDA device, device times off, a capture)."""
    dt = _device_times() if device is not None else None
    entry = dt.start(device) if dt is not None else None
    return None if entry is None else (dt, entry)


def _device_finish(timing, stream=None):
    """Records timing's end event on stream (the current stream of its
    device by default): reduce_metrics' device time."""
    dt, entry = timing
    dt.finish(R_REDUCE, entry, stream)


def _future_of(result):
    """The future of the work a communication call returned (a Work, or a
    list of them: all of theirs), or None (no work, or a backend that gives
    no future)."""
    try:
        if isinstance(result, _Work):
            return result.get_future()
        if type(result) is list and result and all(isinstance(w, _Work) for w in result):
            return torch.futures.collect_all([w.get_future() for w in result])
    except RuntimeError:
        pass
    return None


def _device_after_work(timing, result):
    """Records timing's end event on a stream that waits for the work(s) in
    result, through a then() of the work's CUDA future (whose callback runs
    with streams that wait for it); the script's own streams are left as
    they are, and the host never waits."""
    future = _future_of(result)
    if future is None:
        return
    device = timing[1][2].device

    def finished(_):
        _device_finish(timing, torch.cuda.current_stream(device))

    future.then(held(finished))


def _span_until_done(result, start):
    """When a communication call returned work under way (async_op=True,
    isend, batch_isend_irecv: a Work or a list of them), records
    reduce_metrics from start to the work's completion, on the thread that
    completes it; False when result is no such work (or its backend gives no
    future: the caller then times the call alone)."""
    future = _future_of(result)
    if future is None:
        return False

    def done(_):
        _native.span(R_REDUCE, start, _native.now_ns())

    future.add_done_callback(held(done))
    return True


def _collective(fn, leaves_work=False):
    """A communication call timed as reduce_metrics: from the call to its
    return, or, for work it leaves under way (leaves_work: isend and the
    like; async_op=True given by keyword), to the work's completion; not
    where a timed DDP communication hook issues it (the hook's own span
    covers it, launch to completion)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # traced by torch.compile: Dynamo must see the collective itself
        if _is_compiling() or per_thread(ThreadState).in_comm_hook:
            return fn(*args, **kwargs)
        timing = _device_start(_tensor_device(args, kwargs))
        if leaves_work or kwargs.get("async_op"):
            start = _native.now_ns()
            result = None
            try:
                result = fn(*args, **kwargs)
                return result
            finally:
                if timing is not None:  # on the device: the host span is the launch
                    _native.span(R_REDUCE, start, _native.now_ns())
                    _device_after_work(timing, result)
                elif not _span_until_done(result, start):
                    _native.span(R_REDUCE, start, _native.now_ns())
        begin(R_REDUCE)
        try:
            return fn(*args, **kwargs)
        finally:
            end(R_REDUCE)
            if timing is not None:  # the call made the current stream wait for it
                _device_finish(timing)

    wrapper.__trainprof_wrapped__ = fn
    return wrapper


def _timed_comm_hook(hook):
    """A DDP communication hook that records reduce_metrics from its call to
    the completion of the future it returns (on the thread completing it);
    on CUDA also its device time, from the bucket's gradients being ready on
    the current stream to the end of the future's work (a then() callback
    runs on streams that wait for it). Runs on the autograd engine's thread."""

    def timed_hook(state, bucket):
        start = _native.now_ns()
        timing = _device_start(_cuda_of(bucket.buffer()))
        # the all-reduce's own future: its value the list of one tensor
        bare = isinstance(state, _HookSlot) and state.hook is _allreduce_hook
        local = per_thread(ThreadState)
        local.in_comm_hook = True
        try:
            fut = hook(state, bucket)
        finally:
            local.in_comm_hook = False

        def done(f):
            _native.span(R_REDUCE, start, _native.now_ns())
            if timing is not None:
                _device_finish(timing, torch.cuda.current_stream(timing[1][2].device))
            return f.value()[0] if bare else f.value()

        return fut.then(held(done))

    timed_hook.__trainprof_wrapped__ = hook
    functools.update_wrapper(timed_hook, hook, updated=())
    return timed_hook


class _HookSlot:
    """The state of the timed hook trainprof registers on a DDP at its
    construction: the hook it runs (the default all-reduce until the script
    registers its own, which then takes the slot: DDP allows one)."""

    __slots__ = ("state", "hook", "taken")

    def __init__(self, state, hook):
        self.state, self.hook, self.taken = state, hook, False


def _run_slot(slot, bucket):
    return slot.hook(slot.state, bucket)


def _allreduce_hook(process_group, bucket):
    """DDP's all-reduce as torch's default_hooks.allreduce_hook does it (the
    bucket divided by the group's size, then summed: what DDP does without
    a hook), less its then(): the work's own future, whose tensor the timed
    hook's then() gives DDP. One Python callback a bucket, not two: half the
    calls, and one callback for gloo's thread to let go (held_callbacks)."""
    group = process_group if process_group is not None else torch.distributed.group.WORLD
    tensor = bucket.buffer()
    tensor.div_(group.size())
    return torch.distributed.all_reduce(tensor, group=group, async_op=True).get_future()


def _builtin_equivalent(comm_hook_type):
    """The Python hook doing what a built-in (C++) DDP hook does, or None."""
    name = getattr(comm_hook_type, "name", str(comm_hook_type))
    if name == "ALLREDUCE":
        return _allreduce_hook
    if name == "FP16_COMPRESS":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        return default_hooks.fp16_compress_hook
    return None


def _ddp_note(how):
    """Tells the report how DDP's gradient all-reduce is timed."""
    try:
        _native.fact("ddp.hook=" + how)
    except ValueError:
        pass


def _patch_ddp():
    """DDP's gradient all-reduce, timed through a communication hook that
    trainprof registers when the DDP is made (DDP allows one hook, before
    the first backward). A script's own hook, registered later, takes its
    place inside the timed one; a built-in one runs as its Python
    equivalent. Where that can't be done safely (DDP's Python reducer under
    compiled autograd, a registration that fails) DDP is left alone, and
    the run's fact ddp.hook says so."""
    if os.environ.get("TRAINPROF_DDP_HOOK", "1") == "0":
        return
    try:
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError:
        return
    register, init = DDP.register_comm_hook, DDP.__init__
    register_builtin = DDP._register_builtin_comm_hook

    def slot_of(ddp):
        slot = ddp.__dict__.get("_trainprof_slot")
        return slot if slot is not None and not slot.taken else None

    def take_slot(ddp, slot, state, hook, name):
        """The script's hook runs in trainprof's slot, as DDP would run it."""
        ddp._check_comm_hook(hook)
        slot.state, slot.hook, slot.taken = state, hook, True
        if ddp.logger is not None:
            ddp.logger._set_comm_hook_name(name)
        ddp._comm_hooks[:] = [(hook, state) if s is slot else (h, s) for h, s in ddp._comm_hooks]

    @functools.wraps(register)
    def register_comm_hook(self, state, hook):
        slot = slot_of(self)
        if slot is not None:
            return take_slot(self, slot, state, hook, hook.__qualname__)
        self.__dict__["_trainprof_hook"] = True
        return register(self, state, _timed_comm_hook(hook))

    @functools.wraps(register_builtin)
    def register_builtin_comm_hook(self, comm_hook_type):
        slot = slot_of(self)
        equivalent = _builtin_equivalent(comm_hook_type) if slot is not None else None
        if equivalent is not None:
            return take_slot(self, slot, self.process_group, equivalent, str(comm_hook_type))
        self.__dict__["_trainprof_hook"] = True  # C++ hooks can't be timed
        _ddp_note("builtin")
        return register_builtin(self, comm_hook_type)

    @functools.wraps(init)
    def ddp_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if self.__dict__.get("_trainprof_hook"):  # DDP's own init registered one
            return
        if getattr(self, "_use_python_reducer", False) or not hasattr(self, "reducer"):
            _ddp_note("left")
            return
        try:
            slot = _HookSlot(self.process_group, _allreduce_hook)
            register(self, slot, _timed_comm_hook(_run_slot))
        except Exception:  # noqa: BLE001 - an unusual DDP set-up: stay out of its way
            _ddp_note("left")
            return
        self.__dict__["_trainprof_hook"] = True
        self.__dict__["_trainprof_slot"] = slot
        _ddp_note("timed")

    DDP.register_comm_hook = register_comm_hook
    DDP._register_builtin_comm_hook = register_builtin_comm_hook
    DDP.__init__ = ddp_init


_rank_told = False
_spawn_index = -1  # this process's index among those one mp.spawn started


def tell_rank():
    """Once torch.distributed has its default process group, tells the
    recorder the group's rank and world size, for every thread of this
    process: launchers such as mp.spawn and Lightning's export no RANK. The
    local rank is the process's index in its mp.spawn where it has one (the
    environment names none there, or the spawning process's own), else the
    environment's. Once."""
    global _rank_told
    if _rank_told:
        return
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return
    _rank_told = True
    try:
        _native.set_rank(dist.get_rank(), _spawn_index, dist.get_world_size())
    except RuntimeError:  # the group gone already
        pass


def patch_spawn():
    """torch.multiprocessing.spawn and start_processes run fn(i, *args) in
    each child through spawn._wrap (pickled by name, so the child's own
    instrumented torch unpickles this wrapper): i, the child's place among
    the processes one call started on this node, is its local rank, as every
    mp.spawn script takes it for its device. Without it the analysis can
    only guess from the ranks' order on each node."""
    try:  # the module, not torch.multiprocessing's function of the same name
        spawn = importlib.import_module("torch.multiprocessing.spawn")
    except ImportError:
        return
    wrap = getattr(spawn, "_wrap", None)
    if wrap is None or hasattr(wrap, "__trainprof_wrapped__"):
        return

    @functools.wraps(wrap)
    def _wrap(fn, i, *args, **kwargs):
        global _spawn_index
        if isinstance(i, int) and 0 <= i < 2**31:
            _spawn_index = i
        return wrap(fn, i, *args, **kwargs)

    _wrap.__trainprof_wrapped__ = wrap
    spawn._wrap = _wrap


def patch_distributed():
    import torch.distributed as dist

    global _Work
    if not dist.is_available():
        return
    _Work = dist.Work
    init = dist.init_process_group

    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        result = init(*args, **kwargs)
        tell_rank()
        return result

    init_process_group.__trainprof_wrapped__ = init
    dist.init_process_group = init_process_group
    for name in _COLLECTIVES:
        fn = getattr(dist, name, None)
        if fn is not None and not hasattr(fn, "__trainprof_wrapped__"):
            setattr(dist, name, _collective(fn, name in _LEAVE_WORK))
    _patch_ddp()
    after_import("torch.distributed._functional_collectives", patch_functional_collectives)
