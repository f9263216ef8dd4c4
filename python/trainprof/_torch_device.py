"""Device times of the PyTorch instrumentation's regions: CUDA events
recorded on the current stream at a region's begin and end, read once the
end event has completed (checked at each step and each timed region, never
waiting; at exit the last few are waited for). None while a CUDA graph is
being captured. TRAINPROF_DEVICE_TIMES=0 turns them off, =all adds forward,
backward and optimizer_step."""

import collections
import functools
import os
import weakref

import torch

from . import _native
from ._torch_common import is_compiling, local

DEVICE_TIMES = os.environ.get("TRAINPROF_DEVICE_TIMES", "1") != "0"
DEVICE_PHASES = DEVICE_TIMES and os.environ.get("TRAINPROF_DEVICE_TIMES") == "all"
_PENDING_MAX = 1024  # device times awaiting their end event, per thread
_captures = 0  # CUDA graph captures under way in this process (CUDAGraph.capture_begin/end)


class DeviceTimes:
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


def device_times():
    """This thread's device times, made on first use; None when turned off."""
    if not DEVICE_TIMES:
        return None
    dt = local.device_times
    if dt is None or dt.pid != os.getpid():  # a forked child starts afresh
        dt = local.device_times = DeviceTimes()
    return dt


def cuda_device(device):
    """device when it is a CUDA device (a torch.device), else None."""
    return device if device is not None and device.type == "cuda" and DEVICE_TIMES else None


def cuda_of(tensor):
    """tensor's device when it is a CUDA device and device times are on, else
    None (is_cuda first: reading .device makes a torch.device, ~0.4 us)."""
    return tensor.device if DEVICE_TIMES and tensor.is_cuda else None


def device_begin(region, device):
    if device is not None and not is_compiling():  # traced: no CUDA event into the graph
        device_times().begin(region, device)


def device_end(region):
    dt = local.device_times
    if dt is not None and dt.open:
        dt.end(region)


def device_poll():
    dt = local.device_times
    if dt is not None and dt.pending and not _captures:
        dt.poll()


def flush_device_times():
    """At exit: waits for this thread's last end events and sends their times."""
    dt = local.device_times
    if dt is None or dt.pid != os.getpid():
        return
    try:
        dt.poll(wait=True)
    except Exception:  # noqa: BLE001 - CUDA already torn down: those few are lost
        pass


def patch_graph_capture():
    """Counts CUDA graph captures, so that no event is recorded into one (a
    Python flag: asking CUDA whether the stream captures costs a driver call
    per region)."""
    graph = getattr(torch.cuda, "CUDAGraph", None)
    if graph is None or not DEVICE_TIMES:
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


def module_device(module):
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
            return cuda_of(p)
    p = next(module.parameters(), None)
    if len(_first_params) >= 1024:
        _first_params.clear()
    _first_params[id(module)] = (weakref.ref(module), None if p is None else weakref.ref(p))
    return None if p is None else cuda_of(p)


def optimizer_device(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            return cuda_of(p)
    return None
