"""`trainprof merge`: two recordings standing for two nodes, joined and reported."""

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
    ROOT,
    assert_same_report,
    report_from_rows,
    report_json,
    trainprof,
)
from test_timings import EMIT

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits


def two_nodes(tmp_path, second_command=None, options=(), env=None, second_status=0, command=None):
    a, b = tmp_path / "node-a.db", tmp_path / "node-b.db"
    first_env = {k: v for k, v in os.environ.items() if k != "TRAINPROF_NVML_LIB"}
    first = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            *options,
            "--agent",
            "node-a",
            "-o",
            a,
            "--",
            *(command or [EMIT, "slow_epochs"]),
        ],
        env={**first_env, **(env or {})},
    )
    time.sleep(0.5)
    r = trainprof(
        "record",
        "-q",
        *options,
        "--agent",
        "node-b",
        "-o",
        b,
        "--",
        *(second_command or command or [EMIT, "slow_epochs"]),
        env={**(env or {}), "TP_TEST_NODE": "b"},
    )
    assert r.returncode == second_status and first.wait() == 0  # record passes it on
    return a, b


def record_node(tmp_path, node, command, env):
    """node's recording of command (sampled every 50 ms) in tmp_path/NODE.db."""
    path = tmp_path / f"{node}.db"
    r = trainprof(
        "record", "-q", "-i", "0.05", "--agent", node, "-o", path, "--", *command, env=env
    )
    assert r.returncode == 0, r.stderr
    return path


def test_merge_aligns_and_reports_per_agent(tmp_path):
    a, b = two_nodes(tmp_path)
    out = tmp_path / "all.db"
    r = trainprof("merge", "-o", out, a, b)
    assert r.returncode == 0, r.stderr
    # progress, in a log: a line at each tenth of the files (both, of two), then the result
    lines = r.stderr.splitlines()
    assert [x.split("merge: ")[1].split(",")[0] for x in lines[:2]] == [
        "1 of 2 files",
        "2 of 2 files",
    ]
    assert "files/s" in lines[0] and "left" in lines[0] and "left" not in lines[1]
    assert lines[2] == f"trainprof: merged 2 run files into {out}"
    r = trainprof("merge", "-q", "-o", tmp_path / "quiet.db", a, b)
    assert r.returncode == 0 and r.stderr == ""
    rep = report_json(out)
    assert [ag["name"] for ag in rep["agents"]] == ["node-a", "node-b"]
    for agent in rep["agents"]:
        assert any(m["name"] == "cpu_util_percent" for m in agent["metrics"])
    starts = sorted(e["start_s"] for e in rep["epochs"] if e["epoch"] == 0)
    assert len(starts) == 2

    def epoch0_wall_s(path):  # its epoch 0 on the wall clock, from its own file alone
        with sqlite3.connect(path) as db:
            [(wall_ns,)] = db.execute("SELECT value FROM meta WHERE key = 'start_wall_ns'")
        [e0] = [e["start_s"] for e in report_json(path)["epochs"] if e["epoch"] == 0]
        return int(wall_ns) / 1e9 + e0

    # node-b started about 0.5 s later (0.3 s once, beside the suite's other work:
    # the sleep is no measure of it); the merged time line puts the two epochs as
    # far apart as their own clocks say they were
    apart = abs(epoch0_wall_s(b) - epoch0_wall_s(a))
    assert 0 < apart < 5 and abs((starts[1] - starts[0]) - apart) < 0.01, (starts, apart)
    assert rep["timing_threads"] == 2
    with sqlite3.connect(out) as db:
        samples = db.execute("SELECT count(*) FROM sample").fetchone()[0]
    with sqlite3.connect(a) as da, sqlite3.connect(b) as dbb:
        expected = sum(d.execute("SELECT count(*) FROM sample").fetchone()[0] for d in (da, dbb))
    assert samples == expected
    text = trainprof("report", out).stdout
    assert "merged    2 files" in text and "agent node-b" in text


