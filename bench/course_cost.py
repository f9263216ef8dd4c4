"""What following the run's course costs the recorder: its own CPU while a
step-heavy command runs, with the live view on (--serve: each step mark feeds
the live state's progress and stall rule, the drain counts each ring's steps
and notes every process end), against another build measured the same way
in the same run (the build before: --alt-trainprof).

The command (the environment's Python, with the trainprof package installed
there: both builds' recorders read the same Python side) makes STEPS steps a second for SECONDS seconds (a step mark and
a region each, from Python through trainprof's public API), forks and reaps
FORKS short-lived children along the way (their ends are what the drain
notes), then sleeps a second. The recorder's own CPU (utime + stime of its
/proc/PID/stat, its threads and not its children) is read during that last
second. Builds alternate over ROUNDS rounds; the figure is each build's
median, in % of one core over the stepping seconds.

    python3 bench/course_cost.py [ROUNDS] [--alt-trainprof OLD] [--steps N] [--seconds S]
                                 [--stacks-off]

--stacks-off records with --stacks 0 and no --serve: the recorder then keeps
its live state only to see stalls begin (and ask for one stack of each
thread), which a build before that kept none for.
"""

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")

SCRIPT = r"""
import os, sys, time, trainprof
steps, seconds, forks = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
period, start = 1.0 / steps, time.monotonic()
every = max(1, int(steps * seconds / max(forks, 1)))
i = 0
while time.monotonic() - start < seconds:
    trainprof.step()
    with trainprof.region("compute"):
        t = time.monotonic() + period * 0.5
        while time.monotonic() < t:
            pass
    if forks and i % every == 0:
        pid = os.fork()
        if pid == 0:
            with trainprof.region("child"):
                pass
            os._exit(0)
        os.waitpid(pid, 0)
    i += 1
    time.sleep(max(0.0, start + i * period - time.monotonic()))
open(sys.argv[4], "w").write("done")
time.sleep(1.0)
"""


def self_cpu_s(pid):
    """utime + stime of the process itself (its threads, not its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one(program, script, steps, seconds, forks, stacks_off):
    # with stack sampling off the recorder keeps its live state to see stalls
    # begin, --serve or not: measured without --serve then
    watch = ["--stacks", "0"] if stacks_off else ["--serve", f"127.0.0.1:{free_port()}"]
    with tempfile.TemporaryDirectory() as d:
        flag = pathlib.Path(d) / "flag"
        rec = subprocess.Popen(
            [
                program,
                "record",
                "-q",
                *watch,
                "-o",
                str(pathlib.Path(d) / "run.db"),
                "--",
                sys.executable,
                str(script),
                str(steps),
                str(seconds),
                str(forks),
                str(flag),
            ],
        )
        while not flag.exists() and rec.poll() is None:
            time.sleep(0.02)
        cpu = self_cpu_s(rec.pid)
        assert rec.wait(timeout=120) == 0
    return 100 * cpu / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--alt-trainprof", help="another build's trainprof, measured alike")
    ap.add_argument("--steps", type=int, default=1000, help="steps a second (default 1000)")
    ap.add_argument("--seconds", type=float, default=10, help="stepping seconds (default 10)")
    ap.add_argument("--forks", type=int, default=200, help="children forked and reaped")
    ap.add_argument(
        "--stacks-off",
        action="store_true",
        help="record --stacks 0 without --serve (the live state kept for stalls)",
    )
    args = ap.parse_args()
    programs = [("this", PROGRAM)] + ([("alt", args.alt_trainprof)] if args.alt_trainprof else [])
    with tempfile.TemporaryDirectory() as d:
        script = pathlib.Path(d) / "steps.py"
        script.write_text(SCRIPT)
        got = {name: [] for name, _ in programs}
        for r in range(args.rounds):
            for name, program in programs if r % 2 == 0 else programs[::-1]:
                got[name].append(
                    one(program, script, args.steps, args.seconds, args.forks, args.stacks_off)
                )
    out = {
        "steps_per_s": args.steps,
        "seconds": args.seconds,
        "forks": args.forks,
        "rounds": args.rounds,
        "stacks_off": args.stacks_off,
    }
    for name, values in got.items():
        out[f"{name}_recorder_cpu_percent"] = round(statistics.median(values), 3)
        out[f"{name}_all"] = [round(v, 3) for v in values]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
