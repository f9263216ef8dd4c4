"""The Python API: regions, steps and epochs from real Python processes."""

import os
import signal
import sqlite3
import subprocess
import textwrap
import time

import pytest
import trainprof as tp
from conftest import PROGRAM, PYTHON, report_json, trainprof


def test_outside_record_is_a_no_op():
    assert tp.active() is False
    with tp.region("x") as r:
        assert r is tp.region("x")  # one object per name
    assert r.name == "x" and repr(r) == "trainprof.region('x')"

    @tp.region("double")
    def double(v):
        """Doubles v."""
        return 2 * v

    assert double(21) == 42 and double.__name__ == "double" and "Doubles" in double.__doc__
    tp.step()
    tp.epoch(3)
    assert tp.dropped() == 0


def test_bad_names_are_refused():
    import pytest

    with pytest.raises(TypeError, match="region name must be a str"):
        tp.region(42)
    with pytest.raises(TypeError):
        tp.region("x")(1, 2)
    from trainprof import _native

    with pytest.raises(TypeError, match="device_time.. takes a trainprof.Region"):
        _native.device_time("x", 1, 2)
    with pytest.raises(OverflowError):
        _native.device_time(tp.region("x"), 1, -5)
    # facts: malformed, and a key lib/facts.h does not list (a rename on one side only)
    with pytest.raises(ValueError):
        _native.fact("Model.Dtype=x")
    with pytest.raises(KeyError, match="model.dtypes is not a key"):
        _native.fact("model.dtypes=float32")
    assert _native.fact("model.dtype=float32") is False  # known, and no recorder to take it
    # the patches' C helpers (_timed_method.c, _per_thread.c)
    with pytest.raises(TypeError, match="timed_method.method, region"):
        _native.timed_method(len, "x")
    with pytest.raises(TypeError, match="takes a callable"):
        _native.timed_method(42, tp.region("x"))
    with pytest.raises(TypeError, match="to_filter"):
        _native.to_filter(len, len)
    with pytest.raises(TypeError, match="to_filter"):
        _native.to_filter(len, len, "not a type")
    with pytest.raises(TypeError):
        _native.per_thread([])  # unhashable: no key in the thread's dict
    with pytest.raises(TypeError):
        _native.per_thread(42)  # hashable, but nothing to call


def test_per_thread_gives_each_thread_its_own_instance():
    import threading

    from trainprof import _native

    class State:
        __slots__ = ("n",)

        def __init__(self):
            self.n = 0

    mine = _native.per_thread(State)
    mine.n = 7
    assert _native.per_thread(State) is mine  # one per thread, kept
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(_native.per_thread(State)))
    t.start()
    t.join()
    assert theirs[0] is not mine and theirs[0].n == 0


def run_script(run_file, code, env=None, timeout=120):
    script = run_file.parent / "script.py"
    script.write_text(textwrap.dedent(code))
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return report_json(run_file)


def rows(rep):
    return {(t["name"], t["rank"]): t for t in rep["timings"]}


def test_regions_threads_steps_epochs(run_file):
    rep = run_script(
        run_file,
        """
        import threading, time, trainprof
        assert trainprof.active()
        @trainprof.region("evaluate")
        def evaluate():
            time.sleep(0.001)
        def worker():
            for _ in range(30):
                with trainprof.region("background"):
                    pass
        threads = [threading.Thread(target=worker) for _ in range(2)]
        [t.start() for t in threads]
        for e in range(2):
            trainprof.epoch(e)
            for _ in range(10):
                trainprof.step()
                with trainprof.region("augment"):
                    with trainprof.region("inner"):
                        time.sleep(0.001)
                evaluate()
        [t.join() for t in threads]
        trainprof.step()
    """,
    )
    r = rows(rep)
    assert r[("augment", -1)]["count"] == 20 and r[("inner", -1)]["count"] == 20
    assert r[("evaluate", -1)]["count"] == 20 and r[("evaluate", -1)]["mean_s"] >= 0.001
    assert r[("background", -1)]["count"] == 60
    assert rep["timing_threads"] == 3
    assert rep["steps"][0]["count"] == 19
    assert [e["steps"] for e in rep["epochs"]] == [9, 10]


def test_forked_and_spawned_workers(run_file):
    rep = run_script(
        run_file,
        """
        import multiprocessing as mp, trainprof
        def work(i):
            with trainprof.region("in_worker"):
                return i * i
        if __name__ == "__main__":
            with trainprof.region("main"):
                for method in ("fork", "spawn"):
                    with mp.get_context(method).Pool(2) as pool:
                        assert pool.map(work, range(8)) == [i * i for i in range(8)]
    """,
    )
    r = rows(rep)
    assert r[("in_worker", -1)]["count"] == 16
    assert r[("main", -1)]["count"] == 1
    assert rep["timing_threads"] >= 3  # the main process and at least two workers


