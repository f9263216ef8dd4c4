"""The GPU paths on a real NVIDIA GPU: NVML readings against nvidia-smi (clock
event reasons, the power limit, GPM, the PCIe counters against bytes copied),
energy, CUDA-event device times (asynchronous work, other threads', captures
torch did or didn't start), torch.compile, GradScaler, Lightning
(communication: test_gpu_distributed.py).
Skipped where torch sees no CUDA device (CI); tools/gpu-check.sh runs them on a
machine with one. docs/gpu.md gives the figures they read."""

import json
import sqlite3
import statistics
import subprocess
import threading

import pytest
from conftest import PYTHON, ROOT, keep, report_json, samples, trainprof

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# Seconds of bf16 matrix products (the GPU near 100 % busy), then 2 s idle
# with 4 GiB still allocated.
BUSY = """
import time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
end = time.time() + float(__import__("sys").argv[1])
while time.time() < end:
    for _ in range(20):
        y = x @ x
    torch.cuda.synchronize()
time.sleep(2)
"""


class Smi:
    """nvidia-smi sampling every 250 ms on a thread, as (field -> values)."""

    FIELDS = ("utilization.gpu", "memory.used", "power.draw", "clocks.sm", "temperature.gpu")

    def __init__(self):
        self.proc = subprocess.Popen(
            [
                "nvidia-smi",
                "--query-gpu=" + ",".join(self.FIELDS),
                "--format=csv,noheader,nounits",
                "-i",
                "0",
                "-lms",
                "250",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.rows = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.rows.append([float(v) for v in line.split(",")])
            except ValueError:
                pass  # "[N/A]"

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.thread.join()
        return {f: [r[i] for r in self.rows] for i, f in enumerate(self.FIELDS)}


def test_nvml_readings_match_nvidia_smi(tmp_path):
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    run = tmp_path / "gpu-busy.db"
    smi = Smi()
    r = trainprof(
        "record", "-q", "--interval", "0.25", "-o", run, "--", PYTHON, script, "6", timeout=180
    )
    seen = smi.stop()
    keep(run)
    assert r.returncode == 0, r.stderr
    assert len(seen["utilization.gpu"]) > 20

    rep = report_json(run)
    gpus = rep["agents"][0]["gpus"]
    assert gpus and gpus[0]["index"] == 0
    assert gpus[0]["energy_source"] == "counter", gpus  # Volta and newer have the counter

    util = [v for _, v in samples(run, "gpu_util_percent", '{"gpu":"0"}')]
    mem = [v for _, v in samples(run, "gpu_mem_used_bytes", '{"gpu":"0"}')]
    power = samples(run, "gpu_power_watts", '{"gpu":"0"}')
    clock = [v for _, v in samples(run, "gpu_sm_clock_mhz", '{"gpu":"0"}')]
    temp = [v for _, v in samples(run, "gpu_temp_celsius", '{"gpu":"0"}')]
    energy = samples(run, "gpu_energy_joules", '{"gpu":"0"}')
    print(
        json.dumps(
            {
                "smi": {f: [min(v), statistics.median(v), max(v)] for f, v in seen.items()},
                "trainprof": {
                    "util": [min(util), statistics.median(util), max(util)],
                    "mem_mib": max(mem) / 2**20,
                    "power_max": max(v for _, v in power),
                    "clock_max": max(clock),
                    "temp_max": max(temp),
                    "energy_j": energy[-1][1],
                },
            }
        )
    )

    # busy, then idle: both tools see the GPU near full, then near empty
    assert max(util) >= 90 and max(seen["utilization.gpu"]) >= 90
    assert min(util) <= 10 and min(seen["utilization.gpu"]) <= 10
    # 4 GiB + 128 MiB of tensors, plus the CUDA context
    assert abs(max(mem) / 2**20 - max(seen["memory.used"])) < 0.03 * max(seen["memory.used"])
    assert max(mem) >= 4.1 * 2**30
    assert abs(max(v for _, v in power) - max(seen["power.draw"])) < 0.15 * max(seen["power.draw"])
    assert abs(max(clock) - max(seen["clocks.sm"])) <= 0.05 * max(seen["clocks.sm"])
    assert abs(max(temp) - max(seen["temperature.gpu"])) <= 3

    # clock event reasons: NVML's bitmask, idle (1) seen once the products end
    reasons = [int(v) for _, v in samples(run, "gpu_clock_event_reasons", '{"gpu":"0"}')]
    limit = [v for _, v in samples(run, "gpu_power_limit_watts", '{"gpu":"0"}')]
    sm = [v for _, v in samples(run, "gpu_sm_active_percent", '{"gpu":"0"}')]
    tensor = [v for _, v in samples(run, "gpu_tensor_active_percent", '{"gpu":"0"}')]
    print(
        json.dumps(
            {
                "reasons": sorted(set(reasons)),
                "limit": sorted(set(limit)),
                "sm_active": sm,
                "tensor_active": tensor,
            }
        )
    )
    assert reasons and any(r & 1 for r in reasons)
    smi_limit = subprocess.run(
        ["nvidia-smi", "--query-gpu=power.limit", "--format=csv,noheader,nounits", "-i", "0"],
        capture_output=True,
        text=True,
    ).stdout
    assert limit and abs(limit[0] - float(smi_limit)) < 1
    # GPM (Hopper): bf16 products keep the SMs and tensor cores busy, idle not
    if sm:
        assert max(sm) >= 80 and min(sm) <= 10
        assert max(tensor) >= 50

    # the energy counter against the integral of the power readings
    integral = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(power, power[1:]))
    assert energy[-1][1] == pytest.approx(integral, rel=0.15)


COMPILED = """
import sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(model, mode=sys.argv[1])
data = TensorDataset(torch.randn(2560, 512), torch.randint(0, 10, (2560,)))
for x, y in DataLoader(data, batch_size=64):
    x, y = x.cuda(), y.cuda()
    opt.zero_grad()
    nn.functional.cross_entropy(step(x), y).backward()
    opt.step()
print("loss", float(nn.functional.cross_entropy(step(x), y)))
"""


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_torch_compile_trains_under_record(tmp_path, mode):
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED)
    run = tmp_path / f"gpu-compile-{mode}.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, mode, timeout=400)
    keep(run)
    assert r.returncode == 0, r.stderr
    assert "loss" in r.stdout
    rep = report_json(run)
    names = {t["name"]: t for t in rep["timings"]}
    assert names["train_batch"]["count"] >= 39
    assert names["backward"]["count"] == 40
    print(mode, {n: (t["count"], t["device"] and t["device"]["count"]) for n, t in names.items()})
    # train_batch begins and ends outside the compiled graphs' captures
    assert names["train_batch"]["device"]["count"] >= 38


