"""An input-bound training's storage: a loader that reads the disk waits on it,
and says so; a loader that sleeps beside another process's writes to the disk
does not, however busy the disk (its processes are not seen waiting on
storage: state D). Both judge the disk, so they run alone (machine)."""

import re
import subprocess
import sys

import pytest
from conftest import PYTHON, report_json, trainprof

pytestmark = pytest.mark.machine

# Each sample is a read of 1 MiB with O_DIRECT at a random offset of a file:
# a read the page cache can't answer, the reader in state D until the disk
# does (of a page at a time the disk here served 7,300 a second, 47 % busy:
# the loader was then its Python's, not the disk's).
DIRECT_READER = """
import mmap, os, random, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

path, n, sleep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sleepy = int(sys.argv[4]) if len(sys.argv) > 4 else n  # the samples that sleep, then read
READ = 1 << 20
blocks = os.path.getsize(path) // READ

class Data(Dataset):
    fd = None
    buf = mmap.mmap(-1, READ)  # page-aligned, as O_DIRECT needs
    def __len__(self):
        return n
    def __getitem__(self, i):
        if sleep > 0 and i < sleepy:
            time.sleep(sleep)
            return torch.zeros(16)
        if self.fd is None:
            self.fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        os.preadv(self.fd, [self.buf], random.randrange(blocks) * READ)
        return torch.frombuffer(self.buf, dtype=torch.float32, count=16).clone()

model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x in DataLoader(Data(), batch_size=16):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""

# The same reads, a batch's samples side by side in a pool of 4 threads
# (Dataset.__getitems__): the readers wait in D, the main thread on them in S.
THREADED_READER = """
import mmap, os, random, sys, threading
from concurrent.futures import ThreadPoolExecutor
import torch
from torch.utils.data import DataLoader, Dataset

path, n = sys.argv[1], int(sys.argv[2])
READ = 1 << 20
blocks = os.path.getsize(path) // READ
own = threading.local()

def read_one(i):
    if not hasattr(own, "fd"):
        own.fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        own.buf = mmap.mmap(-1, READ)
    os.preadv(own.fd, [own.buf], random.randrange(blocks) * READ)
    return torch.frombuffer(own.buf, dtype=torch.float32, count=16).clone()

class Data(Dataset):
    pool = ThreadPoolExecutor(4)
    def __len__(self):
        return n
    def __getitem__(self, i):
        return read_one(i)
    def __getitems__(self, indices):
        return list(self.pool.map(read_one, indices))

model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x in DataLoader(Data(), batch_size=16):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""

# Writes 1 MiB blocks with O_DIRECT over the file given (64 MiB of it, again
# and again) until killed: the disk busy with another process's I/O.
DISK_WRITER = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
buf = mmap.mmap(-1, 1 << 20)
while True:
    for block in range(64):
        os.pwrite(fd, buf, block << 20)
"""


def data_file(tmp_path, mib=64):
    path = tmp_path / "data.bin"
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(bytes(1 << 20))
        f.flush()
        import os

        os.fsync(f.fileno())
    return path


def record(tmp_path, data, n, sleep, *sleepy, reader=DIRECT_READER):
    script = tmp_path / "train.py"
    script.write_text(reader)
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", "--interval", "0.05", "-o", run, "--", PYTHON, script, data, str(n),
        str(sleep), *map(str, sleepy), timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return report_json(run)


def input_verdict(rep):
    found = [v for v in rep["verdicts"] if v["kind"] == "input_bound"]
    assert found, [v["kind"] for v in rep["verdicts"]]
    return found[0]


def stack_function(rep, name, phase=False):
    """The stack groups' entries of function name (of the group of phase
    only, where given), each with its group."""
    return [
        (g, fn)
        for g in rep["stacks"]
        for fn in g["functions"]
        if fn["function"] == name and phase in (False, g["phase"])
    ]


def doing(fn):
    """What the verdict's words say a function it cites was doing, by its
    shares: nothing running, else waiting, on storage where most of that
    was in state D."""
    on, blocked = fn["on_cpu_share"], fn["blocked_share"]
    if on >= 0.5:
        return ""
    return " waiting on storage" if blocked >= (1 - on) / 2 else " waiting"


def test_a_loader_that_reads_the_disk_waits_on_storage(tmp_path):
    """No other I/O beside it: the loader's own reads keep tasks waiting on
    storage (io) and its process in state D about as long as it loads; its
    stack samples say where: __getitem__'s read, waiting on storage."""
    rep = record(tmp_path, data_file(tmp_path), 16 * 200, 0)
    v = input_verdict(rep)
    ev = v["evidence"]
    assert ev["cause"] == "io", (ev, v["message"])
    assert ev["training_blocked_mean"] >= 0.25 * ev["dataloader_next_share"], ev
    assert "loading waits on the disk" in v["message"]
    assert "but not with the training's I/O" not in v["message"]
    [(group, fn)] = stack_function(rep, "Data.__getitem__", "dataloader_next")
    # (its self samples: the read in D, and its Python and the copy running:
    # 0.47 to 0.72 in D on this VM's disk)
    assert group["blocked_share"] >= 0.25 and fn["blocked_share"] >= 0.3, group
    assert re.search(rf"Data\.__getitem__ \([^)]*\) \d+%{doing(fn)}(,| of)", v["message"]), v[
        "message"
    ]


