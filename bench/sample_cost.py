"""One full host sample: trainprof's collectors against psutil, side by side.

Both sample the same set every tick: CPU per core and in total, host memory and
swap, every disk's I/O counters, every network interface's counters, and the
CPU, memory, I/O and threads of one process tree (a parent with two child
processes, as a training script with DataLoader workers). trainprof also reads
/proc/pressure, which psutil does not. CPU time is measured on the sampling
thread (user + system). Prints JSON with the medians and their ratio.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import psutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE_COST = os.environ.get("SAMPLE_COST", str(ROOT / "build" / "bench" / "sample_cost"))


def start_tree():
    code = (
        "import multiprocessing as mp, time\n"
        "def idle(): time.sleep(600)\n"
        "if __name__ == '__main__':\n"
        "    ps = [mp.Process(target=idle) for _ in range(2)]\n"
        "    [p.start() for p in ps]\n"
        "    time.sleep(600)\n"
    )
    tree = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(1.0)
    return tree


def psutil_tick(root):
    psutil.cpu_percent(percpu=True)
    psutil.cpu_percent()
    psutil.virtual_memory()
    psutil.swap_memory()
    psutil.disk_io_counters(perdisk=True)
    psutil.net_io_counters(pernic=True)
    procs = [root] + root.children(recursive=True)
    for p in procs:
        try:
            with p.oneshot():
                p.cpu_times()
                p.memory_info()
                p.io_counters()
                p.num_threads()
        except psutil.NoSuchProcess:
            pass


def psutil_cost(pid, ticks):
    root = psutil.Process(pid)
    costs = []
    for i in range(ticks + 20):
        t0 = time.thread_time_ns()
        psutil_tick(root)
        t1 = time.thread_time_ns()
        if i >= 20:
            costs.append((t1 - t0) / 1000)
        time.sleep(0.001)
    return statistics.median(costs)


def main():
    ticks = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    tree = start_tree()
    try:
        ours = json.loads(subprocess.check_output([str(SAMPLE_COST), str(tree.pid), str(ticks)]))
        peer = psutil_cost(tree.pid, ticks)
    finally:
        for child in psutil.Process(tree.pid).children(recursive=True):
            child.kill()
        tree.kill()
        tree.wait()
    result = {
        "trainprof_median_us": ours["median_us"],
        "trainprof_per_collector_mean_us": ours["per_collector_mean_us"],
        "bare_pread_of_proc_meminfo_us": ours["bare_pread_meminfo_us"],
        "psutil_median_us": round(peer, 2),
        "psutil_over_trainprof": round(peer / ours["median_us"], 1),
        "ticks": ticks,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
