"""What sampling Python stacks costs the training, against py-spy, in one run.

1. A pure-Python loop (a fixed amount of work, about 2 s): its wall time
   bare, under `trainprof record --stacks 0`, `--stacks 100`, and under
   `py-spy record -r 100` in its default mode (it pauses the process for
   each sample) and with --nonblocking. Configurations interleaved, medians
   of per-round ratios with their quartiles. Beside the wall time, two
   figures this VM's drifting speed leaves steady: the time the loop's
   thread was not on a CPU (wall less its own CPU time: a sampler that
   pauses it shows here), and the CPU the sampling itself took per second
   of loop (trainprof: its sampler thread, from /proc, and what the
   recorder took beyond its run with --stacks 0; py-spy: its own process).
2. The bundled example (examples/train.py, one epoch): its mean step time
   from the report with --stacks 0 and --stacks 100, interleaved, medians.
3. The run file's growth per hour and sampled thread (the stack tables'
   pages, from SQLite's dbstat), for the loop and for the example.
4. With --idle only: a process of N threads blocked on an Event (64, 500,
   2,000) beside a main thread that loops a fixed amount of work (about
   10 s here: the sampler reads every idle thread for its first second): the
   sampler thread's CPU (from /proc, % of a core over the loop) and the
   loop thread's wall and CPU time, under --stacks 0, --stacks 100 and
   py-spy -r 100 --nonblocking (its own process's CPU), interleaved; and
   the stack rows --stacks 100 wrote.
5. With --spare only: the same process (64 and 500 idle threads) under
   --stacks 100, as is and with one more thread state that carries the main
   thread's ids for good (PyThreadState_New from the main thread, as a C
   extension may keep one): the walker leaves it unread and reads the list
   of threads again every 10 walks while it stays.

    python bench/stack_cost.py [--runs 7]
    python bench/stack_cost.py --idle [--runs 3]
    python bench/stack_cost.py --spare [--runs 3]
    python bench/stack_cost.py --loop-only --peer DIR [--runs 15]

--peer DIR adds to the loop's configurations `record --stacks 100` with DIR
first on PYTHONPATH: another build of the package (a trainprof/ folder with
its _native extension, made as tools/gpu-check.sh makes one), the peer of a
change to the sampler measured in the same rounds. --loop-only leaves out
the example and the file's growth.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
PYTHON = sys.executable
PYSPY = shutil.which("py-spy", path=os.path.dirname(PYTHON)) or shutil.which("py-spy")

LOOP = r"""
import os, sys, time
def work(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s
t, c = time.perf_counter(), time.thread_time()
work(int(sys.argv[1]))
wall, thread_cpu = time.perf_counter() - t, time.thread_time() - c
sampler = 0.0  # trainprof's sampler thread's CPU, where there is one
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        if f.read().strip() != "trainprof-stack":
            continue
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    sampler += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
print("LOOP", wall, thread_cpu, time.process_time(), sampler)
"""


def timed(argv, tmp, env=None):
    """Under argv, the loop's wall time, its thread's CPU, its process's CPU,
    its sampler thread's CPU (it prints them), and the CPU of every process
    argv ran beyond the loop's process (the recorder, or py-spy)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=600,
        env=dict(os.environ, **env) if env else None,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{argv}: {r.stderr}")
    for line in reversed(r.stdout.splitlines()):  # py-spy adds lines of its own
        if line.startswith("LOOP "):
            wall, thread_cpu, process_cpu, sampler = map(float, line.split()[1:])
            children = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return {
                "wall": wall,
                "off_cpu": wall - thread_cpu,
                "sampler": sampler,
                "others": max(0.0, children - process_cpu),
            }
    raise RuntimeError(f"{argv}: no time in {r.stdout!r}")


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return [round(x, 4) for x in q]


def loop_costs(tmp, runs, n, peer=None):
    script = tmp / "loop.py"
    script.write_text(LOOP)
    db = str(tmp / "loop.db")
    configs = {
        "bare": [PYTHON, script, str(n)],
        "record --stacks 0": [
            PROGRAM,
            "record",
            "-q",
            "-f",
            "-o",
            db,
            "--stacks",
            "0",
            "--",
            PYTHON,
            script,
            str(n),
        ],
        "record --stacks 100": [
            PROGRAM,
            "record",
            "-q",
            "-f",
            "-o",
            db,
            "--stacks",
            "100",
            "--",
            PYTHON,
            script,
            str(n),
        ],
    }
    envs = {}
    if peer:
        peer_key = "record --stacks 100 (peer)"
        configs[peer_key] = configs["record --stacks 100"]
        envs[peer_key] = {"PYTHONPATH": str(pathlib.Path(peer).resolve())}
    if PYSPY:
        out = str(tmp / "spy.txt")
        configs["py-spy -r 100"] = [
            PYSPY,
            "record",
            "-r",
            "100",
            "--format",
            "raw",
            "-o",
            out,
            "--",
            PYTHON,
            script,
            str(n),
        ]
        configs["py-spy -r 100 --nonblocking"] = [
            PYSPY,
            "record",
            "-r",
            "100",
            "--nonblocking",
            "--format",
            "raw",
            "-o",
            out,
            "--",
            PYTHON,
            script,
            str(n),
        ]
    rounds = {k: [] for k in configs}
    for _ in range(runs):
        for k, argv in configs.items():
            rounds[k].append(timed([str(a) for a in argv], tmp, envs.get(k)))

    # this VM's speed drifts by more than the effects measured: each round's
    # configurations against that round's bare run and stacks-off run, then
    # the median of those ratios, and their quartiles
    def ratios(k, base):
        return [t["wall"] / b["wall"] - 1 for t, b in zip(rounds[k], rounds[base])]

    out = {}
    for k, v in rounds.items():
        wall = sum(x["wall"] for x in v)
        if k.startswith("py-spy"):
            sampling = sum(x["others"] for x in v)
        elif k.startswith("record --stacks 100"):  # its sampler, and the recorder's beyond
            off = rounds["record --stacks 0"]
            sampling = (
                sum(x["sampler"] for x in v)
                + max(
                    0.0,
                    sum(x["others"] for x in v) / wall
                    - sum(x["others"] for x in off) / sum(x["wall"] for x in off),
                )
                * wall
            )
        else:
            sampling = 0.0
        out[k] = {
            "median_s": round(statistics.median(x["wall"] for x in v), 4),
            "vs_bare": round(statistics.median(ratios(k, "bare")), 4),
            "vs_stacks_off": round(statistics.median(ratios(k, "record --stacks 0")), 4),
            "vs_stacks_off_quartiles": quartiles(ratios(k, "record --stacks 0")),
            "loop_off_cpu_ms_per_s": round(1e3 * sum(x["off_cpu"] for x in v) / wall, 2),
            "sampling_cpu_ms_per_s": round(1e3 * sampling / wall, 2),
        }
    return out


def example_steps(tmp, runs):
    steps = {"0": [], "100": []}
    for _ in range(runs):  # pairs, as loop_costs
        for hz in steps:
            db = tmp / f"ex{hz}.db"
            subprocess.run(
                [
                    PROGRAM,
                    "record",
                    "-q",
                    "-f",
                    "-o",
                    db,
                    "--stacks",
                    hz,
                    "--",
                    PYTHON,
                    ROOT / "examples" / "train.py",
                    "--epochs",
                    "1",
                ],
                check=True,
                capture_output=True,
                timeout=600,
            )
            rep = json.loads(
                subprocess.run(
                    [PROGRAM, "report", "--json", db], check=True, capture_output=True, text=True
                ).stdout
            )
            steps[hz].append(rep["steps"][0]["mean_s"])
    off, on = statistics.median(steps["0"]), statistics.median(steps["100"])
    return {
        "mean_step_s_stacks_off": round(off, 6),
        "mean_step_s_stacks_100": round(on, 6),
        "paired_ratio": round(
            statistics.median(a / b for a, b in zip(steps["100"], steps["0"])) - 1, 4
        ),
    }


def stack_bytes(db, hz=100):
    """The stack tables of run file db: rows, samples, and bytes per hour of
    one sampled thread (samples / hz is the sampled threads' seconds)."""
    with sqlite3.connect(db) as c:
        rows, samples = c.execute("SELECT COUNT(*), SUM(count) FROM stack_sample").fetchone()
        try:
            pages = (
                c.execute(
                    "SELECT SUM(pgsize) FROM dbstat WHERE name IN ('stack_sample',"
                    " 'stack_node', 'frame')"
                ).fetchone()[0]
                or 0
            )
        except sqlite3.OperationalError:  # an SQLite without dbstat
            pages = None
    return {
        "rows": rows,
        "samples": samples,
        "bytes": pages,
        "bytes_per_hour_per_thread": round(pages / (samples / hz) * 3600)
        if pages and samples
        else None,
    }


def file_growth(tmp, n):
    """The run file's growth: the loop (one busy thread, its line moving) and
    the example's last run with stacks (three processes, torch's calls)."""
    db = tmp / "growth.db"
    subprocess.run(
        [
            PROGRAM,
            "record",
            "-q",
            "-f",
            "-o",
            db,
            "--stacks",
            "100",
            "--",
            PYTHON,
            tmp / "loop.py",
            str(n),
        ],
        capture_output=True,
        check=True,
    )
    return {"loop": stack_bytes(db), "example": stack_bytes(tmp / "ex100.db")}


IDLE = r"""
import os, sys, threading, time
ev = threading.Event()
pool = [threading.Thread(target=ev.wait) for _ in range(int(sys.argv[1]))]
for t in pool:
    t.start()
if os.environ.get("SPARE"):  # a thread state with this thread's ids, kept
    import ctypes
    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyThreadState_New.restype = ctypes.c_void_p
    api.PyThreadState_New.argtypes = [ctypes.c_void_p]
    spare = api.PyThreadState_New(api.PyInterpreterState_Get())
time.sleep(0.5)
def work(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s
def sampler_cpu():
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() != "trainprof-stack":
                    continue
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0
s0, t, c = sampler_cpu(), time.perf_counter(), time.thread_time()
work(int(sys.argv[2]))
wall, cpu = time.perf_counter() - t, time.thread_time() - c
print("IDLE", wall, cpu, sampler_cpu() - s0)
ev.set()
for t in pool:
    t.join()
"""


def idle_costs(tmp, runs, n, spare=False):
    script = tmp / "idle.py"
    script.write_text(IDLE)
    out = {}
    for threads in (64, 500) if spare else (64, 500, 2000):
        db = str(tmp / f"idle{threads}.db")
        stacks100 = [PROGRAM, "record", "-q", "-f", "-o", db, "--stacks", "100", "--"]
        configs = {"record --stacks 100": stacks100}
        if spare:
            configs["record --stacks 100, a spare state"] = ["env", "SPARE=1"] + stacks100
        else:
            configs["record --stacks 0"] = [
                PROGRAM,
                "record",
                "-q",
                "-f",
                "-o",
                db,
                "--stacks",
                "0",
                "--",
            ]
        if PYSPY and not spare:
            configs["py-spy -r 100 --nonblocking"] = [
                PYSPY,
                "record",
                "-r",
                "100",
                "--nonblocking",
                "--format",
                "raw",
                "-o",
                str(tmp / "spy.txt"),
                "--",
            ]
        got = {k: [] for k in configs}
        for _ in range(runs):
            for k, prefix in configs.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = subprocess.run(
                    [str(a) for a in prefix] + [PYTHON, str(script), str(threads), str(n)],
                    capture_output=True,
                    text=True,
                    cwd=tmp,
                    timeout=600,
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                line = [x for x in r.stdout.splitlines() if x.startswith("IDLE ")]
                if r.returncode != 0 or not line:
                    raise RuntimeError(f"{k}: {r.stderr}")
                wall, cpu, sampler = map(float, line[-1].split()[1:])
                children = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                got[k].append(
                    {"wall": wall, "cpu": cpu, "sampler": sampler, "command_cpu": children}
                )
        row = {}
        for k, v in got.items():
            row[k] = {
                "loop_wall_s": round(statistics.median(x["wall"] for x in v), 3),
                "loop_cpu_s": round(statistics.median(x["cpu"] for x in v), 3),
                "sampler_core_percent": round(
                    100 * statistics.median(x["sampler"] / x["wall"] for x in v), 2
                ),
                "command_cpu_s": round(statistics.median(x["command_cpu"] for x in v), 3),
            }
        with sqlite3.connect(tmp / f"idle{threads}.db") as c:
            row["stack_rows_at_100"] = c.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
        out[threads] = row
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=int, default=30_000_000)
    ap.add_argument("--idle", action="store_true", help="only the idle threads' costs")
    ap.add_argument(
        "--spare",
        action="store_true",
        help="only the cost of a thread state that carries the main thread's ids",
    )
    ap.add_argument("--peer", help="a folder with another build's trainprof/ package")
    ap.add_argument("--loop-only", action="store_true", help="only the loop's costs")
    a = ap.parse_args()
    if a.peer and not (pathlib.Path(a.peer) / "trainprof" / "__init__.py").is_file():
        sys.exit(f"stack_cost.py: --peer {a.peer}: no trainprof/__init__.py there")
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        if a.spare:
            print(json.dumps({"spare": idle_costs(tmp, a.runs, a.work * 12, spare=True)}, indent=1))
            return
        if a.idle:
            print(json.dumps({"idle": idle_costs(tmp, a.runs, a.work * 12)}, indent=1))
            return
        result = {"loop": loop_costs(tmp, a.runs, a.work, a.peer)}
        if not a.loop_only:
            result["example"] = example_steps(tmp, max(3, a.runs // 2))
            result["file"] = file_growth(tmp, a.work * 5)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
