"""Communication on a real NVIDIA GPU: collectives on NCCL against NCCL's
own timing, DDP's timed hook and the rank's GPU by UUID; with two GPUs, a slow
rank on NCCL and a GPU the job left alone. Skipped where torch sees no CUDA
device (CI); tools/gpu-check.sh runs them on a machine with one (docs/gpu.md
gives the figures they read)."""

import json
import sqlite3
import statistics

import pytest
from conftest import PYTHON, ROOT, keep, report_json, trainprof

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


DDP_NCCL = """
import os, sys, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
model = DDP(nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda(),
            device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(4096, 512), torch.randint(0, 10, (4096,)))
for x, y in DataLoader(data, batch_size=64):
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
print("world", dist.get_world_size(), "sum", float(t))
dist.destroy_process_group()
"""


def test_ddp_on_nccl_times_the_gradient_all_reduce(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(DDP_NCCL)
    run = tmp_path / "gpu-ddp.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "1",
        script,
        timeout=300,
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    names = {t["name"]: t for t in rep["timings"] if t["rank"] == 0}
    # 64 steps, each with DDP's hook over its bucket(s), plus one all_reduce;
    # each timed on the device too (the hook runs on autograd's thread)
    assert names["reduce_metrics"]["count"] >= 65
    assert names["reduce_metrics"]["device"]["count"] == names["reduce_metrics"]["count"]
    assert names["train_batch"]["count"] >= 63
    assert names["to_device"]["count"] >= 128
    # the rank's GPU, by the UUID its process told (torch's, without "GPU-")
    with sqlite3.connect(run) as db:
        told = {u for (u,) in db.execute("SELECT uuid FROM thread_device")}
        nvml = {u for (u,) in db.execute("SELECT uuid FROM gpu WHERE gpu_index = 0")}
        hook = db.execute("SELECT value FROM meta WHERE key = 'fact.ddp.hook'").fetchone()
    assert {"GPU-" + u for u in told} == nvml
    assert hook == ("timed",)
    row = rep["ranks"]["per_rank"][0]
    assert row["gpu"] == 0
    # the device's communication, and its part after each backward's compute
    print(
        json.dumps(
            {
                k: row[k]
                for k in ("comm_s", "comm_device_s", "comm_device_exposed_s", "window_s", "steps")
            }
        )
    )
    assert 0 < row["comm_device_exposed_s"] <= row["comm_device_s"]


NCCL_TIMED = """
import json, sys, torch, torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(0)
inp = torch.ones(1 << 28, device="cuda")
out = torch.empty_like(inp)
works = []
for i in range(20):
    torch.cuda._sleep(50_000_000)
    if i % 2:
        works.append(dist.all_gather_into_tensor(out, inp, async_op=True))
    else:
        dist.all_gather_into_tensor(out, inp)
torch.cuda.synchronize()
json.dump({"nccl_ms": [w._get_duration() for w in works]}, open(sys.argv[1], "w"))
dist.destroy_process_group()
"""


def test_nccl_collectives_are_timed_on_the_device(tmp_path):
    script = tmp_path / "nccl.py"
    script.write_text(NCCL_TIMED)
    run = tmp_path / "gpu-nccl.db"
    truth = tmp_path / "truth.json"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "1",
        script,
        truth,
        timeout=300,
        env={"TORCH_NCCL_ENABLE_TIMING": "1"},
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    nccl_s = statistics.median(json.loads(truth.read_text())["nccl_ms"]) / 1e3
    comm = {t["name"]: t for t in report_json(run)["timings"]}["reduce_metrics"]
    print(json.dumps({"nccl_p50_s": nccl_s, "reduce_metrics": comm}))
    assert comm["count"] == 20 and comm["device"]["count"] == 20
    # the device time is the collective's (not the 50 ms it waited for first,
    # not the launch the host saw)
    assert comm["device"]["p50_s"] == pytest.approx(nccl_s, rel=0.25, abs=50e-6)
    assert comm["device"]["p50_s"] < 0.01


# A model's forward captured on a stream torch did not make (CuPy's), so not
# through torch.cuda.CUDAGraph: the current stream's capture is seen anyway.


two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="fewer than 2 GPUs")