def test_example_trains_on_cuda(tmp_path):
    run = tmp_path / "gpu-example.db"
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
        "4096",
        timeout=300,
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    names = {t["name"]: t for t in rep["timings"]}
    # two per step, and model.to(device)'s 8 parameter tensors
    assert names["to_device"]["count"] == 2 * 64 + 8
    assert names["train_batch"]["count"] == 64
    # every CUDA region has its device time, the last step's included (at exit);
    # forward, backward and optimizer_step only with TRAINPROF_DEVICE_TIMES=all
    for name in ("to_device", "train_batch"):
        assert names[name]["device"]["count"] == names[name]["count"], name
        assert names[name]["device"]["total_s"] > 0, name
    for name in ("dataloader_next", "forward", "backward", "optimizer_step"):
        assert names[name]["device"] is None, name
    text = trainprof("report", run).stdout
    print(text)
    assert "on the device (CUDA events)" in text


# Steps whose forward is a known stretch of GPU work (torch.cuda._sleep spins
# for a number of GPU clock cycles, calibrated with CUDA events first) behind
# a pinned 64 MiB non-blocking copy; the host never waits for the GPU until
# the end, so host times are launch times and only device times see the work.
ASYNC = """
import json, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

cycles = 200_000_000
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):
    a.record(); torch.cuda._sleep(cycles); b.record(); b.synchronize()
sleep_s = a.elapsed_time(b) / 1e3

class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))
    def forward(self, x):
        torch.cuda._sleep(cycles)
        return (x.float().mean() * self.w).reshape(1)

model = Slow().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.0)
data = TensorDataset(torch.ones(12, 64 << 20, dtype=torch.uint8))
loader = DataLoader(data, batch_size=1, pin_memory=True)
losses = []
for (x,) in loader:
    x = x.to("cuda", non_blocking=True)
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    losses.append(loss.detach())
torch.cuda.synchronize()
json.dump({"sleep_s": sleep_s}, open(sys.argv[1], "w"))
"""


