"""What `with trainprof.region(...)` costs a Python training loop.

Peers, measured in the same process: a bare pair of time.perf_counter_ns()
calls (the least a timed region can cost in Python), and
torch.profiler.record_function, both outside a profiler (as code instrumented
for it runs most of the time) and inside an active torch.profiler.profile
(when it records). Each figure is the median of 15 repeats of 20,000
iterations, in ns per iteration, with a 0.1 s pause between repeats so the
recorder drains the ring (40,000 events fit in it): the cost of recording,
not of dropping. The script runs itself once under
`trainprof record` (regions recorded) and once without (regions inactive).
"""

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
N = 20_000


def per_iter(fn):
    runs = []
    for _ in range(15):
        time.sleep(0.1)
        t0 = time.perf_counter_ns()
        fn()
        runs.append((time.perf_counter_ns() - t0) / N)
    return round(statistics.median(runs), 1)


def measure():
    import torch
    import trainprof

    pc = time.perf_counter_ns
    region = trainprof.region
    record_function = torch.profiler.record_function

    def bare():
        for _ in range(N):
            pc()
            pc()

    def ours():
        for _ in range(N):
            with region("step_part"):
                pass

    def theirs():
        for _ in range(N):
            with record_function("step_part"):
                pass

    result = {
        "active": trainprof.active(),
        "bare_perf_counter_pair_ns": per_iter(bare),
        "trainprof_region_ns": per_iter(ours),
        "torch_record_function_ns": per_iter(theirs),
    }
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        result["torch_record_function_profiling_ns"] = per_iter(theirs)
    result["region_over_bare"] = round(
        result["trainprof_region_ns"] / result["bare_perf_counter_pair_ns"], 2
    )
    result["record_function_over_region"] = round(
        result["torch_record_function_profiling_ns"] / result["trainprof_region_ns"], 1
    )
    result["dropped"] = trainprof.dropped()
    return result


def main():
    if "--measure" in sys.argv:
        print(json.dumps(measure()))
        return
    with tempfile.TemporaryDirectory() as d:
        recorded = subprocess.check_output(
            [
                str(ROOT / "build" / "trainprof"),
                "record",
                "-q",
                "-o",
                f"{d}/run.db",
                "--",
                sys.executable,
                __file__,
                "--measure",
            ]
        )
    plain = subprocess.check_output([sys.executable, __file__, "--measure"])
    print(json.dumps({"under_record": json.loads(recorded), "without_record": json.loads(plain)}))


if __name__ == "__main__":
    main()
