"""What the stack samples cost a summary at scale, a change of pace or not.

A summary (built when `record` ends, and by `summarize --force`) reads a
run's stack samples for the whole run's facts, and where the pace changed
twice more: the regimes' function causes (the functions of the phase that
moved, before and after) and the latest pace's facts (`stacks_latest`, what
a verdict judged on the latest pace cites). This measures that on node files
of HOURS hours, 8 ranks, a step every STEP_S seconds, each rank's main thread
sampled HZ times a second (bench/gen_run.c: GEN_RUN_STACK_HZ), steady and
with a change of pace half-way (GEN_RUN_PACE_AT=0.5), against the same files
without stack samples (the peer: what the summary costs without them).

Each file is made once; `summarize --force` and `report --json` of each are
alternated over ROUNDS rounds; the figures are the medians, wall and CPU
(the command's user + system time, from its rusage).

    python3 bench/stack_span_cost.py [--hours H] [--step S] [--hz N] [--rounds R]
                                     [--json] [WORKDIR]
"""

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
GEN = str(ROOT / "build" / "bench" / "gen_run")
RANKS = 8


def make(work, name, hours, step_s, hz, paced):
    """A node file (made once in work): 8 cores, no GPU, RANKS ranks."""
    path = work / f"{name}.db"
    if not path.exists():
        env = dict(os.environ)
        env.pop("GEN_RUN_STACK_HZ", None)
        env.pop("GEN_RUN_PACE_AT", None)
        if hz:
            env["GEN_RUN_STACK_HZ"] = str(hz)
        if paced:
            env["GEN_RUN_PACE_AT"] = "0.5"
        argv = [GEN, str(path), str(hours), "1", "8", "0", str(RANKS), str(step_s), "node0", "0"]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return path


def rows(path):
    with sqlite3.connect(path) as db:
        n, samples = db.execute(
            "SELECT count(*), coalesce(sum(count), 0) FROM stack_sample"
        ).fetchone()
    return n, samples


def timed(argv):
    """(wall s, CPU s) of one run of argv."""
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=1)
    ap.add_argument("--step", type=float, default=0.2, help="seconds a step")
    ap.add_argument("--hz", type=int, default=100, help="stack samples a second")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("workdir", nargs="?")
    args = ap.parse_args()
    tmp = None
    if args.workdir:
        work = pathlib.Path(args.workdir)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp()
        work = pathlib.Path(tmp)
    try:
        files = {}
        for paced in (False, True):
            for hz in (0, args.hz):
                name = f"{'paced' if paced else 'steady'}-{'stacks' if hz else 'none'}"
                files[name] = make(work, name, args.hours, args.step, hz, paced)
        times = {name: {"summarize": [], "report": []} for name in files}
        for _ in range(args.rounds):
            for name, path in files.items():
                times[name]["summarize"].append(timed([PROGRAM, "summarize", "--force", path]))
                times[name]["report"].append(timed([PROGRAM, "report", "--json", path]))
        result = []
        for name, path in files.items():
            n, samples = rows(path)
            entry = {"file": name, "stack_rows": n, "stack_samples": samples}
            for what, runs in times[name].items():
                entry[f"{what}_wall_s"] = round(statistics.median(w for w, _ in runs), 2)
                entry[f"{what}_cpu_s"] = round(statistics.median(c for _, c in runs), 2)
            result.append(entry)
    finally:
        if tmp:
            shutil.rmtree(tmp)
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.hours} h, {RANKS} ranks, a step every {args.step} s, stacks at {args.hz} Hz; "
        f"medians of {args.rounds}"
    )
    print(f"{'file':<16} {'rows':>9} {'samples':>10}   summarize wall/CPU   report wall/CPU")
    for e in result:
        print(
            f"{e['file']:<16} {e['stack_rows']:>9} {e['stack_samples']:>10}   "
            f"{e['summarize_wall_s']:>6} / {e['summarize_cpu_s']:<6}      "
            f"{e['report_wall_s']:>6} / {e['report_cpu_s']:<6}"
        )


if __name__ == "__main__":
    main()
