"""Runs that stop making progress: a rank blocked in its Dataset or before a
collective, the others waiting for it in DDP's all-reduce, until a timeout
ends the run. The report opens with the stall, names the rank the others
wait for, its phase and its function; JSON has the same under "stalls"."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import textwrap
import time
import urllib.request

import pytest
from conftest import (
    EMIT,
    PROGRAM,
    PYTHON,
    ROOT,
    free_port,
    in_short,
    report_json,
    run_on_a_terminal,
    trainprof,
    words,
)

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits

TORCHRUN = (PYTHON, "-m", "torch.distributed.run")

# BLOCK=data: rank 1's Dataset blocks at its 13th batch; BLOCK=forward: rank
# 1's model waits in its forward at step 6 (before backward's all-reduce), on
# an event never set (in the standard library's threading, as a lock or a
# queue would be).
HANG = """
import os, threading, time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

BLOCK = os.environ["BLOCK"]

class D(Dataset):
    def __init__(self, rank):
        self.rank = rank
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        if BLOCK == "data" and self.rank == 1 and i >= 12 * 8:
            open(os.environ.get("BLOCKED_FILE", os.devnull), "w").close()
            time.sleep(3600)
        return torch.randn(32), torch.tensor(i % 4)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        if BLOCK == "forward" and dist.get_rank() == 1 and self.calls == 6:
            open(os.environ.get("BLOCKED_FILE", os.devnull), "w").close()
            threading.Event().wait(3600)
        return self.body(x)

dist.init_process_group("gloo")
model = DDP(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(D(dist.get_rank()), batch_size=8):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
"""


def wait_blocked_then_stop(recorders, blocked, stalled_s, during=None):
    """Once the script has said (the file blocked) that rank 1 blocks, lets
    the stall last stalled_s seconds (during it, during(deadline) where
    given), then ends each recorder as `timeout` would (SIGTERM, which
    record passes on): however long the start took beside other work, the
    stall lasts as long."""
    deadline = time.monotonic() + 120
    while not blocked.exists() and time.monotonic() < deadline:
        if any(r.poll() is not None for r in recorders):
            break
        time.sleep(0.1)
    assert blocked.exists(), "rank 1 never reached its block"
    end = time.monotonic() + stalled_s
    if during:
        during(end)
    time.sleep(max(0.0, end - time.monotonic()))
    for r in recorders:
        r.send_signal(signal.SIGTERM)
    for r in recorders:
        r.communicate(timeout=120)


def record_hang(tmp_path, run_file, block, stalled_s=8, options=(), during=None):
    """Records the script under torchrun, ended by SIGTERM to record once
    rank 1 has been blocked stalled_s seconds (during: as
    wait_blocked_then_stop's)."""
    script = tmp_path / "hang_ddp.py"
    script.write_text(textwrap.dedent(HANG))
    blocked = tmp_path / "blocked"
    rec = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            "--stall-after",
            "3",
            *options,
            "-o",
            str(run_file),
            "--",
            *TORCHRUN,
            "--standalone",
            "--nproc_per_node",
            "2",
            str(script),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, BLOCK=block, BLOCKED_FILE=str(blocked)),
    )
    wait_blocked_then_stop([rec], blocked, stalled_s, during)
    assert rec.returncode != 0  # ended by the signal
    return script


def short_of(run_file):
    return in_short(trainprof("report", run_file).stdout)


