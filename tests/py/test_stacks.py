"""Sampled Python stacks: known hot functions in known phases, waiting
threads, workers, deep recursion, turning it off, the folded export, py-spy
as the oracle, and the walker on every CPython installed here."""

import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import textwrap

import pytest
from conftest import PYTHON, ROOT, OthersCpu, report_json, trainprof

HOT = textwrap.dedent("""
    import queue, sys, threading, time
    import trainprof

    def parse_records(n):          # the loading phase's hot function
        x = 0
        for i in range(n):
            x += i * i
        return x

    def matmul_by_hand(n):         # the computing phase's hot function
        s = 0.0
        for i in range(n):
            s += (i % 7) * 0.5
        return s

    q = queue.Queue()
    def idle_worker():
        q.get()                    # blocked: waiting, not on a CPU

    t = threading.Thread(target=idle_worker); t.start()
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        trainprof.step()
        with trainprof.region("load"):
            parse_records(60000)
        with trainprof.region("compute"):
            matmul_by_hand(120000)
    q.put(1); t.join()
""")


def record(tmp_path, script, *args, stacks=None, env=None, seconds="2"):
    path = tmp_path / "script.py"
    path.write_text(script)
    run = tmp_path / "run.db"
    extra = ["--stacks", str(stacks)] if stacks is not None else []
    r = trainprof(
        "record",
        "-q",
        "--force",
        "-o",
        run,
        *extra,
        "--",
        PYTHON,
        path,
        seconds,
        *args,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return run


def group(report, phase):
    return next(g for g in report["stacks"] if g["phase"] == phase)


EMIT = os.environ.get("EMIT_EVENTS", str(ROOT / "build" / "tests" / "emit_events"))


def test_the_wire_from_lib_to_the_run_file(tmp_path):
    """emit_events sends frames and 20 samples through lib's API: each
    arrives, its phase, state and truncation kept, the stacks as a tree."""
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", EMIT, "stacks")
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(run) as db:
        assert db.execute("SELECT function, file FROM frame ORDER BY id").fetchall() == [
            ("main", "emit.py"),
            ("load", "emit.py"),
            ("decode", "io.py"),
        ]
        rows = db.execute(
            "SELECT n.text, s.state, s.tid = t.tid, s.count, s.span_ns > 0"
            " FROM stack_sample s JOIN name n ON n.id = s.phase_id JOIN thread t"
            " ON t.id = s.thread_id ORDER BY s.t_ns"
        ).fetchall()
    # identical samples in a row are one run: lines 12, 13, 12, 13, then a truncated one
    assert {x[0] for x in rows} == {"phase"} and all(x[2] for x in rows)
    assert [x[3] for x in rows] == [5, 5, 5, 4, 1]
    assert [x[4] for x in rows] == [1, 1, 1, 1, 0]  # a run spans its first to its last
    assert [x[1] for x in rows] == [3] * 4 + [7]  # on a CPU, known; the last truncated
    folded = trainprof("export", "--format", "folded", run).stdout.splitlines()
    trace = json.loads(trainprof("export", run).stdout)["traceEvents"]
    instants = [e for e in trace if e.get("cat") == "stack"]
    assert [e["args"]["samples"] for e in instants] == [5, 5, 5, 4, 1]
    assert {e["name"] for e in instants} == {"decode"}
    assert instants[0]["args"]["stack"] == "main (emit.py:7);load (emit.py:40);decode (io.py:12)"
    assert not any(
        e["args"].get("name", "").startswith("trainprof-stack") for e in trace if e["ph"] == "M"
    )  # the sampler's own ring is no track
    assert folded == [
        "phase;decode (io.py:13) 1",  # sorted, one line per distinct stack
        "phase;main (emit.py:7);load (emit.py:40);decode (io.py:12) 10",
        "phase;main (emit.py:7);load (emit.py:40);decode (io.py:13) 9",
    ]


def test_a_schema_8_file_reads_merges_and_upgrades_with_one_sample_a_row(tmp_path):
    """Schema 8 (the golden corpus's stacks.db) stored one row per sample;
    9 stores runs. The old file reports the same counts, merges with a new
    one, and `summarize` gives it the run columns."""
    old = tmp_path / "old.db"
    shutil.copy(ROOT / "tests" / "golden" / "runs" / "stacks.db", old)
    with sqlite3.connect(old) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 8
        samples = db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
    before = report_json(old)["stacks"]
    assert samples > 100 and sum(g["samples"] for g in before) == samples
    new = tmp_path / "new.db"
    r = trainprof("record", "-q", "--agent", "new", "-o", new, "--", EMIT, "stacks")
    assert r.returncode == 0, r.stderr
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "--force", "-o", merged, old, new)  # two commands
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(merged) as db:
        assert db.execute("SELECT SUM(count) FROM stack_sample").fetchone()[0] == samples + 20
    folded = trainprof("export", "--format", "folded", merged).stdout.splitlines()
    assert sum(int(x.rsplit(" ", 1)[1]) for x in folded) == samples + 20
    r = trainprof("summarize", "--force", old)
    assert r.returncode == 0 and "now 10" in r.stderr, r.stderr
    with sqlite3.connect(old) as db:
        assert db.execute(
            "SELECT COUNT(*), SUM(count), MAX(span_ns) FROM stack_sample"
        ).fetchone() == (samples, samples, 0)
    assert report_json(old)["stacks"] == before