def test_device_times_see_asynchronous_work_without_waiting_for_it(tmp_path):
    script = tmp_path / "async.py"
    script.write_text(ASYNC)
    run = tmp_path / "gpu-async.db"
    facts = tmp_path / "facts.json"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        facts,
        timeout=300,
        env={"TRAINPROF_DEVICE_TIMES": "all"},
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    sleep_s = json.loads(facts.read_text())["sleep_s"]
    names = {t["name"]: t for t in report_json(run)["timings"]}
    fwd, copy = names["forward"], names["to_device"]
    print(
        json.dumps(
            {
                "sleep_s": sleep_s,
                "forward": fwd,
                "to_device": copy,
                "train_batch": names["train_batch"],
            }
        )
    )
    assert fwd["count"] == 12 and fwd["device"]["count"] == 12
    # the device saw each forward's sleep; the host only launched it, and was
    # never made to wait for it (a synchronize at the region's end would make
    # the host time as long as the device time)
    assert fwd["device"]["p50_s"] == pytest.approx(sleep_s, rel=0.1)
    assert fwd["p50_s"] < 0.2 * sleep_s
    assert names["train_batch"]["device"]["p50_s"] >= 0.9 * sleep_s
    # 64 MiB from pinned memory: on the device the copy takes the time of
    # the bytes over PCIe or NVLink-C2C (well above 1 GB/s, below 1 TB/s)
    per_copy = copy["device"]["p50_s"]
    assert 64 * 2**20 / 1e12 < per_copy < 64 * 2**20 / 1e9
    assert names["backward"]["device"]["count"] == 12


# A forward captured into a CUDA graph, replayed, then eager steps.
GRAPHED = """
import torch
from torch import nn
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU()).cuda()
x = torch.randn(64, 256, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = model(x)
for _ in range(10):
    g.replay()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    opt.zero_grad()
    model(torch.randn(64, 256).to("cuda")).sum().backward()
    opt.step()
print("ok", float(y.sum()))
"""


def test_no_event_is_recorded_into_a_cuda_graph_capture(tmp_path):
    script = tmp_path / "graphed.py"
    script.write_text(GRAPHED)
    run = tmp_path / "gpu-graphed.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        timeout=300,
        env={"TRAINPROF_DEVICE_TIMES": "all"},
    )
    keep(run)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    names = {t["name"]: t for t in report_json(run)["timings"]}
    fwd = names["forward"]
    assert fwd["count"] == 3 + 1 + 5
    assert fwd["device"]["count"] == 3 + 5  # not the captured one
    assert names["to_device"]["device"]["count"] == 2 + 5  # model.cuda()'s 2 tensors, 5 inputs


# float16 autocast with a GradScaler, as nanoGPT trains on GPUs without
# bfloat16: two iterations overflow, and the scaler skips their optimizer step.
GRAD_SCALER_FP16 = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 8)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
x, y = torch.randn(640, 256), torch.randint(0, 8, (640,))
skipped = 0
for it in range(20):  # batches of its own (no DataLoader): optimizer steps mark the steps
    xb, yb = x[it * 32:(it + 1) * 32].to("cuda"), y[it * 32:(it + 1) * 32].to("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(xb), yb)
    if it in (5, 12):
        loss = loss * float("inf")
    scaler.scale(loss).backward()
    scale = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    skipped += scaler.get_scale() < scale
    opt.zero_grad(set_to_none=True)
print("skipped", skipped)
"""


def test_grad_scaler_float16_steps_on_cuda(tmp_path):
    """Every iteration is a step with its train_batch and the batch's device
    time, the ones whose optimizer step the scaler skipped too."""
    script = tmp_path / "scaler.py"
    script.write_text(GRAD_SCALER_FP16)
    run = tmp_path / "gpu-scaler.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    skipped = int(r.stdout.split()[-1])
    assert skipped >= 2  # the two planted overflows, and any of float16's own
    rep = report_json(run)
    names = {t["name"]: t for t in rep["timings"]}
    assert names["train_batch"]["count"] == 20
    assert names["train_batch"]["device"]["count"] == 20
    assert names["optimizer_step"]["count"] == 20 - skipped
    assert rep["steps"][0]["count"] == 20  # one per iteration, skipped or not
    assert rep["steps"][0]["samples"] == 20 * 32


LIGHTNING = """
import torch, pytorch_lightning as pl
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 4))
    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

data = TensorDataset(torch.randn(640, 128), torch.randint(0, 4, (640,)))
trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=2, precision=PRECISION,
                     logger=False, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False)
trainer.fit(Model(), DataLoader(data, batch_size=32))
print("steps", trainer.global_step)
"""


@pytest.mark.parametrize("precision", ["32-true", "16-mixed"])
def test_lightning_on_cuda(tmp_path, precision):
    """Lightning's loop: forward and backward in a closure that
    optimizer.step() calls (32-true) or that Lightning calls before the
    scaler's step (16-mixed); 40 batches in 2 epochs either way."""
    pytest.importorskip("pytorch_lightning")
    script = tmp_path / "lit.py"
    script.write_text(LIGHTNING.replace("PRECISION", repr(precision)))
    run = tmp_path / "gpu-lightning.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    names = {t["name"]: t for t in rep["timings"]}
    print(
        precision,
        r.stdout.split()[-1],
        {
            n: (t["count"], t["total_s"], t["device"] and t["device"]["count"])
            for n, t in names.items()
        },
    )
    assert names["train_batch"]["count"] == 40
    assert names["train_batch"]["device"]["count"] == 40
    assert names["dataloader_next"]["count"] >= 40
    assert 40 - 8 <= names["optimizer_step"]["count"] <= 40  # float16 skips a few at first
    # the update alone, not forward and backward inside it
    assert names["optimizer_step"]["total_s"] < names["train_batch"]["total_s"]
    assert rep["steps"][0]["samples"] >= 39 * 32


