"""GPU memory on a real NVIDIA GPU (issue 59): the allocator's readings
against torch's own figures, a script that keeps its losses' graphs
forecast to run out within 10 % of the step where it does, a script that
asks for too much explained as it dies, and a healthy run with headroom and
no forecast. Skipped where torch sees no CUDA device (CI): tools/gpu-check.sh
runs them; tests/py/test_gpu_memory.py holds the same rules on the CPU."""

import re

import pytest
from conftest import PYTHON, in_short, keep, report_json, trainprof

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# Each step keeps its loss with its graph (retain_graph, a list of losses):
# ~384 MiB of saved activations more per step, until the device is full.
LEAK = """
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(8192, 4096, device="cuda")
losses = []
for step in range(int(sys.argv[1])):
    opt.zero_grad(set_to_none=True)
    loss = model(x).pow(2).mean()
    loss.backward(retain_graph=True)
    opt.step()
    losses.append(loss)
    if step % 10 == 0:
        loss.item()
torch.cuda.synchronize()
print("max_allocated", torch.cuda.max_memory_allocated(), flush=True)
"""

# A healthy loop that, at step 20, asks for one and a half times the device.
TOO_MUCH = """
import torch
from torch import nn
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(256, 1024, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
total = torch.cuda.get_device_properties(0).total_memory
for step in range(100):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    if step == 20:
        extra = torch.empty(int(total * 1.5), dtype=torch.uint8, device="cuda")
    loss.backward()
    opt.step()
"""

HEALTHY = """
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(2048, 2048), nn.ReLU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(1024, 2048, device="cuda")
for step in range(int(sys.argv[1])):
    opt.zero_grad(set_to_none=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        loss.item()
torch.cuda.synchronize()
print("max_allocated", torch.cuda.max_memory_allocated(), flush=True)
"""


def record(tmp_path, name, script, *args):
    path = tmp_path / f"{name}.py"
    path.write_text(script)
    run = tmp_path / f"gpu_memory_{name}.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, path, *args, timeout=600)
    keep(run)
    return run, r


def test_a_leak_is_forecast_within_a_tenth_of_where_it_runs_out(tmp_path):
    run, r = record(tmp_path, "leak_forecast", LEAK, "150")
    assert r.returncode == 0, r.stderr
    (g,) = report_json(run)["gpu_memory"]
    # the readings' peak against torch's own (the last step's work comes after the last reading)
    max_allocated = int(re.search(r"max_allocated (\d+)", r.stdout).group(1))
    assert g["peak_allocated_bytes"] == pytest.approx(max_allocated, rel=0.05)
    forecast = g["growth"]["out_of_room_step"]
    died, r = record(tmp_path, "leak_dies", LEAK, "100000")
    assert r.returncode != 0 and "OutOfMemoryError" in r.stderr
    rep = report_json(died)
    (g,) = rep["gpu_memory"]
    step = g["out_of_memory"]["step"]
    print(f"forecast step {forecast:.0f}, ran out at step {step}")
    assert forecast == pytest.approx(step, rel=0.10)
    assert g["growth"] is not None
    assert "gpu_memory_growth" in {v["kind"] for v in rep["verdicts"]}


def test_too_much_asked_for_is_explained(tmp_path):
    run, r = record(tmp_path, "too_much", TOO_MUCH)
    assert r.returncode != 0
    (g,) = report_json(run)["gpu_memory"]
    oom = g["out_of_memory"]
    total = torch.cuda.get_device_properties(0).total_memory
    assert oom["tried_bytes"] == pytest.approx(1.5 * total, rel=0.01)
    assert oom["step"] in (20, 21) and oom["allocated_bytes"] > 0  # its 21st step
    assert g["growth"] is None
    short = in_short(trainprof("report", run).stdout)
    assert "It ran out of GPU memory asking for" in short and "free on the device" in short


def test_a_healthy_run_has_headroom_and_no_forecast(tmp_path):
    run, r = record(tmp_path, "healthy", HEALTHY, "400")
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    max_allocated = int(re.search(r"max_allocated (\d+)", r.stdout).group(1))
    assert g["peak_allocated_bytes"] == pytest.approx(max_allocated, rel=0.02)
    assert g["growth"] is None and g["batch_factor"] > 2
    kinds = {v["kind"] for v in rep["verdicts"]}
    assert "gpu_memory_growth" not in kinds and "memory_pressure" not in kinds
    assert "a batch about" in trainprof("report", run).stdout
