"""What `trainprof compare` costs, as the runs grow.

bench/gen_run writes each node's file through trainprof's own writer and
stores its summary as `record` does (8 GPUs, 64 cores, 8 ranks with a
1-second step; see bench/cluster_report.py), sampled every second.

Measured, in one run of this script (medians of 3):
- compare of two node-days (one file a side, 24 hours each), beside the
  `report` of one of them (the peer: what reading one run costs);
- compare --base of two jobs of N node files a side (1 hour each), for each
  N given, beside `report` of one side's N files, with the time per node
  file (flat: linear in the files).

Usage: compare_cost.py [--nodes N,...] [--day-hours H] [--json] [WORKDIR]
(WORKDIR keeps the generated files between runs)
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
GEN = str(ROOT / "build" / "bench" / "gen_run")
RANKS = 8


def timed(argv, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 3)


def node_file(work, name, hours, index):
    """Node index of a job (ranks 8 * index...), generated once."""
    path = work / f"{name}-{hours}h-{index}.db"
    if not path.exists():
        subprocess.run(
            [
                GEN,
                str(path),
                str(hours),
                "1",
                "64",
                "8",
                str(RANKS),
                "1.0",
                f"node{index}",
                str(RANKS * index),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="8,32", help="node files a side, comma-separated")
    ap.add_argument("--day-hours", type=float, default=24)
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
        result = {}
        day = node_file(work, "day", args.day_hours, 0)
        other = work / "day-copy.db"
        if not other.exists():
            shutil.copy(day, other)
        result["node_day"] = {
            "compare_s": timed([PROGRAM, "compare", str(day), str(other)]),
            "report_s": timed([PROGRAM, "report", str(day)]),
        }
        result["jobs"] = []
        for n in (int(x) for x in args.nodes.split(",")):
            with ThreadPoolExecutor(2) as pool:
                a = list(pool.map(lambda i: node_file(work, "a", 1, i), range(n)))
                b = list(pool.map(lambda i: node_file(work, "b", 1, i), range(n)))
            argv = [PROGRAM, "compare"]
            for path in a:
                argv += ["--base", str(path)]
            compare_s = timed(argv + [str(p) for p in b])
            report_s = timed([PROGRAM, "report", *map(str, a)])
            result["jobs"].append(
                {
                    "nodes": n,
                    "compare_s": compare_s,
                    "per_node_s": round(compare_s / (2 * n), 4),
                    "report_s": report_s,
                }
            )
    finally:
        if tmp:
            shutil.rmtree(tmp)
    if args.json:
        print(json.dumps(result))
        return
    d = result["node_day"]
    print(f"two node-days: compare {d['compare_s']} s (report of one: {d['report_s']} s)")
    for j in result["jobs"]:
        print(
            f"{j['nodes']} node files a side: compare --base {j['compare_s']} s "
            f"({j['per_node_s']} s a node file); report of one side {j['report_s']} s"
        )


if __name__ == "__main__":
    main()