def test_each_node_keeps_its_own_host_facts(tmp_path):
    """A merged run keeps each node's metadata (agent_meta): the report says
    which node's command failed, describes each kind of host, and judges each
    node's memory against its own size. Both nodes run on this machine, so
    node-b's host facts are edited to stand for another kind of machine."""
    fails_on_b = f'{EMIT} slow_epochs; test "$TP_TEST_NODE" != b || exit 3'
    a, b = two_nodes(tmp_path, command=["sh", "-c", fails_on_b], second_status=3)
    with sqlite3.connect(b) as db:
        used = db.execute(
            "SELECT max(value) FROM samples WHERE agent = 'node-b'"
            " AND metric = 'host_mem_used_bytes'"
        ).fetchone()[0]
        for key, value in (
            ("cpu_count", "96"),
            ("cpu_model", "Other CPU"),
            ("mem_total_bytes", str(int(used * 1.05))),
        ):
            db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    out = tmp_path / "all.db"
    assert trainprof("merge", "-q", "-o", out, a, b).returncode == 0
    for source in ((out,), (a, b)):  # the merged file, and the node files as they are
        text = trainprof("report", *source).stdout
        assert "exit status 3 on node-b" in text
        hosts = [x for x in text.splitlines()[3:6] if ": " in x]
        assert hosts[0].split()[:2] == ["hosts", "node-a:"] and "96 CPUs" not in hosts[0]
        assert hosts[1].split()[0] == "node-b:" and "96 CPUs (Other CPU)" in hosts[1]
        rep = json.loads(trainprof("report", "--json", *source).stdout)
        assert rep["run"]["failed_agent"] == "node-b" and rep["run"]["exit_status"] == 3
        assert [ag["meta"]["cpu_count"] for ag in rep["agents"]][1] == "96"
        memory = [v for v in rep["verdicts"] if v["kind"] == "memory_pressure"]
        assert [v["evidence"]["agent"] for v in memory] == ["node-b"]
    with sqlite3.connect(out) as db:
        assert db.execute("SELECT count(DISTINCT agent_id) FROM agent_meta").fetchone()[0] == 2


