"""What capture windows cost the training (issue 40, docs/ops.md), with
peers measured the same way in the same run:

- outside the windows: the CPU time (time.process_time, the training
  process's threads) of steps 101-STEPS of a CPU training recorded with
  windows on (the first window at steps 11-15, its stop at 16; the schedule's
  next would be 30 minutes on) against --ops off, rounds alternating; again
  with glibc's thresholds pinned (MALLOC_MMAP_THRESHOLD_=32 MiB,
  MALLOC_TRIM_THRESHOLD_=256 MiB): a profiler session frees buffers big
  enough to raise glibc's dynamic mmap threshold (and its trim threshold
  with it), which changes the speed of the steps after it (in plain PyTorch
  too: one malloc and free of 24 MiB does the same), so the pinned pair
  isolates what the window leaves running.
  The script also prints whether the profiler is enabled after the window
  (it must not be: no RecordFunction callback left registered);
- inside a window: the wall time of steps 11-15 under trainprof's window
  against the same steps under torch.profiler.profile with the same
  settings (CPU activity, record_shapes) started by the script itself (with
  --ops off), and the step that pays for each one's stop (ours builds and
  sends the window's events; torch's __exit__ plus key_averages());
- the default schedule over an hour: the windows' extra time (profiled steps
  against the median step) times the windows an hour takes (the first, one
  30 minutes on), over 3,600 s;
- the run file's growth per window: the file with windows on against off,
  and per event.

    python3 bench/ops_cost.py [--rounds N] [--steps N]
"""

import argparse
import json
import os
import pathlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")

SCRIPT = r"""
import json, os, sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1])
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
    nn.Conv2d(16, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 32 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
data = TensorDataset(torch.randn(steps * 16, 3, 32, 32), torch.randint(0, 10, (steps * 16,)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
own = os.environ.get("OWN_PROFILER")
wall, cpu, prof = {}, {}, None
t0, c0 = time.perf_counter(), time.process_time()
for step, (x, y) in enumerate(DataLoader(data, batch_size=16), start=1):
    if own and step == 11:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      record_shapes=True)
        prof.__enter__()
    if own and step == 16:
        prof.__exit__(None, None, None)
        prof.key_averages()
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    t1, c1 = time.perf_counter(), time.process_time()
    wall[step], cpu[step] = t1 - t0, c1 - c0
    t0, c0 = time.perf_counter(), time.process_time()
enabled = torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled()
print("RESULT", json.dumps({"wall": wall, "cpu": cpu, "profiler_enabled_after": enabled}))
"""


def run(tmp, script, steps, args, env=None, name="run.db"):
    out = tmp / name
    r = subprocess.run(
        [
            PROGRAM,
            "record",
            "-q",
            "-f",
            "-o",
            str(out),
            *args,
            "--",
            sys.executable,
            str(script),
            str(steps),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
        timeout=900,
    )
    if r.returncode != 0:
        sys.exit(r.stderr)
    line = next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))
    res = json.loads(line[7:])
    res["wall"] = {int(k): v for k, v in res["wall"].items()}
    res["cpu"] = {int(k): v for k, v in res["cpu"].items()}
    res["file_bytes"] = out.stat().st_size
    with sqlite3.connect(out) as db:
        res["events"] = db.execute("SELECT coalesce(sum(events), 0) FROM op_window").fetchone()[0]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=600)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        script = tmp / "train.py"
        script.write_text(SCRIPT)
        on_cpu, off_cpu, ours_in, theirs_in, ours_stop, theirs_stop = [], [], [], [], [], []
        extra, growth, per_event, enabled = [], [], [], []
        on_pin_cpu, off_pin_cpu = [], []
        for _ in range(a.rounds):
            on = run(tmp, script, a.steps, [], name="on.db")
            off = run(tmp, script, a.steps, ["--ops", "off"], name="off.db")
            pin = {
                "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
            }
            on_pin = run(tmp, script, a.steps, [], pin, name="on_pin.db")
            off_pin = run(tmp, script, a.steps, ["--ops", "off"], pin, name="off_pin.db")
            own = run(tmp, script, a.steps, ["--ops", "off"], {"OWN_PROFILER": "1"}, name="own.db")
            later = range(101, a.steps + 1)
            on_cpu.append(sum(on["cpu"][s] for s in later) / len(later))
            off_cpu.append(sum(off["cpu"][s] for s in later) / len(later))
            on_pin_cpu.append(sum(on_pin["cpu"][s] for s in later) / len(later))
            off_pin_cpu.append(sum(off_pin["cpu"][s] for s in later) / len(later))
            ours_in.append(statistics.mean(on["wall"][s] for s in range(11, 16)))
            theirs_in.append(statistics.mean(own["wall"][s] for s in range(11, 16)))
            ours_stop.append(on["wall"][16])
            theirs_stop.append(own["wall"][16])
            median = statistics.median(on["wall"][s] for s in later)
            extra.append(sum(on["wall"][s] - median for s in range(11, 17)))
            growth.append(on["file_bytes"] - off["file_bytes"])
            per_event.append((on["file_bytes"] - off["file_bytes"]) / max(1, on["events"]))
            enabled.append(on["profiler_enabled_after"])
        med = statistics.median
        print(
            "CPU a step, on/off by round (ms):",
            " ".join(f"{x * 1e3:.2f}/{y * 1e3:.2f}" for x, y in zip(on_cpu, off_cpu)),
        )
        print(f"rounds {a.rounds}, steps {a.steps}, {on['events']} events a window")
        print(
            f"outside windows: CPU a step {med(on_cpu) * 1e3:.3f} ms with windows on, "
            f"{med(off_cpu) * 1e3:.3f} ms off ({(med(on_cpu) / med(off_cpu) - 1) * 100:+.2f} %); "
            f"profiler enabled after the window: {any(enabled)}"
        )
        print(
            f"  with glibc's thresholds pinned: {med(on_pin_cpu) * 1e3:.3f} ms on, "
            f"{med(off_pin_cpu) * 1e3:.3f} ms off "
            f"({(med(on_pin_cpu) / med(off_pin_cpu) - 1) * 100:+.2f} %); by round: "
            + " ".join(f"{x * 1e3:.2f}/{y * 1e3:.2f}" for x, y in zip(on_pin_cpu, off_pin_cpu))
        )
        print(
            f"inside a window: a step {med(ours_in) * 1e3:.2f} ms under trainprof's window, "
            f"{med(theirs_in) * 1e3:.2f} ms under torch.profiler ({med(ours_in) / med(theirs_in):.3f}x); "
            f"the stop's step {med(ours_stop) * 1e3:.1f} ms against {med(theirs_stop) * 1e3:.1f} ms "
            f"(torch's __exit__ and key_averages)"
        )
        print(
            f"a window's extra time {med(extra) * 1e3:.1f} ms (steps 11-16 against the median "
            f"step {median * 1e3:.2f} ms); the default schedule over an hour (2 windows): "
            f"{2 * med(extra) / 3600 * 100:.4f} % of it"
        )
        print(
            f"run file: +{med(growth) / 1024:.0f} KiB a window, {med(per_event):.0f} bytes an event"
        )


if __name__ == "__main__":
    main()
