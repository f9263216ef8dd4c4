"""Device times of the PyTorch instrumentation's regions: CUDA events
recorded on the current stream at a region's begin and end, read once the
end event has completed (checked at the training loader's fetches and at the
first timed region of each step, never waiting; at exit the last few are
waited for, every thread's). A device
time is the stream's timeline between its two events: the region's kernels,
and whatever that stream waited for in between (another stream's work, a
collective, a peer), not the GPU's busy time. None while a CUDA graph is
being captured (torch's CUDAGraph, or any capture of the current stream).
TRAINPROF_DEVICE_TIMES=0 turns them off, =all adds forward, backward and
optimizer_step, =N (2 to 255) times regions on one step in N from the
start. Once the recorder backs off over its budget, regions are timed on one
step in the period its requests carry (runtime/ops.py calls sample_every);
communication keeps every time.

Communication on CUDA (NCCL) is timed here too: the start event on the
current stream before the call (the collective's stream waits for it), the
end event on a stream that waits for the collective (the current one after a
blocking call, else one that a then() of the work's CUDA future runs on).
ProcessGroupNCCL completes a work's future when it is enqueued, so the host
sees only the launch."""

import collections
import functools
import os
import weakref

import torch

from trainprof import _native
from trainprof.patches.common import ThreadState, is_compiling, per_thread

DEVICE_TIMES = os.environ.get("TRAINPROF_DEVICE_TIMES", "1") != "0"
DEVICE_PHASES = DEVICE_TIMES and os.environ.get("TRAINPROF_DEVICE_TIMES") == "all"
_PENDING_MAX = 1024  # device times awaiting their end event, per thread
_POLL_BACKLOG = 64  # pending times that make a region's start poll again within a step
_captures = 0  # CUDA graph captures under way in this process (CUDAGraph.capture_begin/end)
timed_threads = []  # every thread's DeviceTimes in this process (few: the threads with CUDA regions)


def _period(value):
    """TRAINPROF_DEVICE_TIMES=N's N (2 to 255; ASCII digits, as the recorder
    reads them: "²" is a digit to str.isdigit that int() refuses), else 1:
    every step."""
    return int(value) if value.isascii() and value.isdigit() and 2 <= int(value) <= 255 else 1


_ASKED = _period(os.environ.get("TRAINPROF_DEVICE_TIMES", ""))  # the user's N, else 1
# regions timed on one step in this many (TRAINPROF_DEVICE_TIMES=N, or the
# recorder backed off: sample_every)
_every = _ASKED


def sample_every(steps):
    """From now on, time regions on one step in steps (the step count of the
    process's marks a multiple of it); 1: every step."""
    global _every
    _every = max(1, int(steps), _ASKED)


