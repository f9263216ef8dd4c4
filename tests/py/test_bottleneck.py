"""`trainprof bottleneck`: three runs of real PyTorch scripts on the CPU."""

import json
import textwrap

from conftest import PYTHON, trainprof

SCRIPT = """
import os, sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SLEEP, DIM, HIDDEN = {sleep}, {dim}, {hidden}
if os.environ.get("TRAINPROF_BOTTLENECK") == {crash_in!r}:
    raise SystemExit("crashing on purpose in this run")

class Data(Dataset):
    def __init__(self):
        self.x = torch.randn(4096, DIM)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        if SLEEP:
            time.sleep(SLEEP)
        return self.x[i], i % 10

model = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                      nn.Linear(HIDDEN, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(1000):
    for x, y in DataLoader(Data(), batch_size=16):
        assert x.shape == (16, DIM) and x.dtype == torch.float32  # replay keeps the batch's form
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
"""


def bottleneck(tmp_path, sleep=0.0, dim=32, hidden=32, crash_in="", extra=()):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(sleep=sleep, dim=dim, hidden=hidden, crash_in=crash_in))
    return trainprof("bottleneck", "--steps", "30", "--warmup", "5", "-o", tmp_path / "bn",
                     *extra, "--", PYTHON, script, timeout=300)


def test_sleepy_loader_is_input_bound(tmp_path):
    r = bottleneck(tmp_path, sleep=0.002, extra=("--json",))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == "input_bound" and out["unit"] == "samples_per_s"
    rates = {run["mode"]: run["rate"] for run in out["runs"]}
    assert 300 < rates["loader"] < 520  # 16 samples x 2 ms per batch
    assert rates["replay"] > 3 * rates["loader"]
    assert rates["asis"] <= rates["loader"] * 1.1
    assert all(run["steps"] == 30 and run["exit_status"] == 0 for run in out["runs"])
    for mode in ("asis", "replay", "loader"):
        assert (tmp_path / f"bn-{mode}.db").exists()


def test_big_model_fast_loader_is_compute_bound(tmp_path):
    r = bottleneck(tmp_path, dim=512, hidden=2048)
    assert r.returncode == 0, r.stderr
    assert "compute-bound" in r.stdout and "training limit" in r.stdout
    r2 = bottleneck(tmp_path, sleep=0.002)
    assert "worker processes on" in r2.stdout and "CPUs" in r2.stdout


def test_no_dataloader(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("print('no loader here')\n")
    r = trainprof("bottleneck", "-o", tmp_path / "bn", "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    assert "no DataLoader found: only the as-is run was made" in r.stdout
    assert not (tmp_path / "bn-replay.db").exists()


def test_a_crashing_run_is_reported(tmp_path):
    r = bottleneck(tmp_path, crash_in="loader")
    assert r.returncode == 1
    assert "the loader run failed with exit status 1" in r.stdout


def test_bad_arguments(tmp_path):
    r = trainprof("bottleneck", "--steps", "x", "--", "true")
    assert r.returncode == 2 and "--steps must be a whole number" in r.stderr
    r = trainprof("bottleneck")
    assert r.returncode == 2 and "no command given" in r.stderr
