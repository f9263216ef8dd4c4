"""Shared helpers for the end-to-end tests: run the real trainprof program."""

import json
import os
import pathlib
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAM = os.path.abspath(os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof")))
FAKE_NVML = os.environ.get("FAKE_NVML_LIB", str(ROOT / "build" / "tests" / "libfake_nvml.so"))
# the small instrumented C program of the scenarios (tests/unit/emit_events.c)
EMIT = os.environ.get("EMIT_EVENTS", str(ROOT / "build" / "tests" / "emit_events"))
PYTHON = sys.executable

# Trainings side by side (pytest-xdist's workers, as `make test-py-spread`
# runs them): each on one intra-op thread where the environment says none,
# not a pool of two spinning between operations on the core another one
# needs; the Makefile sets it, and so does a run of pytest -n by hand.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# The tests send the programs they start SIGINT and expect its default action
# (or the program's own handler). A job started in the background by a shell
# without job control ignores SIGINT (POSIX), and an ignored signal stays
# ignored across exec: an interrupted export would then run on to its end.
# Caught here instead, SIGINT is the default again in every program this
# process starts.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # an int, not the enum
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The test modules' rewritten asserts are cached (tests/py/__pycache__) where
# the environment says to write no bytecode (PYTHONDONTWRITEBYTECODE, as on
# the CI machine): rewriting them took 4 of every collection's 8 CPU-seconds,
# in each xdist worker and again for the serial stage. Only this process:
# the programs the tests start keep the environment's setting.
sys.dont_write_bytecode = False


def needs(*modules):
    """Skips the calling test module unless every one of modules is
    installed, importing none of them: pytest.importorskip("lightning")
    costs 3.5 s at every collection, in each xdist worker and again for the
    serial stage."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}", allow_module_level=True)


def lazily(name):
    """Module name, imported at the first use of one of its attributes (the
    calling test module is skipped where it is not installed): torch costs
    1.6 CPU-seconds, mlflow 1.3, at every collection of a module that
    imports it, in each xdist worker and again for the serial stage, where
    only the worker that runs its tests needs it. For reading attributes:
    monkeypatch.setattr on it would patch the stand-in, not the module."""
    import importlib
    import types

    needs(name)

    class Lazy(types.ModuleType):
        def __getattr__(self, attr):
            # what collection asks of every module-level name (__wrapped__,
            # __test__, __bases__, _mock_name) is not there, unimported
            if attr.startswith(("__", "_mock")):
                raise AttributeError(attr)
            return getattr(importlib.import_module(name), attr)

    return Lazy(name)


def _busy_cpu_seconds():
    """The machine's busy CPU time so far, seconds (all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # user .. steal, less idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    """CPU time of this test process and every descendant it has waited for."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# Tests that judge the machine's load bring their own conditions (CPU burners,
# or none beside them: OthersCpu) and run alone, after the rest, which runs on
# every core (make test-py; docs/contributing.md). A test is one of them when
# its code (not its comments or docstring) names OthersCpu or burners, or it
# or its module is marked pytest.mark.machine.
MACHINE_WORDS = ("OthersCpu", "burners")


def names_in_code(fn):
    """The identifiers a function's code uses (names, attributes, keyword
    arguments), none of its comments' or strings' words."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
    return names


def pytest_configure(config):
    config.pluginmanager.register(MachineRerun(), "machine_rerun")
    config.addinivalue_line(
        "markers", "machine: judges the machine's load; run alone (make test-py's serial part)"
    )
    config.addinivalue_line(
        "markers",
        "waits: its tests mostly wait (sleeps, timeouts, servers); sent to a worker early, beside one that computes",
    )


# The CPU-seconds each file's tests took in the spread stage of a CI run on the
# 2-core VM (TEST_CPU_LOG, 2026-11-29), those over 10: the order's key below.
# A file not listed counts as light; the figures need only rank the files.
SPREAD_COST = {
    "test_ops.py": 72,
    "test_distributed.py": 71,
    "test_trackers.py": 60,
    "test_frameworks.py": 52,
    "test_loops.py": 35,
    "test_torch.py": 34,
    "test_own_cost.py": 29,
    "test_torch_steps.py": 25,
    "test_lightning.py": 24,
    "test_fleet.py": 24,
    "test_pace.py": 23,
    "test_stacks_cpython.py": 21,
    "test_bottleneck.py": 20,
    "test_training_untouched.py": 18,
    "test_loader_wrappers.py": 15,
    "test_parquet_hostile.py": 12,
    "test_stacks_sandbox.py": 10,
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        fn = getattr(item, "function", None)
        names = names_in_code(fn) if fn else set()
        if any(w in name for w in MACHINE_WORDS for name in names):
            item.add_marker(pytest.mark.machine)
    # The files whose tests mostly wait early, each followed by one whose tests
    # keep a CPU busy, then the rest, heaviest first: xdist (with
    # --no-loadscope-reorder) hands the files out in this order. Early on the C
    # builds beside (make test-beside) take the CPU they leave; at the end of
    # the stage, with the builds done, tests that wait would leave it idle
    # (75 s at 5 to 50 % of two cores before this order), and two workers
    # waiting at once left it idle too, beside C tests that wait.
    waiting = {item.path for item in items if item.get_closest_marker("waits")}
    files = list(dict.fromkeys(item.path for item in items))
    waits = [f for f in files if f in waiting]
    # the files that compute most first, the light ones last: in alphabetical
    # order the trackers' file (60 CPU-seconds) came last, and one core stood
    # idle for the last 20 s of the stage while its last test ran
    busy = sorted((f for f in files if f not in waiting), key=lambda f: -SPREAD_COST.get(f.name, 0))
    order = [f for pair in zip(waits, busy) for f in pair]
    order += waits[len(busy) :] + busy[len(waits) :]
    rank = {f: i for i, f in enumerate(order)}
    items.sort(key=lambda item: rank[item.path])  # stable within a file


# TEST_CPU_LOG=FILE: each test's CPU time (its process and the programs it
# waited for), wall time, end (Unix time) and worker, appended to FILE as
# "cpu_s wall_s end_s worker nodeid" lines (one writer per xdist worker, each
# line whole). On a machine the suite keeps busy, CPU time is what a test
# costs the others; the ends show what each worker did when (docs/contributing.md).
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    log = os.environ.get("TEST_CPU_LOG")
    if not log:
        yield
        return
    import time

    cpu, wall = _own_cpu_seconds(), time.monotonic()
    yield
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = (
        f"{_own_cpu_seconds() - cpu:.2f} {time.monotonic() - wall:.2f} {time.time():.0f}"
        f" {worker} {item.nodeid}\n"
    )
    with open(log, "a") as f:
        f.write(line)


# A test that judges the machine brings its conditions (its burners, or
# none), but a VM's host can take the CPUs away (steal) at any time: 20-23 %
# over the runs in which test_pace found its change of pace 15 and 71 steps
# from where the script made it (2026-12-03, their reports show it; 2 of 17
# runs that day, one alone in CI and one here). Such a test
# that fails while the host stole STEAL_RERUN of the CPU time or more is run
# once more, and the terminal says so; one that fails again fails. By hand,
# not pytest-rerunfailures: whether to run again depends on what the host
# did during the run, which its markers can't say before it.
STEAL_RERUN = 0.05


def _steal_and_total_ticks():
    """The machine's steal and total CPU ticks so far (/proc/stat's cpu line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]  # user .. steal
    return fields[7], sum(fields)


class MachineRerun:
    """The plugin that runs a machine test once more (above); registered
    apart from this module's own pytest_runtest_protocol, which wraps it."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if item.get_closest_marker("machine") is None:
            return None
        from _pytest.runner import runtestprotocol

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for attempt in (1, 2):
            steal, total = _steal_and_total_ticks()
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            steal2, total2 = _steal_and_total_ticks()
            stolen = (steal2 - steal) / (total2 - total) if total2 > total else 0.0
            if attempt == 2 or not any(r.failed for r in reports) or stolen < STEAL_RERUN:
                break
            said = f"{item.nodeid}: failed while the VM's host stole {stolen:.0%} of the CPU; once more"
            reporter = item.config.pluginmanager.get_plugin("terminalreporter")
            if reporter:
                reporter.write_line(said)
            for r in reports:
                if r.failed:  # what the first run said, in the second's report
                    item.add_report_section("call", "first run", f"{said}\n{r.longreprtext}")
        for r in reports:
            item.ihook.pytest_runtest_logreport(report=r)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


class OthersCpu:
    """The CPUs that processes other than the test's own kept busy while the
    block ran, on average (0 on an idle machine, about 2 beside two
    burners): a test that judges the machine asserts what fits it (its own
    verdict of contention where others competed) instead of assuming an
    idle one."""

    def __enter__(self):
        import time

        self._t, self._busy, self._own = time.monotonic(), _busy_cpu_seconds(), _own_cpu_seconds()
        self.cpus = 0.0
        return self

    def __exit__(self, *exc):
        import time

        elapsed = time.monotonic() - self._t
        others = (_busy_cpu_seconds() - self._busy) - (_own_cpu_seconds() - self._own)
        self.cpus = max(0.0, others) / elapsed if elapsed > 0 else 0.0
        return False

    @property
    def busy(self):
        """Others kept half a CPU or more busy: the machine was not idle."""
        return self.cpus >= 0.5


def record_burning_from_flag(args, env, flag, burners, timeout=240):
    """Runs `trainprof record ARGS` with env; once the recorded program has
    written flag (at the step it chooses), starts that many CPU burners
    beside it (processes outside the recorded command) until the recording
    ends. With none, just records. Asserts the recording succeeded."""
    import time

    rec = subprocess.Popen([PROGRAM, "record", *map(str, args)], env=env)
    burning = []
    try:
        deadline = time.monotonic() + 120
        while burners and not flag.exists() and rec.poll() is None:
            assert time.monotonic() < deadline, "the program never wrote its flag"
            time.sleep(0.005)
        burning = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)
        ]
        assert rec.wait(timeout=timeout) == 0
    finally:
        for b in burning:
            b.kill()
            b.wait()
        if rec.poll() is None:
            rec.kill()
            rec.wait()


def meta(run_file, key):
    """The run file's meta value of key (a fact: "fact.<name>"), else None."""
    with sqlite3.connect(run_file) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row and row[0]


def trainprof(*args, env=None, timeout=120, **kw):
    """Runs trainprof with args; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("TRAINPROF_NVML_LIB", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [PROGRAM, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        **kw,
    )


def run_on_a_terminal(argv, timeout=60, columns=None):
    """Runs argv with its stderr on a pseudo-terminal (stdout discarded), as
    a person at a terminal would, columns wide where given (else the
    terminal says no width); returns (exit status, what it wrote)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    if columns:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    p = subprocess.Popen(list(map(str, argv)), stderr=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    rc = p.wait(timeout=timeout)
    os.close(master)
    return rc, out.decode(errors="replace")


def keep(path):
    """Copies a run file to TRAINPROF_GPU_OUT, where tools/gpu-check.sh
    gathers the GPU tests' results (nothing elsewhere)."""
    out = os.environ.get("TRAINPROF_GPU_OUT")
    if out:
        shutil.copy(path, os.path.join(out, os.path.basename(path)))


def is_stdlib(file):
    """A frame's file is this interpreter's standard library (the trainings'
    interpreter is this one): a frozen module or one under its stdlib path."""
    import sysconfig

    return file.startswith("<frozen ") or file.startswith(sysconfig.get_paths()["stdlib"] + "/")


def words(text):
    """A text output as its words, one space apart: the report wraps its
    lines at a fixed width, so a phrase breaks wherever the words before it
    (pids, paths, times, the causes named first) make it fall."""
    return " ".join(text.split())


def in_short(text):
    """The "In short" block of a text report as its words (see words)."""
    return words(text.split("In short\n", 1)[1].split("\n\n", 1)[0])


def free_port():
    """A TCP port on loopback that no one listens on now (a master port of its own
    for each distributed test: a fixed one collides with anything left there)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_ranks(ranks, *argv):
    """The command that starts `ranks` ranks of argv as a batch scheduler does
    (programs/launch_ranks.sh), for the tests that are not about torchrun:
    its agent imports torch once more, and a two-rank DDP training under
    `record` took 5.1 CPU-seconds through torchrun and 3.8 so (3.6 s and
    2.7 s)."""
    launcher = pathlib.Path(__file__).parent / "programs" / "launch_ranks.sh"
    return ("bash", launcher, str(ranks), str(free_port()), *argv)


def report_json(*paths):
    """The JSON report of one run file, or of several read together."""
    r = trainprof("report", "--json", *paths)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def metric(report, name, labels=None, agent=0):
    """The summary of one series in a report, or None."""
    for m in report["agents"][agent]["metrics"]:
        if m["name"] == name and m["labels"] == (labels or {}):
            return m
    return None


def samples(path, name, labels="{}"):
    """(t_s, value) pairs of one series, read straight from the run file."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT t_ns, value FROM samples WHERE metric = ? AND labels = ? ORDER BY t_ns",
            (name, labels),
        ).fetchall()
    return [(t / 1e9, v) for t, v in rows]


@pytest.fixture
def run_file(tmp_path):
    return tmp_path / "run.db"


def killed_recording(path, after_s=1.6, recorded=True):
    """A run file whose recorder was SIGKILLed after_s seconds into `sleep 30`,
    and (recorded) once it had committed samples: on a loaded machine its first
    commit can come later than after_s (a CI run's killed file held none)."""
    import time

    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "--interval", "0.1", "-o", str(path), "--", "sleep", "30"]
    )
    time.sleep(after_s)
    for _ in range(150 if recorded else 0):
        if committed_samples(path, "cpu_util_percent"):
            break
        time.sleep(0.1)
    kill_with_children(p)
    return path


