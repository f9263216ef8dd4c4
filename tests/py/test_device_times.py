"""The bookkeeping of CUDA-event device times (trainprof.patches.device),
on machines without a GPU: CUDA's events and streams are stood in for, since
CI has none (tests/py/test_gpu.py checks the real ones on a GPU). What is
checked: times go out oldest first and only once their end event completed,
nothing waits unless asked, no CUDA call is made during a graph capture, and
a backlog is bounded."""

import types

import pytest
from conftest import needs

needs("torch")
torch = tpt = None  # imported where these tests run (_imported), not at every collection


@pytest.fixture(autouse=True, scope="module")
def _imported():
    """torch, and trainprof's device times (which import torch and patch
    nothing), for the tests to patch: 1.6 CPU-seconds that every collection
    (each xdist worker's, the serial stage's) paid at this module's import."""
    global torch, tpt
    import torch
    import trainprof.patches.device as tpt


class FakeEvent:
    created = 0
    queries = 0

    def __init__(self, enable_timing=False):
        FakeEvent.created += 1
        self.done = False
        self.t_ms = None
        self.synced = False

    def record(self, stream=None):
        self.done = False
        self.t_ms = stream.clock

    def query(self):
        FakeEvent.queries += 1
        return self.done

    def synchronize(self):
        self.synced = True
        self.done = True

    def elapsed_time(self, other):
        return other.t_ms - self.t_ms


class FakeStream:
    device_index = 0
    clock = 0.0


@pytest.fixture
def cuda(monkeypatch):
    stream = FakeStream()
    sent = []
    steps = [0]  # the process's step count (_native._steps_marked)
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: stream)
    monkeypatch.setattr(
        tpt,
        "_native",
        types.SimpleNamespace(
            now_ns=lambda: 1000,
            device_time=lambda region, start, ns: sent.append((region, ns)),
            _steps_marked=lambda: steps[0],
        ),
    )
    monkeypatch.setattr(tpt, "_captures", 0)
    capturing = [False]  # the current stream captured by someone else (CuPy, a library)
    monkeypatch.setattr(tpt, "_cuda_capturing", lambda: capturing[0])
    return types.SimpleNamespace(stream=stream, sent=sent, capturing=capturing, steps=steps)


def timed(dt, cuda, region, ms):
    """Begins and ends region around ms of stream time; returns its end event."""
    dt.begin(region, torch.device("cuda"))
    cuda.stream.clock += ms
    dt.end(region)
    return dt.pending[-1][3]


def test_times_go_out_in_order_once_complete_and_events_are_reused(cuda):
    dt = tpt.DeviceTimes()
    first = timed(dt, cuda, "a", 2.5)
    second = timed(dt, cuda, "b", 4.0)
    dt.poll()
    assert cuda.sent == []  # nothing completed: nothing sent, nothing waited for
    second.done = True
    dt.poll()
    assert cuda.sent == []  # the older one holds the newer back
    first.done = True
    dt.poll()
    assert cuda.sent == [("a", 2_500_000), ("b", 4_000_000)]
    assert not first.synced and not second.synced
    made = FakeEvent.created
    timed(dt, cuda, "c", 1.0)
    assert FakeEvent.created == made  # from the pool


def test_waiting_happens_only_when_asked(cuda):
    dt = tpt.DeviceTimes()
    stop = timed(dt, cuda, "a", 3.0)
    dt.poll(wait=True)
    assert stop.synced and cuda.sent == [("a", 3_000_000)]


def test_nothing_touches_cuda_during_a_capture(cuda, monkeypatch):
    dt = tpt.DeviceTimes()
    pending = timed(dt, cuda, "a", 1.0)
    monkeypatch.setattr(tpt, "_captures", 1)

    def refuse(*args, **kwargs):
        raise AssertionError("a CUDA call during a capture")

    monkeypatch.setattr(torch.cuda, "current_stream", refuse)
    monkeypatch.setattr(pending, "query", refuse)
    dt.begin("b", torch.device("cuda"))
    dt.end("b")
    assert dt.skipped == 1 and len(dt.pending) == 1


