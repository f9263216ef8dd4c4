"""What a flood of regions costs the recorder: `trainprof record` of
build/tests/emit_events' flood (empty regions on one thread for --seconds,
more than the writer keeps up with, so events wait for it) with and without
a virtual-memory limit (`ulimit -v`), in alternating order within each
round. Measures the user and system CPU time of the whole record command,
its peak memory (the largest process of it: the recorder, or at the end
the summary's child), and the events it said it had no memory for or was
too far behind for. With --alt BINARY, another trainprof build runs the
same arms (e.g. one from before a change).

    python3 bench/flood_cost.py [ROUNDS] [--seconds S] [--limit-kib N] [--alt BINARY] [--json]
"""

import argparse
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAINPROF = ROOT / "build" / "trainprof"
EMIT = ROOT / "build" / "tests" / "emit_events"


def one(binary, limit_kib, seconds, work):
    """(user s, system s, peak MiB, events lost, events behind) of one
    recording of the flood."""
    out = work / "flood.db"
    out.unlink(missing_ok=True)

    def cap():
        if limit_kib:
            resource.setrlimit(resource.RLIMIT_AS, (limit_kib * 1024, limit_kib * 1024))

    p = subprocess.Popen(
        [str(binary), "record", "-o", str(out), "--", str(EMIT), "flood", str(seconds)],
        preexec_fn=cap,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"flood_cost: {binary} record failed ({p.returncode}): {stderr}")
    lost = re.search(r"memory ran out: (\d+) timing events", stderr)
    behind = re.search(r"(\d+) timing events were not recorded: they came faster", stderr)
    return (
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_maxrss / 1024,
        int(lost.group(1)) if lost else 0,
        int(behind.group(1)) if behind else 0,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5, help="the flood's length")
    ap.add_argument("--limit-kib", type=int, default=100000)
    ap.add_argument("--alt", type=pathlib.Path, help="another trainprof binary to measure")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    for path in [TRAINPROF, EMIT] + ([a.alt] if a.alt else []):
        if not path.exists():
            sys.exit(f"flood_cost: {path} not found (make build first)")
    arms = [("this build, no limit", TRAINPROF, 0), ("this build, limited", TRAINPROF, a.limit_kib)]
    if a.alt:
        arms += [("alt, no limit", a.alt, 0), ("alt, limited", a.alt, a.limit_kib)]
    got = {name: [] for name, _, _ in arms}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = arms[r % len(arms) :] + arms[: r % len(arms)]
            for name, binary, limit in order:
                got[name].append(one(binary, limit, a.seconds, pathlib.Path(d)))
    result = {}
    for name, rows in got.items():
        user = statistics.median(x[0] for x in rows)
        system = statistics.median(x[1] for x in rows)
        result[name] = {
            "user_s": round(user, 2),
            "system_s": round(system, 2),
            "cpu_s_spread": [
                round(min(x[0] + x[1] for x in rows), 2),
                round(max(x[0] + x[1] for x in rows), 2),
            ],
            "peak_mib": round(statistics.median(x[2] for x in rows)),
            "events_lost": int(statistics.median(x[3] for x in rows)),
            "events_behind": int(statistics.median(x[4] for x in rows)),
        }
    if a.json:
        print(
            json.dumps(
                {"seconds": a.seconds, "limit_kib": a.limit_kib, "rounds": a.rounds, "arms": result}
            )
        )
        return
    print(f"{a.seconds} s flood recorded, {a.rounds} rounds, limit {a.limit_kib} KiB (medians)")
    for name, v in result.items():
        print(
            f"  {name:22} user {v['user_s']:6.2f} s  system {v['system_s']:6.2f} s"
            f"  (cpu {v['cpu_s_spread'][0]}-{v['cpu_s_spread'][1]} s)  peak {v['peak_mib']} MiB"
            f"  lost {v['events_lost']}  behind {v['events_behind']}"
        )


if __name__ == "__main__":
    main()
