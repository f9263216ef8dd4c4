"""`trainprof export`: Chrome/Perfetto trace, CSV and JSON from real runs."""

import csv
import json
import signal
import sqlite3
import subprocess
import textwrap
import time

import pytest
from conftest import FAKE_NVML, PROGRAM, PYTHON, killed_recording, report_json, trainprof

TRICKY = 'say "hi"\n<script>alert(1)</script>'
# as the recorder keeps it: one line, its control characters escaped
STORED = TRICKY.replace("\n", "\\x0a")


@pytest.fixture(scope="module")
def rich_run(tmp_path_factory):
    """A run with regions from two threads, steps, an epoch, and fake GPUs."""
    d = tmp_path_factory.mktemp("export")
    script = d / "work.py"
    script.write_text(
        textwrap.dedent(f"""
        import threading, time, trainprof
        from trainprof import _native
        def worker():
            for _ in range(20):
                with trainprof.region("worker_part"):
                    time.sleep(0.002)
        t = threading.Thread(target=worker); t.start()
        trainprof.epoch(0)
        for i in range(10):
            trainprof.step()
            start = _native.now_ns()
            with trainprof.region("outer"):
                with trainprof.region({TRICKY!r}):
                    time.sleep(0.01)
            # what trainprof.torch sends for a CUDA region: its device time
            _native.device_time(trainprof.region("outer"), start, 3_000_000 + i)
        trainprof.step()
        t.join()
    """)
    )
    run = d / "run.db"
    r = trainprof(
        "record",
        "-q",
        "--interval",
        "0.05",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"},
    )
    assert r.returncode == 0, r.stderr
    return run


def count(run, sql):
    with sqlite3.connect(f"file:{run}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchone()[0]


def test_chrome_trace(rich_run, tmp_path):
    out = tmp_path / "trace.json"
    r = trainprof("export", rich_run, "--format", "chrome", "-o", out)
    assert r.returncode == 0, r.stderr
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == "region"]
    assert len(slices) == count(rich_run, "SELECT count(*) FROM region") == 40
    names = {e["name"] for e in slices}
    assert STORED in names  # escaped, and read back intact
    inner = [e for e in slices if e["name"] == STORED]
    assert all(e["args"]["depth"] == 1 and e["dur"] >= 10_000 for e in inner)  # microseconds
    # Device times: beside the main thread's track, at each region's host start.
    device = [e for e in events if e["ph"] == "X" and e["cat"] == "device"]
    assert sorted(e["dur"] for e in device) == pytest.approx([3000 + i / 1000 for i in range(10)])
    outer = sorted((e for e in slices if e["name"] == "outer"), key=lambda e: e["ts"])
    main = outer[0]["tid"]
    assert all(e["name"] == "outer" and e["pid"] == outer[0]["pid"] for e in device)
    assert {e["tid"] for e in device} == {main + 1_000_000_000}
    for d, o in zip(sorted(device, key=lambda e: e["ts"]), outer):
        assert d["ts"] <= o["ts"] <= d["ts"] + 5000  # microseconds; steps are 10 ms apart
    threads = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len({e["tid"] for e in threads}) == 3
    assert any(e["args"]["name"].endswith("device times (CUDA events)") for e in threads)
    procs = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert any(p.endswith(": system metrics") for p in procs)
    assert sum(": GPU " in p for p in procs) == 2
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == count(rich_run, "SELECT count(*) FROM sample")
    assert any(e["name"] == "gpu_util_percent" for e in counters)
    marks = [e for e in events if e["ph"] == "i"]
    assert sum(e["name"] == "step" for e in marks) == 11
    assert sum(e["name"] == "epoch 0" for e in marks) == 1
    assert trace["otherData"]["command"].startswith(PYTHON)


def test_csv(rich_run):
    r = trainprof("export", "--format", "csv", rich_run)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(r.stdout.splitlines()))
    assert len(rows) == count(rich_run, "SELECT count(*) FROM sample")
    gpu = [row for row in rows if row["metric"] == "gpu_util_percent" and row["labels"] == "gpu=1"]
    assert gpu and all(float(row["value"]) == 60.0 for row in gpu)
    assert all(float(row["t_s"]) >= 0 for row in rows)


def test_json_is_the_report(rich_run):
    r = trainprof("export", "--format", "json", rich_run)
    assert r.returncode == 0
    assert json.loads(r.stdout) == report_json(rich_run)


