"""What trainprof costs a training's start-up: `python -c "import torch"`
(every DataLoader worker that spawns and every rank pays it again), timed
from outside the process, in rotating order within each round:

- plain: not under record;
- child: under `trainprof record`, the python process alone (timed by a
  wrapper that record runs, so the recorder's own start and end are out);
- record: the whole `trainprof record -q -o FILE -- python -c ...` command,
  the recorder's start, its closing summary and the run file included.

With --alt DIR, child and record run a second time with PYTHONPATH=DIR, so
that the trainprof package in DIR (another version of the Python side with
its built _native, e.g. the last commit's) is the one the autoload imports:
two versions in the same rounds. Prints each variant's median over rounds
and its ratio to plain's median; --json for one JSON object.

    python3 bench/startup_cost.py [ROUNDS] [--alt DIR] [--code CODE] [--json]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof"))

# run by record: times one python child and writes the seconds to argv[1]
TIMER = """
import subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[2:], check=True)
open(sys.argv[1], "w").write(repr(time.perf_counter() - t))
"""


def wall(cmd, env):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def one(variant, code, work, env, alt):
    if alt:
        env = dict(env, PYTHONPATH=alt)
    child = [sys.executable, "-c", code]
    run_file = work / "run.db"
    for path in work.glob("run.db*"):
        path.unlink()
    if variant == "plain":
        return wall(child, env)
    if variant == "record":
        return wall([PROGRAM, "record", "-q", "-o", str(run_file), "--", *child], env)
    timer, seconds = work / "timer.py", work / "seconds"
    timer.write_text(TIMER)
    subprocess.run(
        [
            PROGRAM,
            "record",
            "-q",
            "-o",
            str(run_file),
            "--",
            sys.executable,
            str(timer),
            str(seconds),
            *child,
        ],
        check=True,
        env=env,
    )
    return float(seconds.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=10)
    ap.add_argument("--alt", help="a directory holding another trainprof package")
    ap.add_argument("--code", default="import torch", help="what python -c runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    variants = [("plain", None), ("child", None), ("record", None)]
    if args.alt:
        alt = str(pathlib.Path(args.alt).resolve())
        variants += [("child@alt", alt), ("record@alt", alt)]
    env = dict(os.environ)
    env.pop("TRAINPROF_SOCKET", None)
    times = {name: [] for name, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        one("plain", args.code, work, env, None)  # the page cache warm for everyone
        for r in range(args.rounds):
            order = variants[r % len(variants) :] + variants[: r % len(variants)]
            for name, alt in order:
                times[name].append(one(name.split("@")[0], args.code, work, env, alt))
    plain = statistics.median(times["plain"])
    result = {
        name: {
            "median_s": round(statistics.median(t), 4),
            "ratio": round(statistics.median(t) / plain, 3),
            "min_s": round(min(t), 4),
            "max_s": round(max(t), 4),
        }
        for name, t in times.items()
    }
    if args.json:
        print(json.dumps({"code": args.code, "rounds": args.rounds, "variants": result}))
        return
    print(f"python -c {args.code!r}, {args.rounds} rounds")
    for name, v in result.items():
        print(
            f"  {name:12} median {v['median_s']:.3f} s  x{v['ratio']:.3f}  "
            f"(min {v['min_s']:.3f}, max {v['max_s']:.3f})"
        )


if __name__ == "__main__":
    main()
