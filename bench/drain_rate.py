"""How fast the recorder's drain takes a training thread's regions: `trainprof
record` of bench/event_rate (region pairs at a steady rate on one thread, in
1 ms slices) at rates about and above what the drain keeps up with on this
machine, with each build given in alternating order within each round.
Reports, per build and rate, the medians of the events the thread dropped on
its full ring (the drain fell behind), the regions the file holds, and the
CPU time of the whole record command.

    python3 bench/drain_rate.py [ROUNDS] [--seconds S] [--rates R,...] [--alt BINARY]

--alt: another trainprof build (one from before a change), whose
bench/event_rate beside it is used the same way."""

import argparse
import json
import pathlib
import resource
import sqlite3
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAINPROF = ROOT / "build" / "trainprof"


def one(binary, rate, seconds, work):
    """(dropped, regions kept, record's CPU s) of one recording."""
    out = work / "rate.db"
    out.unlink(missing_ok=True)
    rate_bin = pathlib.Path(binary).parent / "bench" / "event_rate"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        [binary, "record", "-q", "-o", out, "--", rate_bin, str(rate), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    dropped = json.loads(r.stdout.strip().splitlines()[-1])["dropped"]
    with sqlite3.connect(out) as db:
        kept = db.execute("SELECT COUNT(*) FROM region").fetchone()[0]
    return dropped, kept, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--rates", default="2000000,4000000")
    ap.add_argument("--alt", help="another trainprof build to measure the same way")
    a = ap.parse_args()
    builds = {"this": str(TRAINPROF)}
    if a.alt:
        builds["alt"] = a.alt
    rates = [int(x) for x in a.rates.split(",")]
    got = {(b, r): [] for b in builds for r in rates}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.rounds):
            order = list(builds.items()) if k % 2 == 0 else list(reversed(builds.items()))
            for rate in rates:
                for name, binary in order:
                    got[(name, rate)].append(one(binary, rate, a.seconds, pathlib.Path(tmp)))
    print(f"{'build':<6} {'events/s':>10} {'dropped':>12} {'regions kept':>13} {'CPU s':>7}")
    for (name, rate), runs in got.items():
        dropped = statistics.median(x[0] for x in runs)
        kept = statistics.median(x[1] for x in runs)
        cpu = statistics.median(x[2] for x in runs)
        spread = f"{min(x[0] for x in runs)}-{max(x[0] for x in runs)}"
        print(
            f"{name:<6} {rate:>10} {dropped:>12.0f} {kept:>13.0f} {cpu:>7.2f}  (dropped {spread})"
        )


if __name__ == "__main__":
    main()
