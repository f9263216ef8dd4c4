"""The stack walker against its oracles: py-spy's top functions on the same
training, and every CPython installed here (the walker reads what the
interpreter itself says, and record samples each)."""

import glob
import json
import os
import re
import shutil
import subprocess
import textwrap

import pytest
from conftest import PYTHON, ROOT, report_json, trainprof
from test_stacks import HOT, group


@pytest.mark.skipif(
    not shutil.which("py-spy", path=os.path.dirname(PYTHON)),
    reason="py-spy is not installed (tools/bootstrap.sh installs it)",
)
def test_the_same_top_functions_as_py_spy(tmp_path):
    """py-spy samples the same execution of the script while trainprof
    records it: both see the same hot functions, in about the same
    proportion (of the samples on a CPU). One execution for both, so that
    whatever else the machine runs (CPU burners) weighs on both alike."""
    script = tmp_path / "hot.py"
    script.write_text(HOT)
    raw = tmp_path / "spy.txt"
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--stacks",
        "100",
        "--",
        os.path.join(os.path.dirname(PYTHON), "py-spy"),
        "record",
        "-r",
        "100",
        "--format",
        "raw",
        "-o",
        raw,
        "--",
        PYTHON,
        script,
        "4",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    spy = {}
    for line in raw.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        leaf = stack.split(";")[-1].split(" (")[0]
        spy[leaf] = spy.get(leaf, 0) + int(count)
    ours = {}
    for g in report_json(run)["stacks"]:
        if g["phase"] in ("load", "compute"):
            for f in g["functions"]:
                ours[f["function"]] = ours.get(f["function"], 0) + f["self_share"] * g["samples"]
    hot = ("parse_records", "matmul_by_hand")
    assert max(spy, key=spy.get) == max(ours, key=ours.get) == "matmul_by_hand"
    spy_share = spy["parse_records"] / sum(spy[h] for h in hot)
    our_share = ours["parse_records"] / sum(ours[h] for h in hot)
    assert abs(spy_share - our_share) < 0.1, (spy_share, our_share)


WALK = textwrap.dedent("""
    import sys, threading, time, traceback
    import _native

    def blocked_here(ev):
        ev.wait()

    def recurse(n, ev):
        return blocked_here(ev) if n == 0 else recurse(n - 1, ev)

    ev = threading.Event()
    threads = [threading.Thread(target=blocked_here, args=(ev,)),
               threading.Thread(target=recurse, args=(40, ev))]
    for t in threads: t.start()
    time.sleep(0.2)
    snap = {ident: (tid, stack) for ident, tid, _, stack in _native._stack_snapshot()}
    frames = sys._current_frames()
    for t in threads:
        want = [(f.f_code.co_name, f.f_code.co_filename, line)
                for f, line in traceback.walk_stack(frames[t.ident])]
        tid, got = snap[t.ident]
        assert [g[0].split(".")[-1] for g in got] == [w[0] for w in want], (got, want)
        assert [(g[1], g[2]) for g in got] == [(w[1], w[2]) for w in want], (got, want)
        assert tid == (t.native_id if sys.version_info >= (3, 11) else 0)
    ev.set()
    for t in threads: t.join()
    def short(): sum(range(1000))
    for _ in range(200):   # threads come and go while the walker reads them
        ts = [threading.Thread(target=short) for _ in range(4)]
        for t in ts: t.start()
        _native._stack_snapshot()
        for t in ts: t.join()

    # a frame stopped at an instruction the compiler gave no line (3.10,
    # 3.11: the outer loop's jump back; a signal is handled there): the
    # line it last was in, as the line table has it, never 0
    import dis, itertools, signal
    def spin(items):
        for x in items:
            if x:
                for y in x:
                    pass
    class Done(Exception): pass
    held, release, seen = threading.Event(), threading.Event(), {}
    def handler(signum, frame):
        seen["frame"] = frame
        held.set(); release.wait()
        raise Done
    def look():
        held.wait()
        snap = {ident: stack for ident, _, _, stack in _native._stack_snapshot()}
        seen["stack"] = snap[threading.main_thread().ident]
        release.set()
    signal.signal(signal.SIGALRM, handler)
    looker = threading.Thread(target=look); looker.start()
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    try:
        spin(itertools.repeat(iter(())))  # truthy, and empty: one jump back a turn
    except Done:
        pass
    looker.join()
    f = seen["frame"]
    want = f.f_lineno or max(l for o, l in dis.findlinestarts(f.f_code) if o <= f.f_lasti)
    got = [line for function, _, line in seen["stack"] if function.endswith("spin")]
    assert got == [want] and want > 0, (got, want, f.f_lasti)
    print("same", sys.version_info[:2])
""")


