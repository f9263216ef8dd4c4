"""Where an arm's extra instructions a step go, C function by C function:
reads the callgrind files that `bench/step_instructions.py --keep DIR` left,
and prints, for the training thread, each function's own instructions per
step (the difference between the arm's two runs, over the steps between
them) in the arm against bare, largest differences first. Python code shows
as the interpreter's functions (the frame evaluator, attribute lookups,
calls), the extension's and torch's as their own.

    python3 bench/instructions_by_function.py DIR [--arm record] [--seed 0] [--top 40]
"""

import argparse
import collections
import glob
import os
import re
import subprocess


def own_costs(path):
    """{function: own Ir} of one callgrind file (callgrind_annotate's view)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    costs = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)(?:\s+\[.*\])?$", line)
        if m and ":" in m.group(2):
            name = m.group(2).split(":", 1)[1]
            costs[name] += int(m.group(1).replace(",", ""))
    return costs


def training_thread_file(d, arm, seed, steps):
    """The training (first) thread's file of the arm's run at steps under
    the hash seed, or None."""
    files = glob.glob(os.path.join(d, f"cg-{arm.replace(':', '_')}-s{seed}-{steps}.*-01"))
    return max(files, default=None, key=os.path.getmtime)


def per_step(d, arm, n1, n2, seed=0):
    low, high = training_thread_file(d, arm, seed, n1), training_thread_file(d, arm, seed, n2)
    if low is None or high is None:
        raise SystemExit(
            f"instructions_by_function.py: no callgrind files of {arm} (seed {seed}) in {d}"
        )
    a, b = own_costs(low), own_costs(high)
    return {k: (b.get(k, 0) - a.get(k, 0)) / (n2 - n1) for k in set(a) | set(b)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--arm", default="record")
    p.add_argument("--steps", default="40,240")
    p.add_argument("--seed", type=int, default=0, help="the PYTHONHASHSEED of the runs read")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args()
    n1, n2 = (int(x) for x in args.steps.split(","))
    bare = per_step(args.dir, "bare", n1, n2, args.seed)
    arm = per_step(args.dir, args.arm, n1, n2, args.seed)
    diff = {k: arm.get(k, 0) - bare.get(k, 0) for k in set(bare) | set(arm)}
    total = sum(diff.values())
    print(f"{args.arm} - bare: {total:+,.0f} instructions a step (training thread)")
    for name, d in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: args.top]:
        print(f"{d:+12,.0f}  {bare.get(name, 0):12,.0f}  {name[:110]}")


if __name__ == "__main__":
    main()
