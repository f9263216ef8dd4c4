"""A capture window's events as the process reads them from torch's profiler
(trainprof/runtime/ops.py), in this test's own process on the CPU: each
event's kind where torch names the activity and where it doesn't (torch
2.11, the GPU machine's, has no activity_type()), and a window whose events
can't be read, which arrives skipped with why instead of not at all."""

import struct

import pytest
from conftest import lazily
from trainprof import _native
from trainprof.runtime import ops

torch = lazily("torch")


class WithoutActivity:
    """A real event, less activity_type(): what torch 2.11 hands over."""

    def __init__(self, event):
        self._event = event

    def __getattr__(self, name):
        if name == "activity_type":
            raise AttributeError(name)
        return getattr(self._event, name)


def profiled_events():
    """The events of a real profiler session over a forward, a backward and
    a record_function range, with the allocator's allocations."""
    from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
    from torch.autograd import ProfilerConfig, ProfilerState
    from torch.autograd import profiler as ap

    # a window's configuration on the CPU, with the allocations a GPU's
    # window records
    activities = {ProfilerActivity.CPU}
    config = ProfilerConfig(
        ProfilerState.KINETO, True, True, False, False, False, _ExperimentalConfig(), ""
    )
    model = torch.nn.Linear(64, 64)
    ap._prepare_profiler(config, activities)
    ap._enable_profiler(config, activities)
    with torch.autograd.profiler.record_function("my_range"):
        model(torch.randn(32, 64, requires_grad=True)).sum().backward()
    return ap._disable_profiler().events()


def test_each_events_kind_is_the_same_without_activity_type():
    events = profiled_events()
    if not hasattr(events[0], "activity_type"):
        pytest.skip("this torch names no activity: the fallback is all there is")
    named = [ops._kind_of(e) for e in events]
    inferred = [ops._kind_of(WithoutActivity(e)) for e in events]
    mismatches = [(e.name(), a, b) for e, a, b in zip(events, named, inferred) if a != b]
    assert not mismatches, mismatches[:10]
    # the session had operators, the range and allocations, all told apart
    kinds = {k: named.count(k) for k in set(named)}
    assert kinds.get(ops.K_OP, 0) > 5 and kinds.get(ops.K_RANGE) == 1, kinds
    assert kinds.get(ops.K_MEMORY, 0) > 0, kinds
    ranges = [e.name() for e, k in zip(events, inferred) if k == ops.K_RANGE]
    assert ranges == ["my_range"]


def test_a_window_whose_events_cant_be_read_is_sent_skipped_with_why(monkeypatch):
    class Broken:
        def events(self):
            return [object()]  # no name(): what a torch of another shape could give

    sent = []
    monkeypatch.setattr(_native, "_ops_send", sent.append)
    capture = ops.Capture.__new__(ops.Capture)
    capture.torch = torch
    window = {
        "reason": 1,
        "first": 11,
        "steps": 5,
        "marks": [(11, 1000, -1, -1)],
        "tid": 1,
        "cuda": False,
        "start": 1000,
        "end": 2000,
    }
    capture.send(window, result=Broken())
    assert len(sent) == 1
    blob = sent[0]
    header = ops.HEADER.unpack_from(blob)
    assert header[0] == ops.MAGIC and header[-1] == 1  # skipped
    strings, table = header[9], blob[ops.HEADER.size : ops.HEADER.size + header[10]]
    texts, at = [], 0
    for _ in range(strings):
        (n,) = struct.unpack_from("<I", table, at)
        texts.append(table[at + 4 : at + 4 + n].decode())
        at += 4 + n
    note = texts[header[-2]]
    assert note.startswith("the profiler's events could not be read: AttributeError"), note


# What Kineto wrote at each window's stop under torch 2.14.1 and 2.15.0 (PyPI's
# CUDA builds) on this machine, which has no GPU driver (2026-12-03)
NO_DRIVER = b"ERROR:2026-12-03 07:25:03 16670:16670 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35\n"
CUPTI = b"WARNING:2026-12-03 07:25:03 16670:16670 CuptiActivityApi.cpp:83] CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"


def kineto_said(*lines):
    """What ops._quiet kept of lines written to standard error during a
    profiler call, as the window's stop reads it."""

    def call():
        import os

        for line in lines:
            os.write(2, line)

    ops._quiet(call)
    return ops._quiet.last


def test_a_window_without_cuda_leaves_out_kineto_s_no_gpu_line(capfd):
    """A CUDA build of torch on a machine without a GPU: its window's note
    said "ERROR:<time> <pid>:<tid> DeviceProperties.cpp:56] gpuGetDeviceCount
    failed with code 35\\x0a" in every CPU user's report. A window without
    CUDA leaves that line out; one with CUDA keeps it, and every note says
    each line's level and text, not its time, ids and source line."""
    said = kineto_said(b"the script's own line\n", NO_DRIVER)
    assert capfd.readouterr().err == "the script's own line\n"  # written back
    assert ops._window_note(said, cuda=False) is None
    assert ops._window_note(said, cuda=True) == "error: gpuGetDeviceCount failed with code 35"
    said = kineto_said(CUPTI, NO_DRIVER)
    assert ops._window_note(said, cuda=False) == "warning: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
    assert ops._window_note(said, cuda=True) == (
        "warning: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; error: gpuGetDeviceCount failed with code 35"
    )
    assert len(ops._window_note(kineto_said(*[CUPTI] * 20), cuda=True)) == 300