def test_a_merge_keeps_every_node_s_stacks(tmp_path):
    files = []
    for rank, node in enumerate(("a", "b")):
        run = tmp_path / f"{node}.db"
        r = trainprof(
            "record",
            "-q",
            "--agent",
            node,
            "-o",
            run,
            "--",
            EMIT,
            "stacks",
            env={"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": "0"},
        )
        assert r.returncode == 0, r.stderr
        files.append(run)
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "-o", merged, *files)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(merged) as db:
        assert db.execute("SELECT SUM(count) FROM stack_sample").fetchone()[0] == 40
        # each node's samples keep their own frames and phase through the id offsets
        rows = db.execute(
            "SELECT a.name, f.function, n.text, SUM(count) FROM stack_sample s"
            " JOIN thread t ON t.id = s.thread_id JOIN agent a ON a.id = t.agent_id"
            " JOIN stack_node sn ON sn.id = s.node_id JOIN frame f"
            " ON f.id = sn.frame_id JOIN name n ON n.id = s.phase_id"
            " GROUP BY 1, 2, 3"
        ).fetchall()
    assert rows == [("a", "decode", "phase", 20), ("b", "decode", "phase", 20)]
    folded = trainprof("export", "--format", "folded", merged).stdout.splitlines()
    assert "phase;main (emit.py:7);load (emit.py:40);decode (io.py:12) 20" in folded
    # without the rows: the stored counts and the tree carry the stacks into a
    # summary merge and a report of several node files alike
    full = report_json(merged)["stacks"]
    assert sum(g["samples"] for g in full) == 40
    summary = tmp_path / "summary.db"
    r = trainprof("merge", "--summary", "-o", summary, *files)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(summary) as db:
        assert db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0] == 0
    assert report_json(summary)["stacks"] == full
    r = trainprof("report", "--json", *files)
    assert r.returncode == 0 and json.loads(r.stdout)["stacks"] == full, r.stderr
    text = trainprof("report", *files).stdout
    assert "Inside the phases" in text and "decode" in text


def test_a_summarized_file_reads_its_stored_counts(tmp_path):
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", EMIT, "stacks")
    assert r.returncode == 0, r.stderr
    before = report_json(run)["stacks"]
    with sqlite3.connect(run) as db:
        stored = db.execute(
            "SELECT phase, worker, state, SUM(samples) FROM summary_stack GROUP BY 1, 2, 3"
        ).fetchall()
        db.execute("DELETE FROM stack_sample")  # the report no longer needs them
    assert stored == [("phase", 0, 3, 20)]
    assert report_json(run)["stacks"] == before


