"""What `trainprof record` costs a training step, in instructions: the CPU
stand-in of bench/gpu_step_cost.py (a 12-block MLP 64 wide at batch 16, one
thread) under valgrind's callgrind, which counts instructions, not seconds:
the same for the same build and inputs whatever else the machine does (a
2-core VM's wall and CPU times can't resolve 1 %, issue 56).

Each arm runs twice, with N1 and N2 steps after 20 warm-up ones; the
training thread's instructions per step are (Ir(N2) - Ir(N1)) / (N2 - N1),
the thread counted apart from the others (--separate-threads: the stack
sampler's own thread is reported beside). Arms as gpu_step_cost.py's
(bare, record, stacks0, ops_off, patch:NAME); each is a whole process under
valgrind, about 50 times slower than native. PYTHONHASHSEED is fixed.

    python3 bench/step_instructions.py [--arms A,B,...] [--steps N1,N2] [--jobs J]
                                       [--keep DIR]

--keep DIR keeps callgrind's files there (cg-ARM-STEPS.PID-THREAD), for
callgrind_annotate: the per-step cost of each C function is the difference
between an arm's two runs (bench/instructions_by_function.py does that).
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_step_cost  # noqa: E402  (its child script and arms)

CHILD = gpu_step_cost.CHILD.replace("warm, times = 300, []", "warm, times = 20, []")


def thread_instructions(out_prefix):
    """{thread number: Ir} of a callgrind run's per-thread output files."""
    counts = {}
    for path in glob.glob(out_prefix + "*"):
        m = re.search(r"-(\d+)$", path)
        with open(path) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    counts[int(m.group(1)) if m else 1] = int(line.split()[1])
                    break
    return counts


def run(arm, steps, args, d):
    """{thread: Ir} of one arm's process at `steps` steps."""
    prefix = os.path.join(d, f"cg-{arm.replace(':', '_')}-{steps}")
    grind = [
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        f"--callgrind-out-file={prefix}.%p",
    ]
    ns = argparse.Namespace(model="standin", steps=steps + 20, trainprof=args.trainprof)
    argv, env = gpu_step_cost.arm_command(arm, ns, os.path.join(d, f"{arm}-{steps}.db"))
    child = argv.index(sys.executable)
    argv = argv[:child] + grind + [sys.executable, "-c", CHILD, "standin", str(steps + 20)]
    env["PYTHONHASHSEED"] = "0"
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"step_instructions.py: {arm} failed: {r.stderr[-1500:]}")
    files = glob.glob(prefix + ".*")
    pid = sorted({re.match(r".*\.(\d+)", f).group(1) for f in files})[-1]  # the python's
    return thread_instructions(f"{prefix}.{pid}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", default="bare,record,stacks0,ops_off")
    p.add_argument("--steps", default="40,240")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--keep", metavar="DIR", help="keep callgrind's output files in DIR")
    p.add_argument(
        "--trainprof",
        default=os.environ.get("TRAINPROF") or os.path.join(ROOT, "build", "trainprof"),
    )
    args = p.parse_args()
    n1, n2 = (int(x) for x in args.steps.split(","))
    arms = args.arms.split(",")
    if "bare" not in arms:
        arms.insert(0, "bare")
    with (
        tempfile.TemporaryDirectory() as tmp,
        concurrent.futures.ThreadPoolExecutor(args.jobs) as pool,
    ):
        d = tmp
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            d = args.keep
        jobs = {(a, n): pool.submit(run, a, n, args, d) for a in arms for n in (n1, n2)}
        got = {k: f.result() for k, f in jobs.items()}
    result = {"model": "standin", "steps": [n1, n2]}
    for a in arms:
        main_thread = (got[a, n2].get(1, 0) - got[a, n1].get(1, 0)) / (n2 - n1)
        others = (
            sum(v for t, v in got[a, n2].items() if t != 1)
            - sum(v for t, v in got[a, n1].items() if t != 1)
        ) / (n2 - n1)
        result[a] = {
            "training_thread_ir_per_step": round(main_thread),
            "other_threads_ir_per_step": round(others),
        }
    bare = result["bare"]["training_thread_ir_per_step"]
    for a in arms:
        if a != "bare":
            t = result[a]["training_thread_ir_per_step"]
            result[a]["training_thread_percent"] = round(100 * (t - bare) / bare, 3)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