def test_bad_input(rich_run, tmp_path):
    r = trainprof("export", "--format", "svg", rich_run)
    assert (
        r.returncode == 2
        and "--format must be chrome, csv, json, folded, parquet or steps (got 'svg')" in r.stderr
    )
    out = tmp_path / "t.json"
    out.write_text("keep me")
    r = trainprof("export", rich_run, "-o", out)
    assert r.returncode == 2 and "already exists (use --force" in r.stderr
    assert out.read_text() == "keep me"
    assert trainprof("export", rich_run, "-o", out, "--force").returncode == 0
    assert json.loads(out.read_text())["traceEvents"]
    r = trainprof("export", rich_run, "-o", tmp_path / "no" / "t.json")
    assert r.returncode == 2 and "cannot create" in r.stderr
    r = trainprof("export", tmp_path / "t.json")
    assert r.returncode == 2 and "not a trainprof run file" in r.stderr
    assert list(tmp_path.glob("*.tmp-*")) == []


def test_empty_and_killed_runs_export(tmp_path):
    empty = tmp_path / "empty.db"
    assert trainprof("record", "-q", "-o", empty, "--", "true").returncode == 0
    for fmt in ("chrome", "csv", "json"):
        r = trainprof("export", "--format", fmt, empty)
        assert r.returncode == 0, (fmt, r.stderr)
    killed = killed_recording(tmp_path / "killed.db")
    r = trainprof("export", "--format", "chrome", killed)
    assert r.returncode == 0, r.stderr
    assert any(e["ph"] == "C" for e in json.loads(r.stdout)["traceEvents"])


@pytest.fixture(scope="module")
def big_run(rich_run, tmp_path_factory):
    """rich_run with its regions repeated until the trace is tens of MB."""
    run = tmp_path_factory.mktemp("big") / "big.db"
    run.write_bytes(rich_run.read_bytes())
    with sqlite3.connect(run) as db:
        for _ in range(12):  # 2^12 times its regions
            db.execute(
                "INSERT INTO region SELECT thread_id, name_id, depth, start_ns + 1,"
                " end_ns + 1 FROM region"
            )
    return run


def test_max_bytes_bounds_the_output_and_says_what_was_left_out(big_run, tmp_path):
    out = tmp_path / "t.json"
    r = trainprof("export", "--max-bytes", "1M", "-o", out, big_run)
    assert r.returncode == 0, r.stderr
    size = out.stat().st_size
    assert 1 << 20 <= size < (1 << 20) + 4096, size
    events = json.loads(out.read_text())["traceEvents"]  # whole: the JSON closed
    assert events
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "reached --max-bytes (1.00 MiB)" in lines[0], lines
    left = int(lines[0].split("): ")[1].split()[0])
    assert left + len(events) >= count(big_run, "SELECT COUNT(*) FROM region")
    for bad in ("1x", "10", "-5M"):
        r = trainprof("export", "--max-bytes", bad, big_run)
        assert r.returncode == 2 and "--max-bytes" in r.stderr and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_export_leaves_no_temporary_file(big_run, tmp_path, sig):
    out = tmp_path / "t.json"
    p = subprocess.Popen(
        [PROGRAM, "export", "--max-bytes", "10G", "-o", str(out), str(big_run)],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob("t.json.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert list(tmp_path.glob("t.json.tmp-*")), "the export never began"
    p.send_signal(sig)
    assert p.wait(timeout=20) == -sig
    assert list(tmp_path.iterdir()) == []


def test_steps_by_phase_one_line_per_group(rich_run):
    """`--format steps`: each rank's steps by phase (what record --log-to
    sends to a tracker): one step a line on a short run, the phases adding
    up to the step, steps/s its inverse, in step order."""
    r = trainprof("export", "-f", "steps", rich_run)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    rep = report_json(rich_run)
    (steps,) = rep["steps"]
    assert len(lines) == steps["count"] + steps["warmup_steps"]
    assert [x["step"] for x in lines] == list(range(1, len(lines) + 1))
    for x in lines:
        assert x["rank"] == steps["rank"]
        assert sum(x["phases_s"].values()) == pytest.approx(x["step_s"])
        assert x["steps_per_s"] == pytest.approx(1 / x["step_s"])
        assert x["end_s"] - x["start_s"] == pytest.approx(x["step_s"], abs=1e-6)
    # the sleeps of 10 ms are in no standard phase: "other"
    assert all(x["phases_s"]["other"] >= 0.009 for x in lines[1:])