def test_hot_functions_are_the_top_of_their_phases(tmp_path):
    run = record(tmp_path, HOT, stacks=200)
    report = report_json(run)
    load, compute = group(report, "load"), group(report, "compute")
    assert load["functions"][0]["function"] == "parse_records"
    assert load["functions"][0]["self_share"] > 0.8
    assert compute["functions"][0]["function"] == "matmul_by_hand"
    assert compute["functions"][0]["self_share"] > 0.8
    assert compute["functions"][0]["file"].endswith("script.py")
    assert compute["on_cpu_share"] > 0.8
    # 2 s at 200 Hz of two threads: about 800 samples (a loaded machine loses some)
    total = sum(g["samples"] for g in report["stacks"])
    assert 400 < total < 900, total
    # the blocked thread only waited: its samples are a group of their own,
    # one line in the text, not the top of "outside regions"
    idle = group(report, "waiting_threads")
    assert idle["on_cpu_share"] < 0.05
    assert idle["functions"][0]["function"].endswith("wait")
    outside = [g for g in report["stacks"] if g["phase"] is None]
    assert not any(
        f["function"].endswith("wait") and f["self_share"] > 0.5
        for g in outside
        for f in g["functions"]
    ), outside
    # shares are parts of their phase's samples
    for g in report["stacks"]:
        for f in g["functions"]:
            assert 0 < f["self_share"] <= f["total_share"] <= 1
    text = trainprof("report", run).stdout
    assert "Inside the phases" in text and "parse_records" in text
    line = next(x for x in text.splitlines() if "threads that only waited" in x)
    assert re.search(r"threads that only waited: \d+ samples, in \S*wait \d+%", line), line
    # stored with the summary (state bit 8; the report read those), and the
    # same when counted from the rows
    with sqlite3.connect(run) as db:
        assert (
            db.execute("SELECT SUM(samples) FROM summary_stack WHERE state & 8").fetchone()[0]
            == idle["samples"]
        )
        db.execute("DROP TABLE summary_stack")
    assert report_json(run)["stacks"] == report["stacks"]


def test_the_input_bound_verdict_names_the_loading_code(tmp_path):
    script = (
        HOT.replace('"load"', '"dataloader_next"')
        .replace('"compute"', '"train_batch"')
        .replace("parse_records(60000)", "parse_records(200000)")
    )
    report = report_json(record(tmp_path, script, stacks=100))
    verdict = next(v for v in report["verdicts"] if v["kind"] == "input_bound")
    assert "Inside: dataloader_next's time goes to parse_records (" in verdict["message"]


def test_the_phase_is_the_innermost_open_region(tmp_path):
    script = textwrap.dedent("""
        import sys, time, trainprof
        def inner_work():
            t = time.time()
            while time.time() - t < 0.01: pass
        end = time.time() + float(sys.argv[1])
        while time.time() < end:
            with trainprof.region("outer"):
                with trainprof.region("inner"):
                    inner_work()
    """)
    report = report_json(record(tmp_path, script, stacks=100, seconds="1"))
    phases = {g["phase"] for g in report["stacks"]}
    assert "inner" in phases
    inner = group(report, "inner")
    assert inner["functions"][0]["function"] == "inner_work"
    outer = [g for g in report["stacks"] if g["phase"] == "outer"]
    assert not outer or outer[0]["samples"] < 0.1 * inner["samples"]


NO_VM_READV = os.environ.get("NO_VM_READV", str(ROOT / "build" / "tests" / "no_vm_readv"))


def test_a_sandbox_that_refuses_process_vm_readv_still_gets_stacks_and_phases(tmp_path):
    """Docker's default seccomp profile refuses process_vm_readv: the walker
    and the read of each thread's open region go through a pipe instead."""
    script = tmp_path / "script.py"
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
        NO_VM_READV,
        PYTHON,
        script,
        "1",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    report = report_json(run)
    assert group(report, "load")["functions"][0]["function"] == "parse_records"
    assert group(report, "compute")["functions"][0]["function"] == "matmul_by_hand"


def sandboxed(tmp_path, *policy, script=HOT, seconds="1"):
    """Records script under a seccomp policy of no_vm_readv: the run file, and
    the training's own exit status and stdout are checked by the caller."""
    path = tmp_path / "script.py"
    path.write_text(script)
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "--force",
        "-o",
        run,
        "--stacks",
        "200",
        "--",
        NO_VM_READV,
        *policy,
        PYTHON,
        path,
        seconds,
        timeout=300,
    )
    with sqlite3.connect(run) as db:
        samples = db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
        said = [
            reason
            for (reason,) in db.execute(
                "SELECT reason FROM unavailable WHERE source = 'Python stacks'"
            )
        ]
    return r, run, samples, said


def test_a_sandbox_that_kills_or_traps_process_vm_readv_never_harms_the_training(tmp_path):
    """A filter that kills (or sends SIGSYS to) the process calling
    process_vm_readv: the sampler learns it from a probe child before its
    first read, and reads through pipes; the training runs to its end."""
    for action in ("--kill", "--trap"):
        r, run, samples, said = sandboxed(tmp_path, action)
        assert r.returncode == 0, (action, r.returncode, r.stderr)
        assert samples > 0 and said == [], (action, samples, said)
        report = report_json(run)
        assert group(report, "load")["functions"][0]["function"] == "parse_records"


