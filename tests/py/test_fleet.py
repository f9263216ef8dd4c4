"""A fleet of 64 node files (bench/gen_run through trainprof's own writer: 8
ranks each, 3 minutes of 1-second steps, global rank 13 a straggler, and
node41 a slow node: all its 8 ranks' input 2.5 times as long): the report
shows the ranks as distributions with what stands out, grouped by node, the
header a pattern of the files; the html a heatmap of bounded size; merge a
progress line."""

import json
import os
import re
import subprocess

import pytest

from conftest import PROGRAM, ROOT, run_on_a_terminal, trainprof

GEN = os.environ.get("GEN_RUN", str(ROOT / "build" / "bench" / "gen_run"))
NODES, RANKS, SLOW_NODE = 64, 8, 41


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    paths = []
    for i in range(NODES):
        path = d / f"n{i}.db"
        env = dict(os.environ, GEN_RUN_SLOW_NODE="1" if i == SLOW_NODE else "0")
        subprocess.run([GEN, str(path), "0.05", "1", "8", "8", str(RANKS), "1.0", f"node{i}",
                        str(RANKS * i)], check=True, env=env, stdout=subprocess.DEVNULL)
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
    assert (f"node node{SLOW_NODE}: all its {RANKS} ranks ({first_rank}-{first_rank + RANKS - 1})"
            " slow") in ranks
    assert re.search(r"rank 13 \(node1\): \+3\d%", ranks)
    assert "rank 330 (" not in ranks  # in its node's line
    assert len(text.splitlines()) < 400  # bounded: not a line per rank
    # --all: every rank's line
    every = trainprof("report", "--all", *fleet, timeout=300).stdout
    table = every.split("Ranks, per step")[1].split("\n\n")[0]
    assert len(re.findall(r"^  \d+ +node", table, re.M)) == NODES * RANKS
    spread = json.loads(trainprof("report", "--json", *fleet, timeout=300).stdout)["ranks"]["spread"]
    assert spread["agents"] == NODES and spread["standing_out"] == [13]
    assert spread["slow_nodes"] == [{"agent": f"node{SLOW_NODE}", "ranks": RANKS,
                                     "first_rank": first_rank,
                                     "last_rank": first_rank + RANKS - 1}]
    assert spread["own_s_per_step"]["highest"] > 1.25 * spread["own_s_per_step"]["median"]


def test_the_heatmap_of_ranks_is_bounded(fleet, tmp_path):
    page = tmp_path / "fleet.html"
    r = trainprof("html", "-o", page, *fleet, timeout=300)
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    start = html.index("<title>Own work per step by rank and step</title>")
    figure = html[start:html.index("</figure>", start)]
    rects = re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" '
                       r'fill="(#[0-9a-f]+)"><title>([^<]*)</title>', figure)
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
    assert text.count("\n") <= 3  # the line, its end, and the result
