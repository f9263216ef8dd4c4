"""What `trainprof record` costs while a command runs, and how fast it starts.

1. CPU and peak memory of the recorder over a 20 s `sleep` at the default
   interval (0.5 s), against a psutil loop sampling the same set at the same
   interval, measured the same way (rusage of the process, which waits for its
   child; `sleep` itself uses next to nothing).
2. Wall time of `trainprof record -- true` against a bare spawn of `true`,
   medians of 20 runs.

--alt-trainprof BIN measures another build's program the same way in the
same run (the build before a change), interleaved with ours.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")

PSUTIL_LOOP = r"""
import subprocess, sys, time, psutil
child = subprocess.Popen(["sleep", sys.argv[1]])
root = psutil.Process(child.pid)
while child.poll() is None:
    psutil.cpu_percent(percpu=True); psutil.virtual_memory(); psutil.swap_memory()
    psutil.disk_io_counters(perdisk=True); psutil.net_io_counters(pernic=True)
    for p in [root] + root.children(recursive=True):
        try:
            with p.oneshot():
                p.cpu_times(); p.memory_info(); p.io_counters(); p.num_threads()
        except psutil.NoSuchProcess:
            pass
    time.sleep(0.5)
"""


def rusage_of(cmd):
    """CPU share and peak resident memory of cmd's own process.

    Peak memory is VmHWM from /proc/PID/status, read until just before the
    process exits: ru_maxrss would count the Python interpreter that forked it."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hwm_kb = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("VmHWM:"):
                    hwm_kb = max(hwm_kb, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.2)
    wall = time.monotonic() - start
    cpu = ru.ru_utime + ru.ru_stime
    return {
        "cpu_percent_of_a_core": round(100 * cpu / wall, 3),
        "peak_rss_mb": round(hwm_kb / 1024, 1),
        "wall_s": round(wall, 2),
    }


def median_wall(cmd, runs=20):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seconds", nargs="?", default="20")
    ap.add_argument("--alt-trainprof", help="another build's trainprof, measured alike")
    args = ap.parse_args()
    seconds = args.seconds
    out = {}
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run.db")
        programs = [("", PROGRAM)] + ([("alt_", args.alt_trainprof)] if args.alt_trainprof else [])
        for prefix, program in programs:
            out[prefix + "record_sleep"] = rusage_of(
                [program, "record", "-q", "--force", "-o", run, "--", "sleep", seconds]
            )
        out["psutil_loop_sleep"] = rusage_of([sys.executable, "-c", PSUTIL_LOOP, seconds])
        for prefix, program in programs:
            out[prefix + "record_true_median_ms"] = round(
                median_wall([program, "record", "-q", "--force", "-o", run, "--", "true"]), 1
            )
        out["bare_true_median_ms"] = round(median_wall(["true"]), 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