def test_a_sandbox_that_takes_pipes_leaves_process_vm_readv(tmp_path):
    """Pipes are the sampler's way; a filter that refuses pipe2, or kills
    the process that calls it, leaves process_vm_readv, which a probe child
    finds (a killed one first): the training runs to its end, sampled."""
    for policy in (("--vm-ok", "--no-pipe"), ("--vm-ok", "--kill-pipe")):
        r, run, samples, said = sandboxed(tmp_path, *policy)
        assert r.returncode == 0, (policy, r.returncode, r.stderr)
        assert samples > 0 and said == [], (policy, samples, said)
        report = report_json(run)
        assert group(report, "load")["functions"][0]["function"] == "parse_records"


def test_a_sandbox_that_leaves_no_way_to_read_says_so_once(tmp_path):
    """EACCES instead of EPERM still leaves the pipe; with pipe2 refused too
    (and process_vm_readv killed or refused) nothing is read, the training
    runs on, and the run says why in one row."""
    r, run, samples, said = sandboxed(tmp_path, "--eacces")
    assert r.returncode == 0 and samples > 0 and said == [], (r.stderr, samples, said)
    for policy in (
        ("--no-pipe",),
        ("--kill", "--no-pipe"),
        ("--trap", "--no-pipe"),
        ("--kill", "--kill-pipe"),
    ):
        r, run, samples, said = sandboxed(tmp_path, *policy)
        assert r.returncode == 0, (policy, r.returncode, r.stderr)
        assert samples == 0 and len(said) == 1, (policy, samples, said)
        assert "seccomp filter" in said[0] and "no Python stack was read" in said[0]
        text = trainprof("report", run).stdout
        assert "Python stacks" in text and "seccomp filter" in text


