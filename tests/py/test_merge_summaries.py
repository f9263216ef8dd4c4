"""`trainprof merge` of run files with stored summaries: what a node's
summary carries through a merge (and a merge of summaries only), and the
rows read where a file has none."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest
from conftest import (
    FAKE_NVML,
    PROGRAM,
    PYTHON,
    ROOT,
    assert_same_report,
    killed_recording,
    report_from_rows,
    report_json,
    trainprof,
    words,
)
from test_merge import record_node, two_nodes
from test_timings import EMIT

# mostly waiting (two recordings a node): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits


def test_stored_summaries_survive_a_merge_of_distinct_ranks(tmp_path):
    """Each node's recorder stores its summary; merged nodes with distinct ranks
    keep them, and every figure equals the one computed from the merged rows.
    GPU 1 of each node is held back for its first second only (of about 1.2):
    a summary-only merge, which keeps each series' last sample, once said it
    ran free (that sample's), where the steps saw it held back most of the time."""
    gpus = {
        "TRAINPROF_NVML_LIB": FAKE_NVML,
        "FAKE_NVML_GPUS": "2",
        "FAKE_NVML_REASONS_UNTIL_S": "1",
    }
    files = []
    # one command on every node, as a job's launcher runs it; NODE_RANK differs
    both = (
        " & ".join(
            f"RANK=$((NODE_RANK * 2 + {r})) LOCAL_RANK={r} WORLD_SIZE=4 {EMIT} slow_epochs"
            for r in (0, 1)
        )
        + " & wait"
    )
    for node, node_rank in (("node-a", "0"), ("node-b", "1")):
        path = record_node(tmp_path, node, ("sh", "-c", both), {**gpus, "NODE_RANK": node_rank})
        files.append(path)
        assert_same_report(report_json(path), report_from_rows(path, tmp_path))
    merged = tmp_path / "all.db"
    assert trainprof("merge", "-o", merged, *files).returncode == 0
    stored = report_json(merged)
    assert len(stored["ranks"]["per_rank"]) == 4 and len(stored["agents"]) == 2
    assert {x["rank"]: x["agent"] for x in stored["ranks"]["per_rank"]} == {
        0: "node-a",
        1: "node-a",
        2: "node-b",
        3: "node-b",
    }
    # `report` of the node files copies only what the stored summaries need
    # (no regions, marks or samples but series' ends and energy at epoch
    # bounds), yet says what the report of the full merge says, to the bit
    direct = json.loads(trainprof("report", "--json", *files).stdout)
    assert direct["run"]["meta"].pop("summary_only") == "1"
    assert direct["run"].pop("path") == " + ".join(map(str, files))
    full = report_json(merged)
    full["run"].pop("path")
    assert full["run"]["meta"].pop("plots") == "1"  # html's: a merge for report leaves them
    assert all(e["energy_j"] for e in full["epochs"]) and direct == full
    held = [a["gpus"][1]["slowdown"]["trouble_share"] for a in direct["agents"]]
    assert all(share > 0 for share in held), held
    assert sum(v["kind"] == "gpu_throttled" for v in direct["verdicts"]) == 2, direct["verdicts"]
    # node files stored before summary_gpu: their GPUs' reasons are unknown
    # to a summary-only merge, not its last samples'
    older = []
    for path in files:
        copy = tmp_path / f"older-{path.name}"
        shutil.copyfile(path, copy)
        with sqlite3.connect(copy) as db:
            db.execute("DROP TABLE summary_gpu")
        older.append(copy)
    unknown = json.loads(trainprof("report", "--json", *older).stdout)
    assert [g["slowdown"] for a in unknown["agents"] for g in a["gpus"]] == [None] * 4, unknown
    assert not any(v["kind"] == "gpu_throttled" for v in unknown["verdicts"])
    # a crafted file's shares outside 0..1 are no shares, and reasons outside
    # the slowdown bits are not read as such
    crafted = tmp_path / "crafted.db"
    shutil.copyfile(merged, crafted)
    with sqlite3.connect(crafted) as db:
        db.execute("UPDATE summary_gpu SET reasons = 4294967295, share = 7, trouble_share = -1")
    bad = report_json(crafted)
    assert [g["slowdown"] for a in bad["agents"] for g in a["gpus"]] == [None] * 4, bad["agents"]
    assert not any(v["kind"] == "gpu_throttled" for v in bad["verdicts"])
    assert_same_report(stored, report_from_rows(merged, tmp_path))
    # `html` of the node files, too, draws from what they store (a summary-only
    # merge): the page drawn from every row of the full merge, plot for plot
    # (these short runs store every sample: no bucket holds more than two)
    assert trainprof("html", "-o", tmp_path / "direct.html", *files).returncode == 0
    rows = tmp_path / "rows.db"
    shutil.copyfile(merged, rows)
    with sqlite3.connect(rows) as db:
        db.execute("DELETE FROM meta WHERE key = 'plots'")
    assert trainprof("html", "-o", tmp_path / "rows.html", rows).returncode == 0
    pages = [(tmp_path / f).read_text() for f in ("direct.html", "rows.html")]
    charts = [
        re.findall(r'chart-title">([^<]*)<|class="legend">([^<]*)<|points="([^"]*)"', p)
        for p in pages
    ]
    assert len(charts[0]) > 40 and charts[0] == charts[1]
    assert "Step time over the run, rank 3" in pages[0]


def test_without_a_stored_summary_the_rows_are_read(tmp_path):
    # both nodes' processes have no rank: their figures can't be kept apart
    a, b = two_nodes(tmp_path)
    merged = tmp_path / "all.db"
    assert trainprof("merge", "-o", merged, a, b).returncode == 0
    rep = report_json(merged)
    assert "summarized" not in rep["run"]["meta"]
    assert [s["count"] for s in rep["steps"]] == [22]  # both nodes' steps of rank -1
    killed = killed_recording(tmp_path / "killed.db")
    rep = report_json(killed)
    assert "summarized" not in rep["run"]["meta"] and rep["agents"][0]["metrics"]


def test_merge_summary_keeps_what_report_html_and_compare_read(tmp_path):
    """`merge --summary` copies the stored summaries and plots only: the report,
    page and comparison of that small file are those of the full merge; what
    needs the rows refuses it in one line; inputs that can't give it are named."""

    def node(name, agent, first_rank):
        path = tmp_path / name
        subprocess.run(
            [
                ROOT / "build" / "bench" / "gen_run",
                path,
                "0.05",
                "0.5",
                "2",
                "2",
                "2",
                "1",
                agent,
                str(first_rank),
            ],
            check=True,
            capture_output=True,
        )
        return path

    a, b, c = node("a.db", "node-0", 0), node("b.db", "node-1", 2), node("c.db", "node-2", 2)
    full, small = tmp_path / "full.db", tmp_path / "small.db"
    assert trainprof("merge", "-q", "-o", full, a, b).returncode == 0
    r = trainprof("merge", "-o", small, "--summary", a, b)
    assert r.returncode == 0 and "(summaries and plots only)" in r.stderr
    with sqlite3.connect(small) as db:
        assert db.execute("SELECT count(*) FROM region").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM mark").fetchone() == (0,)
    with sqlite3.connect(full) as db:
        assert db.execute("SELECT count(*) FROM region").fetchone()[0] > 1000
    assert small.stat().st_size < full.stat().st_size
    texts = [trainprof("report", f).stdout.replace(str(f), "RUN") for f in (full, small)]
    assert texts[0] == texts[1] and "Ranks, per step" in texts[0]
    reps = [report_json(f) for f in (full, small)]
    assert reps[1]["run"]["meta"].pop("summary_only") == "1"
    for rep in reps:
        rep["run"].pop("path")
    assert reps[0] == reps[1]
    pages = []
    for f in (full, small):
        assert trainprof("html", "-o", tmp_path / f"{f.stem}.html", f).returncode == 0
        pages.append((tmp_path / f"{f.stem}.html").read_text().replace(str(f), "RUN"))
    assert pages[0] == pages[1] and pages[0].count("<polyline") > 20
    same = json.loads(trainprof("compare", "--json", full, small).stdout)  # one run twice
    assert same["step_change"]["comparable"] and same["step_change"]["change"] == 0
    assert same["differences"] == [] and same["causes"] == []
    for side in ("a", "b"):
        same[side].pop("path")
    assert same["a"] == same["b"]
    # what reads the rows refuses the small file, in one line, exit status 2
    for args in (
        ("export", small),
        ("export", "--format", "csv", small),
        ("summarize", "--force", small),
    ):
        r = trainprof(*args)
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, args
        assert "holds summaries only (merge --summary)" in r.stderr
    assert trainprof("export", "--format", "json", small).returncode == 0
    # inputs that can't give summaries only are named, and nothing is written
    no_summary, no_plots = tmp_path / "no-summary.db", tmp_path / "no-plots.db"
    for path, key in ((no_summary, "summarized"), (no_plots, "plots")):
        shutil.copyfile(a, path)
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM meta WHERE key = ?", (key,))
    out = tmp_path / "refused.db"
    for inputs, why in (
        ((a, c, b), "rank 2 is in both"),
        ((no_summary, b), f"{no_summary} holds no stored summary"),
        ((no_plots, b), f"{no_plots} holds no stored plots"),
    ):
        r = trainprof("merge", "--summary", "-o", out, *inputs)
        assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert not out.exists() and not list(tmp_path.glob("refused.db*"))


# Rank 1 stops in from_device after its steps (a `.item()` on a GPU that
# never answers) until the recording ends; rank 0 ends its steps.
STALLING = """
import os, time, trainprof
for i in range(30):
    trainprof.step()
    with trainprof.region("train_batch"):
        time.sleep(0.03)
if os.environ["RANK"] == "1":
    with trainprof.region("from_device"):
        time.sleep(60)
"""


def test_a_stalled_rank_s_gpu_is_said_by_a_report_of_the_node_files(tmp_path):
    """A stall's GPU utilization is read over the stall's span, which a
    summary-only merge (the report of several node files) has no samples of:
    each node's recorder stores it with the stall, and the node files read
    together say what the stalled rank's GPU did; node files stored before
    say nothing of it (their last sample once stood for the stall)."""
    script = tmp_path / "stalling.py"
    script.write_text(STALLING)
    files, recorders = [tmp_path / "node-0.db", tmp_path / "node-1.db"], []
    for rank, path in enumerate(files):
        env = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2", "RANK": str(rank)}
        env.update(LOCAL_RANK=str(rank), WORLD_SIZE="2")
        argv = [PROGRAM, "record", "-q", "-i", "0.05", "--stall-after", "1"]
        argv += ["--agent", f"node-{rank}", "-o", str(path), "--", PYTHON, str(script)]
        recorders.append(subprocess.Popen(argv, env={**os.environ, **env}))
    assert recorders[0].wait(timeout=120) == 0
    time.sleep(3)  # rank 1 stalled for 2 s and more
    recorders[1].send_signal(signal.SIGTERM)
    recorders[1].wait(timeout=120)
    with sqlite3.connect(files[1]) as db:
        assert db.execute("SELECT rank, gpu, gpu_util_percent FROM summary_stall").fetchall() == [
            (1, 1, 60.0)  # the fake GPU 1's utilization
        ]
    [stall] = report_json(*files)["stalls"]
    assert (stall["rank"], stall["gpu"], stall["gpu_util_mean_percent"]) == (1, 1, 60), stall
    text = words(trainprof("report", *files).stdout)
    assert "its GPU 1 stayed busy meanwhile (NVML's utilization 60%)" in text, text
    older = tmp_path / "older-node-1.db"
    shutil.copyfile(files[1], older)
    with sqlite3.connect(older) as db:
        db.execute("ALTER TABLE summary_stall DROP COLUMN gpu_util_percent")
        db.execute("ALTER TABLE summary_stall DROP COLUMN gpu")
    [stall] = report_json(files[0], older)["stalls"]
    assert stall["rank"] == 1 and stall["gpu_util_mean_percent"] is None, stall