def test_a_loader_that_reads_in_threads_waits_on_storage(tmp_path):
    """The reads in a pool of threads, the main thread waiting on them in S
    (a futex), not D: their threads' wait is the training's (its main threads
    alone said 0.015 of a 0.96 share, and the verdict named the disk busy
    with others' I/O)."""
    rep = record(tmp_path, data_file(tmp_path), 16 * 120, 0, reader=THREADED_READER)
    v = input_verdict(rep)
    ev = v["evidence"]
    assert ev["cause"] == "io", (ev, v["message"])
    assert ev["training_blocked_mean"] >= 0.25 * ev["dataloader_next_share"], ev
    assert "loading waits on the disk" in v["message"]
    assert "but not with the training's I/O" not in v["message"]
    # the pool's threads read in D; the main thread waits on them in S
    reads = stack_function(rep, "read_one")
    assert reads and max(fn["blocked_share"] for _, fn in reads) >= 0.5, reads
    [(_, wait)] = stack_function(rep, "Condition.wait", "dataloader_next")
    assert wait["blocked_share"] < 0.1, wait


def test_a_sleeping_loader_beside_another_s_writes_is_not_storage_bound(tmp_path):
    """Another process keeps the disk busy with its writes while the loader
    sleeps: the storage is busy, but the training hardly waits on it, and the
    advice is the loader's latency, with the busy disk named as not its."""
    writer = subprocess.Popen([sys.executable, "-c", DISK_WRITER, tmp_path / "other.bin"])
    try:
        rep = record(tmp_path, data_file(tmp_path, 1), 16 * 24, 0.005)
    finally:
        writer.kill()
        writer.wait()
    v = input_verdict(rep)
    ev = v["evidence"]
    assert ev["cause"] == "latency", (ev, v["message"])
    assert ev["training_blocked_mean"] < 0.25 * ev["dataloader_next_share"], ev
    storage_busy = ev["disk_busy_p50_percent"] >= 90 or ev["pressure_io_some_p50_percent"] >= 25
    assert storage_busy, ev  # the writer did keep it busy: the condition this test judges
    assert "but not with the training's I/O" in v["message"], v["message"]
    assert "loading waits on the disk" not in v["message"]
    # its __getitem__ sleeps (state S): waiting, not on storage
    [(_, fn)] = stack_function(rep, "Data.__getitem__", "dataloader_next")
    assert fn["on_cpu_share"] < 0.5 and fn["blocked_share"] < 0.1, fn
    assert doing(fn) == " waiting", fn
    assert re.search(rf"Data\.__getitem__ \([^)]*\) \d+%{doing(fn)}(,| of)", v["message"]), v[
        "message"
    ]


def test_a_pace_that_changed_when_the_loader_began_to_read_names_its_wait(tmp_path):
    """A loader that sleeps for its first 80 batches, then reads the disk: the
    pace changed, and among its causes is the training's own wait on storage
    (its processes in state D), not only the machine's I/O pressure."""
    rep = record(tmp_path, data_file(tmp_path), 16 * 330, 0.002, 16 * 80)
    regimes = rep["regimes"]["regimes"]
    assert len(regimes) >= 2, regimes
    [reading] = [r for r in regimes if r["first_step"] > 80 and r["causes"]][:1] or [None]
    assert reading is not None, regimes
    waits = [c for c in reading["causes"] if c["kind"] == "training_blocked"]
    assert waits and waits[0]["after"] > waits[0]["before"] + 0.1, reading["causes"]
    assert not [c for c in reading["causes"] if c["kind"] == "io_pressure_percent"]
    assert reading["machine"]["training_blocked"] > 0.1, reading["machine"]
