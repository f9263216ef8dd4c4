"""What sampling Python stacks costs the training, against py-spy, in one run.

1. A pure-Python loop (a fixed amount of work, about 2 s): its wall time
   bare, under `trainprof record --stacks 0`, `--stacks 100`, and under
   `py-spy record -r 100` in its default mode (it pauses the process for
   each sample) and with --nonblocking. Configurations interleaved, medians.
2. The bundled example (examples/train.py, one epoch): its mean step time
   from the report with --stacks 0 and --stacks 100, interleaved, medians.
3. The recorder's own CPU (user + system, from rusage) over a 20 s loop,
   with stacks at 100 Hz and off, and the run file's growth per hour and
   sampled thread (the stack tables' pages, from SQLite's dbstat).

    python bench/stack_cost.py [--runs 7]
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
PYTHON = sys.executable
PYSPY = shutil.which("py-spy", path=os.path.dirname(PYTHON)) or shutil.which("py-spy")

LOOP = r"""
import sys, time
def work(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s
t = time.perf_counter()
work(int(sys.argv[1]))
print(time.perf_counter() - t)
"""


def timed(argv, tmp):
    """The loop's own time (it prints it), under argv."""
    r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{argv}: {r.stderr}")
    for line in reversed(r.stdout.splitlines()):  # py-spy adds lines of its own
        try:
            return float(line)
        except ValueError:
            continue
    raise RuntimeError(f"{argv}: no time in {r.stdout!r}")


def loop_costs(tmp, runs, n):
    script = tmp / "loop.py"
    script.write_text(LOOP)
    db = str(tmp / "loop.db")
    configs = {
        "bare": [PYTHON, script, str(n)],
        "record --stacks 0": [PROGRAM, "record", "-q", "-f", "-o", db, "--stacks", "0", "--",
                              PYTHON, script, str(n)],
        "record --stacks 100": [PROGRAM, "record", "-q", "-f", "-o", db, "--stacks", "100",
                                "--", PYTHON, script, str(n)],
    }
    if PYSPY:
        out = str(tmp / "spy.txt")
        configs["py-spy -r 100"] = [PYSPY, "record", "-r", "100", "--format", "raw", "-o", out,
                                    "--", PYTHON, script, str(n)]
        configs["py-spy -r 100 --nonblocking"] = [PYSPY, "record", "-r", "100", "--nonblocking",
                                                  "--format", "raw", "-o", out, "--", PYTHON,
                                                  script, str(n)]
    times = {k: [] for k in configs}
    for _ in range(runs):
        for k, argv in configs.items():
            times[k].append(timed([str(a) for a in argv], tmp))
    # this VM's speed drifts by more than the effects measured: each round's
    # configurations against that round's bare run and stacks-off run, then
    # the median of those ratios
    def paired(k, base):
        return round(statistics.median(t / b for t, b in zip(times[k], times[base])) - 1, 4)
    return {k: {"median_s": round(statistics.median(v), 4), "vs_bare": paired(k, "bare"),
                "vs_stacks_off": paired(k, "record --stacks 0")} for k, v in times.items()}


def example_steps(tmp, runs):
    steps = {"0": [], "100": []}
    for _ in range(runs):  # pairs, as loop_costs
        for hz in steps:
            db = tmp / f"ex{hz}.db"
            subprocess.run([PROGRAM, "record", "-q", "-f", "-o", db, "--stacks", hz, "--",
                            PYTHON, ROOT / "examples" / "train.py", "--epochs", "1"],
                           check=True, capture_output=True, timeout=600)
            rep = json.loads(subprocess.run([PROGRAM, "report", "--json", db], check=True,
                                            capture_output=True, text=True).stdout)
            steps[hz].append(rep["steps"][0]["mean_s"])
    off, on = statistics.median(steps["0"]), statistics.median(steps["100"])
    return {"mean_step_s_stacks_off": round(off, 6), "mean_step_s_stacks_100": round(on, 6),
            "paired_ratio": round(statistics.median(a / b for a, b in zip(steps["100"],
                                                                         steps["0"])) - 1, 4)}


def recorder_cost(tmp, n):
    script = tmp / "loop.py"
    out = {}
    for hz in ("0", "100"):
        db = tmp / f"rec{hz}.db"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        # the loop in a child of the recorder: rusage of children counts both, so
        # the loop's own CPU (its printed time, on one core) is taken off below
        r = subprocess.run([PROGRAM, "record", "-q", "-f", "-o", db, "--stacks", hz, "--",
                            PYTHON, script, str(n)], capture_output=True, text=True, check=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        loop_s = float(r.stdout.strip().splitlines()[-1])
        with sqlite3.connect(db) as c:
            samples = c.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
            threads = c.execute("SELECT COUNT(DISTINCT tid) FROM stack_sample").fetchone()[0]
            try:
                pages = c.execute("SELECT SUM(pgsize) FROM dbstat WHERE name IN ('stack_sample',"
                                  " 'stack_node', 'frame')").fetchone()[0] or 0
            except sqlite3.OperationalError:  # an SQLite without dbstat
                pages = None
        out[hz] = {"wall_s": round(wall, 3), "cpu_s_all": round(cpu, 3),
                   "cpu_s_beyond_loop": round(cpu - loop_s, 3), "samples": samples,
                   "stack_bytes": pages,
                   "bytes_per_hour_per_thread": round(pages / wall * 3600 / max(threads, 1))
                   if pages else None}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=int, default=30_000_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        result = {"loop": loop_costs(tmp, a.runs, a.work),
                  "example": example_steps(tmp, max(3, a.runs // 2)),
                  "recorder": recorder_cost(tmp, a.work * 5)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
