"""`trainprof export`: Chrome/Perfetto trace, CSV and JSON from real runs."""

import csv
import json
import sqlite3
import textwrap

import pytest

from conftest import killed_recording, FAKE_NVML, PYTHON, report_json, trainprof

TRICKY = 'say "hi"\n<script>alert(1)</script>'


@pytest.fixture(scope="module")
def rich_run(tmp_path_factory):
    """A run with regions from two threads, steps, an epoch, and fake GPUs."""
    d = tmp_path_factory.mktemp("export")
    script = d / "work.py"
    script.write_text(textwrap.dedent(f"""
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
    """))
    run = d / "run.db"
    r = trainprof("record", "-q", "--interval", "0.05", "-o", run, "--", PYTHON, script,
                  env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"})
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
    assert TRICKY in names  # escaped, and read back intact
    inner = [e for e in slices if e["name"] == TRICKY]
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
    assert r.returncode == 2 and "--format must be chrome, csv, json or folded (got 'svg')" in r.stderr
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
