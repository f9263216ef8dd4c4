"""Whole trainings on a real NVIDIA GPU, each with the verdict it must give
(docs/verdicts.md): a host that can't feed the GPU (host_bound), a GPU that
is the limit (compute_bound: a bf16 transformer at a large batch, tensor
cores busy), a CPU-heavy Dataset (input_bound), a GPU that never answers (a
stall at the script's `.item()` line), and DDP on NCCL at world size 1.
Sized to fit in about five minutes of device time together. Skipped where
torch sees no CUDA device (CI): tools/gpu-check.sh runs them, and
tests/py/test_gpu_runs.py holds the same rules on real recordings in CI."""

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import PYTHON, in_short, keep, report_json, trainprof, words

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# A launch-bound loop: a 12-block MLP 512 wide at batch 64 in FP32 (the GPU
# busy ~10 % of the time on an H200), `.item()` every 10 steps.
MLP = """
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(512, 512), nn.ReLU())],
                      nn.Linear(512, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 512, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")
for step in range(int(sys.argv[1])):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        loss.item()
"""

# The GPU the limit: a bf16 transformer encoder at a large batch, its
# matrix products on the tensor cores.
TRANSFORMER = """
import sys, torch
from torch import nn
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
model = nn.TransformerEncoder(layer, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(64, 512, 1024, device="cuda")
for step in range(int(sys.argv[1])):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        loss.item()
"""

# The input the limit: a Dataset whose every sample costs the CPU ~20 ms,
# two workers, a small model on the GPU.
INPUT = """
import sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        end = time.process_time() + 0.02
        while time.process_time() < end:
            pass
        return torch.randn(256), i % 10
if __name__ == "__main__":  # workers from a fork server (3.14+) import the script
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Slow(), batch_size=16, num_workers=2, pin_memory=True)
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if step + 1 == int(sys.argv[1]):
            break
"""

# A GPU that never answers: after 30 steps a ~60 s kernel, then `.item()`
# waits for it (line 16); record stops it first.
HANG = """
import sys, torch
from torch import nn
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(256, 1024, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(200):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step == 29:
        torch.cuda._sleep(int(60 * torch.cuda.get_device_properties(0).clock_rate * 1000))
    if step >= 29:
        loss.item()
"""


def record(tmp_path, script_text, *args, record_args=(), timeout=240):
    script = tmp_path / "train.py"
    script.write_text(script_text)
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", *record_args, "-o", run, "--", PYTHON, script, *args, timeout=timeout
    )
    assert r.returncode == 0, r.stderr
    keep(run)
    return run


def kinds(rep):
    return [v["kind"] for v in rep["verdicts"]]


def lead(run):
    return in_short(trainprof("report", run).stdout)


def test_a_launch_bound_mlp_is_host_bound(tmp_path):
    run = record(tmp_path, MLP, "1500")
    rep = report_json(run)
    assert "host_bound" in kinds(rep) and "compute_bound" not in kinds(rep), rep["verdicts"]
    assert "gpu_underused" not in kinds(rep)
    [v] = [v for v in rep["verdicts"] if v["kind"] == "host_bound"]
    assert v["evidence"]["gpu_busy_share"] < 0.5, v["evidence"]
    assert "[host_bound]" in lead(run)


def test_a_bf16_transformer_at_a_large_batch_is_compute_bound(tmp_path):
    run = record(tmp_path, TRANSFORMER, "60")
    rep = report_json(run)
    assert "compute_bound" in kinds(rep) and "host_bound" not in kinds(rep), rep["verdicts"]
    [v] = [v for v in rep["verdicts"] if v["kind"] == "compute_bound"]
    assert v["evidence"]["gpu_busy_share"] >= 0.9, v["evidence"]
    assert rep["run"]["meta"]["fact.model.autocast_dtype"] == "bfloat16"
    message = words(v["message"])
    assert "already runs under bf16 autocast" in message
    assert "bf16 autocast, torch.backends" not in message  # never what it already does


def test_a_cpu_heavy_dataset_is_input_bound(tmp_path):
    run = record(tmp_path, INPUT, "150")
    rep = report_json(run)
    assert kinds(rep)[0] == "input_bound" or "[input_bound]" in lead(run), rep["verdicts"]
    assert "memory_growth" not in kinds(rep)  # CUDA's and the workers' start is no leak
    [v] = [v for v in rep["verdicts"] if v["kind"] == "input_bound"]
    assert "__getitem__" in words(v["message"])


def test_a_gpu_that_never_answers_is_a_stall_at_the_item_line(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANG)
    run = tmp_path / "run.db"
    p = subprocess.Popen(
        [
            os.environ.get("TRAINPROF", "trainprof"),
            "record",
            "-q",
            "--stall-after",
            "5",
            "-o",
            str(run),
            "--",
            PYTHON,
            str(script),
        ],
        start_new_session=True,
    )
    time.sleep(30)
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(timeout=60)
    keep(run)
    rep = report_json(run)
    [stall] = [s for s in rep["stalls"] if not s["ended"]]
    assert stall["phase"] == "from_device" and stall["gpu_util_mean_percent"] >= 50, stall
    frames = [t["frames"][0] for t in stall["threads"] if t["phase"] == "from_device"]
    assert frames and frames[0]["line"] == 16, stall
    assert lead(run).startswith("[stalled]")


def test_ddp_on_nccl_at_world_size_one_keeps_its_verdicts(tmp_path):
    ddp = MLP.replace(
        "import sys, torch",
        "import sys, torch, torch.distributed as dist\ndist.init_process_group('nccl')",
    ).replace(
        ".cuda()\nopt", ".cuda()\nmodel = torch.nn.parallel.DistributedDataParallel(model)\nopt"
    )
    script = tmp_path / "ddp.py"
    script.write_text(ddp + "dist.destroy_process_group()\n")
    run = tmp_path / "run.db"
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
        "600",
        timeout=240,
    )
    assert r.returncode == 0, r.stderr
    keep(run)
    rep = report_json(run)
    assert {"host_bound", "compute_bound", "communication_bound"} & set(kinds(rep))
    assert rep["steps"][0]["count"] == 600
    assert json.dumps(rep["stalls"]) == "[]"
