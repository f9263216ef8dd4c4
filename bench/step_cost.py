"""What trainprof's PyTorch instrumentation costs a training step, measured
in the training process itself: a small residual MLP of many modules (the
case where per-module costs show) trained in a fresh process per variant, in
rotating order, on the CPU or on a CUDA GPU:

- plain: not instrumented;
- host: trainprof.torch.instrument() with TRAINPROF_DEVICE_TIMES=0;
- device (CUDA only): instrument() with device times (to_device, train_batch);
- device_all (CUDA only): TRAINPROF_DEVICE_TIMES=all (forward, backward and
  optimizer_step on the device too).

With --alt DIR, each instrumented variant runs a second time importing the
trainprof package found in DIR (another version of the Python side, e.g.
the last commit's) as "VARIANT@alt": two versions measured in one run.

No recorder listens, so trainprof's ring writes return at once and what is
measured is the Python side of the instrumentation. Each process reports
the median of its step times (each step ends in loss.item(), as training
loops do) and their mean (what the whole training pays: steps that cost
more, such as those while global module hooks look for models, count too);
each figure is the median over rounds of a variant's difference to plain, in
microseconds per step. --profile prints the hottest functions of the last
variant under cProfile (PROFILE_FILTER=trainprof: only ours).

    python3 bench/step_cost.py [ROUNDS] [--device cpu|cuda] [--blocks N]
                               [--steps N] [--alt DIR] [--variants V,...] [--profile]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import os, sys, time, statistics, torch
if os.environ["VARIANT"] != "plain":
    import trainprof.torch as tpt
    if os.environ.get("PATCHES"):  # only these (a diagnosis): _patch_NAME for NAME in the list
        tpt._installed = True
        for name in os.environ["PATCHES"].split(","):
            getattr(tpt, "_patch_" + name)()
    else:
        tpt.instrument()
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
device, blocks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
if device == "cpu":
    torch.set_num_threads(1)

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm, self.linear, self.act = nn.LayerNorm(width), nn.Linear(width, width), nn.GELU()
    def forward(self, x):
        return x + self.act(self.linear(self.norm(x)))

width = 64 if device == "cpu" else 256
model = nn.Sequential(*[Block(width) for _ in range(blocks)], nn.Linear(width, 10)).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(64 * 64, width), torch.randint(0, 10, (64 * 64,)))
loader = DataLoader(data, batch_size=64, shuffle=True, pin_memory=device != "cpu")
times = []
def run():
    last = time.perf_counter()
    while len(times) < steps:
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            loss.item()
            now = time.perf_counter()
            times.append(now - last)
            last = now
if os.environ.get("PROFILE"):
    import cProfile, pstats
    cProfile.run("run()", "/tmp/step_cost.prof")
    pstats.Stats("/tmp/step_cost.prof").sort_stats("tottime").print_stats(os.environ.get("PROFILE_FILTER") or "", 25)
else:
    run()
kept = times[steps // 10:]
print(statistics.median(kept), statistics.fmean(kept))
"""


def step_s(variant, args, profile=False):
    """(median, mean) step time, in seconds, of one fresh process running
    variant, after its first tenth of steps."""
    name, _, alt = variant.partition("@")
    env = {
        **os.environ,
        "VARIANT": name,
        "TRAINPROF_DEVICE_TIMES": {"host": "0", "device_all": "all"}.get(name, "1"),
    }
    env.pop("TRAINPROF_SOCKET", None)
    if alt:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.alt, env.get("PYTHONPATH")]))
    if profile:
        env["PROFILE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, args.device, str(args.blocks), str(args.steps)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    if profile:
        print(out)
    median, mean = out.strip().splitlines()[-1].split()
    return float(median), float(mean)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rounds", nargs="?", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--blocks", type=int, default=8, help="residual blocks (4 modules each)")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--alt", help="a folder holding another version of the trainprof package")
    p.add_argument(
        "--variants",
        help="comma-separated: the instrumented variants to run "
        "(default: host, and on a GPU device and device_all)",
    )
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    measured = ["host"] + (["device", "device_all"] if args.device != "cpu" else [])
    if args.variants:
        measured = args.variants.split(",")
    if args.alt:
        measured += [v + "@alt" for v in measured]
    order = ["plain"] + measured
    diffs = {v: [] for v in measured}
    mean_diffs = {v: [] for v in measured}
    plain, plain_mean = [], []
    for r in range(args.rounds):
        t = {v: step_s(v, args) for v in order[r % len(order) :] + order[: r % len(order)]}
        print(
            f"round {r + 1}: "
            + ", ".join(f"{v} {1e6 * s[0]:.1f} us (mean {1e6 * s[1]:.1f})" for v, s in t.items()),
            file=sys.stderr,
            flush=True,
        )
        plain.append(t["plain"][0])
        plain_mean.append(t["plain"][1])
        for v in measured:
            diffs[v].append(t[v][0] - t["plain"][0])
            mean_diffs[v].append(t[v][1] - t["plain"][1])
    result = {
        "device": args.device,
        "blocks": args.blocks,
        "modules": 4 * args.blocks + 2,
        "rounds": args.rounds,
        "plain_step_us": round(1e6 * statistics.median(plain), 1),
        "plain_mean_step_us": round(1e6 * statistics.median(plain_mean), 1),
    }
    for v in measured:
        # the typical step's cost, and what the whole training pays per step
        # (the mean: steps that cost more, such as those while the global
        # module hooks look for models, count too)
        result[f"{v}_us_per_step"] = round(1e6 * statistics.median(diffs[v]), 1)
        result[f"{v}_mean_us_per_step"] = round(1e6 * statistics.median(mean_diffs[v]), 1)
    print(json.dumps(result))
    if args.profile:
        step_s(measured[-1], args, profile=True)


if __name__ == "__main__":
    main()
