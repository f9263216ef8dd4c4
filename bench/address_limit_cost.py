"""What the recorder costs when it records under a virtual-memory limit
(`ulimit -v`): `trainprof record` of build/tests/emit_events' flood (1.5 s
of empty regions on one thread, more than the writer keeps up with, so the
recorder's pending events grow until memory runs out) with and without an
address-space limit, in alternating order within each round. Measures the
user and system CPU time of the whole record command (getrusage of the
children) and the events it said it had no memory for. With --alt BINARY,
another trainprof build runs the same arms (e.g. one from before a change).

    python3 bench/address_limit_cost.py [ROUNDS] [--limit-kib N] [--alt BINARY] [--json]
"""

import argparse
import json
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


def one(binary, limit_kib, work):
    """(user s, system s, events lost) of one recording of the flood."""
    out = work / "flood.db"
    out.unlink(missing_ok=True)

    def cap():
        if limit_kib:
            resource.setrlimit(resource.RLIMIT_AS, (limit_kib * 1024, limit_kib * 1024))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        [str(binary), "record", "-o", str(out), "--", str(EMIT), "flood"],
        preexec_fn=cap,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"address_limit_cost: {binary} record failed ({r.returncode}): {r.stderr}")
    lost = re.search(r"memory ran out: (\d+) timing events", r.stderr)
    return (
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        int(lost.group(1)) if lost else 0,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--limit-kib", type=int, default=100000)
    ap.add_argument("--alt", type=pathlib.Path, help="another trainprof binary to measure")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    for path in [TRAINPROF, EMIT] + ([a.alt] if a.alt else []):
        if not path.exists():
            sys.exit(f"address_limit_cost: {path} not found (make build first)")
    arms = [("this build, no limit", TRAINPROF, 0), ("this build, limited", TRAINPROF, a.limit_kib)]
    if a.alt:
        arms += [("alt, no limit", a.alt, 0), ("alt, limited", a.alt, a.limit_kib)]
    got = {name: [] for name, _, _ in arms}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = arms[r % len(arms) :] + arms[: r % len(arms)]
            for name, binary, limit in order:
                got[name].append(one(binary, limit, pathlib.Path(d)))
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
            "events_lost": int(statistics.median(x[2] for x in rows)),
        }
    if a.json:
        print(json.dumps({"limit_kib": a.limit_kib, "rounds": a.rounds, "arms": result}))
        return
    print(f"flood recorded, {a.rounds} rounds, limit {a.limit_kib} KiB (medians)")
    for name, v in result.items():
        print(
            f"  {name:22} user {v['user_s']:6.2f} s  system {v['system_s']:6.2f} s"
            f"  (cpu {v['cpu_s_spread'][0]}-{v['cpu_s_spread'][1]} s)  lost {v['events_lost']}"
        )


if __name__ == "__main__":
    main()
