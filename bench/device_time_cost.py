"""What the CUDA-event device times cost a training step, on a machine with a
CUDA GPU: a small model whose steps take a few hundred microseconds on an
H100 (the worst case: launch-bound steps, where any host work shows), trained
in a fresh process per variant, in rotating order:

- plain: not instrumented;
- host: trainprof.torch.instrument() with TRAINPROF_DEVICE_TIMES=0;
- device: instrument() with device times (to_device, train_batch);
- device_all: the same with TRAINPROF_DEVICE_TIMES=all (forward, backward,
  optimizer_step too).

No recorder listens, so trainprof's ring writes return at once and what is
measured is the Python side of the instrumentation. Each process reports the
median of its step times (each step ends in loss.item(), as training loops
do); the figure is the median over rounds of each variant's difference to
plain, in microseconds per step. --profile prints the hottest functions of
the device variant under cProfile.

    python3 bench/device_time_cost.py [ROUNDS] [--profile]
"""

import json
import os
import statistics
import subprocess
import sys

STEPS = 2000

CHILD = r"""
import os, sys, time, statistics, torch
if os.environ.get("VARIANT") != "plain":
    import trainprof.torch as tpt
    tpt.instrument()
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(64 * 64, 256), torch.randint(0, 10, (64 * 64,)))
loader = DataLoader(data, batch_size=64, shuffle=True)
steps = int(sys.argv[1])
times = []
def run():
    last = time.perf_counter()
    while len(times) < steps:
        for x, y in loader:
            x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            loss.item()
            now = time.perf_counter()
            times.append(now - last)
            last = now
if os.environ.get("PROFILE"):
    import cProfile, pstats
    cProfile.run("run()", "/tmp/device_time_cost.prof")
    pstats.Stats("/tmp/device_time_cost.prof").sort_stats("tottime").print_stats(25)
else:
    run()
print(statistics.median(times[200:]))
"""


def step_s(variant, profile=False):
    env = {**os.environ, "VARIANT": variant,
           "TRAINPROF_DEVICE_TIMES": {"host": "0", "device_all": "all"}.get(variant, "1")}
    env.pop("TRAINPROF_SOCKET", None)
    if profile:
        env["PROFILE"] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD, str(STEPS)], capture_output=True,
                         text=True, check=True, env=env).stdout
    if profile:
        print(out)
    return float(out.strip().splitlines()[-1])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
    order = ["plain", "host", "device", "device_all"]
    diffs = {"host": [], "device": [], "device_all": []}
    plain = []
    for r in range(rounds):
        t = {v: step_s(v) for v in order[r % 4:] + order[:r % 4]}
        plain.append(t["plain"])
        for v in diffs:
            diffs[v].append(t[v] - t["plain"])
    print(json.dumps({
        "rounds": rounds, "plain_step_us": round(1e6 * statistics.median(plain), 1),
        "host_timings_us_per_step": round(1e6 * statistics.median(diffs["host"]), 1),
        "device_times_us_per_step": round(1e6 * statistics.median(diffs["device"]), 1),
        "device_times_all_us_per_step": round(1e6 * statistics.median(diffs["device_all"]), 1),
    }))
    if "--profile" in sys.argv:
        step_s("device", profile=True)


if __name__ == "__main__":
    main()
