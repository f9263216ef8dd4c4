"""torch.distributed's functional collectives
(torch.distributed._functional_collectives), which DTensor and tensor
parallelism use: each call returns at once, with its result wrapped in an
AsyncCollectiveTensor that waits for the collective where the result is first
used. Each call is timed as reduce_metrics from its launch until that wait
returns, on the thread that waits; a call whose result is waited inside it (a
gather over a dimension other than 0) ends when it returns. Code that
torch.compile traces calls straight through: Dynamo must see the collectives
themselves."""

import functools

from trainprof import _native
from trainprof.patches.common import R_REDUCE, ThreadState, is_compiling, per_thread

# The public calls, under their names in the torch releases that have them;
# the ones that call another of them (all_gather_tensor calls
# all_gather_single) are timed once, as the outer call.
_CALLS = (
    "broadcast",
    "all_reduce",
    "all_gather_single",
    "all_gather_tensor",
    "all_gather_single_autograd",
    "all_gather_tensor_autograd",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "reduce_scatter_single_autograd",
    "reduce_scatter_tensor_autograd",
    "all_reduce_coalesced",
    "all_gather_single_coalesced",
    "all_gather_into_tensor_coalesced",
    "reduce_scatter_single_coalesced",
    "reduce_scatter_tensor_coalesced",
    "all_to_all_single",
    "all_to_all_single_autograd",
    "permute_tensor",
)

# Results launched but not waited for yet, by the address of their storage
# (the tensor waited for may be another over the same memory: torch wraps the
# views and aliases of a result, a DTensor's detach among them, in new
# AsyncCollectiveTensors): address -> [start ns, results of that call still to
# wait for]. An entry whose result was dropped unused is overwritten by the
# next result launched at that address, and only results are waited for, so
# no stale entry is ever matched; past _PENDING_MAX (results never used) the
# table starts afresh.
_pending = {}
_PENDING_MAX = 1024


def _address(tensor):
    return tensor.untyped_storage().data_ptr()


def _remember(results, start):
    """Keeps start for the wait of each result still under way; False when
    none is (the caller's span ends now)."""
    waiting = [r.elem for r in results if type(r) is _Async and not r.completed]
    if not waiting:
        return False
    if len(_pending) >= _PENDING_MAX:
        _pending.clear()
    call = [start, len(waiting)]
    for tensor in waiting:
        _pending[_address(tensor)] = call
    return True


def _timed_call(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # a call inside another (all_gather_tensor calls all_gather_single)
        # is the outer call's
        if is_compiling():
            return fn(*args, **kwargs)
        local = per_thread(ThreadState)
        if local.in_funcol:
            return fn(*args, **kwargs)
        start = _native.now_ns()
        local.in_funcol = True
        try:
            result = fn(*args, **kwargs)
        finally:
            local.in_funcol = False
        # the usual case, one result, inline: through _remember it cost about
        # 2 us more a call (bench/funcol_cost.py: +12.5-13.3 us against +10.1-11.2)
        if type(result) is _Async:
            if not result.completed:
                if len(_pending) >= _PENDING_MAX:
                    _pending.clear()
                _pending[_address(result.elem)] = [start, 1]
                return result
        elif isinstance(result, (list, tuple)) and _remember(result, start):
            return result
        _native.span(R_REDUCE, start, _native.now_ns())
        return result

    wrapper.__trainprof_wrapped__ = fn
    return wrapper


def _timed_wait(wait):
    @functools.wraps(wait)
    def wait_tensor(tensor):
        if not _pending or is_compiling():
            return wait(tensor)
        call = _pending.pop(_address(tensor), None)
        result = wait(tensor)
        if call is not None:
            call[1] -= 1
            if call[1] == 0:  # the call's last result: the collective is done
                _native.span(R_REDUCE, call[0], _native.now_ns())
        return result

    wait_tensor.__trainprof_wrapped__ = wait
    return wait_tensor


_Async = None


def patch_functional_collectives(funcol):
    """Times the calls of torch.distributed._functional_collectives (funcol,
    once the script has imported it)."""
    global _Async
    _Async = getattr(funcol, "AsyncCollectiveTensor", None)
    wait = getattr(funcol, "wait_tensor", None)
    if _Async is None or wait is None or hasattr(wait, "__trainprof_wrapped__"):
        return
    funcol.wait_tensor = _timed_wait(wait)
    for name in _CALLS:
        fn = getattr(funcol, name, None)
        if fn is not None:
            setattr(funcol, name, _timed_call(fn))
