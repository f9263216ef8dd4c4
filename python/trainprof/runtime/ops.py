"""Capture windows: PyTorch's own profiler (torch.profiler's Kineto, and
CUPTI on a CUDA device) over a few consecutive steps, when the recorder
asks (docs/ops.md).

The recorder decides when (the schedule, `trainprof capture`, a slow step)
and writes its request into every ring's header; libtrainprof reads it at
each step mark and calls ``Capture.hook`` only when a new request came or
the step a window waits for is here, so that outside a window nothing of
the profiler is active and a step costs one load more. The window begins at
a step mark and ends at the mark ``steps`` later (one more on a CUDA device,
so that the last captured step's kernels have ended before the profiler
flushes: no synchronize is added). Its events go to the recorder as one
blob (the layout below, read by src/record/ops_blob.c) in a sealed memfd.

What the profiler is started with is what ``torch.profiler.profile`` starts
it with (``_prepare_profiler`` and ``_enable_profiler``), without the
synchronize its ``__exit__`` adds. A script that runs its own profiler keeps
it: a window due while one runs is skipped, and one running when the script
starts its own is ended first (the script's never sees ours). Kineto's own
lines on standard error at each start and stop are kept from the training's
output: the descriptor is pointed at a memfd for the length of the call, and
whatever else was written meanwhile is written back. On a CUDA device the
first window asks Kineto to let go of CUPTI at each window's end
(``release_cupti``): attached, it slows every CUDA call after the window.
"""

import atexit
import os
import re
import struct
import sys
import threading
import time

from trainprof import _native
from trainprof.startup.swallowed import swallowed

MAGIC = b"TPOP"
# a request's reason: its low byte why (1 schedule, 2 demand, 3 slow step),
# the next the device times' period once backed off (lib/ops_window.h)
REASON_MASK = 0xFF
DEVICE_EVERY_SHIFT = 8
VERSION = 1
# magic, version, reason, steps, first_step, step thread's tid, flags,
# start_ns, end_ns (the recorder's clock), strings, their bytes, events,
# events dropped, device memory (bytes, 0 unknown), allocated at the start
# (-1 unknown), the note's string (0xffffffff none), skipped (0/1)
HEADER = struct.Struct("<4sIIIQiIqqIIIIqqII")
# kind, name, shapes (string indices), thread (Kineto's), device, 0,
# stream, start_ns, duration_ns, correlation, linked correlation, value
EVENT = struct.Struct("<IIIIiIqqqqqq")
NONE = 0xFFFFFFFF
MAX_EVENTS = 500_000  # a window's events at most; the rest are counted

# event kinds (src/core/ops_window.h)
K_OP, K_RANGE, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_MEMORY, K_STEP = range(1, 9)
KINDS = {
    "cpu_op": K_OP,
    "user_annotation": K_RANGE,
    "kernel": K_KERNEL,
    "gpu_memcpy": K_MEMCPY,
    "gpu_memset": K_MEMSET,
    "cuda_runtime": K_RUNTIME,
    "cuda_driver": K_RUNTIME,
}
FLAG_CUDA = 1
# Kineto's synchronization records on the device (CUPTI's), which
# activity_type() names cuda_sync and a window leaves out
_DEVICE_SYNCS = ("Context Sync", "Stream Sync", "Event Sync", "Stream Wait Event")
_RUNTIME_NAME = re.compile(r"cu(da)?[A-Z]")


def _kind_of(e):
    """An event's kind, K_* or None (not a window's). torch 2.13 names each
    event's activity; torch 2.11 has no activity_type(), so there the kind
    comes from what it has: the device (kernels, copies and memsets run on
    the GPU, copies and memsets named so by CUPTI), the user-annotation flag
    (a record_function range, on the CPU; its GPU twin is left out, as the
    activity's gpu_user_annotation is) and the CUDA API's names (runtime and
    driver calls), everything else on the CPU being an operator."""
    name = e.name()
    if name == "[memory]":
        return K_MEMORY
    activity = getattr(e, "activity_type", None)
    if activity is not None:
        return KINDS.get(activity())
    on_device = str(e.device_type()) != "DeviceType.CPU"
    if e.is_user_annotation():
        return None if on_device else K_RANGE
    if on_device:
        if name.startswith("Memcpy"):
            return K_MEMCPY
        if name.startswith("Memset"):
            return K_MEMSET
        return None if name in _DEVICE_SYNCS else K_KERNEL
    return K_RUNTIME if _RUNTIME_NAME.match(name) else K_OP


# Kineto's log lines: "USDT:2026-11-26 21:30:51 15958:15958 File.cpp:52] text"
_KINETO_LINE = re.compile(
    rb"^(USDT|INFO|WARNING|ERROR|STAGE|VERBOSE):\d{4}-\d\d-\d\d "
    rb"\d\d:\d\d:\d\d \d+:\d+ [^\]]*\] "
)