def committed_samples(path, name):
    """samples(path, name) as a recording has committed them so far: none
    where the file is not made yet or its schema not committed yet."""
    try:
        return samples(path, name)
    except sqlite3.Error:
        return []


def kill_with_children(p):
    """SIGKILLs a recorder, then the command it left orphaned (only that one)."""
    import signal

    children = subprocess.run(
        ["pgrep", "-P", str(p.pid)], capture_output=True, text=True
    ).stdout.split()
    p.send_signal(signal.SIGKILL)
    p.wait()
    for child in children:
        try:
            os.kill(int(child), signal.SIGKILL)
        except ProcessLookupError:
            pass


def report_from_rows(path, tmp_path):
    """The JSON report of a copy of path with its stored summary set aside,
    so that every figure is computed from the samples, regions and marks."""
    import shutil
    import sqlite3

    raw = tmp_path / ("rows-" + pathlib.Path(path).name)
    for stale in (raw, pathlib.Path(f"{raw}-wal"), pathlib.Path(f"{raw}-shm")):
        stale.unlink(missing_ok=True)  # an earlier copy's
    shutil.copyfile(path, raw)
    wal = pathlib.Path(f"{path}-wal")  # a killed recorder's last commits
    if wal.exists():
        shutil.copyfile(wal, f"{raw}-wal")
    db = sqlite3.connect(raw)
    with db:
        db.execute("DELETE FROM meta WHERE key IN ('summarized', 'summary_by')")
    db.close()
    rep = report_json(raw)
    rep["run"]["path"] = str(path)
    return rep


def assert_same_report(stored, rows):
    """Reports from the stored summary and from the rows agree to the bit."""
    assert stored["run"]["meta"].pop("summarized") == "1"
    assert len(stored["run"]["meta"].pop("summary_by")) == 16  # the analysis that made it
    if "plots" not in rows["run"]["meta"]:  # stored with the summary (html's plots)
        assert stored["run"]["meta"].pop("plots") == "1"
    if "stalls_stored" not in rows["run"]["meta"]:  # ... and the stalls
        assert stored["run"]["meta"].pop("stalls_stored") == "1"
    assert stored == rows


def batches_per_step(run_file):
    """Each closed step's samples marks, in the order of the steps: what the
    recording holds before any figure averages it."""
    with sqlite3.connect(run_file) as db:
        rows = db.execute(
            "SELECT kind, value FROM marks WHERE kind IN ('step', 'samples', 'epoch')"
            " ORDER BY t_ns, rowid"
        ).fetchall()
    counts, current = [], None
    for kind, value in rows:
        if kind == "samples" and current is not None:
            current.append(value)
        elif kind in ("step", "epoch"):
            if current:
                counts.append(current)
            current = [] if kind == "step" else None
    if current:
        counts.append(current)
    return counts
