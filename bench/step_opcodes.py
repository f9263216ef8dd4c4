"""Which of trainprof's Python functions run on the training thread each
step, and how many bytecode instructions each executes there: the CPU
stand-in of bench/gpu_step_cost.py under an arm (as step_instructions.py's),
run twice (N1 and N2 steps) with a tracer that counts every opcode executed
in trainprof's own code (sys.settrace, f_trace_opcodes), the difference over
the steps between. The count is exact and takes seconds, where callgrind
takes minutes: what to move out of Python first, and whether a change took
opcodes off the step. Instructions are step_instructions.py's to judge (an
opcode costs ~35 of them in the frame evaluator, plus what it calls).

    python3 bench/step_opcodes.py [--arm ops_off] [--steps N1,N2] [--top 30]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_step_cost  # noqa: E402  (its arms)
import step_instructions  # noqa: E402  (its child: 20 warm-up steps)

# Run before the child: counts opcodes per function of trainprof's files,
# written out at exit (only the main thread is traced: the training's)
TRACER = r"""
import atexit as _atexit, collections as _collections, json as _json, os as _os, sys as _sys
_counts = _collections.Counter()
def _opcodes(frame, event, arg):
    if event == "opcode":
        code = frame.f_code
        _counts[code.co_filename.rsplit("/trainprof/", 1)[-1] + ":" + code.co_name] += 1
    return _opcodes
def _calls(frame, event, arg):
    if "/trainprof/" in frame.f_code.co_filename:
        frame.f_trace_opcodes = True
        return _opcodes
    return None
_sys.settrace(_calls)
_atexit.register(lambda: _json.dump(_counts, open(_os.environ["STEP_OPCODES_OUT"], "w")))
"""


def run(arm, steps, trainprof, d):
    """{file:function: opcodes} of the arm's run at `steps` steps."""
    ns = argparse.Namespace(model="standin", steps=steps + 20, trainprof=trainprof)
    argv, env = gpu_step_cost.arm_command(arm, ns, os.path.join(d, f"{arm}-{steps}.db"))
    child = argv.index(sys.executable)
    code = TRACER + step_instructions.CHILD
    argv = argv[:child] + [sys.executable, "-c", code, "standin", str(steps + 20)]
    env["STEP_OPCODES_OUT"] = os.path.join(d, f"{arm}-{steps}.json")
    env["PYTHONHASHSEED"] = "0"
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"step_opcodes.py: {arm} failed: {r.stderr[-1500:]}")
    with open(env["STEP_OPCODES_OUT"]) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arm", default="ops_off")
    p.add_argument("--steps", default="40,240")
    p.add_argument("--top", type=int, default=30)
    p.add_argument(
        "--trainprof",
        default=os.environ.get("TRAINPROF") or os.path.join(ROOT, "build", "trainprof"),
    )
    args = p.parse_args()
    n1, n2 = (int(x) for x in args.steps.split(","))
    if args.arm == "bare" or n2 <= n1:
        raise SystemExit("step_opcodes.py: an arm that records, and N1 < N2")
    with tempfile.TemporaryDirectory() as d:
        low, high = run(args.arm, n1, args.trainprof, d), run(args.arm, n2, args.trainprof, d)
    per_step = {k: (high.get(k, 0) - low.get(k, 0)) / (n2 - n1) for k in set(low) | set(high)}
    top = sorted(((v, k) for k, v in per_step.items() if v > 0.05), reverse=True)[: args.top]
    print(
        json.dumps(
            {
                "arm": args.arm,
                "steps": [n1, n2],
                "opcodes_per_step": round(sum(per_step.values()), 1),
                "by_function": {k: round(v, 1) for v, k in top},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