# The training adds a filter that kills process_vm_readv to every thread of
# its process (TSYNC: the sampler's too) after a second of sampling: the
# sampler sees its filters change before its next read, probes again and
# goes on through pipes.
LATER_FILTER = textwrap.dedent("""
    import ctypes, struct, sys, time, trainprof
    def parse_records(n):
        x = 0
        for i in range(n):
            x += i * i
        return x
    def kill_process_vm_readv():
        libc = ctypes.CDLL(None, use_errno=True)
        insns = [(0x20, 0, 0, 4), (0x15, 0, 3, 0xC000003E), (0x20, 0, 0, 0),
                 (0x15, 0, 1, 310), (0x06, 0, 0, 0x80000000), (0x06, 0, 0, 0x7FFF0000)]
        code = b"".join(struct.pack("HBBI", *i) for i in insns)
        buf = ctypes.create_string_buffer(code)
        prog = struct.pack("HxxxxxxQ", len(insns), ctypes.addressof(buf))
        pbuf = ctypes.create_string_buffer(prog)
        assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
        # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, prog)
        assert libc.syscall(317, 1, 1, pbuf) == 0, ctypes.get_errno()
    end = time.time() + float(sys.argv[1])
    armed = False
    while time.time() < end:
        if not armed and time.time() > end - float(sys.argv[1]) / 2:
            kill_process_vm_readv()
            armed = True
        trainprof.step()
        with trainprof.region("load"):
            parse_records(60000)
    print("finished")
""")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the filter is x86-64's")
def test_a_filter_added_while_sampling_is_probed_before_the_next_read(tmp_path):
    path = tmp_path / "later.py"
    path.write_text(LATER_FILTER)
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", "-o", run, "--stacks", "200", "--", PYTHON, path, "2", timeout=300
    )
    assert r.returncode == 0 and "finished" in r.stdout, (r.returncode, r.stderr)
    with sqlite3.connect(run) as db:
        steps = [t for (t,) in db.execute("SELECT t_ns FROM mark WHERE kind IN (3, 'step')")]
        late = db.execute(
            "SELECT COUNT(*) FROM stack_sample WHERE t_ns > ?", (steps[len(steps) * 3 // 4],)
        ).fetchone()[0]
    assert late > 0  # sampled on after the filter, through pipes


def test_deep_recursion_costs_nothing_but_its_outer_frames(tmp_path):
    script = textwrap.dedent("""
        import sys, time
        sys.setrecursionlimit(5000)
        def deep(n, end):
            if n == 0:
                while time.time() < end: pass
                return 0
            return deep(n - 1, end)
        deep(1000, time.time() + float(sys.argv[1]))
    """)
    run = record(tmp_path, script, stacks=100, seconds="1")
    with sqlite3.connect(run) as db:
        states = dict(db.execute("SELECT state & 4, SUM(count) FROM stack_sample GROUP BY 1"))
        depth = db.execute(
            "WITH RECURSIVE up(id, n) AS (SELECT node_id, 1 FROM stack_sample"
            " WHERE rowid = (SELECT MIN(rowid) FROM stack_sample WHERE state & 4)"
            " UNION ALL SELECT s.parent, n + 1 FROM up JOIN stack_node s"
            " ON s.id = up.id WHERE s.parent > 0) SELECT MAX(n) FROM up"
        ).fetchone()
    assert states.get(4, 0) > 50  # truncated, and kept
    assert depth[0] == 256
    report = report_json(run)
    assert group(report, None)["functions"][0]["function"] == "deep"


def test_forked_and_spawned_workers_are_sampled_as_workers(tmp_path):
    script = textwrap.dedent("""
        import sys, torch
        from torch.utils.data import DataLoader, Dataset

        def decode_sample(i):
            x = 0
            for k in range(20000):
                x += k * i
            return x

        class Slow(Dataset):
            def __len__(self): return 400
            def __getitem__(self, i):
                return torch.tensor(float(decode_sample(i)))

        if __name__ == "__main__":
            for method in ("fork", "spawn"):
                loader = DataLoader(Slow(), batch_size=4, num_workers=2,
                                    multiprocessing_context=method)
                for batch in loader:
                    pass
    """)
    with OthersCpu() as load:
        run = record(tmp_path, script, stacks=100, seconds="0")
    report = report_json(run)
    workers = group(report, "dataloader_worker")
    # the workers' work; a spawned worker's imports (importlib's
    # _call_with_frames_removed) can weigh as much on a loaded machine, more where
    # others hold the CPUs
    top = [f["function"] for f in workers["functions"][: (10 if load.busy else 2)]]
    assert "decode_sample" in top, (load.cpus, workers)
    with sqlite3.connect(run) as db:
        pids = db.execute(
            "SELECT COUNT(DISTINCT pid) FROM thread WHERE name = 'trainprof-stack'"
        ).fetchone()[0]
        worker_pids = db.execute(
            "SELECT COUNT(DISTINCT t.pid) FROM stack_sample s"
            " JOIN thread t ON t.id = s.thread_id JOIN thread w"
            " ON w.pid = t.pid AND w.tid = s.tid"
            " WHERE w.name LIKE 'DL worker%'"
        ).fetchone()[0]
    # the main process, two forked workers, two spawned ones (and multiprocessing's
    # resource tracker, a Python process too)
    assert pids >= 5
    assert worker_pids == 4
    # trainprof's own wrappers (the workers' loop, the loader's __iter__) were
    # sampled, and are shown as the user's frame above them: in no output
    with sqlite3.connect(run) as db:
        ours = db.execute(
            "SELECT COUNT(*) FROM frame WHERE instr(function, '_patch_') > 0"
        ).fetchone()[0]
    assert ours > 0
    folded = trainprof("export", "--format", "folded", run).stdout
    assert folded and "_patch_" not in folded and "decode_sample (" in folded
    assert "_patch_" not in json.dumps(report) and "_patch_" not in trainprof("report", run).stdout


def test_a_process_that_execs_mid_run_is_sampled_before_and_after(tmp_path):
    script = textwrap.dedent("""
        import os, sys, time
        def before_exec():
            t = time.time()
            while time.time() - t < 0.5: pass
        before_exec()
        os.execv(sys.executable, [sys.executable, "-c",
                 "import time\\ndef after_exec():\\n t = time.time()\\n"
                 " while time.time() - t < 0.5: pass\\nafter_exec()"])
    """)
    run = record(tmp_path, script, stacks=100, seconds="0")
    with sqlite3.connect(run) as db:
        rings = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT pid) FROM thread WHERE name = 'trainprof-stack'"
        ).fetchone()
        functions = {
            f
            for (f,) in db.execute(
                "SELECT DISTINCT f.function FROM stack_sample s JOIN stack_node n ON n.id = s.node_id"
                " JOIN frame f ON f.id = n.frame_id"
            )
        }
    assert rings == (2, 1)  # one sampler per image, one process
    assert {"before_exec", "after_exec"} <= functions


def test_sampling_off_leaves_nothing(tmp_path):
    for kind in ("option", "environment"):
        run = record(
            tmp_path,
            HOT,
            seconds="0.5",
            **({"stacks": 0} if kind == "option" else {"env": {"TRAINPROF_STACKS": "0"}}),
        )
        with sqlite3.connect(run) as db:
            assert db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0] == 0
            assert (
                db.execute("SELECT COUNT(*) FROM thread WHERE name = 'trainprof-stack'").fetchone()[
                    0
                ]
                == 0
            )
        assert report_json(run)["stacks"] == []
        assert "Inside the phases" not in trainprof("report", run).stdout