def _quiet(call):
    """call() with standard error taken into a memfd; Kineto's lines are
    kept back (its warnings and errors returned), the rest written back."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed, or replaced by None
        pass
    try:
        saved = os.dup(2)
    except OSError:  # no standard error at all: nothing to keep clean
        _quiet.last = ""
        return call(), None
    held = os.memfd_create("trainprof-stderr", os.MFD_CLOEXEC)
    os.dup2(held, 2)
    try:
        return call(), None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        size = os.lseek(held, 0, os.SEEK_END)
        text = os.pread(held, size, 0) if size else b""
        os.close(held)
        kept, other = [], []
        for line in text.splitlines(True):
            m = _KINETO_LINE.match(line)
            if m is None:
                other.append(line)
            elif m.group(1) in (b"WARNING", b"ERROR"):
                kept.append(line)
        if other:
            os.write(2, b"".join(other))
        _quiet.last = b"".join(kept).decode("utf-8", "replace")


_quiet.last = ""

# What a CUDA build of PyTorch's Kineto says at every window on a machine
# without a GPU (code 35: no driver; 100: no device): that no GPU is there,
# which a window without CUDA knows. PyPI's torch for Linux is that build,
# so without this every CPU user's report said "ERROR: ... gpuGetDeviceCount
# failed with code 35" beside each window (torch 2.14.1 and 2.15.0).
_NO_GPU_HERE = re.compile(r"\] gpuGetDeviceCount failed with code \d+$")


def _window_note(said, cuda):
    """The note of a window from Kineto's warning and error lines (said):
    each line's text after its prefix's "file:line] ", joined by "; ", at
    most 300 characters; None where nothing is left. Without CUDA, the
    lines that say only that no GPU is here are left out."""
    notes = []
    for line in said.splitlines():
        line = line.rstrip()
        if not line or (not cuda and _NO_GPU_HERE.search(line)):
            continue
        level, _, rest = line.partition(":")
        text = rest.split("] ", 1)[1] if "] " in rest else rest
        notes.append(f"{level.lower()}: {text}" if text else level.lower())
    return "; ".join(notes)[:300] or None


class Capture:
    """One process's windows (the GIL keeps them; they run on the thread
    that marks steps)."""

    def __init__(self, torch):
        self.torch = torch
        self.pending = None  # (reason, first_step, steps) asked for
        self.asked = None  # the last request taken: the same again opens no window
        self.active = None  # the window under way: a dict
        self.thread = None
        self.cupti_decided = False  # release_cupti asked, at the first window on CUDA
        self.cupti_let_go_ns = None  # when the last window that let CUPTI go ended
        from torch.autograd import profiler as ap

        self.ap = ap
        self.prepare, self.enable = ap._prepare_profiler, ap._enable_profiler
        self.disable = ap._disable_profiler
        self._guard_script_profiler()

    # ---- the script's own profiler ------------------------------------------

    def _guard_script_profiler(self):
        """The script's profiler start ends a window of ours first."""
        capture = self

        def guard(fn):
            def started(*args, **kwargs):
                if capture.active is not None:
                    capture.finish(
                        skip="the script started its own torch.profiler during the "
                        "window: the window was ended there"
                    )
                return fn(*args, **kwargs)

            started.__wrapped__ = fn
            return started

        self.ap._prepare_profiler = guard(self.prepare)
        self.ap._enable_profiler = guard(self.enable)

    # ---- at step marks --------------------------------------------------------

    def hook(self):
        n = _native._steps_marked()
        req = _native._ops_request()
        if req is not None:  # kept for after a window under way (a rank behind the others)
            _seq, reason, first, steps = req
            every = (reason >> DEVICE_EVERY_SHIFT) & REASON_MASK
            if every > 1:  # the recorder backed off over its budget
                from trainprof.patches import device

                device.sample_every(every)
            ask = (reason & REASON_MASK, first, max(1, min(steps, 1000)))
            if ask != self.asked:  # else the same window asked again: its period changed
                self.asked = self.pending = ask
        if self.active is not None:
            self.active["marks"].append((n, _native.now_ns(), *self._memory()))
            if n < self.active["stop_at"]:
                _native._ops_wait(n + 1)
                return
            self.finish()
        if self.pending is not None:
            reason, first, steps = self.pending
            if n >= first:
                self.pending = None
                self.start(reason, n, steps)
            else:
                _native._ops_wait(first)

    def _memory(self):
        cuda = self.torch.cuda
        if not self.active or not self.active["cuda"]:
            return (-1, -1)
        try:
            return (cuda.memory_allocated(), cuda.memory_reserved())
        except RuntimeError:  # a CUDA error (torch's are RuntimeErrors): unknown
            return (-1, -1)

    # ---- a window -------------------------------------------------------------

    def start(self, reason, n, steps):
        torch = self.torch
        let_go = self.cupti_let_go_ns
        if let_go is not None and _native.now_ns() - let_go < CUPTI_SETTLE_NS:
            # Kineto lets CUPTI go at the next CUDA call after a stop, on a
            # thread of its own: a trace begun meanwhile raced with it (lost
            # its GPU events, or crashed: kineto#1169, #1554). A step later.
            self.pending = (reason, n + 1, steps)
            _native._ops_wait(n + 1)
            return
        _native._ops_begun(n)  # a death from here on loses the window: the recorder says so
        window = {
            "reason": reason,
            "first": n,
            "steps": steps,
            "marks": [],
            "note": None,
            "tid": threading.get_native_id(),
            "cuda": False,
        }
        if (
            getattr(self.ap, "_is_profiler_enabled", False)
            or torch._C._autograd._profiler_enabled()
        ):
            self.send(
                window,
                skip="the script ran its own torch.profiler: the window was "
                "skipped (a process runs one profiler at a time)",
            )
            _native._ops_wait(0)
            return
        try:
            cuda, activities, config = _profiler_config(torch)
            window["cuda"] = cuda
            if cuda and not self.cupti_decided:
                self.cupti_decided = True
                kept = release_cupti(torch.version.cuda, os.environ)
                if kept:
                    _native.fact(f"ops.cupti_kept={kept}")
            window["let_go"] = cuda and os.environ.get("TEARDOWN_CUPTI") == "1"
            window["stop_at"] = n + steps + (1 if cuda else 0)
            _quiet(lambda: self.prepare(config, activities))
            window["alloc0"] = self._memory_of(window)
            window["start"] = _native.now_ns()
            _quiet(lambda: self.enable(config, activities))
        except Exception as e:  # noqa: BLE001 - a profiler that can't start: said, not raised
            self.send(window, skip=f"the profiler did not start: {str(e)[:200]}")
            _native._ops_wait(0)
            return
        self.active = window
        window["marks"].append((n, window["start"], *self._memory()))
        _native._ops_wait(n + 1)

    def _memory_of(self, window):
        if not window["cuda"]:
            return -1
        try:
            return self.torch.cuda.memory_allocated()
        except RuntimeError:  # a CUDA error: unknown
            return -1

    def finish(self, skip=None):
        window, self.active = self.active, None
        _native._ops_wait(0)
        window["end"] = _native.now_ns()
        try:
            result, _ = _quiet(self.disable)
        except Exception as e:  # noqa: BLE001 - said in the window sent
            self.send(window, skip=f"the profiler did not stop: {str(e)[:200]}")
            return
        finally:
            if window.get("let_go"):
                self.cupti_let_go_ns = _native.now_ns()
        window["note"] = _window_note(_quiet.last, window["cuda"])
        self.send(window, result=result, skip=skip)

    def at_exit(self):
        """A window under way as the process ends: what it holds is sent."""
        if self.active is not None and self.active["tid"] == threading.get_native_id():
            self.finish(skip="the process ended during the window")

    def send(self, window, result=None, skip=None):
        """Sends the window; one whose events can't be read is sent as
        skipped, with why (a torch whose events differ from ours), so that
        the report says it rather than showing no window at all."""
        try:
            try:
                blob = _blob(self.torch, window, result, skip)
            except Exception as e:  # noqa: BLE001 - said in the window sent
                why = f"the profiler's events could not be read: {type(e).__name__}: {e}"
                blob = _blob(self.torch, window, None, why[:240])
            _native._ops_send(blob)
        except Exception as e:  # noqa: BLE001 - said; the window is lost, the training goes on
            swallowed("sending a capture window", e)


