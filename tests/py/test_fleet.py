"""A fleet of 64 node files (bench/gen_run through trainprof's own writer: 8
ranks each, 3 minutes of 1-second steps, global rank 13 a straggler, and
node41 a slow node: all its 8 ranks' input 2.5 times as long): the report
shows the ranks as distributions with what stands out, grouped by node, the
header a pattern of the files; the html a heatmap of bounded size; merge a
progress line."""

import json
import os
import re
import sqlite3
import subprocess

import pytest
from conftest import PROGRAM, PYTHON, ROOT, run_on_a_terminal, trainprof

GEN = os.environ.get("GEN_RUN", str(ROOT / "build" / "bench" / "gen_run"))
NODES, RANKS, SLOW_NODE = 64, 8, 41


def as_reported(figure):
    """The report's figure as an engine's average of the same rows must equal
    it: to 1e-9, for the engine sums in another order (a row more or less
    moves it by 1e-3 or more). Equal digits at a fixed precision would fail
    on a rounding edge."""
    return pytest.approx(figure, rel=1e-9)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    paths = []
    for i in range(NODES):
        path = d / f"n{i}.db"
        env = dict(os.environ, GEN_RUN_SLOW_NODE="1" if i == SLOW_NODE else "0")
        subprocess.run(
            [GEN, str(path), "0.05", "1", "8", "8", str(RANKS), "1.0", f"node{i}", str(RANKS * i)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        paths.append(path)
    return paths


def test_the_ranks_of_a_fleet_as_distributions(fleet):
    r = trainprof("report", *fleet, timeout=300)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    first = text.splitlines()[0]
    assert first == f"trainprof report: {NODES} files: {fleet[0].parent}/n*.db"
    assert f"Ranks, per step: {NODES * RANKS} ranks on {NODES} agents" in text
    ranks = text.split("Ranks, per step:")[1].split("\nVerdicts")[0]
    assert re.search(r"^  own work +\d", ranks, re.M)  # a line per figure, none per rank
    assert not re.search(r"^  \d+ +node", ranks, re.M)
    # the slow node named as a node, the straggler elsewhere as a rank
    first_rank = SLOW_NODE * RANKS
    assert (
        f"node node{SLOW_NODE}: all its {RANKS} ranks ({first_rank}-{first_rank + RANKS - 1}) slow"
    ) in ranks
    assert re.search(r"rank 13 \(node1\): \+3\d%", ranks)
    assert "rank 330 (" not in ranks  # in its node's line
    assert len(text.splitlines()) < 400  # bounded: not a line per rank
    # --all: every rank's line
    every = trainprof("report", "--all", *fleet, timeout=300).stdout
    table = every.split("Ranks, per step")[1].split("\n\n")[0]
    assert len(re.findall(r"^  \d+ +node", table, re.M)) == NODES * RANKS
    spread = json.loads(trainprof("report", "--json", *fleet, timeout=300).stdout)["ranks"][
        "spread"
    ]
    assert spread["agents"] == NODES and spread["standing_out"] == [13]
    assert spread["slow_nodes"] == [
        {
            "agent": f"node{SLOW_NODE}",
            "ranks": RANKS,
            "first_rank": first_rank,
            "last_rank": first_rank + RANKS - 1,
        }
    ]
    assert spread["own_s_per_step"]["highest"] > 1.25 * spread["own_s_per_step"]["median"]


def test_the_heatmap_of_ranks_is_bounded(fleet, tmp_path):
    page = tmp_path / "fleet.html"
    r = trainprof("html", "-o", page, *fleet, timeout=300)
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    start = html.index("<title>Own work per step by rank and step</title>")
    figure = html[start : html.index("</figure>", start)]
    rects = re.findall(
        r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" '
        r'fill="(#[0-9a-f]+)"><title>([^<]*)</title>',
        figure,
    )
    assert 128 <= len(rects) <= 128 * 120  # a row a group of 4 ranks, equal cells merged
    assert len(figure) < 128 * 1024
    fills = {title.split(",")[0]: fill for fill, title in rects}
    base = fills["ranks 0-3"]
    assert fills["ranks 12-15"] != base  # the straggler's group stands out
    assert fills[f"ranks {SLOW_NODE * RANKS}-{SLOW_NODE * RANKS + 3}"] != base
    assert fills["ranks 16-19"] == base


def test_merge_of_many_files_is_one_progress_line(fleet, tmp_path):
    out = tmp_path / "all.db"
    rc, text = run_on_a_terminal([PROGRAM, "merge", "--summary", "-o", out, *fleet], timeout=300)
    assert rc == 0, text
    assert text.count("\r") >= NODES  # rewritten after each file
    assert f"{NODES} of {NODES} files" in text and "files/s" in text and "left" in text
    assert "the metrics' envelopes across the 64 nodes" in text  # a fleet: no node's points
    assert text.count("\n") <= 4  # the line, its end, the envelopes, and the result


def system_metrics(page):
    html = page.read_text()
    start = html.index('<h2 id="system-metrics">')
    return html[start : html.index("<h2", start + 1)]


def test_a_fleet_summary_keeps_envelopes_and_answers_as_its_files(fleet, tmp_path):
    out = tmp_path / "fleet.db"
    r = trainprof("merge", "-q", "--summary", "-o", out, *fleet, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size < NODES * 150_000  # tens of kB a node, not its plots
    with sqlite3.connect(out) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'envelopes'").fetchone() == ("1",)
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master")}
        assert "summary_plot" not in tables or db.execute(
            "SELECT count(*) FROM summary_plot"
        ).fetchone() == (0,)
        lines = dict(db.execute("SELECT metric, max(lines) FROM summary_envelope GROUP BY metric"))
        assert lines["gpu_util_percent"] == NODES * 8 and lines["cpu_util_percent"] == NODES
        assert db.execute(
            "SELECT count(*) FROM summary_envelope WHERE NOT (low <= median AND median <= high)"
        ).fetchone() == (0,)
        low, high = db.execute(
            "SELECT min(low), max(high) FROM summary_envelope WHERE metric = 'gpu_util_percent'"
        ).fetchone()
        groups = dict(db.execute("SELECT rank, count(*) FROM summary_step_phase GROUP BY rank"))
    # within what the nodes stored
    seen = []
    for path in fleet[:8]:
        with sqlite3.connect(path) as db:
            seen += db.execute(
                "SELECT min(p.value), max(p.value) FROM summary_plot p"
                " JOIN series s ON s.id = p.series_id JOIN metric m"
                " ON m.id = s.metric_id WHERE m.name = 'gpu_util_percent'"
            ).fetchall()
    assert min(a for a, _ in seen) - 1e-9 <= high and low <= max(b for _, b in seen) + 1e-9
    # every rank's groups but the lowest's joined into at most 60
    assert len(groups) == NODES * RANKS and groups[0] > 60
    assert max(n for rank, n in groups.items() if rank != 0) <= 60
    # the report the same as of the files (its header's name aside)
    assert (
        trainprof("report", out).stdout.splitlines()[1:]
        == trainprof("report", *fleet, timeout=300).stdout.splitlines()[1:]
    )
    # html: the same charts of the metrics as the files'
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert trainprof("html", "-o", a, out).returncode == 0
    assert trainprof("html", "-o", b, *fleet, timeout=300).returncode == 0
    assert system_metrics(a) == system_metrics(b) and f"({NODES * 8} GPUs)" in system_metrics(a)
    # --all: the envelopes still, and where each agent's points are
    c = tmp_path / "c.html"
    assert trainprof("html", "--all", "-o", c, out, timeout=300).returncode == 0
    assert "of the node files draws every agent" in system_metrics(c)


def duckdb_or_skip():
    return pytest.importorskip("duckdb")


def test_the_fleet_as_parquet_answers_as_the_report(fleet, tmp_path):
    """export --format parquet, read back by DuckDB: each rank's steps and
    their mean, and each agent's CPU, as the report gives them."""
    duckdb = duckdb_or_skip()
    out = tmp_path / "parquet"
    env = {"TRAINPROF_PYTHON": PYTHON}
    r = trainprof("export", "--format", "parquet", "-o", out, *fleet, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "marks",
        "regions",
        "samples",
        "steps",
        "summary_epoch",
        "summary_gpu",
        "summary_rank",
        "summary_step",
        "summary_timing",
    ]
    assert len(list((out / "steps").glob("rank=*"))) == NODES * RANKS
    assert len(list((out / "samples").glob("agent=*"))) == NODES
    rep = json.loads(trainprof("report", "--json", *fleet, timeout=300).stdout)
    steps = {
        row[0]: row[1:]
        for row in duckdb.sql(
            f"SELECT rank, count(*), avg(duration_s) FROM read_parquet('{out}/steps/*/*.parquet',"
            " hive_partitioning = true) WHERE NOT (warmup OR profiled OR stalled) GROUP BY rank"
        ).fetchall()
    }
    assert len(steps) == NODES * RANKS
    for s in rep["steps"]:
        count, mean = steps[s["rank"]]
        assert count == s["timed_steps"] and mean == as_reported(s["mean_s"])
    cpu = dict(
        duckdb.sql(
            f"SELECT agent, avg(value) FROM read_parquet('{out}/samples/*/*.parquet',"
            " hive_partitioning = true) WHERE metric = 'cpu_util_percent' AND labels = '{}'"
            " GROUP BY agent"
        ).fetchall()
    )
    for agent in rep["agents"]:
        [m] = [m for m in agent["metrics"] if m["name"] == "cpu_util_percent" and not m["labels"]]
        assert cpu[agent["name"]] == as_reported(m["mean"])
    # the fleet's questions: the slowest ranks by own work, a metric across nodes
    slowest = duckdb.sql(
        f"SELECT rank, avg(duration_s) AS input FROM read_parquet("
        f"'{out}/regions/*/*.parquet', hive_partitioning = true) WHERE name = 'dataloader_next'"
        " GROUP BY rank ORDER BY input DESC LIMIT 9"
    ).fetchall()
    assert {rank for rank, _ in slowest} == {13, *range(SLOW_NODE * RANKS, SLOW_NODE * RANKS + 8)}


def test_parquet_refuses_what_it_cannot_do(fleet, tmp_path):
    r = trainprof("export", "--format", "parquet", fleet[0])
    assert r.returncode == 2 and "name it with -o DIR" in r.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    r = trainprof("export", "--format", "parquet", "-o", tmp_path / "full", fleet[0])
    assert r.returncode == 2 and "holds files already" in r.stderr
    r = trainprof(
        "export",
        "--format",
        "parquet",
        "-o",
        tmp_path / "out",
        tmp_path / "none.db",
        env={"TRAINPROF_PYTHON": PYTHON},
    )
    assert r.returncode == 2 and "none.db: no such file" in r.stderr


def test_a_recorded_run_as_parquet_leaves_the_profiled_steps_out_as_the_report(tmp_path):
    """A real training (its capture window at step 11: profiled steps)."""
    duckdb = duckdb_or_skip()
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        ROOT / "tests/py/programs/loader_train.py",
        "0",
        "60",
        "0",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    out = tmp_path / "parquet"
    r = trainprof("export", "--format", "parquet", "-o", out, run, env={"TRAINPROF_PYTHON": PYTHON})
    assert r.returncode == 0, r.stderr
    [s] = json.loads(trainprof("report", "--json", run).stdout)["steps"]
    assert s["profiled_steps"] > 0
    [(count, profiled, mean)] = duckdb.sql(
        f"SELECT count(*), count(*) FILTER (WHERE profiled), avg(duration_s) FILTER (WHERE NOT"
        f" profiled AND NOT warmup) FROM read_parquet('{out}/steps/*/*.parquet')"
    ).fetchall()
    assert count == s["count"] and profiled == s["profiled_steps"]
    assert mean == as_reported(s["mean_s"])


STALLS = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
data = TensorDataset(torch.randn(3200, 16), torch.randint(0, 4, (3200,)))
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (x, y) in enumerate(DataLoader(data, batch_size=16)):
    time.sleep(2.5 if i == 120 else 0.005)  # a store that hung once, then went on
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
"""


def test_a_run_that_stalled_as_parquet_leaves_the_stalled_step_out_as_the_report(tmp_path):
    """A step that stalled (past record's --stall-after) and went on: the
    report names it and leaves it out of its figures and its count; the
    Parquet steps flag it, where before it was a step like any other (the
    mean over the unflagged steps 18.9 ms, the report's 5.5 ms)."""
    duckdb = duckdb_or_skip()
    script, run = tmp_path / "stalls.py", tmp_path / "run.db"
    script.write_text(STALLS)
    r = trainprof("record", "-q", "--stall-after", "1", "-o", run, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "parquet"
    r = trainprof("export", "--format", "parquet", "-o", out, run, env={"TRAINPROF_PYTHON": PYTHON})
    assert r.returncode == 0, r.stderr
    rep = json.loads(trainprof("report", "--json", run).stdout)
    [s] = rep["steps"]
    [(rows, stalled, longest, count, warmup, profiled, mean)] = duckdb.sql(
        "SELECT count(*), count(*) FILTER (WHERE stalled), max(duration_s) FILTER (WHERE stalled),"
        " count(*) FILTER (WHERE NOT stalled), count(*) FILTER (WHERE warmup),"
        " count(*) FILTER (WHERE profiled),"
        " avg(duration_s) FILTER (WHERE NOT (warmup OR profiled OR stalled))"
        f" FROM read_parquet('{out}/steps/*/*.parquet')"
    ).fetchall()
    assert rows == 200 and stalled == 1 and longest > 2.5, (rows, stalled, longest)
    assert (count, warmup, profiled) == (s["count"], s["warmup_steps"], s["profiled_steps"])
    assert mean == as_reported(s["mean_s"])
    # at most one kind a step: the report's timed steps are the unflagged ones
    [(flagged,)] = duckdb.sql(
        "SELECT count(*) FILTER (WHERE warmup::INT + profiled::INT + stalled::INT > 1)"
        f" FROM read_parquet('{out}/steps/*/*.parquet')"
    ).fetchall()
    assert flagged == 0