# DDP on NCCL, 2 ranks; rank 1's Dataset sleeps 20 ms per batch: rank 0's
# all-reduces wait for it on the device.
DDP_SLOW_RANK = """
import os, time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
class Data(Dataset):
    def __len__(self):
        return 64 * 64
    def __getitem__(self, i):
        if rank == 1 and i % 64 == 0:
            time.sleep(0.02)
        return torch.randn(512), torch.randint(0, 10, ())
model = DDP(nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda(),
            device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(Data(), batch_size=64):
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
dist.destroy_process_group()
"""


@two_gpus
def test_two_ranks_on_nccl_name_the_slow_one_and_the_waits_on_the_device(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(DDP_SLOW_RANK)
    run = tmp_path / "gpu-2ranks.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        script,
        timeout=300,
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    rows = {x["rank"]: x for x in rep["ranks"]["per_rank"]}
    print(json.dumps(rows))
    assert {k: v["gpu"] for k, v in rows.items()} == {0: 0, 1: 1}  # by UUID
    # rank 0 waits for rank 1 in its all-reduces: on the device, not the host
    assert rows[0]["comm_device_exposed_s"] > 2 * rows[1]["comm_device_exposed_s"]
    assert rows[0]["comm_device_s"] > 10 * rows[0]["comm_s"]
    assert any(v["kind"] == "straggler" and v["evidence"]["rank"] == 1 for v in rep["verdicts"])


@two_gpus
def test_a_gpu_the_job_left_alone_gets_no_verdict(tmp_path):
    """One process on GPU 1 (CUDA_VISIBLE_DEVICES=1: its cuda:0); NVML sees
    both. GPU 0, idle, is not the job's: no gpu_underused about it."""
    run = tmp_path / "gpu-one-of-two.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        ROOT / "examples" / "train.py",
        "--device",
        "cuda",
        "--epochs",
        "1",
        "--samples",
        "2048",
        timeout=300,
        env={"CUDA_VISIBLE_DEVICES": "1"},
    )
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    used = {g["index"]: g["used"] for g in rep["agents"][0]["gpus"]}
    assert used[0] is False and used[1] is True
    assert not any(
        v["kind"] == "gpu_underused" and v["evidence"]["gpu"] == 0 for v in rep["verdicts"]
    )


# DDP on NCCL, 2 ranks; rank 1 sleeps in its forward at step 6 and never
# reaches that step's all-reduce. NCCL's collectives are asynchronous: rank 0
# goes on until its next synchronization (the loss's .item()) and blocks
# there, on the device's stream, until `timeout` ends the run.
DDP_NCCL_HANG = """
import time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10))
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        if rank == 1 and self.calls == 6:
            time.sleep(3600)
        return self.body(x)
model = DDP(Net().cuda(), device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 512).cuda(), torch.randint(0, 10, (64,)).cuda()
for step in range(1000):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    loss.item()
"""


@two_gpus
def test_a_rank_that_never_reaches_its_collective_on_nccl_is_named(tmp_path):
    script = tmp_path / "hang_nccl.py"
    script.write_text(DDP_NCCL_HANG)
    run = tmp_path / "gpu-nccl-hang.db"
    r = trainprof(
        "record",
        "-q",
        "--stall-after",
        "5",
        "-o",
        run,
        "--",
        "timeout",
        "-s",
        "TERM",
        "40",
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        script,
        timeout=300,
    )
    keep(run)
    assert r.returncode != 0  # ended by the timeout
    rep = report_json(run)
    stalls = {s["rank"]: s for s in rep["stalls"] if not s["ended"]}
    print(json.dumps(rep["stalls"]))
    assert set(stalls) == {0, 1}, rep["stalls"]
    assert stalls[1]["first"] and not stalls[0]["first"]
    assert stalls[1]["phase"] == "forward" and stalls[1]["step"] == 6
    assert stalls[1]["threads"][0]["frames"][0]["function"] == "Net.forward"
    assert "communication_bound" not in [v["kind"] for v in rep["verdicts"]]