@pytest.fixture(scope="module")
def big_nodes(tmp_path_factory):
    """Two nodes' files, their regions repeated until a merge takes seconds."""
    a, b = two_nodes(tmp_path_factory.mktemp("big"))
    for run in (a, b):
        with sqlite3.connect(run) as db:
            for _ in range(12):  # 2^12 times its regions
                db.execute(
                    "INSERT INTO region SELECT thread_id, name_id, depth, start_ns + 1,"
                    " end_ns + 1 FROM region"
                )
    return a, b


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_merge_leaves_no_temporary_file(big_nodes, tmp_path, sig):
    """A merge stopped midway (Ctrl-C, a job's end) takes its private output
    with it: a fleet's merge can be gigabytes, left behind on every retry."""
    out = tmp_path / "merged.db"
    p = subprocess.Popen([PROGRAM, "merge", "-o", out, *big_nodes], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob("merged.db.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert list(tmp_path.glob("merged.db.tmp-*")), "the merge never began"
    p.send_signal(sig)
    assert p.wait(timeout=20) == -sig, p.stderr.read()
    assert list(tmp_path.iterdir()) == []


def test_merge_refuses_what_does_not_belong_together(tmp_path):
    a, b = two_nodes(tmp_path, second_command=["sleep", "0.2"])
    out = tmp_path / "all.db"
    r = trainprof("merge", "-o", out, a, b)
    assert r.returncode == 2 and "ran another command" in r.stderr and not out.exists()
    assert trainprof("merge", "--force", "-o", out, a, b).returncode == 0
    r = trainprof("merge", "-o", out, a, b)
    assert r.returncode == 2 and "already exists" in r.stderr
    r = trainprof("merge", "--force", "-o", tmp_path / "again.db", out, a)
    assert r.returncode == 2 and "already a merged run" in r.stderr
    # a reader given them says so without pointing at a --force that can't help
    r = trainprof("report", out, a)
    assert r.returncode == 2 and "already a merged run" in r.stderr and "--force" not in r.stderr
    r = trainprof("report", a, b)  # another command: merge --force is the way
    assert r.returncode == 2 and "merge them with `trainprof merge --force`" in r.stderr
    r = trainprof("merge", "--force", "-o", tmp_path / "no" / "dir.db", a, b)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"cannot write {tmp_path / 'no' / 'dir.db'}: No such file or directory" in r.stderr
    newer = tmp_path / "newer.db"
    newer.write_bytes(a.read_bytes())
    with sqlite3.connect(newer) as db:  # one past what this build writes
        db.execute(f"PRAGMA user_version = {db.execute('PRAGMA user_version').fetchone()[0] + 1}")
    r = trainprof("merge", "-o", tmp_path / "x.db", a, newer)
    assert r.returncode == 2 and "newer than this trainprof" in r.stderr
    r = trainprof("merge", "-o", tmp_path / "y.db", a)
    assert r.returncode == 2 and "two or more run files" in r.stderr
    twin = tmp_path / "twin.db"  # a second node recorded under the first's name
    twin.write_bytes(b.read_bytes())
    with sqlite3.connect(twin) as db:
        db.execute("UPDATE agent SET name = 'node-a'")
    for cmd in (("merge", "--force", "-o", tmp_path / "z.db"), ("report",)):
        r = trainprof(*cmd, a, twin)  # it said "merge: not an error"
        assert r.returncode == 2 and 'both recorded as agent "node-a"' in r.stderr, r.stderr
    assert not list(tmp_path.glob("*.tmp-*"))


def test_report_html_export_take_the_node_files(tmp_path):
    a, b = two_nodes(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    r = trainprof("report", "--json", a, b, env=env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [ag["name"] for ag in rep["agents"]] == ["node-a", "node-b"]
    assert rep["run"]["meta"]["merged_from"] == "2 files"
    assert rep["run"]["path"] == f"{a} + {b}"
    merged = tmp_path / "all.db"
    assert trainprof("merge", "-o", merged, a, b).returncode == 0
    assert rep["timings"] == report_json(merged)["timings"]
    page = tmp_path / "both.html"
    r = trainprof("html", "-o", page, a, b, env=env)
    assert r.returncode == 0, r.stderr
    # each agent's lines are told apart in the plots' legends
    text = page.read_text()
    for agent in ("node-a", "node-b"):
        assert f">{agent} total</text>" in text  # cpu_util_percent, host_mem_used_bytes
    r = trainprof("html", a, b, env=env)
    assert r.returncode == 2 and "-o" in r.stderr
    # on a terminal, a full merge shows its progress on one line, erased when done
    main, sub = os.openpty()
    try:
        r = subprocess.run(
            [PROGRAM, "export", "--format", "csv", a, b],
            stdout=subprocess.DEVNULL,
            stderr=sub,
            env={**os.environ, **env},
            timeout=120,
        )
        os.close(sub)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: nothing left on the closed terminal
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    assert r.returncode == 0
    assert b"merging the run files: 2 of 2" in shown and shown.endswith(b"\r\x1b[K")
    r = trainprof("export", "--format", "csv", a, b, env=env)
    assert r.returncode == 0 and ",node-b," in r.stdout and ",node-a," in r.stdout
    assert list(tmp.iterdir()) == []  # the merged temporary is gone
    c = tmp_path / "other.db"
    assert trainprof("record", "-q", "-o", c, "--", "sleep", "0.1").returncode == 0
    r = trainprof("report", a, c, env=env)
    assert r.returncode == 2 and "ran another command" in r.stderr and "--force" in r.stderr
    assert list(tmp.iterdir()) == []


def test_energy_per_epoch_counts_every_node(tmp_path):
    gpus = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"}
    a, b = two_nodes(tmp_path, options=("--interval", "0.05"), env=gpus)
    merged = tmp_path / "all.db"
    assert trainprof("merge", "-o", merged, a, b).returncode == 0
    # node-b's first epoch, while node-a still runs: both nodes' GPUs count
    own = report_json(b)["epochs"][0]
    both = max(
        (e for e in report_json(merged)["epochs"] if e["epoch"] == 0), key=lambda e: e["start_s"]
    )
    assert abs(both["duration_s"] - own["duration_s"]) < 1e-6
    assert 1.6 < both["energy_j"] / own["energy_j"] < 2.4


def test_each_rank_is_mapped_to_the_gpu_its_process_sees(tmp_path):
    """CUDA_VISIBLE_DEVICES (Slurm's per-task binding, a launcher's reordering)
    decides which of the node's GPUs a rank drove: by UUID or by index, one
    GPU or the entry at its local rank. Without it, its local rank. Stored by
    the recorder, computed the same from the rows, and kept by a merge."""
    gpus = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"}
    bound = (
        f"RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 CUDA_VISIBLE_DEVICES=GPU-fake-0001 {EMIT} "
        f"slow_epochs & RANK=1 LOCAL_RANK=1 WORLD_SIZE=4 CUDA_VISIBLE_DEVICES=1,0 {EMIT} "
        "slow_epochs & wait"
    )
    # node b: rank 2 told its device's UUID, which wins over its local rank
    # (CUDA's device order need not be NVML's); rank 3 told a UUID no GPU has
    plain = (
        f"RANK=2 LOCAL_RANK=0 WORLD_SIZE=4 EMIT_CUDA_DEVICE=FAKE-0001 {EMIT} slow_epochs & "
        f"RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 EMIT_CUDA_DEVICE=fake-9999 {EMIT} slow_epochs"
        " & wait"
    )
    files = [
        record_node(
            tmp_path, node, ("env", "-u", "CUDA_VISIBLE_DEVICES", "sh", "-c", command), gpus
        )
        for node, command in (("node-a", bound), ("node-b", plain))
    ]
    with sqlite3.connect(files[0]) as db:
        assert sorted(v for (v,) in db.execute("SELECT visible_devices FROM thread_cuda")) == [
            "1,0",
            "GPU-fake-0001",
        ]
    rep = report_json(files[0])
    assert {x["rank"]: x["gpu"] for x in rep["ranks"]["per_rank"]} == {0: 1, 1: 0}
    # each rank's GPU's clock event reasons: the fake holds GPU 1 at its power
    # cap and temperature limit (0x24), GPU 0 runs free
    assert {
        x["rank"]: (x["gpu_slowdown_reasons"], x["gpu_slowdown_share"])
        for x in rep["ranks"]["per_rank"]
    } == {0: (0x24, 1.0), 1: (0, 0.0)}
    assert_same_report(rep, report_from_rows(files[0], tmp_path))
    merged = tmp_path / "all.db"  # the nodes' commands differ: --force
    assert trainprof("merge", "-q", "--force", "-o", merged, *files).returncode == 0
    for rep in (report_json(merged), report_from_rows(merged, tmp_path)):
        assert {x["rank"]: x["gpu"] for x in rep["ranks"]["per_rank"]} == {0: 1, 1: 0, 2: 1, 3: 1}
        assert {x["rank"]: x["gpu_slowdown_reasons"] for x in rep["ranks"]["per_rank"]} == {
            0: 0x24,
            1: 0,
            2: 0x24,
            3: 0x24,
        }
    # a file summarized before summary_rank.gpu (and its cpu_wait_percent):
    # its local ranks stand in, it merges, and `summarize --force` adds the
    # columns
    old = tmp_path / "old.db"
    shutil.copyfile(files[1], old)
    with sqlite3.connect(old) as db:
        db.execute("ALTER TABLE summary_rank DROP COLUMN gpu")
        db.execute("ALTER TABLE summary_rank DROP COLUMN cpu_wait_percent")
    ranks = report_json(old)["ranks"]["per_rank"]
    assert {x["rank"]: x["gpu"] for x in ranks} == {2: 0, 3: 1}
    assert all(x["cpu_wait_percent"] is None for x in ranks), ranks
    mixed = tmp_path / "mixed.db"
    r = trainprof("merge", "-q", "--force", "--summary", "-o", mixed, files[0], old)
    assert r.returncode == 0, r.stderr
    assert len(report_json(mixed)["ranks"]["per_rank"]) == 4
    assert trainprof("summarize", "--force", "-q", old).returncode == 0
    with sqlite3.connect(old) as db:
        assert db.execute("SELECT rank, gpu FROM summary_rank ORDER BY rank").fetchall() == [
            (2, 1),
            (3, 1),
        ]
        waits = db.execute("SELECT cpu_wait_percent FROM summary_rank").fetchall()
        assert len(waits) == 2 and all(0 <= w <= 100 for (w,) in waits), waits  # from the rows
        assert db.execute("SELECT COUNT(*) FROM thread_device").fetchone() == (2,)


def test_many_agents_share_one_table(tmp_path):
    """Five node files: the report compares their system metrics in one table
    (median, lowest, highest; every GPU of every node for GPU metrics) instead
    of five agents' tables, --all prints those; html draws the same three
    lines over time for each metric."""
    files = []
    for node in range(5):
        path = tmp_path / f"node-{node}.db"
        subprocess.run(
            [
                ROOT / "build" / "bench" / "gen_run",
                path,
                "0.02",
                "0.5",
                "2",
                "2",
                "1",
                "1",
                f"node-{node}",
                str(node),
            ],
            check=True,
            capture_output=True,
        )
        files.append(path)
    # an idle GPU on node-3 and a busy CPU on node-1, as their recorders summarized them
    # and a saturated disk on node-4
    for path, metric, labels, mean in (
        (files[3], "gpu_util_percent", '{"gpu":"1"}', 5.0),
        (files[1], "cpu_util_percent", "{}", 99.0),
        (files[4], "disk_busy_percent", '{"device":"nvme1n1"}', 99.5),
    ):
        with sqlite3.connect(path) as db:  # over the whole run and the steps alike
            for table in ("summary_series", "summary_series_steps"):
                db.execute(
                    f"UPDATE {table} SET mean = ? WHERE series_id = (SELECT s.id FROM"
                    " series s JOIN metric m ON m.id = s.metric_id WHERE m.name = ? AND"
                    " s.labels = ?)",
                    (mean, metric, labels),
                )
    text = trainprof("report", *files).stdout
    assert "System metrics across 5 agents, during their training steps" in text
    assert "System metrics, agent" not in text
    lines = {
        x.split()[0]: x
        for x in text.splitlines()
        if x.startswith("  gpu_")
        or x.startswith("  cpu_util")
        or x.startswith("  disk_busy")
        or x.startswith("  net_link")
    }
    assert "(10 GPUs)" in lines["gpu_util_percent"]
    # per-device metrics with no agent total: every disk and link of every node
    assert "(10 disks)" in lines["disk_busy_percent"]
    assert lines["disk_busy_percent"].endswith("99.5 % node-4 device=nvme1n1")
    assert "(10 links)" in lines["net_link_speed_bytes_per_s"]
    assert "5.0 % node-3 gpu=1" in lines["gpu_util_percent"]
    assert lines["cpu_util_percent"].endswith("99.0 % node-1")
    rep = json.loads(trainprof("report", "--json", *files).stdout)
    cpu = sorted(
        m["in_steps"]["mean"]
        for a in rep["agents"]
        for m in a["metrics"]
        if m["name"] == "cpu_util_percent" and m["labels"] == {}
    )
    assert f"{cpu[2]:.1f} %" == lines["cpu_util_percent"].split()[1] + " %"  # the median
    every = trainprof("report", "--all", *files).stdout
    assert every.count("System metrics, agent node-") == 5 and "across 5 agents" not in every
    # html: each metric's chart is the lowest, median and highest over time, not 5 (or 10) lines
    page = tmp_path / "all.html"
    assert trainprof("html", "-o", page, *files).returncode == 0
    html = page.read_text()
    titles = re.findall(r'chart-title">([^<]*)<', html)
    assert "gpu_util_percent (10 GPUs)" in titles and "cpu_util_percent (5 agents)" in titles
    assert "disk_busy_percent (10 disks)" in titles
    chart = html[html.index('chart-title">gpu_util_percent (10 GPUs)<') :]
    chart = chart[: chart.index("</svg>")]
    assert chart.count("<polyline") == 3
    assert re.findall(r'class="legend">([^<]*)<', chart) == ["highest", "median", "lowest"]
    assert trainprof("html", "--all", "--force", "-o", page, *files).returncode == 0
    html = page.read_text()
    gpus = re.findall(r'chart-title">gpu_util_percent, ([^<]*)<', html)  # a chart per GPU
    assert len(gpus) == 10 and "node-3 gpu=1" in gpus
    chart = html[html.index('chart-title">gpu_util_percent, node-3 gpu=1<') :]
    assert chart[: chart.index("</svg>")].count("<polyline") == 1


def test_marks_are_numbers_and_a_schema_6_file_merges_with_them(tmp_path):
    """Schema 7 stores a mark's kind as the ring's event number; a schema 6
    node file (the golden corpus's, with words) merges with a new one into
    numbers only, and the merged run counts both nodes' steps."""
    new = tmp_path / "new.db"
    r = trainprof("record", "-q", "--agent", "new", "-o", new, "--", EMIT, "nested")
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(new) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 10
        assert {t for (t,) in db.execute("SELECT DISTINCT typeof(kind) FROM mark")} == {"integer"}
        words = dict(db.execute("SELECT kind, count(*) FROM marks GROUP BY kind"))
    assert words == {"step": 11, "epoch": 2}
    old = tmp_path / "old.db"
    shutil.copy(ROOT / "tests" / "golden" / "runs" / "node_a.db", old)
    with sqlite3.connect(old) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 6
        old_steps = db.execute("SELECT count(*) FROM mark WHERE kind = 'step'").fetchone()[0]
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "-q", "--force", "-o", merged, old, new)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(merged) as db:
        assert {t for (t,) in db.execute("SELECT DISTINCT typeof(kind) FROM mark")} == {"integer"}
        assert (
            db.execute("SELECT count(*) FROM mark WHERE kind = 3").fetchone()[0] == old_steps + 11
        )
