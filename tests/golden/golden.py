"""Golden outputs: a corpus of run files and what every output makes of them.

The corpus (tests/golden/runs/) is recorded once, by `golden.py record`:
the bundled example, a DDP run of two ranks, a merge of two nodes, a
recording killed mid-run, an empty run, a schema-3 file, a DDP run that
stalls until `timeout` ends it, a training that dies of an exception, and a synthetic
node of 8 ranks (bench/gen_run, schema 7) edited so that the verdicts a
real CPU run can't give fire: a straggler, input-bound, GPU under-used,
host memory near full; and a second one for the other verdicts:
transfer-bound, communication-bound, CPU saturated, a link near full, GPU
memory near full; and a script's sampled stacks (schema 8). For each run
the outputs are `report`, `report --json`, `html`, `export` (chrome) and
`export --format csv`; the text ones are kept whole in tests/golden/expected/,
html and the exports as their size and SHA-256 (they are large), and
tests/py/test_golden.py checks that today's program gives the same bytes.

    python tests/golden/golden.py check     compare (what the test does)
    python tests/golden/golden.py update    rewrite expected/ after an intended change
    python tests/golden/golden.py record    record the corpus anew (then update)

A change of behaviour shows as a failing check; one that is meant is made
with `update` in the same commit, so the diff of expected/ shows it."""

import hashlib
import json
import os
import pathlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "runs"
EXPECTED = HERE / "expected"
PROGRAM = os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof"))
PYTHON = sys.executable

# name -> the run files it is made of (several: read as one, merged)
CORPUS = {
    "example": ["example.db"],
    "ddp": ["ddp.db"],
    "merged": ["node_a.db", "node_b.db"],
    "killed": ["killed.db"],
    "empty": ["empty.db"],
    "schema3": ["schema3.db"],
    "synthetic": ["synthetic.db"],
    "synthetic2": ["synthetic2.db"],
    "stacks": ["stacks.db"],
    "stalled": ["stalled.db"],
    "died": ["died.db"],
}
# output name -> (arguments before the run files, kept whole)
OUTPUTS = {
    "report.txt": (["report"], True),
    "report.json": (["report", "--json"], True),
    "page.html": (["html", "-o", "OUT"], False),
    "trace.json": (["export", "-o", "OUT"], False),
    "samples.csv": (["export", "--format", "csv", "-o", "OUT"], False),
}


def outputs(name, where):
    """{output name: bytes} of one corpus entry, its files copied into where
    and named relatively (so that no path of this machine is in them)."""
    files = CORPUS[name]
    for f in files:
        for suffix in ("", "-wal"):
            if (RUNS / (f + suffix)).exists():
                shutil.copy(RUNS / (f + suffix), where / (f + suffix))
    got = {}
    for out, (args, _whole) in OUTPUTS.items():
        target = where / f"{name}.{out}"
        argv = [PROGRAM] + [str(target.name) if a == "OUT" else a for a in args] + files
        r = subprocess.run(argv, cwd=where, capture_output=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[1:])}: exit {r.returncode}: {r.stderr.decode()}")
        got[out] = r.stdout if "OUT" not in args else target.read_bytes()
    return got


def digest(data):
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()


def expected_files(name, got):
    """{file name in expected/: bytes} for one entry's outputs."""
    return {
        f"{name}.{out}" if OUTPUTS[out][1] else f"{name}.{out}.sha256": data
        if OUTPUTS[out][1]
        else digest(data)
        for out, data in got.items()
    }


def check():
    """The entries whose outputs differ from expected/, with the first
    differing file of each; empty when all are the same to the byte."""
    differ = []
    with tempfile.TemporaryDirectory() as d:
        for name in CORPUS:
            where = pathlib.Path(d) / name
            where.mkdir()
            for file, data in expected_files(name, outputs(name, where)).items():
                want = (EXPECTED / file).read_bytes() if (EXPECTED / file).exists() else None
                if want != data:
                    (pathlib.Path(tempfile.gettempdir()) / f"golden-{file}").write_bytes(data)
                    differ.append(file)
    return differ


def update():
    EXPECTED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        for name in CORPUS:
            where = pathlib.Path(d) / name
            where.mkdir()
            for file, data in expected_files(name, outputs(name, where)).items():
                (EXPECTED / file).write_bytes(data)


DDP = """
import os, sys, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(dist.get_rank())
data = TensorDataset(torch.randn(256, 32, generator=g), torch.randint(0, 4, (256,), generator=g))
for epoch in range(2):
    for x, y in DataLoader(data, batch_size=16):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)  # gloo may abort while the interpreter tears down (see test_distributed)
"""


