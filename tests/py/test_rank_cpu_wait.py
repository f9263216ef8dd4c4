"""Ranks held back by other work on their CPUs: the recorder reads each
process's step thread's run-queue delay, and a straggler's cause names it."""

import os
import subprocess
import textwrap

import pytest
from conftest import PYTHON, OthersCpu, report_json, trainprof

TORCHRUN = (PYTHON, "-m", "torch.distributed.run")  # as test_distributed's

NEIGHBOUR = """
import os, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

rank = int(os.environ["RANK"])
os.sched_setaffinity(0, {rank})  # one CPU each: rank 1 shares its CPU with the burner
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(60 * 128, 512), torch.randint(0, 10, (60 * 128,)))
for x, y in DataLoader(data, batch_size=128):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
"""


def burn_beside(run_file, script):
    """Records script under torchrun, two ranks, beside a burner pinned to CPU 1."""
    burner = subprocess.Popen(
        [PYTHON, "-c", "import os; os.sched_setaffinity(0, {1})\nwhile True: pass"]
    )
    try:
        r = trainprof(
            "record", "-q", "-i", "0.1", "-o", run_file, "--", *TORCHRUN, "--standalone",
            "--nproc_per_node", "2", script, timeout=300,
        )  # fmt: skip
    finally:
        burner.kill()
        burner.wait()
    assert r.returncode == 0, r.stderr


@pytest.mark.machine  # judges which rank waited for a CPU: brings its own burner
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU per rank")
def test_a_rank_that_shares_its_cpu_is_a_straggler_held_back_by_it(tmp_path, run_file):
    """Two ranks, each pinned to a CPU of its own, and a burner pinned to
    rank 1's: rank 1's step thread waits for its CPU about half the time
    (50 % measured, rank 0's 4 %) and its compute takes twice as long. The
    straggler's cause says so, from the recorder's reading of each step
    thread's run-queue delay. The ranks share no collective: under DDP on
    gloo, each rank slept in its all-reduce a third of its step, and the
    scheduler gave rank 1 its CPU at once when it woke (it waited 1-4 % of
    the time, beside one or two burners), while torchrun's agent took 30 %
    of rank 0's CPU: neither was slowed more than the other."""
    script = tmp_path / "neighbour.py"
    script.write_text(textwrap.dedent(NEIGHBOUR))
    with OthersCpu() as load:  # what ran beside the test's own burner
        burn_beside(run_file, script)
    rep = report_json(run_file)
    ranks = {x["rank"]: x for x in rep["ranks"]["per_rank"]}
    assert all(0 <= x["cpu_wait_percent"] <= 100 for x in ranks.values()), ranks
    if load.busy:  # others loaded both CPUs (rank 0 waited 33 % beside two burners)
        return
    assert ranks[1]["cpu_wait_percent"] >= 25, ranks
    assert ranks[1]["cpu_wait_percent"] >= ranks[0]["cpu_wait_percent"] + 20, ranks
    assert ranks[1]["straggler"] and not ranks[0]["straggler"], (rep["ranks"], rep["timings"])
    assert "its step thread waited for a CPU" in ranks[1]["cause"], ranks[1]["cause"]
    text = trainprof("report", run_file).stdout
    assert "Rank 1 is a straggler" in text and "its step thread waited for a CPU" in text
