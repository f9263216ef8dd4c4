"""`report` of run files whose regions are shaped against it (issue 25).

A crafted file can hold regions no recorder writes: 10^6 regions nested one
inside the next on one thread, or 10^6 flat ones with decreasing durations.
Each is made from a real recording (emit_events nested) by adding the rows
with SQLite, its stored summary removed so that `report` computes from the
rows; `report` is timed on each (best of 3), ours against --alt-trainprof
(the build before a change) in the same run.
"""

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
EMIT = str(ROOT / "build" / "tests" / "emit_events")
N = 10**6


def shaped(base, path, shape):
    shutil.copy(base, path)
    with sqlite3.connect(path) as db:
        thread = db.execute("SELECT min(id) FROM thread").fetchone()[0]
        name = db.execute("SELECT min(id) FROM name").fetchone()[0]
        if shape == "nested":  # each inside the one before, 2 ns shorter
            rows = ((thread, name, i, i, 2 * N * 1000 - i) for i in range(N))
        else:  # flat, 2 us apart, each 1 ns shorter than the one before
            rows = ((thread, name, 0, i * 2000, i * 2000 + N - i) for i in range(N))
        db.executemany(
            "INSERT INTO region (thread_id, name_id, depth, start_ns, end_ns)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        db.execute("DELETE FROM meta WHERE key IN ('summarized', 'plots')")


def best_of(cmd, runs=3):
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return round(best, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alt-trainprof", help="another build's trainprof, timed alike")
    args = ap.parse_args()
    programs = [("ours", PROGRAM)] + ([("alt", args.alt_trainprof)] if args.alt_trainprof else [])
    out = {}
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.db")
        subprocess.run([PROGRAM, "record", "-q", "-o", base, "--", EMIT, "nested"], check=True)
        for shape in ("nested", "flat_decreasing"):
            path = os.path.join(d, shape + ".db")
            shaped(base, path, shape)
            for who, program in programs:
                out[f"{who}_{shape}_s"] = best_of([program, "report", path])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