def test_a_region_begun_outside_a_capture_and_ended_inside_gets_no_time(cuda, monkeypatch):
    dt = tpt.DeviceTimes()
    dt.begin("a", torch.device("cuda"))
    monkeypatch.setattr(tpt, "_captures", 1)
    dt.end("a")
    assert dt.skipped == 1 and not dt.pending and dt.free[0]  # its start event kept


def test_the_backlog_is_bounded(cuda, monkeypatch):
    monkeypatch.setattr(tpt, "_PENDING_MAX", 3)
    dt = tpt.DeviceTimes()
    for i in range(5):
        timed(dt, cuda, f"r{i}", 1.0)
    assert len(dt.pending) == 3 and dt.skipped == 2


def test_an_unreadable_pair_is_dropped_not_raised(cuda):
    dt = tpt.DeviceTimes()
    stop = timed(dt, cuda, "a", 1.0)
    stop.done = True

    def broken(other):
        raise RuntimeError("cudaErrorInvalidResourceHandle")

    dt.pending[0][2].elapsed_time = broken
    dt.poll()
    assert cuda.sent == [] and dt.skipped == 1 and not dt.pending


def test_no_event_into_a_capture_torch_did_not_start(cuda, monkeypatch):
    """A capture of the current stream that no torch.cuda.CUDAGraph began
    (CuPy's, a library's own) is seen through the stream: the region gets
    no event, and the next one does."""
    monkeypatch.setattr(FakeEvent, "created", 0)
    dt = tpt.DeviceTimes()
    cuda.capturing[0] = True
    dt.begin(1, torch.device("cuda"))
    dt.end(1)
    assert not dt.pending and dt.skipped == 1 and FakeEvent.created == 0
    cuda.capturing[0] = False
    timed(dt, cuda, 2, 5.0)
    assert len(dt.pending) == 1


def test_backed_off_regions_are_timed_on_one_step_in_the_period(cuda, monkeypatch):
    """Once the recorder backed off (runtime/ops.py hands on its period),
    regions get events on the steps the period divides only; a region
    begun on an untimed step ends without a CUDA call."""
    steps = cuda.steps
    monkeypatch.setattr(tpt, "_every", 1)
    dt = tpt.DeviceTimes()
    tpt.sample_every(8)
    timed_steps = []
    for step in range(1, 33):
        steps[0] = step
        made = len(dt.pending)
        dt.begin("to_device", torch.device("cuda"))
        cuda.stream.clock += 1.0
        dt.end("to_device")
        if len(dt.pending) > made:
            timed_steps.append(step)
    assert timed_steps == [8, 16, 24, 32]
    tpt.sample_every(1)
    steps[0] = 33
    timed(dt, cuda, "to_device", 1.0)
    assert len(dt.pending) == 5


def test_a_step_s_regions_poll_once_a_step(cuda, monkeypatch):
    """A launch-bound step of three regions (to_device twice, train_batch):
    the pending times are queried at the first region of the next step, by
    when the device reached them, not again at each region's start while
    the region before is still on the device (a query is a CUDA call: 5 a
    step became 3). A backlog is polled whatever the step."""
    monkeypatch.setattr(FakeEvent, "queries", 0)
    dt = tpt.DeviceTimes()
    for step in range(1, 11):
        cuda.steps[0] = step
        for region in ("to_device", "to_device", "train_batch"):
            timed(dt, cuda, region, 1.0)
        for entry in dt.pending:  # the device catches up by the next step
            entry[3].done = True
    # each of steps 1-9's three times queried once, and step 1's first once
    # early (its second region's start: the first poll); 47 before
    assert FakeEvent.queries == 28
    assert len(cuda.sent) == 27 and len(dt.pending) == 3
    monkeypatch.setattr(tpt, "_POLL_BACKLOG", 4)
    timed(dt, cuda, "train_batch", 1.0)  # step 10 again: 4 pending
    timed(dt, cuda, "train_batch", 1.0)  # polled: a backlog
    assert len(cuda.sent) == 30