def record_one(path, *command, agent=None, env=None):
    args = [PROGRAM, "record", "-q", "--force", "-i", "0.2", "-o", path]
    args += ["--agent", agent] if agent else []
    subprocess.run(
        args + ["--", *command], check=True, timeout=600, env=dict(os.environ, **(env or {}))
    )


def record():
    RUNS.mkdir(exist_ok=True)
    for f in RUNS.iterdir():
        f.unlink()
    record_one(
        RUNS / "example.db",
        PYTHON,
        ROOT / "examples" / "train.py",
        "--epochs",
        "1",
        "--samples",
        "2048",
    )
    with tempfile.TemporaryDirectory() as d:
        script = pathlib.Path(d) / "ddp.py"
        script.write_text(textwrap.dedent(DDP))
        record_one(
            RUNS / "ddp.db",
            PYTHON,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            script,
        )
    record_one(
        RUNS / "node_a.db",
        PYTHON,
        ROOT / "examples" / "train.py",
        "--epochs",
        "1",
        "--samples",
        "1024",
        "--workers",
        "0",
        agent="node-a",
    )
    record_one(
        RUNS / "node_b.db",
        PYTHON,
        ROOT / "examples" / "train.py",
        "--epochs",
        "1",
        "--samples",
        "1024",
        "--workers",
        "0",
        agent="node-b",
    )
    record_one(RUNS / "empty.db", "true")
    p = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            "-i",
            "0.1",
            "-o",
            RUNS / "killed.db",
            "--",
            PYTHON,
            ROOT / "examples" / "train.py",
            "--samples",
            "100000",
            "--workers",
            "0",
        ],
        start_new_session=True,
    )
    time.sleep(8)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    # schema 3: as trainprof wrote it before schema 4 (see test_summarize.py)
    record_one(
        RUNS / "schema3.db",
        PYTHON,
        ROOT / "examples" / "train.py",
        "--epochs",
        "1",
        "--samples",
        "1024",
        "--workers",
        "0",
    )
    db = sqlite3.connect(RUNS / "schema3.db")
    db.execute("DROP VIEW device_times")
    db.execute("DROP TABLE device_time")
    db.execute("DROP TABLE summary_plot")
    db.execute("DROP TABLE summary_step_phase")
    db.execute("DELETE FROM meta WHERE key = 'plots'")
    for column in (
        "in_steps_s",
        "device_count",
        "device_total_s",
        "device_mean",
        "device_min",
        "device_p5",
        "device_p50",
        "device_p95",
        "device_max",
    ):
        db.execute(f"ALTER TABLE summary_timing DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.execute("VACUUM")
    db.close()
    record_synthetic(RUNS / "synthetic.db")
    record_synthetic2(RUNS / "synthetic2.db")
    record_stacks(RUNS / "stacks.db")
    record_stalled(RUNS / "stalled.db")
    record_died(RUNS / "died.db")


# rank 1 blocks in its Dataset at its 13th batch; rank 0 waits in backward
HANG = """
import time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
class D(Dataset):
    def __init__(self, rank):
        self.rank = rank
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        if self.rank == 1 and i >= 12 * 8:
            time.sleep(3600)
        return torch.randn(32), torch.tensor(i % 4)
dist.init_process_group("gloo")
model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(D(dist.get_rank()), batch_size=8):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
"""


def record_stalled(path):
    """A DDP run of two ranks on gloo that stalls (rank 1 blocked in its
    Dataset), ended by `timeout` (SIGTERM to record) after 12 s."""
    where = pathlib.Path("/tmp/trainprof-golden")  # a fixed path: the frames name it
    where.mkdir(exist_ok=True)
    script = where / "hang_ddp.py"
    script.write_text(textwrap.dedent(HANG))
    subprocess.run(
        [
            "timeout",
            "12",
            PROGRAM,
            "record",
            "-q",
            "--force",
            "-i",
            "0.2",
            "--stall-after",
            "3",
            "-o",
            path,
            "--",
            PYTHON,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            script,
        ],
        timeout=600,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


DIES = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
data = TensorDataset(torch.randn(2048, 8), torch.randint(0, 2, (2048,)))
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(DataLoader(data, batch_size=16)):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    if step == 99:
        raise FloatingPointError(f"loss is nan at step {step}")
    loss.backward()
    opt.step()
"""


def record_died(path):
    """A training that raises at its 100th step."""
    where = pathlib.Path("/tmp/trainprof-golden")
    where.mkdir(exist_ok=True)
    script = where / "dies.py"
    script.write_text(textwrap.dedent(DIES))
    subprocess.run(
        [PROGRAM, "record", "-q", "--force", "-i", "0.2", "-o", path, "--", PYTHON, script],
        timeout=600,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


STACKS = """
import queue, threading, time
import trainprof
def parse_records(n):
    return sum(i * i for i in range(n))
def matmul_by_hand(n):
    s = 0.0
    for i in range(n):
        s += (i % 7) * 0.5
    return s
q = queue.Queue()
t = threading.Thread(target=q.get); t.start()
end = time.time() + 1.5
while time.time() < end:
    trainprof.step()
    with trainprof.region("load"):
        parse_records(30000)
    with trainprof.region("compute"):
        matmul_by_hand(60000)
q.put(1); t.join()
"""


def record_stacks(path):
    """1.5 s of a script with a hot function in each of two regions and a
    thread blocked in a queue, its stacks sampled at 100 Hz (schema 8)."""
    where = pathlib.Path("/tmp/trainprof-golden")  # a fixed path: the frames name it
    where.mkdir(exist_ok=True)
    script = where / "hot.py"
    script.write_text(STACKS)
    record_one(path, PYTHON, script, env={"TRAINPROF_STACKS": "100"})


SERIES = (
    "SELECT s.id FROM series s JOIN metric m ON m.id = s.metric_id"
    " WHERE m.name = ? AND s.labels = ?"
)


def record_synthetic2(path):
    """72 s of a node of 8 ranks (global 16-23, none slow) whose forward
    passes are renamed reduce_metrics and whose train_batch regions are gone
    (communication nothing overlaps: 30 % of the step), whose loading and
    optimizer steps are renamed to_device (17 %),
    its CPUs at 99 %, eth0 receiving at its link's speed and GPU 1's memory at
    95 %, summarized anew."""
    gen = str(ROOT / "build" / "bench" / "gen_run")
    subprocess.run(
        [gen, path, "0.02", "0.5", "8", "2", "8", "1", "node-2", "16"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    name = "(SELECT id FROM name WHERE text = ?)"
    with sqlite3.connect(path) as db:
        db.execute(
            f"UPDATE region SET name_id = {name} WHERE name_id = {name}",
            ("reduce_metrics", "forward"),
        )
        db.execute(f"DELETE FROM region WHERE name_id = {name}", ("train_batch",))
        for old in ("dataloader_next", "optimizer_step"):
            db.execute(
                f"UPDATE region SET name_id = {name} WHERE name_id = {name}", ("to_device", old)
            )
        db.execute(
            f"UPDATE sample SET value = 99 WHERE series_id IN ({SERIES})",
            ("cpu_util_percent", "{}"),
        )
        link = db.execute(
            f"SELECT value FROM sample WHERE series_id IN ({SERIES}) LIMIT 1",
            ("net_link_speed_bytes_per_s", '{"interface":"eth0"}'),
        ).fetchone()[0]
        db.execute(
            f"UPDATE sample SET value = ? WHERE series_id IN ({SERIES})",
            (link, "net_recv_bytes_per_s", '{"interface":"eth0"}'),
        )
        db.execute(
            f"UPDATE sample SET value = ? WHERE series_id IN ({SERIES})",
            (0.95 * (80 << 30), "gpu_mem_used_bytes", '{"gpu":"1"}'),
        )
    db.close()
    subprocess.run([PROGRAM, "summarize", "--force", "-q", path], check=True)


def record_synthetic(path):
    """72 s of a node of 8 ranks (global 8-15; rank 13 loads slowly), its
    GPU 0 half as busy and its host memory at 95 %, summarized anew."""
    gen = str(ROOT / "build" / "bench" / "gen_run")
    subprocess.run(
        [gen, path, "0.02", "0.5", "8", "2", "8", "1", "node-1", "8"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    total = 512 << 30
    series = (
        "SELECT s.id FROM series s JOIN metric m ON m.id = s.metric_id"
        " WHERE m.name = ? AND s.labels = ?"
    )
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('mem_total_bytes', ?)", (str(total),))
        db.execute(
            f"UPDATE sample SET value = value * 0.5 WHERE series_id IN ({series})",
            ("gpu_util_percent", '{"gpu":"0"}'),
        )
        db.execute(
            f"UPDATE sample SET value = ? WHERE series_id IN ({series})",
            (0.95 * total, "host_mem_used_bytes", "{}"),
        )
    db.close()
    subprocess.run([PROGRAM, "summarize", "--force", "-q", path], check=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "check"
    if what == "record":
        record()
    elif what == "record-synthetic2":  # one entry, the others' files kept
        record_synthetic2(RUNS / "synthetic2.db")
    elif what == "record-stacks":
        record_stacks(RUNS / "stacks.db")
    elif what == "record-stalled":
        record_stalled(RUNS / "stalled.db")
    elif what == "record-died":
        record_died(RUNS / "died.db")
    elif what == "update":
        update()
    elif what == "check":
        differ = check()
        print(json.dumps({"differ": differ}))
        sys.exit(1 if differ else 0)
    else:
        sys.exit(__doc__)
