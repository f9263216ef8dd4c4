"""`report` and `merge` of a day-long run of 64 ranks on 8 nodes.

bench/gen_run writes each node's file through trainprof's own writer and
stores its summary as `record` does when the command ends: 8 GPUs, 32 cores,
2 disks and 2 interfaces sampled every 0.5 s for 24 hours, and 8 ranks with a
1-second step (dataloader_next, to_device, train_batch with forward, backward
and optimizer_step, four DDP all-reduce spans on a second thread, step and
sample marks, an epoch an hour); global rank 13 is a straggler.

Measured, in one run of this script:
- `trainprof merge` of the 8 node files; peer: `cp` of the same 8 files into
  one directory (the bytes any merge must write).
- `trainprof merge --summary` of the same files (median of 3), its size, and
  the report of that file (median of 3).
- `trainprof html` of the 8 node files and of the merged file (median of 3
  each), drawn from the plots each node stores with its summary.
- `trainprof report` of the merged file, and of the 8 node files as they are
  (median of 3 each); peer: the report of one
  node's file computed from its rows (the summary set aside), i.e. what every
  report cost before the recorder stored its summary.
Usage: cluster_report.py [HOURS] [WORKDIR]  (WORKDIR keeps the files)
"""

import json
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
GEN = str(ROOT / "build" / "bench" / "gen_run")
NODES, RANKS_PER_NODE = 8, 8


def timed(fn, runs=1):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 2)


def generate(d, hours):
    def one(node):
        path = os.path.join(d, f"node-{node}.db")
        if not os.path.exists(path):
            subprocess.run(
                [
                    GEN,
                    path + ".tmp",
                    str(hours),
                    "0.5",
                    "32",
                    "8",
                    str(RANKS_PER_NODE),
                    "1",
                    f"node-{node}",
                    str(node * RANKS_PER_NODE),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            os.rename(path + ".tmp", path)
        return path

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        files = list(pool.map(one, range(NODES)))
    return files, round(time.perf_counter() - t0, 1)


def main():
    hours = float(sys.argv[1]) if len(sys.argv) > 1 else 24
    keep = sys.argv[2] if len(sys.argv) > 2 else None
    d = keep or tempfile.mkdtemp(prefix="trainprof-cluster-")
    os.makedirs(d, exist_ok=True)
    try:
        files, gen_s = generate(d, hours)
        merged = os.path.join(d, "all.db")
        copies = os.path.join(d, "copies")

        def merge():
            if os.path.exists(merged):
                os.unlink(merged)
            subprocess.run(
                [PROGRAM, "merge", "-o", merged, *files], check=True, stderr=subprocess.DEVNULL
            )

        def copy():
            shutil.rmtree(copies, ignore_errors=True)
            os.makedirs(copies)
            for f in files:
                shutil.copyfile(f, os.path.join(copies, os.path.basename(f)))
            os.sync()

        copy_s = timed(copy)
        shutil.rmtree(copies, ignore_errors=True)
        merge_s = timed(lambda: (merge(), os.sync()))

        small = os.path.join(d, "all-summary.db")

        def merge_summary():
            if os.path.exists(small):
                os.unlink(small)
            subprocess.run(
                [PROGRAM, "merge", "--summary", "-o", small, *files],
                check=True,
                stderr=subprocess.DEVNULL,
            )

        merge_summary_s = timed(lambda: (merge_summary(), os.sync()), runs=3)
        report_small_s = timed(
            lambda: subprocess.run(
                [PROGRAM, "report", small], check=True, stdout=subprocess.DEVNULL
            ),
            runs=3,
        )

        def report():
            subprocess.run([PROGRAM, "report", merged], check=True, stdout=subprocess.DEVNULL)

        report_s = timed(report, runs=3)
        # the node files as they are: only what the stored summaries need is merged
        files_s = timed(
            lambda: subprocess.run(
                [PROGRAM, "report", *files], check=True, stdout=subprocess.DEVNULL
            ),
            runs=3,
        )
        page = os.path.join(d, "all.html")
        html_files_s = timed(
            lambda: subprocess.run(
                [PROGRAM, "html", "--force", "-o", page, *files],
                check=True,
                stderr=subprocess.DEVNULL,
            ),
            runs=3,
        )
        html_merged_s = timed(
            lambda: subprocess.run(
                [PROGRAM, "html", "--force", "-o", page, merged],
                check=True,
                stderr=subprocess.DEVNULL,
            ),
            runs=3,
        )
        rows_copy = os.path.join(d, "node-0-rows.db")
        shutil.copyfile(files[0], rows_copy)
        with sqlite3.connect(rows_copy) as db:
            db.execute("DELETE FROM meta WHERE key = 'summarized'")
        rows_s = timed(
            lambda: subprocess.run(
                [PROGRAM, "report", rows_copy], check=True, stdout=subprocess.DEVNULL
            )
        )
        os.unlink(rows_copy)
        with sqlite3.connect(merged) as db:
            counts = {
                t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("sample", "region", "mark")
            }
        rep = json.loads(
            subprocess.run(
                [PROGRAM, "report", "--json", merged], check=True, capture_output=True, text=True
            ).stdout
        )
        stragglers = [v["evidence"]["rank"] for v in rep["verdicts"] if v["kind"] == "straggler"]
        print(
            json.dumps(
                {
                    "hours": hours,
                    "nodes": NODES,
                    "ranks": NODES * RANKS_PER_NODE,
                    **counts,
                    "node_file_mb": round(os.path.getsize(files[0]) / 1e6),
                    "merged_file_mb": round(os.path.getsize(merged) / 1e6),
                    "generate_s": gen_s,
                    "merge_s": merge_s,
                    "cp_8_files_s": copy_s,
                    "merge_summary_s": merge_summary_s,
                    "summary_file_mb": round(os.path.getsize(small) / 1e6, 1),
                    "report_summary_file_s": report_small_s,
                    "report_merged_s": report_s,
                    "report_8_node_files_s": files_s,
                    "report_one_node_from_rows_s": rows_s,
                    "html_8_node_files_s": html_files_s,
                    "html_merged_s": html_merged_s,
                    "stragglers_named": stragglers,
                }
            )
        )
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
