"""What distinct region names cost (issue 25): a training that makes a new
name per region (an f-string with a step number in it) interns N names in
the training process (libtrainprof) and, under record, in the recorder's
sink. Measured in the training process alone (no recorder) and as the whole
`trainprof record` command, each in a fresh process.

With --alt DIR (another trainprof package: its Python side and _native) and
--alt-trainprof BIN (another trainprof binary), the same again as "@alt":
two versions in one run.

    python3 bench/name_cost.py [N] [--alt DIR] [--alt-trainprof BIN]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHILD = r"""
import sys, time, trainprof
t = time.perf_counter()
for i in range(int(sys.argv[1])):
    with trainprof.region(f"name {i}"):
        pass
print(time.perf_counter() - t)
"""


def measure(n, pythonpath, program):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    alone = float(
        subprocess.run(
            [sys.executable, "-c", CHILD, str(n)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        subprocess.run(
            [
                program,
                "record",
                "-q",
                "-o",
                os.path.join(d, "run.db"),
                "--",
                sys.executable,
                "-c",
                CHILD,
                str(n),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        recorded = time.perf_counter() - t
    return {"in_process_s": round(alone, 3), "record_command_s": round(recorded, 3)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("n", nargs="?", type=int, default=100000)
    p.add_argument("--alt", help="a folder holding another trainprof package")
    p.add_argument("--alt-trainprof", help="another trainprof binary")
    args = p.parse_args()
    program = str(ROOT / "build" / "trainprof")
    result = {"names": args.n, "now": measure(args.n, None, program)}
    if args.alt or args.alt_trainprof:
        result["alt"] = measure(args.n, args.alt, args.alt_trainprof or program)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
