"""The recorder's own CPU while a real Prometheus scrapes it every 5 s.

The recorded command: 16 processes standing for 16 ranks (RANK=0..15), each
marking 10 steps/s with three regions per step, on a node of 8 fake GPUs (the
test NVML library). The same command is recorded twice, in one run of this
script: with `--serve` and Debian's Prometheus scraping /metrics every 5 s,
and without serving (the peer). CPU is the recorder process's own utime +
stime from /proc/PID/stat, read until just before it exits (its children's
CPU is not in it).
"""

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
FAKE_NVML = str(ROOT / "build" / "tests" / "libfake_nvml.so")
TICK = os.sysconf("SC_CLK_TCK")

RANKS = r"""
import os, subprocess, sys, time
if len(sys.argv) > 2:
    import trainprof
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        trainprof.step()
        trainprof.samples(32)
        for name in ("dataloader_next", "train_batch", "reduce_metrics"):
            with trainprof.region(name):
                time.sleep(0.02)
        time.sleep(0.04)
else:
    procs = [subprocess.Popen([sys.executable, __file__, sys.argv[1], "rank"],
                              env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r % 8),
                                   "WORLD_SIZE": "16"}) for r in range(16)]
    sys.exit(max(p.wait() for p in procs))
"""


def own_cpu_s(pid):
    """utime + stime of pid itself, in seconds (None once it is gone)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def watch_cpu(p, start):
    """Percent of a core the recorder p used from start until it exited."""
    last = 0.0
    while p.poll() is None:
        cpu = own_cpu_s(p.pid)
        if cpu is not None:
            last = cpu
        time.sleep(0.2)
    wall = time.monotonic() - start
    return {"cpu_percent_of_a_core": round(100 * last / wall, 3), "wall_s": round(wall, 1)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    if not shutil.which("prometheus"):
        sys.exit("serve_cost: Debian's prometheus is not installed (tools/bootstrap.sh)")
    env = {**os.environ, "TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "8"}
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "ranks.py")
        pathlib.Path(script).write_text(RANKS)
        command = ["--", sys.executable, script, str(seconds)]
        results = {}
        # serving, scraped by Prometheus every 5 s: Prometheus starts once the
        # recorder says where it serves, through a file_sd target file
        port = free_port()
        targets = os.path.join(d, "targets.json")
        pathlib.Path(targets).write_text("[]")
        pathlib.Path(d, "prometheus.yml").write_text(
            "global: {scrape_interval: 5s}\n"
            "scrape_configs:\n"
            "  - job_name: trainprof\n"
            f"    file_sd_configs: [{{files: [{json.dumps(targets)}], refresh_interval: 1s}}]\n"
        )
        prom = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={d}/prometheus.yml",
                f"--storage.tsdb.path={d}/tsdb",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            start = time.monotonic()
            p = subprocess.Popen(
                [
                    PROGRAM,
                    "record",
                    "-q",
                    "-o",
                    os.path.join(d, "served.db"),
                    "--serve",
                    "127.0.0.1:0",
                    *command,
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            target = re.search(r"http://(\S+)/metrics", p.stderr.readline()).group(1)
            tmp = targets + ".tmp"
            pathlib.Path(tmp).write_text(json.dumps([{"targets": [target]}]))
            os.rename(tmp, targets)
            served = watch_cpu(p, start)
            q = f"http://127.0.0.1:{port}/api/v1/query?query=count_over_time(up%5B10m%5D)"
            scrapes = json.loads(urllib.request.urlopen(q, timeout=10).read())["data"]["result"]
            served["scrapes"] = int(float(scrapes[0]["value"][1])) if scrapes else 0
            results["served_scraped_every_5s"] = served
        finally:
            prom.terminate()
            prom.wait(timeout=30)
        start = time.monotonic()
        p = subprocess.Popen(
            [PROGRAM, "record", "-q", "-o", os.path.join(d, "plain.db"), *command],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        results["not_served"] = watch_cpu(p, start)
    print(json.dumps({"ranks": 16, "fake_gpus": 8, "seconds": seconds, **results}))


if __name__ == "__main__":
    main()