CUPTI_SETTLE_NS = 1_000_000_000  # a window's start this long at least after a let-go
CUPTI_KEPT_BY_ENVIRONMENT = 1  # TEARDOWN_CUPTI set, to something else than 1
CUPTI_KEPT_OLD_CUDA = 2  # a CUDA before 12.6: teardown is not safe with CUDA graphs


def release_cupti(cuda_version, environ):
    """Has Kineto let go of CUPTI at the end of each window on a CUDA device
    (TEARDOWN_CUPTI=1 in environ, for the process's life: Kineto reads it at
    a trace's stop, and again at the next start to re-attach), where the
    environment has not chosen and torch's CUDA is 12.6 or later. Kineto
    leaves CUPTI attached by default, and then every CUDA call of the rest
    of the run pays for its callbacks (10-20 % of a launch-bound step:
    pytorch/pytorch#144455); torch itself asks for it to stay only where
    CUDA graphs meet a CUDA before 12.6, where re-attaching crashed.
    Returns 0 where CUPTI is let go (or the environment already says so),
    else why it stays: CUPTI_KEPT_BY_ENVIRONMENT or CUPTI_KEPT_OLD_CUDA.
    cuda_version: torch.version.cuda (None on a ROCm build: 0, nothing to do)."""
    if not cuda_version:
        return 0
    chosen = environ.get("TEARDOWN_CUPTI")
    if chosen is not None:
        return 0 if chosen == "1" else CUPTI_KEPT_BY_ENVIRONMENT
    try:
        version = tuple(int(x) for x in str(cuda_version).split(".")[:2])
    except ValueError:
        return CUPTI_KEPT_OLD_CUDA  # a version we can't read: left as Kineto has it
    if version < (12, 6):
        return CUPTI_KEPT_OLD_CUDA
    environ["TEARDOWN_CUPTI"] = "1"
    return 0


