"""Capture windows on a real NVIDIA GPU (issue 40): the kernels and copies of
a window against torch.profiler's own of the same steps, the GPU's idle time
put on the host's phase (a slow loader, a .item() synchronization), the
caching allocator's peak against torch.cuda.max_memory_allocated. Skipped
where torch sees no CUDA device (CI); tools/gpu-check.sh runs them."""

import collections
import os
import re
import sqlite3
import subprocess
import textwrap

import pytest
from conftest import PROGRAM, PYTHON, keep, report_json

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# A CNN on the GPU, 30 steps. PROFILE=1: torch.profiler itself over steps
# 11-15 (the window's), its kernel counts printed. SLOW: the Dataset sleeps
# 20 ms a sample batch; SYNC: a .item() after every step.
SCRIPT = """
import collections, os, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
torch.manual_seed(0)
class D(Dataset):
    def __len__(self): return int(os.environ.get("STEPS", "30")) * 64
    def __getitem__(self, i):
        if os.environ.get("SLOW") and i % 64 == 0:
            time.sleep(0.02)
        return torch.randn(3, 64, 64), i % 10
model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
prof = None
for step, (x, y) in enumerate(DataLoader(D(), batch_size=64), start=1):
    if os.environ.get("PROFILE") and step == 11:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if os.environ.get("SYNC"):
        loss.item()
    if prof is not None and step == 15:
        prof.__exit__(None, None, None)
        # the GPU's activities, less the GPU twins of record_function ranges
        counts = collections.Counter(e.name for e in prof.events() if e.device_type.name == "CUDA"
                                     and not getattr(e, "is_user_annotation", False))
        print("PROFILER", dict(counts), flush=True)
        prof = None
torch.cuda.synchronize()
print("MAX_ALLOCATED", torch.cuda.max_memory_allocated(), flush=True)
print("TEARDOWN_CUPTI", os.environ.get("TEARDOWN_CUPTI"), flush=True)
"""


def record(tmp_path, name, env=None, args=()):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    run = tmp_path / name
    r = subprocess.run(
        [PROGRAM, "record", "-q", "-o", str(run), *args, "--", PYTHON, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, **(env or {})),
    )
    assert r.returncode == 0, r.stderr
    keep(run)
    return run, r


def test_a_windows_kernels_are_the_profilers_own(tmp_path):
    run, r = record(tmp_path, "gpu_ops.db")
    assert "USDT" not in r.stderr
    rep = report_json(run)
    w = rep["windows"][0]
    assert w["cuda"] and w["steps"] == 5 and not w["skipped"]
    ours = collections.Counter()
    for k in rep["kernels"]:
        ours[k["name"]] += k["calls"]
    _, mine = record(tmp_path, "own.db", env={"PROFILE": "1"}, args=("--ops", "off"))
    theirs = eval(re.search(r"PROFILER (.*)", mine.stdout).group(1))
    # the same kernels, copies and memsets, as many times (a deterministic model)
    assert ours == collections.Counter(theirs), (ours, theirs)
    # every kernel has the operator that launched it
    assert all(k["op"] for k in rep["kernels"] if k["kind"] == "kernel")
    conv = [o for o in rep["ops"] if o["name"] == "aten::conv2d"]
    assert conv and all(o["device_total_s"] > 0 for o in conv)


def test_the_gpus_idle_time_goes_to_the_slow_loader_and_the_item(tmp_path):
    run, _ = record(tmp_path, "idle.db", env={"SLOW": "1", "SYNC": "1"})
    rep = report_json(run)
    idle = sorted(rep["gpu_idle"], key=lambda g: -g["idle_s"])
    assert idle and idle[0]["phase"] == "dataloader_next", idle
    phases = {g["phase"] for g in idle}
    assert "from_device" in phases  # the .item() waits for the GPU's work first
    # trainprof's own CUDA event calls (device times: record, query,
    # elapsed_time in torch/cuda/streams.py) are never the user's function
    named = [g["function"] for g in idle if g.get("function")]
    assert not any("torch/cuda/streams.py" in (f.get("file") or "") for f in named), named


def test_the_allocators_peak_is_torchs(tmp_path):
    run, r = record(tmp_path, "memory.db")
    peak = int(re.search(r"MAX_ALLOCATED (\d+)", r.stdout).group(1))
    w = report_json(run)["windows"][0]
    # steady steps: the window's peak is the run's, give or take a batch
    assert 0.8 * peak <= w["peak_allocated_bytes"] <= peak * 1.001, (w, peak)
    assert w["device_memory_bytes"] == torch.cuda.get_device_properties(0).total_memory


def test_cupti_is_let_go_after_each_window_and_comes_back_for_the_next(tmp_path):
    """Kineto keeps CUPTI attached after a trace unless TEARDOWN_CUPTI=1, and
    then every later CUDA call pays for it: the first window on CUDA sets it
    (a CUDA 12.6 or later), each window still captures its kernels (CUPTI
    re-attached), and nothing is said. Where the environment chose 0, it is
    kept, and the report says what that costs."""
    run, r = record(tmp_path, "teardown.db", env={"STEPS": "1000"}, args=("--ops-every", "0.5"))
    assert "TEARDOWN_CUPTI 1" in r.stdout
    with sqlite3.connect(run) as db:
        windows = [i for (i,) in db.execute("SELECT id FROM op_window WHERE cuda AND NOT skipped")]
        kernels = dict(
            db.execute("SELECT window_id, count(*) FROM ops WHERE kind = 'kernel' GROUP BY 1")
        )
    assert len(windows) >= 2, windows
    assert all(kernels.get(i, 0) > 0 for i in windows), (kernels, windows)
    assert "fact.ops.cupti_kept" not in report_json(run)["run"]["meta"]
    run, r = record(tmp_path, "kept.db", env={"TEARDOWN_CUPTI": "0"})
    assert "TEARDOWN_CUPTI 0" in r.stdout
    assert report_json(run)["run"]["meta"]["fact.ops.cupti_kept"] == "1"
