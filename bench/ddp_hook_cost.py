"""What trainprof's timed DDP communication hook costs a training step on
NCCL (needs a CUDA GPU): DDP at world size 1 over a 130M-parameter MLP
(about 20 gradient buckets), under `trainprof record`, with the hook
(TRAINPROF_DDP_HOOK=1: a Python all-reduce hook with CUDA events in place of
DDP's C++ one) and without it (=0), in alternating order.

    TRAINPROF=path/to/trainprof python3 bench/ddp_hook_cost.py [ROUNDS]

Prints one JSON object: the median ms per step of each, over ROUNDS (default
5), and their ratio."""

import json
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = """
import time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
torch.cuda.set_device(0)
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [nn.Linear(4096, 4096), nn.ReLU()]
model = DDP(nn.Sequential(*layers).cuda(), device_ids=[0])
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 4096, device="cuda")
def step():
    opt.zero_grad(set_to_none=True)
    model(x).sum().backward()
    opt.step()
for _ in range(20):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(200):
    step()
torch.cuda.synchronize()
print("step_ms", (time.perf_counter() - t0) / 200 * 1e3)
dist.destroy_process_group()
"""


def run(trainprof, script, hook):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                trainprof,
                "record",
                "-q",
                "-o",
                os.path.join(tmp, "r.db"),
                "--",
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                "1",
                script,
            ],
            env={**os.environ, "TRAINPROF_DDP_HOOK": hook},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return float(out.split("step_ms")[-1].split()[0])


def main():
    trainprof = os.environ.get("TRAINPROF", "trainprof")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SCRIPT)
    times = {"0": [], "1": []}
    for r in range(rounds):
        for hook in ("0", "1") if r % 2 == 0 else ("1", "0"):
            times[hook].append(run(trainprof, f.name, hook))
    os.unlink(f.name)
    off, on = statistics.median(times["0"]), statistics.median(times["1"])
    print(
        json.dumps(
            {"builtin_allreduce_ms": off, "timed_hook_ms": on, "ratio": on / off, "rounds": times},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
