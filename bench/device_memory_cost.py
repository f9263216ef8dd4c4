"""What reading the GPU allocator at step marks (trainprof.runtime.
device_memory, issue 59) costs the training's thread, in CPU time per step
mark, under `trainprof record` (the ring writes are real), each figure
beside its peer measured in the same process, the arms alternating over
rounds:

- step: `_native.step()`, the mark alone (the peer);
- marks_off: `marks.step()` with the reader off (a model on the CPU);
- marks_between: `marks.step()` with the reader on, between two readings
  (every mark but one in 0.1 s pays this);
- reading: one reading (`device_memory.read()`) with a stand-in for
  torch.cuda.memory_stats that returns a dict as large as torch's (the
  Python side and the event), or with --cuda torch's own on GPU 0 (what a
  real reading costs: tools/gpu-check.sh runs it).

    python3 bench/device_memory_cost.py [ROUNDS] [--cuda]
    (runs itself under $TRAINPROF, else build/trainprof, record)
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CALLS = 20_000


def child(rounds):
    import types

    from trainprof import _native
    from trainprof.runtime import device_memory as dm
    from trainprof.steps import marks

    # torch 2.x's memory_stats: 4 pools x 4 figures for each of 18 statistics, and a few counts
    stats = {f"s{i}.{p}.{f}": i for i in range(18) for p in "abcd" for f in "wxyz"}
    stats.update({"num_alloc_retries": 0, "num_ooms": 0})
    cuda = types.SimpleNamespace(
        memory_stats=lambda device: stats,
        get_device_properties=lambda d: types.SimpleNamespace(total_memory=80 << 30),
    )
    torch_like = types.SimpleNamespace(cuda=cuda)
    device = "cuda:0"
    if "--cuda" in sys.argv:
        import torch

        torch_like = torch
        device = torch.device("cuda", 0)
        torch.ones(1, device=device)  # CUDA and its allocator up, as a training has them
    clock = time.thread_time_ns

    def per_call(fn, calls=CALLS):
        t = clock()
        for _ in range(calls):
            fn()
        return (clock() - t) / calls

    def between():
        dm._next_ns = 1 << 62  # the next reading far away: every mark is between two
        return per_call(marks.step)

    def reading():
        return per_call(dm.read, CALLS // 20)

    arms = {"step": lambda: per_call(_native.step), "marks_off": lambda: per_call(marks.step)}
    results = {name: [] for name in [*arms, "marks_between", "reading"]}
    for _ in range(rounds):
        dm._memory_stats = None
        for name, run in arms.items():
            results[name].append(run())
        dm.enable(torch_like, device)
        results["marks_between"].append(between())
        results["reading"].append(reading())
    peer = statistics.median(results["step"])
    out = {"bench": "device_memory_cost", "rounds": rounds, "calls": CALLS}
    out["memory_stats"] = "torch, GPU 0" if "--cuda" in sys.argv else "stand-in"
    for name, values in results.items():
        out[f"{name}_ns"] = round(statistics.median(values), 1)
        if name != "step":
            out[f"{name}_over_step_ns"] = round(statistics.median(values) - peer, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 7
    if os.environ.get("DEVICE_MEMORY_BENCH_CHILD"):
        child(rounds)
    else:
        subprocess.run(
            [
                os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof")),
                "record",
                "-q",
                "--force",
                "--stacks",
                "0",
                "-o",
                "/tmp/trainprof-devmem-bench.db",
                "--",
                sys.executable,
                __file__,
                str(rounds),
                *[a for a in sys.argv[1:] if a == "--cuda"],
            ],
            env={**os.environ, "DEVICE_MEMORY_BENCH_CHILD": "1"},
            check=True,
        )
