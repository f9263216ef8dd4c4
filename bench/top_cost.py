"""CPU used by `trainprof top` at its default 1 Hz refresh, in an 80x24 tmux
pane for 20 s, against procps `top -d 1` in the same kind of pane (when
installed). CPU time is utime+stime from /proc/PID/stat."""

import json
import os
import pathlib
import shutil
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_percent(command, seconds=20):
    name = f"bench-{os.getpid()}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", "80", "-y", "24", command], check=True
    )
    time.sleep(1)
    pid = int(subprocess.check_output(["tmux", "list-panes", "-t", name, "-F", "#{pane_pid}"]))

    def cpu():
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK

    c0, t0 = cpu(), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu(), time.monotonic()
    subprocess.run(["tmux", "kill-session", "-t", name])
    return round(100 * (c1 - c0) / (t1 - t0), 3)


result = {"trainprof_top_cpu_percent": cpu_percent(f"exec {ROOT}/build/trainprof top")}
if shutil.which("top"):
    result["procps_top_cpu_percent"] = cpu_percent("exec top -d 1")
print(json.dumps(result))
