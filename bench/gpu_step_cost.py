"""What `trainprof record` costs a training step where the host is the limit
(issue 56): launch-bound loops on a GPU, and a CPU stand-in that CI machines
can run, each arm a fresh process, the arms alternating round after round:

- bare: the script alone;
- record: `trainprof record` with its defaults;
- stacks0: `record --stacks 0` (no stack sampler);
- ops_off: `record --ops off` (no capture window);
- devtimes_off: `record` with TRAINPROF_DEVICE_TIMES=0 (no CUDA events);
- devtimes_8: `record` with TRAINPROF_DEVICE_TIMES=8 (CUDA events on one
  step in 8, as the recorder has it once it backed off over its budget);
- patch:NAME: `record` with the auto-instrumentation off and only the patch
  NAME of trainprof.torch applied (dataloader, workers, modules, backward,
  optimizer, schedulers, transfers, distributed, spawn, graph_capture;
  `patch:none`: none of them, the base every patch arm shares);
- profiler: the script under torch.profiler (CPU, and CUDA on a GPU) for
  the whole run, the peer.

Models (--model): `standin` (CPU: a 12-block MLP 64 wide at batch 16, one
thread, ~1 ms a step on this VM, mostly per-call host work, through a
DataLoader), `standin_kept` (the same, its one batch kept in memory and no
DataLoader: the optimizer's updates mark the steps, as on the two GPU
models whose data stays on the GPU), `mlp` (GPU: 12 blocks 512
wide, batch 64, AdamW, a pinned DataLoader), `resnet` (GPU: a ResNet-18 of
this file's own, batch 64, its data on the GPU) and `transformer` (GPU: 4
encoder layers, d 256, batch 32 x 128 tokens). Each calls `.item()` every
10 steps. Each process measures steps 300 to --steps: its median step
(wall), and its CPU time per step, the whole process's (every thread:
trainprof's sampler too) and the training thread's alone; on this 2-core
VM the wall time can't resolve 1 %, the CPU time can. The figures: each
arm's median over rounds of its difference to bare in the same round, with
the rounds' spread.

    python3 bench/gpu_step_cost.py [ROUNDS] [--model standin|standin_kept|mlp|resnet|transformer]
                                   [--steps N] [--arms A,B,...] [--trainprof PATH]
                                   [--keep-run PATH]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATCHES = (
    "dataloader",
    "workers",
    "modules",
    "backward",
    "optimizer",
    "schedulers",
    "transfers",
    "distributed",
    "spawn",
    "graph_capture",
)

CHILD = r"""
import json, os, resource, statistics, sys, time
import torch
from torch import nn
if os.environ.get("BENCH_PATCHES"):  # only these patches, the auto-instrumentation off
    import trainprof.torch as tpt
    tpt._installed = True
    for name in os.environ["BENCH_PATCHES"].split(","):
        if name != "none":
            getattr(tpt, "_patch_" + name)()
model_name, steps = sys.argv[1], int(sys.argv[2])
cuda = not model_name.startswith("standin")
device = "cuda" if cuda else "cpu"
torch.manual_seed(0)
if not cuda:
    torch.set_num_threads(1)

def mlp(width, blocks):
    layers = []
    for _ in range(blocks):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))

class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))
    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))

def resnet18():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))

class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 4)
        self.head = nn.Linear(256, 10)
    def forward(self, x):
        return self.head(self.encoder(x).mean(1))

if model_name.startswith("standin"):
    model, shape, batch = mlp(64, 12), (64,), 16
elif model_name == "mlp":
    model, shape, batch = mlp(512, 12), (512,), 64
elif model_name == "resnet":
    model, shape, batch = resnet18().to(memory_format=torch.channels_last), (3, 224, 224), 64
else:
    model, shape, batch = Tokens(), (128, 256), 32