def test_rank_blocked_in_its_dataset_is_named_with_its_function(tmp_path, run_file):
    record_hang(tmp_path, run_file, "data")
    rep = report_json(run_file)
    stalls = {s["rank"]: s for s in rep["stalls"] if not s["ended"]}
    assert set(stalls) == {0, 1}, rep["stalls"]
    blocked, waiting = stalls[1], stalls[0]
    assert blocked["first"] and not waiting["first"]
    assert blocked["phase"] == "dataloader_next" and not blocked["waits_for_others"]
    assert waiting["phase"] == "backward" and waiting["waits_for_others"]
    assert blocked["step"] == 13
    main = blocked["threads"][0]
    assert main["frames"][0]["function"] == "D.__getitem__" and main["state"] == "waiting"
    assert main["frames"][0]["file"].endswith("hang_ddp.py")
    # it stopped about when its 12th step closed, and stayed stopped until the end
    steps = {s["rank"]: s for s in rep["steps"]}
    assert steps[1]["count"] >= 11
    for s in stalls.values():
        assert s["seconds"] >= 5 and abs(s["start_s"] + s["seconds"] - rep["run"]["duration_s"]) < 1
    assert abs(blocked["start_s"] - waiting["start_s"]) < 1
    # no verdict on the few steps before the stall (communication_bound was given)
    kinds = [v["kind"] for v in rep["verdicts"]]
    assert "communication_bound" not in kinds and "straggler" not in kinds, kinds
    short = short_of(run_file)
    assert short.startswith("[stalled] The training stalled"), short
    assert "rank 1 stopped at step 13 in dataloader_next" in short
    assert "D.__getitem__ (" in short and "waiting" in short
    text = words(trainprof("report", run_file).stdout)
    assert "rank 0 waits for rank 1: in backward" in text
    # the test's SIGTERM asked record to stop: when, and at which step
    stop = rep["stop"]
    assert stop["signal"] == "SIGTERM" and stop["step"] == 13
    # the run ends once torchrun and its ranks have gone (2.2 s beside other work)
    assert 0 <= rep["run"]["duration_s"] - stop["at_s"] < 5
    assert "[stopped] The run was asked to stop: record got SIGTERM" in short
    page = tmp_path / "run.html"
    assert trainprof("html", "-o", page, run_file).returncode == 0
    html = page.read_text()
    assert '<p class="trouble">[stalled] The training stalled' in html
    assert "rank 0 waits for rank 1: in backward" in html  # the report's tables, embedded


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def gauge(text, name, rank):
    for line in text.splitlines():
        if line.startswith(name + "{") and f'rank="{rank}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def stall_where(text, rank):
    """The labels where and doing of rank's trainprof_stall_where, or None."""
    for line in text.splitlines():
        if line.startswith("trainprof_stall_where{") and f'rank="{rank}"' in line:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
            return {k: labels[k] for k in ("where", "doing")}
    return None