# NCCL at world size 1: out-of-place all-gathers of 1 GiB (a copy on the
# device, ~1 ms), each behind 50 ms of GPU work it waits for; half async,
# half blocking. ProcessGroupNCCL's own timing (TORCH_NCCL_ENABLE_TIMING)
# is the ground truth: the async works' durations, read once complete.
FOREIGN_CAPTURE = """
import cupy, torch
from torch import nn
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU()).cuda()
x = torch.randn(64, 256, device="cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad(); model(x).sum().backward(); opt.step()
torch.cuda.synchronize()
s = cupy.cuda.Stream(non_blocking=True)
with torch.cuda.stream(torch.cuda.ExternalStream(s.ptr)):
    s.begin_capture()
    with torch.no_grad():
        y = model(x)
    g = s.end_capture()
for _ in range(5):
    g.launch(s)
s.synchronize()
print("ok", float(y.sum()))
"""


def test_no_event_is_recorded_into_a_capture_torch_did_not_start(tmp_path):
    pytest.importorskip("cupy")
    script = tmp_path / "foreign.py"
    script.write_text(FOREIGN_CAPTURE)
    run = tmp_path / "gpu-foreign-capture.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        timeout=300,
        env={"TRAINPROF_DEVICE_TIMES": "all"},
    )
    keep(run)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    fwd = {t["name"]: t for t in report_json(run)["timings"]}["forward"]
    assert fwd["device"]["count"] == 3  # not the captured one


# Copies made on a thread that ends before the script does, never waited
# for: their device times come from the thread's pending events at exit.
THREAD_COPIES = """
import threading, time, torch
def copies():
    for _ in range(6):
        torch.ones(1 << 24).to("cuda", non_blocking=False)
t = threading.Thread(target=copies)
t.start(); t.join()
time.sleep(0.5)
print("ok")
"""


def test_device_times_of_a_finished_thread_are_kept(tmp_path):
    script = tmp_path / "thread.py"
    script.write_text(THREAD_COPIES)
    run = tmp_path / "gpu-thread.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    copy = {t["name"]: t for t in report_json(run)["timings"]}["to_device"]
    assert copy["count"] == 6 and copy["device"]["count"] == 6


# Pinned host-to-device copies of a known size, 3 s of them, then 2 s idle.
COPIES = """
import json, sys, time, torch
host = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
gpu = torch.empty_like(host, device="cuda")
moved, t0 = 0, time.time()
while time.time() - t0 < 3:
    gpu.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    moved += 256 << 20
time.sleep(2)
json.dump({"moved": moved}, open(sys.argv[1], "w"))
"""


def test_pcie_bytes_from_the_counters_match_the_copies(tmp_path):
    script = tmp_path / "copies.py"
    script.write_text(COPIES)
    run = tmp_path / "gpu-pcie.db"
    truth = tmp_path / "moved.json"
    r = trainprof(
        "record", "-q", "--interval", "0.25", "-o", run, "--", PYTHON, script, truth, timeout=120
    )
    keep(run)
    assert r.returncode == 0, r.stderr
    moved = json.loads(truth.read_text())["moved"]
    with sqlite3.connect(run) as db:
        source = db.execute("SELECT value FROM meta WHERE key = 'gpu_pcie_source'").fetchone()
    rx = samples(run, "gpu_pcie_rx_bytes_per_s", '{"gpu":"0"}')
    tx = samples(run, "gpu_pcie_tx_bytes_per_s", '{"gpu":"0"}')
    counted = sum((t1 - t0) * v1 for (t0, _), (t1, v1) in zip(rx, rx[1:]))
    print(
        json.dumps(
            {
                "source": source,
                "moved": moved,
                "rx_integral": counted,
                "rx_max": max(v for _, v in rx),
                "tx_max": max(v for _, v in tx),
            }
        )
    )
    assert source == ("counter",)
    # the GPU received what was copied to it (and a little more: the
    # driver's own traffic)
    assert 0.9 * moved < counted < 1.3 * moved
