"""`trainprof report` on a 24-hour run sampled every 0.5 s.

gen_run (bench/gen_run.c) writes the synthetic run through trainprof's own
writer: this machine's shape (2 cores, 2 disks, 2 interfaces, no GPU) and an
8-GPU node with 32 cores. The peer is sqlite3's own aggregate over the same
samples table (SELECT series_id, avg(value) ... GROUP BY series_id), the least
any report must do. Medians of 3 runs.
"""

import json
import os
import pathlib
import sqlite3
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
GEN = str(ROOT / "build" / "bench" / "gen_run")


def timed(fn, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 2)


ALT = None  # --alt-trainprof: another build's program, timed on the same files


def bench_shape(d, name, cores, gpus, hours):
    path = os.path.join(d, f"{name}.db")
    t0 = time.perf_counter()
    made = json.loads(
        subprocess.check_output([GEN, path, str(hours), "0.5", str(cores), str(gpus)])
    )
    gen_s = time.perf_counter() - t0

    def report():
        subprocess.run([PROGRAM, "report", path], stdout=subprocess.DEVNULL, check=True)

    def report_json():
        subprocess.run([PROGRAM, "report", "--json", path], stdout=subprocess.DEVNULL, check=True)

    def sqlite_avg():
        with sqlite3.connect(path) as db:
            db.execute("SELECT series_id, avg(value) FROM sample GROUP BY series_id").fetchall()

    out = {
        "series": made["series"],
        "samples": made["samples"],
        "file_mb": round(os.path.getsize(path) / 1e6, 1),
        "generate_s": round(gen_s, 1),
        "report_s": timed(report),
        "report_json_s": timed(report_json),
        "sqlite_group_by_avg_s": timed(sqlite_avg),
    }
    if ALT:
        out["alt_report_s"] = timed(
            lambda: subprocess.run([ALT, "report", path], stdout=subprocess.DEVNULL, check=True)
        )
        out["alt_report_json_s"] = timed(
            lambda: subprocess.run(
                [ALT, "report", "--json", path], stdout=subprocess.DEVNULL, check=True
            )
        )
    return out


def main():
    global ALT, GEN
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hours", nargs="?", type=float, default=24)
    ap.add_argument("--alt-trainprof", help="another build's trainprof, timed on the same files")
    ap.add_argument(
        "--gen",
        help="the gen_run that writes the files (an older build's, for a "
        "schema the older program reads)",
    )
    args = ap.parse_args()
    hours, ALT, GEN = args.hours, args.alt_trainprof, args.gen or GEN
    with tempfile.TemporaryDirectory() as d:
        result = {
            "hours": hours,
            "this_machine_shape": bench_shape(d, "small", 2, 0, hours),
            "gpu_node_shape": bench_shape(d, "gpu", 32, 8, hours),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