class DeviceTimes:
    """One thread's CUDA-event device times: the regions open on the device,
    and those closed whose end event the device has not reached yet (oldest
    first; one stream's events complete in order). Events are reused."""

    __slots__ = ("open", "pending", "free", "pid", "skipped", "polled_at")

    def __init__(self):
        self.open = {}  # region -> (host start ns, start event, stream)
        self.pending = collections.deque()  # (region, host start ns, start event, end event)
        self.free = {}  # device index -> events to reuse
        self.pid = os.getpid()
        self.skipped = 0  # regions left without a device time (capture, backlog)
        self.polled_at = -1  # the process's step count when a region's start last polled
        timed_threads.append(self)

    def _event(self, index):
        pool = self.free.get(index)
        return pool.pop() if pool else torch.cuda.Event(enable_timing=True)

    def start(self, device):
        """A start event recorded now on device's current stream, as
        (host ns, event, stream); None where none may be recorded (a capture
        under way, too many pending)."""
        # no CUDA event call at all during a capture: querying one breaks it
        if _captures or _is_capturing():
            self.skipped += 1
            return None
        if self.pending:
            # once a step (a query per pending time, a CUDA call each): the
            # regions of one step end on the device after it, and an earlier
            # step's are done by then; more often only with a backlog
            steps = _native._steps_marked()
            if steps != self.polled_at or len(self.pending) >= _POLL_BACKLOG:
                self.polled_at = steps
                self.poll()
        if len(self.pending) >= _PENDING_MAX:
            self.skipped += 1
            return None
        stream = torch.cuda.current_stream(device)
        start = self._event(stream.device_index)
        start.record(stream)
        return (_native.now_ns(), start, stream)

    def finish(self, region, entry, stream=None):
        """Records entry's end event on stream (entry's own by default): the
        region's device time, read once the device reaches it."""
        host_ns, start, own = entry
        if _captures:
            self.skipped += 1
            self.free.setdefault(own.device_index, []).append(start)
            return
        stream = own if stream is None else stream
        stop = self._event(own.device_index)
        stop.record(stream)
        self.pending.append((region, host_ns, start, stop, own.device_index))

    def begin(self, region, device):
        """Records region's start event on device's current stream, on the
        steps that are timed (every one unless sample_every said otherwise)."""
        if _every > 1 and _native._steps_marked() % _every:
            return
        entry = self.start(device)
        if entry is not None:
            self.open[region] = entry

    def end(self, region):
        """Records region's end event; its device time is read later."""
        entry = self.open.pop(region, None)
        if entry is not None:
            self.finish(region, entry)

    def poll(self, wait=False):
        """Sends the device times whose end event completed, oldest first;
        wait: waits for every end event (only once the training is over).
        Another thread may poll too (a thread's last device times, polled by
        the main one): each entry is taken off the queue before it is looked
        at, and put back when not done, so no two threads send one."""
        pending = self.pending
        while pending:
            try:
                entry = pending.popleft()
            except IndexError:  # another thread took the last
                return
            region, host_ns, start, stop, index = entry
            if wait:
                stop.synchronize()
            elif not stop.query():
                pending.appendleft(entry)
                return
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
    local = per_thread(ThreadState)
    dt = local.device_times
    if dt is None or dt.pid != os.getpid():  # a forked child starts afresh
        if dt is not None:
            timed_threads[:] = [d for d in timed_threads if d.pid == os.getpid()]
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
    """Records region's start event. Called before the host region begins, as
    device_end after it ends: the event calls and the polling of earlier
    times (start polls) are trainprof's work, not counted in the user's
    phase (the device's span between the two events is the same)."""
    if device is not None and not is_compiling():  # traced: no CUDA event into the graph
        device_times().begin(region, device)


def device_end(region, local):
    """Records region's end event, where its start was recorded on this
    thread (local: its ThreadState). The hot paths call it only where
    local.device_times is not None (a thread that never timed the device
    makes no call)."""
    dt = local.device_times
    if dt is not None and dt.open:
        dt.end(region)


_native._device_end(device_end)  # what the C paths call (python/trainprof/_thread_state.c)


def device_poll(local):
    """Sends this thread's completed device times (local: its ThreadState),
    and other threads' (the autograd engine's thread, where DDP's hooks run,
    never polls its own)."""
    if _captures:
        return
    dt = local.device_times
    if dt is not None and dt.pending:
        dt.poll()
    if len(timed_threads) > 1:
        pid = os.getpid()
        for other in timed_threads:
            if other is not dt and other.pending and other.pid == pid:
                other.poll()


def flush_device_times():
    """At exit: waits for every thread's last end events and sends their
    times."""
    pid = os.getpid()
    for dt in list(timed_threads):
        if dt.pid != pid:
            continue
        try:
            dt.poll(wait=True)
        except Exception:  # noqa: BLE001 - CUDA already torn down: those few are lost
            pass


# Whether the current device's current stream is being captured into a CUDA
# graph by anything (a library's own capture, not through torch's CUDAGraph):
# an event recorded into it would become part of the user's graph. One driver
# query (cudaStreamGetCaptureInfo), no synchronization; a region on another
# device than the current one is not checked.
_cuda_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


def _is_capturing():
    try:
        return bool(_cuda_capturing())
    except (RuntimeError, TypeError):  # a build without CUDA: nothing captures
        return False


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