def test_a_bad_rate_is_refused(tmp_path):
    r = trainprof("record", "-o", tmp_path / "x.db", "--stacks", "5000", "--", "true")
    assert r.returncode == 2 and "--stacks" in r.stderr and len(r.stderr.splitlines()) == 1
    r = trainprof("record", "-o", tmp_path / "x.db", "--", "true", env={"TRAINPROF_STACKS": "fast"})
    assert r.returncode == 2 and "TRAINPROF_STACKS=fast" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_folded_export_counts_every_sample(tmp_path):
    run = record(tmp_path, HOT, stacks=100, seconds="1")
    r = trainprof("export", "--format", "folded", run)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(re.fullmatch(r"[^;\n]+(;[^;\n]+)* \d+", x) for x in lines), lines[:3]
    with sqlite3.connect(run) as db:
        samples, rows = db.execute("SELECT SUM(count), COUNT(*) FROM stack_sample").fetchone()
    assert sum(int(x.rsplit(" ", 1)[1]) for x in lines) == samples
    assert rows < samples  # a thread's identical samples in a row are one row
    hot = [x for x in lines if x.startswith("load;")]
    assert any(";parse_records (" in x for x in hot)


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
    print("same", sys.version_info[:2])
""")


def cpythons():
    found = []
    for exe in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3.*")):
        if re.search(r"python3\.(9|1[0-4])$", exe):
            found.append(exe)
    return found or [PYTHON]


def build_extension(python, where):
    """trainprof's extension built for python into where (None: that
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
    sources = [
        "python/trainprof/_native.c",
        "python/trainprof/_stack_sampler.c",
        "python/trainprof/_stacks.c",
        "python/trainprof/_stack_code.c",
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
def test_the_walker_reads_what_the_interpreter_says(tmp_path, python):
    """The extension built for each CPython here reads every thread's stack
    as sys._current_frames() gives it: functions, files and lines."""
    if not build_extension(python, tmp_path):
        pytest.skip(f"{python} has no internal headers")
    (tmp_path / "walk.py").write_text(WALK)
    r = subprocess.run(
        [python, "walk.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "same" in r.stdout, r.stderr


@pytest.mark.parametrize("python", cpythons(), ids=lambda p: os.path.basename(p))
def test_record_samples_every_cpython(tmp_path, python):
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
    if not build_extension(python, package):
        pytest.skip(f"{python} has no internal headers")
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
    assert group(report, "load")["functions"][0]["function"] == "parse_records"
    assert group(report, "compute")["functions"][0]["function"] == "matmul_by_hand"


# 200 threads blocked on an Event and the main thread busy: the idle ones
# are read once, then stand by their last sample (their CPU time does not
# move), in a few rows each whatever the run's length, with as many samples
# in weight as the busy thread.
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
HOSTILE_TEXT = textwrap.dedent("""
    import sys, time, trainprof
    def hot():
        x = 0
        for i in range(200000):
            x += i
        return x
    hot.__code__ = hot.__code__.replace(co_qualname="evil\\nname\\x1b[2J", co_name="evil\\x1b")
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        trainprof.step()
        with trainprof.region("comp\\x1bute\\nx"):
            hot()
""")


def test_control_characters_from_a_ring_are_escaped_in_every_output(tmp_path):
    script = tmp_path / "we\nird\x1b[31m.py"
    script.write_text(HOSTILE_TEXT)
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, "1.5", timeout=300)
    assert r.returncode == 0, r.stderr
    text = trainprof("report", run).stdout
    assert "\x1b" not in text
    inside = text.split("Inside the phases")[1].split("\n\n")[0].splitlines()
    assert any(line.startswith("  comp\\x1bute\\x0ax: ") for line in inside), inside
    folded = tmp_path / "run.folded"
    assert trainprof("export", "--format", "folded", "-o", folded, run).returncode == 0
    lines = folded.read_text().splitlines()
    assert all("\x1b" not in x and "\r" not in x for x in lines)
    assert all(re.fullmatch(r".* \d+", x) for x in lines), lines  # one stack a line
    assert any(x.startswith("comp\\x1bute\\x0ax;") for x in lines), lines
    trace = tmp_path / "run.json"
    assert trainprof("export", "--format", "chrome", "-o", trace, run).returncode == 0
    assert "\x1b" not in trace.read_text()
