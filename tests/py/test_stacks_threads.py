"""Sampled stacks of threads that wait: idle pools walked once and kept in few
rows, a training thread that waited long sampled as soon as it works, and a
second thread state that shares the main thread's ids."""

import json
import sqlite3
import textwrap

from conftest import PYTHON, trainprof
from test_stacks import record

IDLE_POOL = textwrap.dedent("""
    import json, sys, threading, time, trainprof
    from trainprof import _native
    ev = threading.Event()
    pool = [threading.Thread(target=ev.wait, name=f"idle-{i}") for i in range(200)]
    for t in pool:
        t.start()
    def spin(n):
        x = 0
        for i in range(n):
            x += i
        return x
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        trainprof.step()
        with trainprof.region("compute"):
            spin(30000)
    rounds, reads, repeats = _native._stack_sampler_counts()
    ev.set()
    for t in pool:
        t.join()
    json.dump({"rounds": rounds, "reads": reads, "repeats": repeats}, open(sys.argv[2], "w"))
""")


def test_idle_threads_are_not_walked_again_and_keep_few_rows(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(IDLE_POOL)
    counts = tmp_path / "counts.json"
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", "-o", run, "--stacks", "100", "--", PYTHON, script, "4", counts, timeout=300
    )
    assert r.returncode == 0, r.stderr
    c = json.loads(counts.read_text())
    assert c["rounds"] >= 100, c
    # a walk of every thread every round would read 201 stacks a round; the
    # idle ones are read about once, the busy one every round
    assert c["reads"] < 3 * c["rounds"] + 2 * 201, c
    assert c["repeats"] > 0, c
    with sqlite3.connect(run) as db:
        per_thread = db.execute(
            "SELECT s.tid, COUNT(*), SUM(s.count) FROM stack_sample s JOIN stack_node n"
            " ON n.id = s.node_id JOIN frame f ON f.id = n.frame_id"
            " WHERE f.file LIKE '%threading.py' GROUP BY s.tid"
        ).fetchall()
        busy = db.execute(
            "SELECT SUM(s.count) FROM stack_sample s JOIN name p ON p.id = s.phase_id"
            " WHERE p.text = 'compute'"
        ).fetchone()[0]
    assert len(per_thread) >= 190, len(per_thread)
    rows = sorted(n for _, n, _ in per_thread)
    assert rows[len(rows) // 2] <= 2, rows  # one run each, whatever its length
    weights = sorted(w for _, _, w in per_thread)
    # each idle thread stands for about as many rounds as the busy one was sampled
    assert 0.6 * busy <= weights[len(weights) // 2] <= 1.6 * busy, (weights[:5], busy)


# A training thread that waits long (the first batch, a barrier) is looked at
# less often while it waits; when it then works, the sampler must see it
# within a tenth of a second: twice, a 3 s wait and then 0.3 s of work, each
# burst in its own region.
WAIT_THEN_WORK = textwrap.dedent("""
    import sys, time, trainprof
    def spin(n):
        x = 0
        for i in range(n):
            x += i
        return x
    for burst in ("first", "second"):
        with trainprof.region("wait"):
            time.sleep(3)
        end = time.time() + 0.3
        while time.time() < end:
            trainprof.step()
            with trainprof.region(burst):
                spin(20000)
""")


def test_a_training_thread_that_waited_long_is_sampled_as_soon_as_it_works(tmp_path):
    run = record(tmp_path, WAIT_THEN_WORK, stacks=100)
    with sqlite3.connect(run) as db:
        weights = dict(
            db.execute(
                "SELECT p.text, SUM(s.count) FROM stack_sample s JOIN name p ON p.id = s.phase_id"
                " GROUP BY 1"
            ).fetchall()
        )
    # 0.3 s at 100 Hz is 30 samples; put off up to a second (as threads
    # without a ring are), a burst was mostly or wholly missed
    assert weights.get("first", 0) >= 15 and weights.get("second", 0) >= 15, weights


# A thread state that carries the main thread's ids: CPython gives a new
# thread's state its creator's ids until the thread runs (3.11), and
# PyThreadState_New, which C extensions call, binds the caller's (3.12+). It
# goes in at the head of the interpreter's list, with no frame, while the
# main thread works in a region.
SECOND_STATE = textwrap.dedent("""
    import ctypes, sys, time, trainprof
    def spin(n):
        x = 0
        for i in range(n):
            x += i
        return x
    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyThreadState_New.restype = ctypes.c_void_p
    api.PyThreadState_New.argtypes = [ctypes.c_void_p]
    with trainprof.region("warm"):
        spin(100000)
    spare = api.PyThreadState_New(api.PyInterpreterState_Get())
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        trainprof.step()
        with trainprof.region("work"):
            spin(20000)
""")


def test_a_thread_state_with_the_main_thread_s_ids_leaves_its_samples_alone(tmp_path):
    # CI once had a training's main thread unsampled through its steps: the
    # state of a DataLoader's queue-feeder thread, listed before it ran,
    # claimed the main thread's ids (one recording in ten)
    run = record(tmp_path, SECOND_STATE, stacks=100, seconds="1.5")
    with sqlite3.connect(run) as db:
        pid = int(db.execute("SELECT value FROM meta WHERE key = 'child_pid'").fetchone()[0])
        rows = db.execute(
            "SELECT s.node_id = 0, SUM(s.count) FROM stack_sample s JOIN name p ON p.id = s.phase_id"
            " WHERE s.tid = ? AND p.text = 'work' GROUP BY 1",
            (pid,),
        ).fetchall()
    weights = dict(rows)
    # 1.5 s at 100 Hz: 150 samples of the main thread in "work", each with its
    # frames; none with the frameless state's empty stack
    assert weights.get(0, 0) >= 75 and weights.get(1, 0) == 0, weights


# Text a training sends (a region's name, a function's qualified name, a
# file's name) with newlines and terminal escapes in it.
