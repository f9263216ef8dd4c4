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
import sys
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


def bench_shape(d, name, cores, gpus, hours):
    path = os.path.join(d, f"{name}.db")
    t0 = time.perf_counter()
    made = json.loads(subprocess.check_output([GEN, path, str(hours), "0.5", str(cores), str(gpus)]))
    gen_s = time.perf_counter() - t0

    def report():
        subprocess.run([PROGRAM, "report", path], stdout=subprocess.DEVNULL, check=True)

    def report_json():
        subprocess.run([PROGRAM, "report", "--json", path], stdout=subprocess.DEVNULL, check=True)

    def sqlite_avg():
        with sqlite3.connect(path) as db:
            db.execute("SELECT series_id, avg(value) FROM sample GROUP BY series_id").fetchall()

    return {"series": made["series"], "samples": made["samples"],
            "file_mb": round(os.path.getsize(path) / 1e6, 1), "generate_s": round(gen_s, 1),
            "report_s": timed(report), "report_json_s": timed(report_json),
            "sqlite_group_by_avg_s": timed(sqlite_avg)}


def main():
    hours = float(sys.argv[1]) if len(sys.argv) > 1 else 24
    with tempfile.TemporaryDirectory() as d:
        result = {"hours": hours,
                  "this_machine_shape": bench_shape(d, "small", 2, 0, hours),
                  "gpu_node_shape": bench_shape(d, "gpu", 32, 8, hours)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