model = model.to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
if model_name in ("standin", "mlp"):  # through a DataLoader, pinned on a GPU
    from torch.utils.data import DataLoader, TensorDataset
    data = TensorDataset(torch.randn(batch * 64, *shape), torch.randint(0, 10, (batch * 64,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True, pin_memory=cuda)
    def batches():
        while True:
            for x, y in loader:
                yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
else:  # kept on the GPU (standin_kept: in memory); the updates mark the steps
    x0 = torch.randn(batch, *shape, device=device)
    y0 = torch.randint(0, 10, (batch,), device=device)
    def batches():
        while True:
            yield x0, y0

def train(n, times):
    it = batches()
    last = time.perf_counter()
    for step in range(n):
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            loss.item()
        now = time.perf_counter()
        times.append(now - last)
        last = now

def run():
    warm, times = 300, []
    train(warm, [])
    if cuda:
        torch.cuda.synchronize()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
    train(steps - warm, times)
    if cuda:
        torch.cuda.synchronize()
    r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
    n = steps - warm
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return {"wall_us": 1e6 * statistics.median(times), "cpu_us": 1e6 * cpu / n,
            "thread_cpu_us": 1e6 * (t1 - t0) / n}

if os.environ.get("BENCH_PROFILER"):  # the peer: torch.profiler over the whole run
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities):
        result = run()
else:
    result = run()
print("BENCH " + json.dumps(result))
"""


def arm_command(arm, args, run_file):
    """The command line and environment of one arm's process."""
    env = {**os.environ}
    env.pop("TRAINPROF_SOCKET", None)
    child = [sys.executable, "-c", CHILD, args.model, str(args.steps)]
    if arm == "bare":
        return child, env
    if arm == "profiler":
        env["BENCH_PROFILER"] = "1"
        return child, env
    record = [args.trainprof, "record", "-q", "--force", "-o", run_file]
    if arm == "stacks0":
        record += ["--stacks", "0"]
    elif arm == "ops_off":
        record += ["--ops", "off"]
    elif arm == "devtimes_off":
        env["TRAINPROF_DEVICE_TIMES"] = "0"
    elif arm == "devtimes_8":
        env["TRAINPROF_DEVICE_TIMES"] = "8"
    elif arm.startswith("patch:"):
        env["TRAINPROF_AUTO"] = "0"
        env["BENCH_PATCHES"] = arm.split(":", 1)[1]
    elif arm != "record":
        raise SystemExit(f"gpu_step_cost.py: unknown arm {arm!r}")
    return record + ["--"] + child, env


def measure(arm, args, run_file):
    argv, env = arm_command(arm, args, run_file)
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    lines = [l for l in out.stdout.splitlines() if l.startswith("BENCH ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(
            f"gpu_step_cost.py: arm {arm} failed ({out.returncode}): {out.stderr[-2000:]}"
        )
    return json.loads(lines[-1][6:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rounds", nargs="?", type=int, default=8)
    p.add_argument(
        "--model",
        default="standin",
        choices=("standin", "standin_kept", "mlp", "resnet", "transformer"),
    )
    p.add_argument("--steps", type=int, default=1100)
    p.add_argument(
        "--arms",
        help="comma-separated (default: bare, record, stacks0, ops_off, "
        "devtimes_off and devtimes_8 on a GPU, profiler)",
    )
    p.add_argument(
        "--keep-run",
        metavar="PATH",
        help="copy the last round's `record` run file here (its report: the verdict "
        "and what trainprof cost, as the user sees them)",
    )
    p.add_argument(
        "--trainprof",
        default=os.environ.get("TRAINPROF") or os.path.join(ROOT, "build", "trainprof"),
    )
    args = p.parse_args()
    arms = (
        args.arms.split(",")
        if args.arms
        else ["bare", "record", "stacks0", "ops_off"]
        + (["devtimes_off", "devtimes_8"] if not args.model.startswith("standin") else [])
        + ["profiler"]
    )
    if "bare" not in arms:
        arms.insert(0, "bare")
    rows = {a: [] for a in arms}
    with tempfile.TemporaryDirectory() as d:
        run_file = os.path.join(d, "run.db")
        for r in range(args.rounds):
            order = arms[r % len(arms) :] + arms[: r % len(arms)]
            got = {}
            for a in order:
                got[a] = measure(a, args, run_file)
                if a == "record" and args.keep_run:
                    shutil.copyfile(run_file, args.keep_run)
            for a in arms:
                rows[a].append(got[a])
            print(
                f"round {r + 1}: "
                + ", ".join(
                    f"{a} {got[a]['wall_us']:.0f}/{got[a]['cpu_us']:.0f}/{got[a]['thread_cpu_us']:.0f}"
                    for a in arms
                )
                + " us (wall/cpu/thread)",
                file=sys.stderr,
                flush=True,
            )
    bare = rows["bare"]
    result = {
        "model": args.model,
        "rounds": args.rounds,
        "steps": args.steps,
        "bare": {
            k: round(statistics.median(x[k] for x in bare), 1)
            for k in ("wall_us", "cpu_us", "thread_cpu_us")
        },
    }
    for a in arms:
        if a == "bare":
            continue
        arm = {}
        for k in ("wall_us", "cpu_us", "thread_cpu_us"):
            diffs = [rows[a][i][k] - bare[i][k] for i in range(args.rounds)]
            rel = [100 * rows[a][i][k] / bare[i][k] - 100 for i in range(args.rounds)]
            arm[k] = {
                "median_us": round(statistics.median(diffs), 1),
                "median_percent": round(statistics.median(rel), 2),
                "spread_percent": [round(min(rel), 2), round(max(rel), 2)],
            }
        result[a] = arm
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