def test_a_killed_training_keeps_its_events(run_file, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(
        textwrap.dedent("""
        import os, time, trainprof
        print(os.getpid(), flush=True)
        while True:
            with trainprof.region("work"):
                time.sleep(0.01)
    """)
    )
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "-o", run_file, "--", PYTHON, script],
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(p.stdout.readline())
    time.sleep(2)
    os.kill(child, signal.SIGKILL)
    assert p.wait(timeout=20) == 128 + signal.SIGKILL
    rep = report_json(run_file)
    work = rows(rep)[("work", -1)]
    assert work["count"] >= 100  # ~2 s of 10 ms regions, up to the kill


def test_tight_loop_drops_and_counts_without_blocking(run_file):
    rep = run_script(
        run_file,
        """
        import trainprof
        for _ in range(200000):
            with trainprof.region("tight"):
                pass
        assert trainprof.dropped() > 0
        print(trainprof.dropped())
    """,
        env={"TRAINPROF_RING_SLOTS": "64"},
    )
    assert rep["dropped_events"] > 0
    assert rows(rep)[("tight", -1)]["count"] < 200000


def test_ranks_under_torchrun(run_file):
    rep = run_script(
        run_file,
        """
        import os, sys, subprocess
        if os.environ.get("RANK") is None:
            env = [dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r)) for r in range(2)]
            procs = [subprocess.Popen([sys.executable, __file__], env=e) for e in env]
            sys.exit(max(p.wait() for p in procs))
        import trainprof
        for _ in range(5):
            with trainprof.region("rank_work"):
                pass
    """,
    )
    r = rows(rep)
    assert r[("rank_work", 0)]["count"] == 5 and r[("rank_work", 1)]["count"] == 5


def test_what_trainprof_swallows_inside_the_training_is_said_once(capsys):
    """A failure trainprof catches so that the training goes on is one
    warning line on stderr for each place, never an exception, never again."""
    from trainprof.startup.swallowed import swallowed

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no words")

    swallowed("noting the DataLoader's settings", ValueError("bad\nsize"))
    swallowed("noting the DataLoader's settings", ValueError("again"))
    swallowed("sending a capture window", Unprintable())  # no words to be had: not raised
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "trainprof: warning: noting the DataLoader's settings failed (ValueError: bad size); "
        "the training goes on without it"
    ]


def test_a_module_probed_before_its_import_is_still_followed():
    """trainprof.startup.after_import: a find_spec alone (an availability
    check, as Lightning's RequirementCache or transformers' is_X_available
    make before importing) runs nothing and leaves the callback waiting for
    the real import, which runs it once."""
    code = textwrap.dedent(
        """
        import importlib.util, sys
        from trainprof.startup.after_import import after_import
        seen = []
        after_import("colorsys", lambda m: seen.append(m.__name__))
        assert "colorsys" not in sys.modules
        assert importlib.util.find_spec("colorsys") is not None and seen == []
        import colorsys
        import colorsys
        print(seen)
        """
    )
    r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['colorsys']\n"


# A region between two monotonic reads, and a span of those two reads: the
# region's own stamps (the TSC, where the kernel keeps time by it) must map
# inside the span, every time.
NESTED = """
import time
from trainprof import _native as n
inner, outer = n.region("inner"), n.region("outer")
for i in range(3000):
    t0 = n.now_ns()
    n.begin(inner); n.end(inner)
    t1 = n.now_ns()
    n.span(outer, t0, t1)
    if i % 100 == 0:
        time.sleep(0.01)  # the recorder's drain passes refresh its map meanwhile
"""


@pytest.mark.parametrize("tsc", ["1", "0"])
def test_a_region_s_own_stamps_fall_between_the_clock_reads_around_it(run_file, tsc):
    """TSC stamps mapped to the monotonic clock by the recorder, or the
    monotonic clock itself (TRAINPROF_TSC=0): both place each region inside
    the two monotonic reads that enclosed it."""
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, "-c", NESTED,
                  env={"TRAINPROF_TSC": tsc})  # fmt: skip
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(run_file) as db:
        rows = db.execute(
            "SELECT n.text, r.start_ns, r.end_ns FROM region r JOIN name n ON n.id = r.name_id"
            " WHERE n.text IN ('inner', 'outer') ORDER BY r.start_ns"
        ).fetchall()
    inner = [(s, e) for name, s, e in rows if name == "inner"]
    outer = [(s, e) for name, s, e in rows if name == "outer"]
    assert len(inner) == len(outer) == 3000
    outside = [(i, o) for i, o in zip(inner, outer) if i[0] < o[0] or i[1] > o[1] or i[1] < i[0]]
    assert not outside, outside[:5]
