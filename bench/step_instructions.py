"""What `trainprof record` costs a training step, in instructions: the CPU
stand-in of bench/gpu_step_cost.py (a 12-block MLP 64 wide at batch 16, one
thread, through a DataLoader; --model standin_kept: its batch kept, the
optimizer's updates marking the steps) under valgrind's callgrind, which counts instructions, not seconds:
the same for the same build and inputs whatever else the machine does (a
2-core VM's wall and CPU times can't resolve 1 %, issue 56).

Each arm runs twice, with N1 and N2 steps after 20 warm-up ones; the
training thread's instructions per step are (Ir(N2) - Ir(N1)) / (N2 - N1),
the thread counted apart from the others (--separate-threads: the stack
sampler's own thread is reported beside). Arms as gpu_step_cost.py's
(bare, record, stacks0, ops_off, patch:NAME); each is a whole process under
valgrind, about 50 times slower than native.

The count is the same for the same build, seed and arm, but glibc's
allocator's share of it follows where the heap's chunks lie (what it
consolidates, what it splits), and that moves with whatever the process
imported or allocated before the loop: fdec8b7's `record` measured +31,754
a step over bare one day and +74,975 another (the bare arm's
trainprof-autoload from another build), and at 1bb97d0 the allocator's
part of `record` over bare was -15,654 and -21,665 under two seeds. Each
arm therefore runs under several PYTHONHASHSEEDs (--seeds), its figure the
median over seeds of its difference to bare under the same seed, with the
spread; and each is given outside the allocator too (what the arm's own
code costs, which holds across builds). A budget is judged on the larger.

    python3 bench/step_instructions.py [--arms A,B,...] [--steps N1,N2] [--jobs J]
                                       [--seeds S,S,...] [--keep DIR]
                                       [--model standin|standin_kept]

--keep DIR keeps callgrind's files there (cg-ARM-sSEED-STEPS.PID-THREAD), for
callgrind_annotate: the per-step cost of each C function is the difference
between an arm's two runs (bench/instructions_by_function.py does that).
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_step_cost  # noqa: E402  (its child script and arms)
import instructions_by_function  # noqa: E402  (callgrind_annotate's view of a file)

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


# The allocators' own functions, glibc's and CPython's (obmalloc's pools and
# arenas): what a step costs in them follows where the heap's chunks and the
# pools' blocks lie more than what the step does (above; a change that made
# as many allocations a step cost +6,365 instructions more in _PyObject_Free,
# a pool emptied and refilled each step)
ALLOCATOR = re.compile(
    r"^(_int_(malloc|free|realloc|memalign)|malloc_consolidate|unlink_chunk.*|sysmalloc|"
    r"malloc|free|cfree|realloc|calloc|tcache_.*|_mid_memalign|__libc_(malloc|free|calloc|realloc|memalign)|"
    r"_PyObject_(Malloc|Calloc|Realloc|Free)|pymalloc_.*|allocate_from_new_pool|"
    r"insert_to_(used|free)pool|new_arena|_PyMem_Raw(Malloc|Calloc|Realloc|Free))$"
)


def allocator_instructions(path):
    """Ir of one thread's callgrind file in the allocators (ALLOCATOR)."""
    costs = instructions_by_function.own_costs(path)
    return sum(v for name, v in costs.items() if ALLOCATOR.match(name))


def run(arm, seed, steps, args, d):
    """({thread: Ir}, the training thread's Ir in the allocator) of one
    arm's process at `steps` steps under a hash seed."""
    prefix = os.path.join(d, f"cg-{arm.replace(':', '_')}-s{seed}-{steps}")
    grind = [
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        f"--callgrind-out-file={prefix}.%p",
    ]
    ns = argparse.Namespace(model=args.model, steps=steps + 20, trainprof=args.trainprof)
    argv, env = gpu_step_cost.arm_command(arm, ns, os.path.join(d, f"{arm}-s{seed}-{steps}.db"))
    child = argv.index(sys.executable)
    argv = argv[:child] + grind + [sys.executable, "-c", CHILD, args.model, str(steps + 20)]
    env["PYTHONHASHSEED"] = str(seed)
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"step_instructions.py: {arm} failed: {r.stderr[-1500:]}")
    files = glob.glob(prefix + ".*")
    pid = sorted({re.match(r".*\.(\d+)", f).group(1) for f in files})[-1]  # the python's
    return thread_instructions(f"{prefix}.{pid}"), allocator_instructions(f"{prefix}.{pid}-01")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", default="bare,record,stacks0,ops_off")
    p.add_argument("--steps", default="40,240")
    p.add_argument(
        "--model",
        default="standin",
        choices=("standin", "standin_kept"),
        help="the stand-in through a DataLoader, or its batch kept (the updates mark the steps)",
    )
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument(
        "--seeds", default="0,1,2", help="PYTHONHASHSEEDs each arm runs under (default 0,1,2)"
    )
    p.add_argument("--keep", metavar="DIR", help="keep callgrind's output files in DIR")
    p.add_argument(
        "--trainprof",
        default=os.environ.get("TRAINPROF") or os.path.join(ROOT, "build", "trainprof"),
    )
    args = p.parse_args()
    n1, n2 = (int(x) for x in args.steps.split(","))
    seeds = [int(x) for x in args.seeds.split(",")]
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
        jobs = {
            (a, s, n): pool.submit(run, a, s, n, args, d)
            for s in seeds
            for a in arms
            for n in (n1, n2)
        }
        got = {k: f.result() for k, f in jobs.items()}
    print(json.dumps(summarize(got, arms, seeds, n1, n2, args.model), indent=1))


def summarize(got, arms, seeds, n1, n2, model):
    """Each arm's instructions a step per seed (the training thread's, and
    the other threads'), and each arm's difference to bare under the same
    seed: per seed, their median and spread, in instructions and percent."""
    result = {"model": model, "steps": [n1, n2], "seeds": seeds}
    per_step, others, alloc = {}, {}, {}
    for a in arms:
        for s in seeds:
            (high, high_alloc), (low, low_alloc) = got[a, s, n2], got[a, s, n1]
            per_step[a, s] = (high.get(1, 0) - low.get(1, 0)) / (n2 - n1)
            others[a, s] = (
                sum(high.values()) - high.get(1, 0) - sum(low.values()) + low.get(1, 0)
            ) / (n2 - n1)
            alloc[a, s] = (high_alloc - low_alloc) / (n2 - n1)
        result[a] = {
            "training_thread_ir_per_step": [round(per_step[a, s]) for s in seeds],
            "other_threads_ir_per_step": [round(others[a, s]) for s in seeds],
            "allocator_ir_per_step": [round(alloc[a, s]) for s in seeds],
        }
    for a in arms:
        if a == "bare":
            continue
        over = [per_step[a, s] - per_step["bare", s] for s in seeds]
        percent = [100 * o / per_step["bare", s] for o, s in zip(over, seeds)]
        beside = [o - (alloc[a, s] - alloc["bare", s]) for o, s in zip(over, seeds)]
        result[a].update(
            over_bare=[round(o) for o in over],
            # the same without the allocator's share: what the arm's own code
            # costs, as a share of the whole bare step
            over_bare_outside_allocator=[round(o) for o in beside],
            outside_allocator_percent=round(
                statistics.median(100 * o / per_step["bare", s] for o, s in zip(beside, seeds)), 3
            ),
            over_bare_median=round(statistics.median(over)),
            training_thread_percent=round(statistics.median(percent), 3),
            spread_percent=[round(min(percent), 3), round(max(percent), 3)],
        )
    return result


if __name__ == "__main__":
    main()
