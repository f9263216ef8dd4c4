"""Timings end to end: an instrumented C program under the real recorder."""

import os

from conftest import ROOT, report_json, trainprof

EMIT = os.environ.get("EMIT_EVENTS", str(ROOT / "build" / "tests" / "emit_events"))


def test_c_regions_steps_epochs_reach_the_report(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", EMIT, "nested")
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    rows = {t["name"]: t for t in rep["timings"]}
    assert rows["outer"]["count"] == 10 and rows["inner"]["count"] == 10
    assert rows["outer"]["rank"] == -1
    assert rows["inner"]["mean_s"] >= 100e-6  # each inner region sleeps 100 us
    assert rows["outer"]["total_s"] >= rows["inner"]["total_s"]
    [steps] = rep["steps"]
    # share is of the rank's step time (regions outside counted steps included)
    assert abs(rows["outer"]["share"] - rows["outer"]["total_s"] / steps["total_s"]) < 1e-9
    # epoch 0 has 10 step marks (9 steps: a step runs from a mark to the next);
    # the epoch-1 mark ends that run, and epoch 1 has a single mark
    assert steps["count"] == 9
    assert [e["epoch"] for e in rep["epochs"]] == [0, 1]
    assert [e["steps"] for e in rep["epochs"]] == [9, 0]
    assert rep["dropped_events"] == 0 and rep["timing_threads"] == 1
    text = trainprof("report", run_file).stdout
    assert "Timings, no rank" in text and "Steps, no rank: 9 steps" in text


def test_ranks_from_the_environment(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", EMIT, "threads",
                  env={"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert r.returncode == 0
    rep = report_json(run_file)
    [row] = rep["timings"]
    assert row["rank"] == 3 and row["count"] == 1000


def test_full_ring_is_reported(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", EMIT, "overflow",
                  env={"TRAINPROF_RING_SLOTS": "64"})
    assert r.returncode == 0, "the producer must finish and see its own drops"
    rep = report_json(run_file)
    assert rep["dropped_events"] > 0
    assert "timing events were dropped" in trainprof("report", run_file).stdout


def test_no_timings_says_so(run_file):
    assert trainprof("record", "-q", "-o", run_file, "--", "true").returncode == 0
    rep = report_json(run_file)
    assert rep["timings"] == [] and rep["timing_threads"] == 0
    assert "Timings: none recorded" in trainprof("report", run_file).stdout
