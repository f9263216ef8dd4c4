"""torch.distributed's communication, timed as reduce_metrics (collectives
and point to point, work left under way timed to its completion, DDP's
gradient all-reduce through its communication hook), and each process's
rank told to the recorder (from its process group, and its index in an
mp.spawn). Applied by trainprof.torch.instrument()."""

import functools
import importlib
import os

import torch

from . import _native
from ._after_import import after_import
from ._torch_common import R_REDUCE, begin, end
from ._torch_common import is_compiling as _is_compiling
from ._torch_common import local as _local
from ._torch_funcol import patch_functional_collectives

_Work = ()  # torch.distributed.Work, once patched (isinstance of () is False)

# torch.distributed's communication, timed as reduce_metrics: collectives
# (FSDP2 issues all_gather_single and reduce_scatter_single) and point to point
# (pipeline stages)
_COLLECTIVES = ("all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_coalesced",
                "all_gather_into_tensor", "all_gather_single", "broadcast", "reduce",
                "reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single", "barrier",
                "monitored_barrier", "gather", "scatter", "all_to_all", "all_to_all_single",
                "all_gather_object", "broadcast_object_list", "gather_object",
                "scatter_object_list", "send", "recv", "isend", "irecv", "batch_isend_irecv")
_LEAVE_WORK = ("isend", "irecv", "batch_isend_irecv")  # return work under way, always


def _span_until_done(result, start):
    """When a communication call returned work under way (async_op=True,
    isend, batch_isend_irecv: a Work or a list of them), records
    reduce_metrics from start to the work's completion, on the thread that
    completes it; False when result is no such work (or its backend gives no
    future: the caller then times the call alone)."""
    try:
        if isinstance(result, _Work):
            future = result.get_future()
        elif type(result) is list and result and all(isinstance(w, _Work) for w in result):
            future = torch.futures.collect_all([w.get_future() for w in result])
        else:
            return False
    except RuntimeError:
        return False

    def done(_):
        _native.span(R_REDUCE, start, _native.now_ns())

    future.add_done_callback(done)
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
        if _is_compiling() or _local.in_comm_hook:
            return fn(*args, **kwargs)
        if leaves_work or kwargs.get("async_op"):
            start = _native.now_ns()
            result = None
            try:
                result = fn(*args, **kwargs)
                return result
            finally:
                if not _span_until_done(result, start):
                    _native.span(R_REDUCE, start, _native.now_ns())
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
    if os.environ.get("TRAINPROF_DDP_HOOK", "1") == "0":
        return
    try:
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
            try:  # imported here: the hooks' package is 6 modules a script without DDP never loads
                from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

                register(self, self.process_group, _timed_comm_hook(default_hooks.allreduce_hook))
            except Exception:  # noqa: BLE001 - an unusual DDP set-up: stay out of its way
                pass
        return forward(self, *args, **kwargs)

    DDP.register_comm_hook = register_comm_hook
    DDP._register_builtin_comm_hook = register_builtin_comm_hook
    DDP.forward = ddp_forward


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
