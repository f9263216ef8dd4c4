"""What the framework adapters (Keras, Ignite, skorch) cost a training: the
test programs of tests/py/programs/ run under `trainprof record`, with this
checkout's Python side and, with --alt DIR, another one (a trainprof package
without the adapters, e.g. the commit before them) in rotating order within
each round. Measures the CPU time (user + system) of the whole record
command and its children, which resolves 1 % where this 2-core machine's
wall time cannot, and the wall time. Capture windows are off in both (with
the adapters a Keras run has steps, so a window would run in it: its cost is
bench/ops_cost.py's). Prints each variant's median and its
ratio to the first's; --json for one JSON object.

    python3 bench/adapter_cost.py [ROUNDS] [--alt DIR] [--program NAME ...] [--json]
"""

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "py" / "programs"
TRAINPROF = ROOT / "build" / "trainprof"
DEFAULT = ["keras_fit.py", "ignite_fit.py", "skorch_fit.py"]


def one(program, alt, work):
    """CPU seconds and wall seconds of one recorded run of program."""
    env = dict(os.environ, KERAS_BACKEND="torch")
    env.pop("TRAINPROF_SOCKET", None)
    if alt:
        env["PYTHONPATH"] = alt
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    args = [str(work / "ck")] if program.startswith("keras") else []
    subprocess.run(
        [
            str(TRAINPROF),
            "record",
            "-q",
            "--force",
            "--ops",
            "off",
            "-o",
            str(work / "run.db"),
            "--",
            sys.executable,
            str(PROGRAMS / program),
            *args,
        ],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--alt", help="a directory holding another trainprof package")
    ap.add_argument("--program", action="append", help="a program of tests/py/programs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    variants = [("this", None)]
    if args.alt:
        variants.append(("alt", str(pathlib.Path(args.alt).resolve())))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for program in args.program or DEFAULT:
            one(program, None, work)  # caches warm for everyone
            cpu = {name: [] for name, _ in variants}
            wall = {name: [] for name, _ in variants}
            for r in range(args.rounds):
                order = variants[r % len(variants) :] + variants[: r % len(variants)]
                for name, alt in order:
                    c, w = one(program, alt, work)
                    cpu[name].append(c)
                    wall[name].append(w)
            first = variants[0][0]
            results[program] = {
                name: {
                    "cpu_s": round(statistics.median(cpu[name]), 3),
                    "cpu_ratio": round(
                        statistics.median(cpu[name]) / statistics.median(cpu[first]), 3
                    ),
                    "wall_s": round(statistics.median(wall[name]), 3),
                }
                for name, _ in variants
            }
    if args.json:
        print(json.dumps({"rounds": args.rounds, "programs": results}))
        return
    for program, by_variant in results.items():
        print(f"{program}, {args.rounds} rounds (medians)")
        for name, v in by_variant.items():
            print(
                f"  {name:6} CPU {v['cpu_s']:.3f} s  x{v['cpu_ratio']:.3f}  "
                f"wall {v['wall_s']:.3f} s"
            )


if __name__ == "__main__":
    main()