def _profiler_config(torch):
    """(cuda, activities, config) of a window: the CPU's activity, and the
    CUDA's where the process has initialized CUDA; record_shapes and
    profile_memory (the caching allocator's, on a GPU), no stacks, flops or
    modules: torch.profiler's defaults otherwise."""
    from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
    from torch.autograd import ProfilerConfig, ProfilerState

    cuda = bool(torch.cuda.is_initialized()) and (
        ProfilerActivity.CUDA in torch.autograd._supported_activities()
    )
    activities = {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if cuda else set())
    config = ProfilerConfig(
        ProfilerState.KINETO, True, cuda, False, False, False, _ExperimentalConfig(), ""
    )
    return cuda, activities, config


def _clock_offset():
    """The recorder's clock (CLOCK_MONOTONIC) minus the Unix time Kineto
    stamps its events with, from the closest of three readings."""
    best = None
    for _ in range(3):
        a = _native.now_ns()
        u = time.time_ns()
        b = _native.now_ns()
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2 - u)
    return best[1]


def _blob(torch, window, result, skip):
    """The window as the recorder reads it (src/record/ops_blob.c)."""
    strings, index = [], {}

    def intern(text):
        i = index.get(text)
        if i is None:
            i = index[text] = len(strings)
            strings.append(text.encode("utf-8", "replace")[:1000])
        return i

    intern("")
    events = bytearray()
    count = dropped = 0
    offset = _clock_offset()
    pack = EVENT.pack
    for n, t, alloc, reserved in window["marks"]:
        events += pack(K_STEP, 0, NONE, 0, -1, 0, 0, t, 0, n, alloc, reserved)
        count += 1
    for e in result.events() if result is not None else ():
        kind = _kind_of(e)
        if kind is None:
            continue
        name = e.name()
        if count >= MAX_EVENTS:
            dropped += 1
            continue
        shapes = NONE
        if kind == K_OP:
            s = e.shapes()
            if s and any(s):
                shapes = intern(str(s))
        device = e.device_index()
        value = e.nbytes() if kind == K_MEMORY else 0
        events += pack(
            kind,
            intern(name),
            shapes,
            e.start_thread_id() & 0xFFFFFFFF,
            device,
            0,
            e.device_resource_id() if kind in (K_KERNEL, K_MEMCPY, K_MEMSET) else 0,
            e.start_ns() + offset,
            max(0, e.duration_ns()),
            e.correlation_id(),
            e.linked_correlation_id(),
            value,
        )
        count += 1
    note = skip or window.get("note")
    device_memory = 0
    if window.get("cuda"):
        try:
            device_memory = torch.cuda.get_device_properties(
                torch.cuda.current_device()
            ).total_memory
        except RuntimeError:  # a CUDA error: unknown
            device_memory = 0
    note_index = intern(note) if note else NONE
    table = b"".join(struct.pack("<I", len(s)) + s for s in strings)
    header = HEADER.pack(
        MAGIC,
        VERSION,
        window["reason"],
        window["steps"],
        window["first"],
        window["tid"],
        FLAG_CUDA if window.get("cuda") else 0,
        window.get("start", 0),
        window.get("end", window.get("start", 0)),
        len(strings),
        len(table),
        count,
        dropped,
        device_memory,
        window.get("alloc0", -1),
        note_index,
        1 if skip and result is None else 0,
    )
    return header + table + bytes(events)


def install(torch):
    """Starts answering the recorder's capture requests in this process
    (under `trainprof record`, unless TRAINPROF_OPS=0)."""
    if os.environ.get("TRAINPROF_OPS", "1") == "0" or not os.environ.get("TRAINPROF_SOCKET"):
        return None
    if not hasattr(os, "memfd_create"):
        return None
    capture = Capture(torch)
    _native._ops_hook(capture.hook)
    atexit.register(capture.at_exit)
    return capture
