"""What a finished profiler window leaves on every CUDA call (issue 56): the
host time of a kernel launch before a torch.profiler window (CPU and CUDA)
and after it, where Kineto keeps CUPTI attached (its default, `kept`) and
where it lets go (TEARDOWN_CUPTI=1, `released`, what trainprof's windows
ask for), against a process that opens no window (`none`). Each arm is a
fresh process, the arms alternating round after round; the figure is each
arm's launch time after over before, median over rounds. Needs a CUDA GPU
(tools/gpu-check.sh bench runs it).

    python3 bench/cupti_linger.py [ROUNDS] [--launches N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time, torch
arm, n = sys.argv[1], int(sys.argv[2])
x = torch.zeros(256, device="cuda")

def launch_us():
    blocks = []
    for _ in range(7):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        blocks.append(1e6 * (time.perf_counter() - t) / n)
    torch.cuda.synchronize()
    return statistics.median(blocks)

launch_us()  # warm-up
before = launch_us()
if arm != "none":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for _ in range(100):
            x.add_(1)
        torch.cuda.synchronize()
    for _ in range(100):  # the teardown finishes in a later CUDA call's callback
        x.add_(1)
    torch.cuda.synchronize()
    time.sleep(0.5)
after = launch_us()
print("BENCH " + json.dumps({"before_us": before, "after_us": after}))
"""

ARMS = ("none", "kept", "released")


def measure(arm, launches):
    env = {**os.environ}
    env.pop("TEARDOWN_CUPTI", None)
    if arm == "released":
        env["TEARDOWN_CUPTI"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, arm, str(launches)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [l for l in out.stdout.splitlines() if l.startswith("BENCH ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"cupti_linger.py: arm {arm} failed: {out.stderr[-2000:]}")
    return json.loads(lines[-1][6:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rounds", nargs="?", type=int, default=3)
    p.add_argument("--launches", type=int, default=20000)
    args = p.parse_args()
    rows = {a: [] for a in ARMS}
    for r in range(args.rounds):
        order = ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]
        for a in order:
            rows[a].append(measure(a, args.launches))
        print(
            f"round {r + 1}: "
            + ", ".join(
                f"{a} {rows[a][-1]['before_us']:.2f} -> {rows[a][-1]['after_us']:.2f} us"
                for a in ARMS
            ),
            file=sys.stderr,
            flush=True,
        )
    result = {"rounds": args.rounds, "launches": args.launches}
    for a in ARMS:
        result[a] = {
            "before_us": round(statistics.median(x["before_us"] for x in rows[a]), 3),
            "after_us": round(statistics.median(x["after_us"] for x in rows[a]), 3),
            "after_over_before": round(
                statistics.median(x["after_us"] / x["before_us"] for x in rows[a]), 3
            ),
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
