"""What saying where a stalled rank was last seen costs the recorder: its CPU
time over 20 s of a stall, with the look-up (record --serve, --stall-after 2:
the stall's place read from the run file once a second) against the same
recording whose stall is never judged one (--stall-after 3600: no look-up),
in alternating rounds. The training first runs 40 s of varied Python (four
threads, a few hundred distinct stacks, sampled at the default rate), so the
look-up reads a file of a real size. CPU time is utime+stime from
/proc/PID/stat of the recorder alone.

usage: stall_where_cost.py [ROUNDS]"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TRAINPROF = os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof"))
TICK = os.sysconf("SC_CLK_TCK")

SCRIPT = """
import sys, threading, time, trainprof

def depth(n, k):
    return depth(n - 1, k) + 1 if n else sum(range(k))

def work(stop):
    i = 0
    while not stop.is_set():
        depth(i % 12, 200)
        i += 1

stop = threading.Event()
for _ in range(3):
    threading.Thread(target=work, args=(stop,), daemon=True).start()
end = time.monotonic() + 40
step = 0
while time.monotonic() < end:
    trainprof.step()
    with trainprof.region("compute"):
        depth(step % 20, 2000)
    step += 1
stop.set()
open(sys.argv[1], "w").close()
trainprof.step()
with trainprof.region("compute"):
    time.sleep(3600)  # the stall
"""


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def one(tmp, stall_after):
    script, marker = tmp / "train.py", tmp / "stalled"
    script.write_text(SCRIPT)
    marker.unlink(missing_ok=True)
    run = tmp / "run.db"
    rec = subprocess.Popen(
        [TRAINPROF, "record", "-q", "--force", "--serve", "127.0.0.1:0", "--stall-after",
         str(stall_after), "-o", run, "--", sys.executable, script, marker],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    while not marker.exists():
        time.sleep(0.2)
    time.sleep(5)  # judged stalled by now (2 s), its place read since
    c0 = cpu_s(rec.pid)
    time.sleep(20)
    c1 = cpu_s(rec.pid)
    os.killpg(rec.pid, 15)
    rec.wait()
    rows = subprocess.run(
        ["sqlite3", run, "SELECT count(*) FROM stack_sample"], capture_output=True, text=True
    ).stdout.strip()
    return c1 - c0, rows


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    got = {"look-up": [], "none": []}
    rows = None
    with tempfile.TemporaryDirectory() as d:
        for _ in range(rounds):
            for arm, after in (("look-up", 2), ("none", 3600)):
                s, rows = one(pathlib.Path(d), after)
                got[arm].append(round(1000 * s / 20, 2))  # ms of CPU a second
    print(json.dumps({"recorder_cpu_ms_per_s": got, "stack_sample_rows": rows}))


if __name__ == "__main__":
    main()