def test_metrics_show_the_stall_while_it_lasts(tmp_path, run_file):
    script = tmp_path / "hang_ddp.py"
    script.write_text(textwrap.dedent(HANG))
    port = free_port()
    rec = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            "--stall-after",
            "3",
            "--serve",
            f"127.0.0.1:{port}",
            "-o",
            str(run_file),
            "--",
            *TORCHRUN,
            "--standalone",
            "--nproc_per_node",
            "2",
            str(script),
        ],
        env=dict(os.environ, BLOCK="data"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        seen = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                text = scrape(port)
            except OSError:
                continue
            seen = {
                r: (
                    gauge(text, "trainprof_stalled", r),
                    gauge(text, "trainprof_seconds_since_step", r),
                    stall_where(text, r),
                )
                for r in (0, 1)
            }
            # (the place a second or so behind: the sampled wait's first
            # second in the file, core/stack_runs.h)
            if seen[1][0] == 1 and seen[0][0] == 1 and seen[0][2] and "D." in str(seen[1][2]):
                break
        # before the stall: counted, not stalled; then both ranks stalled
        assert seen[1][0] == 1 and seen[0][0] == 1, seen
        assert seen[1][1] > 3, seen
        # and where each was last seen: rank 1 asleep in its Dataset (in a
        # C call: the frame that made it is the innermost), rank 0 elsewhere
        # (backward's all-reduce, waiting for rank 1)
        line = script.read_text().splitlines().index("            time.sleep(3600)") + 1
        assert re.fullmatch(
            rf"D\.__getitem__ \((\S+/)?{script.name}:{line}\)", seen[1][2]["where"]
        ), seen
        assert seen[1][2]["doing"] == "waiting", seen
        assert seen[0][2]["where"] and "D.__getitem__" not in seen[0][2]["where"], seen
    finally:
        rec.terminate()
        rec.wait(timeout=60)


def test_two_nodes_read_together_name_the_rank_that_stopped(tmp_path):
    """Two nodes (two recorders, torchrun with --nnodes 2 on loopback): `report`
    of both files names rank 1, on the other node, in its Dataset, from the
    clocks aligned (each node's torchrun agent is rank-less: the files are
    merged whole)."""
    script = tmp_path / "hang_ddp.py"
    script.write_text(textwrap.dedent(HANG))
    port = free_port()
    blocked = tmp_path / "blocked"
    recs = []
    for node in (0, 1):
        recs.append(
            subprocess.Popen(
                [
                    PROGRAM,
                    "record",
                    "-q",
                    "--stall-after",
                    "3",
                    "--agent",
                    f"node-{node}",
                    "-o",
                    str(tmp_path / f"node-{node}.db"),
                    "--",
                    *TORCHRUN,
                    "--nnodes",
                    "2",
                    "--nproc_per_node",
                    "1",
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                    str(script),
                ],
                # the node's rank from the environment, as a launcher sets it: one command line
                env=dict(
                    os.environ, BLOCK="data", PET_NODE_RANK=str(node), BLOCKED_FILE=str(blocked)
                ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    wait_blocked_then_stop(recs, blocked, 6)
    files = [tmp_path / "node-0.db", tmp_path / "node-1.db"]
    r = trainprof("report", "--json", *files)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    stalls = {s["rank"]: s for s in rep["stalls"] if not s["ended"]}
    # (once, in CI beside the spread tests, rank 0's stall was missing: each
    # node's own stalls and steps say where it was, should it recur)
    assert set(stalls) == {0, 1}, (rep["stalls"], [report_json(f)["steps"] for f in files])
    assert stalls[1]["first"] and stalls[1]["phase"] == "dataloader_next"
    assert stalls[1]["threads"][0]["frames"][0]["function"] == "D.__getitem__"
    assert stalls[0]["waits_for_others"]
    text = words(trainprof("report", *files).stdout)
    assert "rank 1 stopped at step 13 in dataloader_next" in text


def test_a_summary_only_merge_keeps_the_stalls(tmp_path):
    """The recorder stores the stalls with its summary: a merge of summaries
    (no marks, no stack samples: what `report` of many nodes reads) names the
    same ranks, phases and frames."""
    runs = ROOT / "tests" / "golden" / "runs"
    stalled, other = tmp_path / "stalled.db", tmp_path / "other.db"
    shutil.copy(runs / "stalled.db", stalled)
    shutil.copy(runs / "empty.db", other)
    with sqlite3.connect(other) as db:  # another node
        db.execute("UPDATE agent SET name = 'node-b'")
        db.execute("UPDATE meta SET value = 'node-b' WHERE key = 'agent'")
    assert trainprof("summarize", "--force", "-q", stalled, other).returncode == 0
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "--summary", "--force", "-q", "-o", merged, stalled, other)
    assert r.returncode == 0, r.stderr
    rep = report_json(merged)
    assert rep["run"]["meta"]["summary_only"] == "1"
    alone = report_json(stalled)
    # the same stalls, their times on the merged run's clock (the other node started earlier)
    shift = rep["stalls"][0]["start_s"] - alone["stalls"][0]["start_s"]
    for s in rep["stalls"] + alone["stalls"]:
        s["start_s"] -= shift if s in rep["stalls"] else 0
        s["end_s"] -= shift if s in rep["stalls"] else 0
        s["start_s"], s["end_s"] = round(s["start_s"], 3), round(s["end_s"], 3)
        s["seconds"] = round(s["seconds"], 6)
    assert rep["stalls"] == alone["stalls"] and len(rep["stalls"]) == 2
    first = [s for s in rep["stalls"] if s["first"]]
    assert [s["rank"] for s in first] == [1]
    assert first[0]["threads"][0]["frames"][0]["function"] == "D.__getitem__"


def test_rank_blocked_before_a_collective(tmp_path, run_file):
    record_hang(tmp_path, run_file, "forward")
    rep = report_json(run_file)
    stalls = {s["rank"]: s for s in rep["stalls"] if not s["ended"]}
    assert set(stalls) == {0, 1}, rep["stalls"]
    assert stalls[1]["first"] and stalls[1]["phase"] == "forward"
    assert stalls[0]["waits_for_others"] and stalls[0]["phase"] == "backward"
    assert stalls[1]["step"] == 6
    # the stack, innermost first: threading's wait, then the model's forward
    frames = stalls[1]["threads"][0]["frames"]
    assert frames[0]["function"] == "Condition.wait", frames
    assert frames[0]["file"].endswith("threading.py"), frames
    assert [f["function"] for f in frames[1:3]] == ["Event.wait", "Net.forward"], frames
    # told from the user's line that called into the standard library
    short = short_of(run_file)
    assert "rank 1 stopped at step 6 in forward" in short
    assert re.search(
        r"in Net\.forward \(\S*hang_ddp\.py:\d+\) calling Condition\.wait \(\S*threading\.py:\d+\)",
        short,
    ), short


def test_with_stack_sampling_off_one_sample_is_taken_when_the_stall_begins(tmp_path, run_file):
    """--stacks 0: no sampling, but the recorder asks each process for one
    stack of every thread once it sees the stall; the report names the
    blocked rank and its function as with sampling on, and so does /metrics
    while the stall lasts (the one sample is in the file within seconds:
    the system samples' ticks hand it on, core/sink_stacks.c)."""
    port, seen = free_port(), {}

    def scrape_until(end):
        while time.monotonic() < end and not (seen.get(0) and seen.get(1)):
            time.sleep(0.5)
            try:
                text = scrape(port)
            except OSError:
                continue
            seen.update({r: stall_where(text, r) for r in (0, 1)})

    record_hang(
        tmp_path, run_file, "data", stalled_s=12,
        options=("--stacks", "0", "--serve", f"127.0.0.1:{port}"), during=scrape_until,
    )  # fmt: skip
    assert seen.get(1) and seen[1]["where"].startswith("D.__getitem__ ("), seen
    assert seen.get(0) and "D.__getitem__" not in seen[0]["where"], seen
    with sqlite3.connect(run_file) as db:
        rows, samples = db.execute("SELECT COUNT(*), SUM(count) FROM stack_sample").fetchone()
        threads = db.execute(
            "SELECT COUNT(DISTINCT t.pid || ':' || s.tid) FROM stack_sample s"
            " JOIN thread t ON t.id = s.thread_id"
        ).fetchone()[0]
    # one sample of each thread of the two ranks (and their torchrun's), not 100 a second
    assert 2 <= threads and samples == rows and rows <= 2 * threads, (rows, threads)
    stalls = {s["rank"]: s for s in report_json(run_file)["stalls"] if not s["ended"]}
    assert set(stalls) == {0, 1}, stalls
    assert stalls[1]["first"] and stalls[1]["phase"] == "dataloader_next"
    assert stalls[1]["threads"][0]["frames"][0]["function"] == "D.__getitem__"
    assert stalls[0]["phase"] == "backward" and stalls[0]["waits_for_others"]
    short = short_of(run_file)
    assert "rank 1 stopped at step 13 in dataloader_next, in D.__getitem__" in short, short


# steps of 10 ms in a region; at step 20, inside it, the loop waits for a
# helper one of whose threads is held in state D (as a read from a network
# mount that no longer answers holds it)
STORAGE_HANG = """
import os, subprocess, sys, time, trainprof
for step in range(1000):
    trainprof.step()
    with trainprof.region("load"):
        if step == 20:
            open(sys.argv[2], "w").close()
            subprocess.run([sys.argv[1], "hold_d", "3600"])
        time.sleep(0.01)
"""


def test_a_stall_on_storage_says_its_threads_waited_on_it(tmp_path, run_file):
    """The training stalls while a thread of its tree sits in state D: the
    stall's words and its JSON say its threads waited on storage meanwhile
    (proc_blocked over the stall), and a file summarized with it keeps it."""
    script = tmp_path / "hang.py"
    script.write_text(STORAGE_HANG)
    blocked = tmp_path / "blocked"
    rec = subprocess.Popen(
        [PROGRAM, "record", "-q", "--stall-after", "2", "-i", "0.1", "-o", str(run_file), "--",
         PYTHON, str(script), EMIT, str(blocked)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_blocked_then_stop([rec], blocked, 6)
    [stall] = [s for s in report_json(run_file)["stalls"] if not s["ended"]]
    assert stall["training_blocked_mean"] >= 0.8, stall
    said = words(trainprof("report", run_file).stdout)
    assert "its threads waited on storage meanwhile (state D," in said, said
    assert "a filesystem or disk that does not answer" in said
    # stored with the summary: a merge of summaries (no samples) still says it
    [kept] = [
        s for s in report_json(summaries_merged(tmp_path, run_file))["stalls"] if not s["ended"]
    ]
    assert kept["training_blocked_mean"] == pytest.approx(stall["training_blocked_mean"])


def summaries_merged(tmp_path, run_file):
    """run_file merged, by their summaries only (no samples), with another
    node's summarized file (the empty golden run): the merged file's path."""
    other = tmp_path / "other.db"
    shutil.copy(ROOT / "tests" / "golden" / "runs" / "empty.db", other)
    with sqlite3.connect(other) as db:  # another node
        db.execute("UPDATE agent SET name = 'node-b'")
        db.execute("UPDATE meta SET value = 'node-b' WHERE key = 'agent'")
    assert trainprof("summarize", "--force", "-q", other).returncode == 0
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "--summary", "--force", "-q", "-o", merged, run_file, other)
    assert r.returncode == 0, r.stderr
    return merged


# A step whose read takes seconds, the training's own thread in state D all
# along: reads of 4 MiB with O_DIRECT (no page cache) of the file given, for
# 4 s, as a network mount that hardly answers would keep it.
SLOW_READ = """
import mmap, os, sys, time, trainprof
READ = 4 << 20
buf = mmap.mmap(-1, READ)  # page-aligned, as O_DIRECT needs
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
blocks = os.path.getsize(sys.argv[1]) // READ
for step in range(40):
    trainprof.step()
    with trainprof.region("load"):
        end = time.monotonic() + (4 if step == 20 else 0)
        i = 0
        while time.monotonic() < end:
            os.preadv(fd, [buf], i % blocks * READ)
            i += 1
        time.sleep(0.01)
"""


def test_a_stall_in_a_read_says_the_thread_waited_on_storage(tmp_path, run_file):
    """A step stalls in the training thread's own reads: the stall names the
    thread in its read, waiting on storage (its stack samples in state D),
    not only "waiting"; a merge of summaries keeps it."""
    data = tmp_path / "data.bin"
    with open(data, "wb") as f:
        f.write(bytes(16 << 20))
        os.fsync(f.fileno())
    script = tmp_path / "slow_read.py"
    script.write_text(SLOW_READ)
    r = trainprof("record", "-q", "--stall-after", "2", "-o", run_file, "--", PYTHON, script, data)
    assert r.returncode == 0, r.stderr
    [stall] = report_json(run_file)["stalls"]
    [thread] = [t for t in stall["threads"] if t["phase"] == "load"]
    assert thread["state"] == "waiting_on_storage", thread
    assert thread["frames"][0]["function"] == "<module>", thread
    said = words(trainprof("report", run_file).stdout)
    assert re.search(r"slow_read\.py:\d+\), waiting on storage", said), said
    [kept] = report_json(summaries_merged(tmp_path, run_file))["stalls"]
    assert [t["state"] for t in kept["threads"] if t["phase"] == "load"] == [thread["state"]]


def test_a_run_that_ends_normally_has_no_stall(tmp_path, run_file):
    script = tmp_path / "ok.py"
    script.write_text(
        textwrap.dedent("""
        import time, torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        data = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in DataLoader(data, batch_size=16):
            opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
        time.sleep(4)  # after the training: saving, evaluating, tearing down
    """)
    )
    r = trainprof("record", "-q", "--stall-after", "2", "-o", run_file, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    assert rep["stalls"] == []
    assert "[stalled]" not in short_of(run_file)


def test_stall_after_is_checked():
    r = trainprof("record", "--stall-after", "0", "--", "true")
    assert r.returncode == 2 and "stall-after" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


PAUSING = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
data = TensorDataset(torch.randn(640, 8), torch.randint(0, 2, (640,)))
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(DataLoader(data, batch_size=16)):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    if step == 10:
        time.sleep(6)  # a stall that ends: a slow file system, a peer that came back
    loss.backward()
    opt.step()
"""


def samples_about(run_file, stall):
    """The stack samples from a second before the stall to a second after
    it: (time s, phase, state, count, span s, innermost line)."""
    with sqlite3.connect(run_file) as db:
        return db.execute(
            "SELECT s.t_ns / 1e9, coalesce(p.text, ''), s.state, s.count, s.span_ns / 1e9, n.line"
            " FROM stack_sample s JOIN stack_node n ON n.id = s.node_id"
            " LEFT JOIN name p ON p.id = s.phase_id"
            " WHERE s.t_ns + s.span_ns >= ? AND s.t_ns <= ? ORDER BY s.t_ns",
            ((stall["start_s"] - 1) * 1e9, (stall["end_s"] + 1) * 1e9),
        ).fetchall()


def test_status_line_says_stalled_and_a_stall_that_ends_is_no_stall(tmp_path, run_file):
    script = tmp_path / "pausing.py"
    script.write_text(textwrap.dedent(PAUSING))
    rc, text = run_on_a_terminal(
        [PROGRAM, "record", "--stall-after", "2", "-o", run_file, "--", PYTHON, script],
        columns=132,
    )
    assert rc == 0
    assert "STALLED: no progress for " in text
    # where it stopped (the sleep, a C call: its line in the script), each
    # redraw within the terminal's width
    lines = [line for line in text.split("\r\x1b[K") if line.startswith("trainprof ")]
    where = rf"STALLED: no progress for \d+ s, last seen in <module> \((\S+/)?{script.name}:12\), waiting  "
    assert any(re.search(where, line) for line in lines), lines
    assert max(map(len, lines)) < 132, lines
    rep = report_json(run_file)
    # it went on: a stall that ended, its step left out of the step figures
    assert len(rep["stalls"]) == 1, rep["stalls"]
    stall = rep["stalls"][0]
    assert stall["ended"] and stall["step"] == 11 and 5.5 <= stall["seconds"] < 8, stall
    # what a failure needs to be read (once beside six busy processes: one
    # sample at the loop's line, no phase): the samples about the stall
    seen = (
        stall,
        rep["dropped_events"],
        rep["events_not_recorded"],
        samples_about(run_file, stall),
    )
    assert stall["phase"] == "train_batch", seen
    assert stall["threads"][0]["frames"][0]["line"] == 12, seen
    steps = rep["steps"][0]
    assert steps["count"] == 39 and steps["max_s"] < 1, steps
    assert len(rep["regimes"]["regimes"]) == 1
    short = short_of(run_file)
    assert "[stall] The training stalled and went on: step 11" in short, short
    assert "[stalled]" not in short
    # Beside CPU-heavy work the process took 2.3 s to exit after its last
    # step, longer than the stall threshold: a stall seemed to begin there
    # (then dropped: between steps, in no region), and the sampler, looking
    # at the sleeping thread every tenth of a second, saw it move only after
    # that last step, so the sleep's run of samples reached into it. The run
    # was counted toward that one stall alone, and the stall that ended had
    # no sleep left in it ("backward", then no phase at all). The same file
    # as that machine left it: the run ending 5 ms past the last step, the
    # recording 2.5 s after it.
    slow_exit = tmp_path / "slow_exit.db"
    shutil.copy(run_file, slow_exit)
    with sqlite3.connect(slow_exit) as db:
        (last,) = db.execute("SELECT max(end_ns) FROM region").fetchone()
        sleep, t_ns = db.execute(
            "SELECT rowid, t_ns FROM stack_sample ORDER BY span_ns DESC LIMIT 1"
        ).fetchone()
        db.execute(
            "UPDATE stack_sample SET span_ns = ? WHERE rowid = ?", (last + 5_000_000 - t_ns, sleep)
        )
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'duration_ns'", (str(last + 2_500_000_000),)
        )
    assert trainprof("summarize", "--force", slow_exit).returncode == 0
    rep = report_json(slow_exit)
    assert [(s["step"], s["phase"]) for s in rep["stalls"]] == [(11, "train_batch")], rep["stalls"]
    assert rep["stalls"][0]["threads"][0]["frames"][0]["line"] == 12