def cpythons():
    found = []
    for exe in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3.*")):
        if re.search(r"python3\.(9|1[0-5])$", exe):
            found.append(exe)
    return found or [PYTHON]


@pytest.fixture(scope="module")
def extension_of(tmp_path_factory):
    """python -> trainprof's extension compiled for it, once for this module's
    tests (None: that python has no internal headers)."""
    built = {}

    def get(python):
        if python not in built:
            built[python] = compile_extension(python, tmp_path_factory.mktemp("extension"))
        return built[python]

    return get


def compile_extension(python, where):
    """trainprof's extension compiled for python into where (None: that
    python has no internal headers)."""
    paths = json.loads(
        subprocess.run(
            [
                python,
                "-c",
                "import json, sysconfig; print(json.dumps([sysconfig.get_paths()"
                "['include'], sysconfig.get_config_var('EXT_SUFFIX')]))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    if not os.path.exists(os.path.join(paths[0], "internal")):
        return None
    module = where / f"_native{paths[1]}"
    sources = [  # the extension's, as meson.build lists them
        *glob.glob(str(ROOT / "python" / "trainprof" / "*.c")),
        *glob.glob(str(ROOT / "lib" / "*.c")),
    ]
    subprocess.run(
        [
            "cc",
            "-std=gnu11",
            "-D_GNU_SOURCE",
            "-O1",
            "-fPIC",
            "-shared",
            "-I",
            ROOT / "include",
            "-I",
            ROOT / "lib",
            "-I",
            ROOT / "build",
            "-I",
            paths[0],
            "-o",
            module,
            *sources,
            "-lpthread",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return module


@pytest.mark.parametrize("python", cpythons(), ids=lambda p: os.path.basename(p))
def test_the_walker_reads_what_the_interpreter_says(tmp_path, python, extension_of):
    """The extension built for each CPython here reads every thread's stack
    as sys._current_frames() gives it: functions, files and lines."""
    if not extension_of(python):
        pytest.skip(f"{python} has no internal headers")
    shutil.copy(extension_of(python), tmp_path)
    (tmp_path / "walk.py").write_text(WALK)
    r = subprocess.run(
        [python, "walk.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "same" in r.stdout, r.stderr


@pytest.mark.parametrize("python", cpythons(), ids=lambda p: os.path.basename(p))
def test_record_samples_every_cpython(tmp_path, python, extension_of):
    """`record` of a plain-Python script under each CPython here: trainprof
    installed into a virtual environment of that interpreter (its extension
    built for it, the package and the autoload), the hot functions found in
    their phases."""
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    site = next(venv.glob("lib/python3*/site-packages"))
    package = site / "trainprof"
    shutil.copytree(
        ROOT / "python" / "trainprof",
        package,
        ignore=shutil.ignore_patterns("*.c", "*.h", "*.in", "__pycache__"),
    )
    shutil.copy(ROOT / "build" / "_version.py", package / "_version.py")
    shutil.copy(ROOT / "python" / "trainprof-autoload.pth", site)
    if not extension_of(python):
        pytest.skip(f"{python} has no internal headers")
    shutil.copy(extension_of(python), package)
    script = tmp_path / "hot.py"
    script.write_text(HOT)
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--stacks",
        "200",
        "--",
        venv / "bin" / "python",
        script,
        "1",
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    report = report_json(run)
    # once in a loaded spread stage (python3.10), load's first function was
    # <module>: the message carries each phase's samples and functions
    for phase, hot in (("load", "parse_records"), ("compute", "matmul_by_hand")):
        g = group(report, phase)
        seen = [(f["function"], f["line"], round(f["self_share"], 3)) for f in g["functions"]]
        assert g["functions"][0]["function"] == hot, (phase, g["samples"], seen)


# 200 threads blocked on an Event and the main thread busy: the idle ones
# are read once, then stand by their last sample (their CPU time does not
# move), in a few rows each whatever the run's length, with as many samples
# in weight as the busy thread.
