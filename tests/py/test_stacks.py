"""Sampled Python stacks: known hot functions in known phases, workers,
deep recursion, turning it off, the folded export, hostile text (the
sandbox, the oracles and waiting threads: test_stacks_*.py)."""

import json
import re
import shutil
import sqlite3
import textwrap

from conftest import EMIT, PYTHON, ROOT, OthersCpu, report_json, trainprof

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


def test_the_wire_from_lib_to_the_run_file(tmp_path):
    """emit_events sends frames and 20 samples through lib's API: each
    arrives, its phase, state, truncation and own work (tp_own_work, read
    back by tp_thread_open_region) kept, the stacks as a tree."""
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
    # on a CPU, known; the last truncated; the last five in trainprof's own work
    assert [x[1] for x in rows] == [3, 3, 3, 3 | 32, 7 | 32]
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
    assert (
        samples > 100
        and sum(g["samples"] - g["samples_in_user_regions"] for g in before) == samples
    )
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
    assert sum(g["samples"] - g["samples_in_user_regions"] for g in full) == 40
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
    total = sum(g["samples"] - g["samples_in_user_regions"] for g in report["stacks"])
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


# 1000 frames deep, spinning at the bottom for argv[1] seconds
DEEP = textwrap.dedent("""
    import sys, time
    sys.setrecursionlimit(5000)
    def deep(n, end):
        if n == 0:
            while time.time() < end: pass
            return 0
        return deep(n - 1, end)
    deep(1000, time.time() + float(sys.argv[1]))
""")


def test_deep_recursion_costs_nothing_but_its_outer_frames(tmp_path):
    run = record(tmp_path, DEEP, stacks=100, seconds="1")
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


def test_samples_full_rings_dropped_are_counted_apart_and_said(tmp_path):
    """Stacks 1000 frames deep, sampled 1000 times a second through rings of
    64 slots: the samples that did not fit are counted, apart from the
    timing events (none of which was dropped), and the report says what
    the shares miss."""
    run = record(tmp_path, DEEP, stacks=1000, seconds="1", env={"TRAINPROF_RING_SLOTS": "64"})
    rep = report_json(run)
    assert rep["stack_samples_dropped"] > 0 and rep["dropped_events"] == 0, rep["dropped_events"]
    text = trainprof("report", run).stdout
    said = f"{rep['stack_samples_dropped']} " if not rep["stacks"] else ""
    assert f"{said}stack samples were dropped on the samplers' full rings" in text, text


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
    # _call_with_frames_removed) and its wait for indices (the selector's select)
    # can weigh as much on a slow machine, more where others hold the CPUs
    top = [f["function"] for f in workers["functions"][: (10 if load.busy else 5)]]
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
    # (by their names: a library's own _patch_ functions, unittest.mock's
    # _patch_dict in a worker's imports, are the user's)
    ours = re.compile(r"_patch_(dataloader|workers)\b")
    with sqlite3.connect(run) as db:
        names = db.execute("SELECT function FROM frame").fetchall()
    assert [n for (n,) in names if ours.search(n)]
    folded = trainprof("export", "--format", "folded", run).stdout
    assert folded and not ours.search(folded) and "decode_sample (" in folded
    assert not ours.search(json.dumps(report) + trainprof("report", run).stdout)


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
    assert any(line.startswith("  comp\\x1bute\\x0ax (outside the phases): ") for line in inside), (
        inside
    )
    folded = tmp_path / "run.folded"
    assert trainprof("export", "--format", "folded", "-o", folded, run).returncode == 0
    lines = folded.read_text().splitlines()
    assert all("\x1b" not in x and "\r" not in x for x in lines)
    assert all(re.fullmatch(r".* \d+", x) for x in lines), lines  # one stack a line
    assert any(x.startswith("comp\\x1bute\\x0ax;") for x in lines), lines
    trace = tmp_path / "run.json"
    assert trainprof("export", "--format", "chrome", "-o", trace, run).returncode == 0
    assert "\x1b" not in trace.read_text()
