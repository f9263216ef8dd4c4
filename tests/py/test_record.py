"""End to end: real commands recorded by the real program, read back by report."""

import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import time

import pytest
from conftest import (
    EMIT,
    FAKE_NVML,
    PROGRAM,
    PYTHON,
    ROOT,
    OthersCpu,
    assert_same_report,
    committed_samples,
    kill_with_children,
    metric,
    report_from_rows,
    report_json,
    run_on_a_terminal,
    samples,
    trainprof,
)

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits

WORKLOAD = r"""
import os, sys, time
t = time.time()
while time.time() - t < 2.0:        # burn one core for 2 s
    pass
block = bytearray(300 * 1024 * 1024)
for i in range(0, len(block), 4096):  # touch every page: 300 MB resident
    block[i] = 1
with open(sys.argv[1], "wb") as f:    # write and fsync 100 MB
    chunk = os.urandom(1024 * 1024)
    for _ in range(100):
        f.write(chunk)
    f.flush()
    os.fsync(f.fileno())
time.sleep(1.2)
"""


def integral(points):
    """Sum of rate * time between samples: bytes from a bytes/s series."""
    return sum(v * (t - tp) for (tp, _), (t, v) in zip(points, points[1:]))


def test_workload_shows_cpu_memory_and_writes(run_file, tmp_path):
    data = tmp_path / "data.bin"
    with OthersCpu() as load:
        r = trainprof(
            "record", "-o", run_file, "--interval", "0.2", "--", PYTHON, "-c", WORKLOAD, data
        )
    assert r.returncode == 0, r.stderr
    assert f"into {run_file}" in r.stderr and "see: trainprof report" in r.stderr
    rep = report_json(run_file)
    assert rep["run"]["complete"] is True
    assert rep["run"]["exit_status"] == 0
    assert rep["run"]["duration_s"] > 3
    assert rep["run"]["argv"][0] == PYTHON
    cpu = metric(rep, "proc_cpu_percent")
    assert cpu["p95"] > (40 if load.busy else 80), (
        cpu
    )  # one core busy for 2 s (or what others left)
    assert cpu["max"] < 150  # a single-threaded loop, not two cores
    rss = metric(rep, "proc_rss_bytes")
    assert rss["max"] > 300e6, rss
    written = integral(samples(run_file, "proc_write_bytes_per_s"))
    assert 90e6 < written < 130e6, written
    host_cpu = metric(rep, "cpu_util_percent")
    assert 0 < host_cpu["max"] <= 100
    with open("/proc/stat") as f:  # the kernel counts steal: its eighth column
        counts_steal = len(f.readline().split()) > 8
    if counts_steal:  # the hypervisor's share, inside the busy share at every sample
        steal = dict(samples(run_file, "cpu_steal_percent"))
        busy = dict(samples(run_file, "cpu_util_percent"))
        assert steal and steal.keys() <= busy.keys(), (steal, busy)
        assert all(0 <= v <= busy[t] + 1e-9 for t, v in steal.items()), (steal, busy)
    assert metric(rep, "host_mem_used_bytes")["max"] > 300e6
    assert metric(rep, "proc_count")["max"] >= 1
    for m in rep["agents"][0]["metrics"]:
        assert m["p5"] >= 0 and m["samples"] > 0, m
    sources = {u["source"] for u in rep["agents"][0]["unavailable"]}
    assert "nvml" in sources  # no NVIDIA driver on this machine
    text = trainprof("report", run_file).stdout
    assert "proc_rss_bytes" in text and "Unavailable sources" in text
    assert "nvml: cannot load" in text


def test_metadata_and_environment(run_file):
    env = {"RANK": "3", "WORLD_SIZE": "8", "SLURM_JOB_ID": "4242", "CUDA_VISIBLE_DEVICES": "0,1"}
    r = trainprof(
        "record", "-q", "--agent", "node-a", "-o", run_file, "--", "sleep", "0.3", env=env
    )
    assert r.returncode == 0
    rep = report_json(run_file)
    meta = rep["run"]["meta"]
    assert rep["agents"][0]["name"] == "node-a"
    assert meta["env.RANK"] == "3" and meta["env.SLURM_JOB_ID"] == "4242"
    assert meta["env.CUDA_VISIBLE_DEVICES"] == "0,1"
    assert int(meta["cpu_count"]) == os.cpu_count()
    assert int(meta["mem_total_bytes"]) > 1 << 30
    assert meta["kernel"].startswith("Linux")
    assert abs(int(meta["start_wall_ns"]) / 1e9 - time.time()) < 60
    assert meta["interval_s"] == "0.5"
    assert rep["run"]["command"] == "sleep 0.3"


def test_sigterm_goes_to_the_child_first(run_file, tmp_path):
    marker = tmp_path / "cleaned-up"
    child = (
        "import signal, sys, time, pathlib\n"
        "def bye(*_):\n"
        f"    pathlib.Path({str(marker)!r}).write_text('yes'); sys.exit(5)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('ready', flush=True)\n"
        # short sleeps: a signal whose C handler runs after the
        # interpreter's last look and before its sleep begins waits
        # for that sleep to end (CPython; see docs/architecture.md)
        "for _ in range(600):\n"
        "    time.sleep(0.1)\n"
    )
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "-o", run_file, "--", PYTHON, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=20) == 5  # the child's own status: it handled SIGTERM
    assert marker.read_text() == "yes"
    rep = report_json(run_file)
    assert rep["run"]["complete"] and rep["run"]["exit_status"] == 5


def test_sigint_from_another_process_is_forwarded(run_file):
    p = subprocess.Popen([PROGRAM, "record", "-q", "-o", run_file, "--", "sleep", "60"])
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=20) == 128 + signal.SIGINT
    assert report_json(run_file)["run"]["complete"]


@pytest.mark.parametrize("attempt", range(6))
def test_sigkill_of_the_recorder_leaves_a_readable_file(run_file, attempt):
    delay = random.Random(attempt).uniform(0.02, 2.5)
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "--interval", "0.1", "-o", run_file, "--", "sleep", "30"]
    )
    time.sleep(delay)
    # what it had committed just before the kill (a loaded machine once: none 1.7 s in)
    committed = committed_samples(run_file, "cpu_util_percent")
    kill_with_children(p)
    if not run_file.exists():
        return  # killed before the file was created: nothing to read
    r = trainprof("report", "--json", run_file)
    if r.returncode == 2 and "a recording killed before its first commit" in r.stderr:
        # killed between making the file (in WAL mode) and its first commit,
        # its schema's, which a loaded machine once stretched past 0.6 s:
        # nothing was recorded, and the report says so in one line
        assert not committed, r.stderr
        return
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["run"]["complete"] is False
    if committed:  # nothing committed before the kill is lost
        cpu = metric(rep, "cpu_util_percent")
        assert cpu is not None and cpu["samples"] >= len(committed), (cpu, len(committed))
        assert rep["run"]["duration_s"] >= committed[-1][0] - committed[0][0]
    assert "INCOMPLETE" in trainprof("report", run_file).stdout


def test_training_survives_the_recorder(run_file, tmp_path):
    started, marker = tmp_path / "started", tmp_path / "finished"
    p = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            "-o",
            run_file,
            "--",
            "sh",
            "-c",
            f"echo > {started}; sleep 1; echo done > {marker}",
        ]
    )
    # killed once the training runs (on a loaded machine the recorder may
    # take longer than a fixed wait to start it: there was nothing to survive)
    for _ in range(100):
        if started.exists():
            break
        time.sleep(0.05)
    assert started.exists()
    p.kill()
    p.wait()
    for _ in range(100):
        if marker.exists():
            break
        time.sleep(0.1)
    assert marker.read_text().strip() == "done"


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs, where a command can fill the disk the run file is on."""
    where = tmp_path / "small"
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


# Runs beside the other tests: its times are its command's sleeps (the fill
# 1.5 s in, the disk freed 2.5 s later), and what it asserts of them spans
# seconds, where others' work on the CPUs delays the recorder's writes by
# milliseconds.
def test_a_full_disk_costs_rows_not_the_training(small_disk):
    """The command fills the disk the run file is on, then frees it: the
    recorder warns once, the command goes on, the file keeps its rows up to
    the failure, and takes the run's end (exit status, duration) once there
    is room again, saying when and why its rows stop."""
    run_file, fill = small_disk / "run.db", small_disk / "fill"
    other = small_disk.parent / "other.db"  # a node that started earlier, for the merge below
    assert trainprof("record", "-q", "--agent", "other", "-o", other, "--", "true").returncode == 0
    r = trainprof(
        "record",
        "-i",
        "0.1",
        "-o",
        run_file,
        "--",
        "sh",
        "-c",
        f"sleep 1.5; dd if=/dev/zero of={fill} bs=4k 2>/dev/null; sleep 2.5; "
        f"rm {fill}; sleep 2; exit 3",
    )
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("writing the run file failed: database or disk is full") == 1
    assert "(exit status 3)" in r.stderr and "the file holds the first" in r.stderr
    run = report_json(run_file)["run"]
    assert run["complete"] is False and run["exit_status"] == 3
    assert run["duration_s"] > 5.5  # the end, written once the disk had room
    failed = run["write_failed"]
    assert failed["reason"] == "database or disk is full"
    assert 0.9 < failed["at_s"] < 3.0, failed  # the last batch written before the fill
    with sqlite3.connect(run_file) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        last_ns = db.execute("SELECT max(t_ns) FROM sample").fetchone()[0]
    assert failed["at_s"] - 1.0 < last_ns / 1e9 <= failed["at_s"] + 0.05
    assert re.search(
        r"INCOMPLETE: the run file was not written after [0-9.]+ m?s \(database or "
        r"disk is full\); the command went on to exit status 3$",
        trainprof("report", run_file).stdout,
        re.M,
    )
    # merged, the node's failure shows on the merged time line, named
    merged = small_disk.parent / "merged.db"
    assert trainprof("merge", "--force", "-o", merged, other, run_file).returncode == 0
    shift = (
        int(report_json(run_file)["run"]["meta"]["start_wall_ns"])
        - int(report_json(other)["run"]["meta"]["start_wall_ns"])
    ) / 1e9
    assert shift > 0
    run = report_json(merged)["run"]
    assert run["complete"] is False and run["failed_agent"] == socket.gethostname()
    assert run["write_failed"]["at_s"] == pytest.approx(failed["at_s"] + shift, abs=1e-6)
    page = small_disk.parent / "run.html"
    assert trainprof("html", "-o", page, run_file).returncode == 0
    assert "incomplete: the run file was not written after" in page.read_text()


def limited(kib):
    """A preexec_fn that caps the address space (ulimit -v) at kib KiB."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))

    return cap


@pytest.mark.parametrize("kib", [13000, 14000, 15000, 16000, 20000, 28000, 40000, 64000])
def test_an_address_space_limit_never_aborts_the_recorder_nor_makes_it_lie(run_file, kib):
    """Under `ulimit -v`, from too little for the writer's thread to plenty:
    the recorder either refuses before the command starts (exit 1, one line,
    no file; 126 where not even the command could be spawned) or records it and says so truthfully: the command's own exit
    status and name, a finished file that `report` reads. Never abort()."""
    r = trainprof(
        "record", "-o", run_file, "--", "sh", "-c", "sleep 0.3; exit 4", preexec_fn=limited(kib)
    )
    if r.returncode == 127:  # the dynamic loader, before trainprof's first line
        # (loading a library, or the main thread's TLS after: CI's fresh VM at
        # 15,000 KiB said the second)
        loader = ("error while loading shared libraries", "cannot allocate TLS data structures")
        assert any(x in r.stderr for x in loader), r.stderr
        return
    if r.returncode == 126:  # posix_spawn itself found no memory: as a shell says it
        assert "cannot run 'sh': Cannot allocate memory" in r.stderr, r.stderr
        assert not run_file.exists()
        return
    if r.returncode == 1:
        if "cannot initialise run file" in r.stderr:  # too little even for the writer
            # GnuTLS (libmicrohttpd's, loaded with the program) says so first
            # from its own constructor when it had too little: not trainprof's line
            ours = [x for x in r.stderr.strip().splitlines() if not x.startswith("Error in GnuTLS")]
            assert len(ours) == 1 and ours[0].endswith(": out of memory"), r.stderr
            assert not run_file.exists()
            return
        assert "cannot start the recorder's writer thread" in r.stderr, r.stderr
        assert "the command was not started" in r.stderr
        assert not run_file.exists()
        return
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert "recorded " in r.stderr and " of `sh -c 'sleep 0.3; exit 4'` into " in r.stderr
    assert "Aborted" not in r.stderr and "``" not in r.stderr
    run = report_json(run_file)["run"]
    assert run["exit_status"] == 4 and run["meta"]["status"] == "finished"
    assert run["command"] == "sh -c 'sleep 0.3; exit 4'"


def test_memory_running_out_while_recording_costs_events_not_the_run(run_file):
    """A process floods the recorder with regions under a 100 MB address
    space: the recorder keeps going, counts what it had no memory for, and
    says it in the closing lines and among the run's unavailable sources;
    the command's exit status and the run's end are in the file."""
    r = trainprof("record", "-o", run_file, "--", EMIT, "flood", preexec_fn=limited(100000))
    assert r.returncode == 0, r.stderr
    lost = re.search(r"memory ran out: (\d+) timing events were not recorded", r.stderr)
    assert lost and int(lost.group(1)) > 0, r.stderr
    report = report_json(run_file)
    assert report["run"]["meta"]["status"] == "finished" and report["run"]["exit_status"] == 0
    assert {"source": "recorder memory", "reason": lost.group(0)} in report["agents"][0][
        "unavailable"
    ]
    # the Timings figures say they miss them (and any the writer was behind for)
    assert report["events_not_recorded"] >= int(lost.group(1))
    text = trainprof("report", run_file).stdout
    assert f"{report['events_not_recorded']} timing events were not recorded" in text


def test_status_line_on_a_terminal(run_file):
    rc, text = run_on_a_terminal(
        [PROGRAM, "record", "-o", run_file, "--", "sleep", "2.5"], timeout=20
    )
    assert rc == 0
    assert "\r\x1b[Ktrainprof 00:00:0" in text
    assert " cpu " in text and " mem " in text and "GiB" in text
    assert text.count("\n") <= 6  # redrawn in place, then a short summary


def test_quiet_when_not_a_terminal(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", "sleep", "1.2")
    assert r.returncode == 0 and r.stderr == ""


def test_empty_run_reports(run_file):
    r = trainprof("record", "-o", run_file, "--", "true")
    assert r.returncode == 0
    rep = report_json(run_file)
    assert rep["run"]["complete"] is True
    text = trainprof("report", run_file)
    assert text.returncode == 0


STARTUP_THEN_STEPS = r"""
import multiprocessing, time, trainprof
def burn(seconds):
    t = time.time()
    while time.time() - t < seconds:
        pass
if __name__ == "__main__":
    time.sleep(4)                      # the start-up: idle
    other = multiprocessing.Process(target=burn, args=(3.3,))
    other.start()
    t = time.time()
    while time.time() - t < 3:         # the steps: two processes busy
        burn(0.05)
        trainprof.step()
    other.join()
"""


def test_figures_over_the_steps_leave_the_start_up_out(run_file, tmp_path):
    """Each series also has its figures over the span of its agent's steps,
    which the rules of thumb judge: 4 idle seconds before 3 s of steps on two
    busy processes leave the whole run's median CPU use near 0, and the
    steps' near 200 %. Stored by the recorder, computed the same from the
    rows, kept by a merge; a run that marks no steps has none."""
    idle = tmp_path / "idle.db"  # first: the merge shifts the later run's times
    r = trainprof("record", "-q", "-i", "0.1", "--agent", "idle", "-o", idle, "--", "sleep", "0.5")
    assert r.returncode == 0, r.stderr
    assert metric(report_json(idle), "cpu_util_percent")["in_steps"] is None
    script = tmp_path / "steps.py"
    script.write_text(STARTUP_THEN_STEPS)
    with OthersCpu() as load:
        r = trainprof("record", "-q", "-i", "0.1", "-o", run_file, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    cpu = metric(rep, "proc_cpu_percent")
    # two busy processes: both cores, or what others leave of them (others'
    # CPUs are averaged over the whole run, 4 idle seconds included: during
    # the 3 s of steps they took about 2.5 times as much)
    floor = max(60, 150 - 250 * load.cpus)
    assert cpu["p50"] < 50 and cpu["in_steps"]["p50"] >= floor, (cpu, load.cpus)
    assert 20 <= cpu["in_steps"]["samples"] <= 40 and cpu["samples"] >= 65
    assert_same_report(rep, report_from_rows(run_file, tmp_path))
    merged = tmp_path / "merged.db"  # a second node's command: --force
    assert trainprof("merge", "-q", "--force", "-o", merged, run_file, idle).returncode == 0
    both = report_json(merged)
    assert metric(both, "proc_cpu_percent")["in_steps"] == cpu["in_steps"]
    assert metric(both, "proc_cpu_percent", agent=1)["in_steps"] is None
    # the span they cover, from the first step mark to the last: kept by the
    # merge on the merged time line (where the merged marks are)
    window = rep["agents"][0]["steps_window"]
    with sqlite3.connect(run_file) as db:
        marks = db.execute(
            "SELECT min(t_ns) / 1e9, max(t_ns) / 1e9 FROM mark WHERE kind = 3"
        ).fetchone()
    assert (window["start_s"], window["end_s"]) == pytest.approx(marks, abs=1e-9)
    assert 3.5 < window["start_s"] < 5 and 2.5 < window["end_s"] - window["start_s"] < 3.5
    assert report_json(idle)["agents"][0]["steps_window"] is None
    with sqlite3.connect(merged) as db:
        marks = db.execute(
            "SELECT min(m.t_ns) / 1e9, max(m.t_ns) / 1e9 FROM mark m"
            " JOIN thread t ON t.id = m.thread_id JOIN agent a ON a.id = t.agent_id"
            " WHERE m.kind = 3 AND a.name = ?",
            (both["agents"][0]["name"],),
        ).fetchone()
    merged_window = both["agents"][0]["steps_window"]
    assert (merged_window["start_s"], merged_window["end_s"]) == pytest.approx(marks, abs=1e-9)
    assert merged_window["start_s"] > window["start_s"] + 0.5  # on the merged time line
    assert both["agents"][1]["steps_window"] is None
    # The text tables show the steps' figures with the whole run's max beside,
    # for the agent that marked steps only; --whole-run the whole run's. (--all:
    # the idle agent's process CPU stayed zero, which folds without it.)
    tables = agent_rows(trainprof("report", "--all", merged).stdout, "proc_cpu_percent")
    steps_title, steps_row = tables[0]
    assert "during its training steps" in steps_title, steps_title
    assert steps_row[2] == f"{cpu['in_steps']['p50']:.1f}" and steps_row[5] == f"{cpu['max']:.1f}"
    idle_title, idle_row = tables[1]
    assert "training steps" not in idle_title and len(idle_row) == 5, idle_title
    whole_title, whole_row = agent_rows(
        trainprof("report", "--whole-run", merged).stdout, "proc_cpu_percent"
    )[0]
    assert "training steps" not in whole_title and whole_row[2] == f"{cpu['p50']:.1f}"


def agent_rows(text, name):
    """Each agent's System metrics title and its row of metric name, as the
    numbers of its cells (mean, p5, p50, p95, max[, run max])."""
    found, title = [], None
    for line in text.splitlines():
        if line.startswith("System metrics, agent"):
            title = line
        elif title and line.split()[:1] == [name]:
            found.append((title, line.split()[1::2]))
            title = None
    return found


def test_fake_gpus_end_to_end(run_file):
    r = trainprof(
        "record",
        "-o",
        run_file,
        "--interval",
        "0.1",
        "--",
        "sleep",
        "1.5",
        env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"},
    )
    assert r.returncode == 0, r.stderr
    assert "gpu0 50.0 % mean" in r.stderr and "gpu1 60.0 % mean" in r.stderr
    rep = report_json(run_file)
    gpus = rep["agents"][0]["gpus"]
    assert [g["name"] for g in gpus] == ["Fake GPU 0", "Fake GPU 1"]
    assert gpus[0]["energy_source"] == "counter"
    assert rep["run"]["meta"]["gpu_driver_version"] == "999.99-fake"
    assert metric(rep, "gpu_util_percent", {"gpu": "1"})["mean"] == 60
    assert metric(rep, "gpu_mem_used_bytes", {"gpu": "0"})["max"] == 1 << 30
    energy = metric(rep, "gpu_energy_joules", {"gpu": "0"})
    assert 300 * 1.0 < energy["max"] < 300 * 2.5  # 300 W for about 1.5 s
    assert metric(rep, "gpu_pcie_rx_bytes_per_s", {"gpu": "0"}) is not None
    text = trainprof("report", run_file).stdout
    assert "GPUs, agent" in text and "gpu=0  Fake GPU 0" in text


# Runs a command as a child subreaper (prctl): the processes it leaves
# orphaned are reparented to it, not to init, and reaped here, so that what
# they used is charged with the rest; prints the CPU-seconds of all of them.
# A DataLoader's workers under a fork server (3.14's default start method)
# are the server's children, and the server, which no one waits for, ends
# after the script: its CPU, the workers' with it, was charged to init.
CHARGED_ALL = """
import ctypes, os, resource, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(used.ru_utime + used.ru_stime)
sys.exit(rc)
"""


@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_real_pytorch_training(tmp_path, run_file, start):
    """The training tree's CPU, as recorded, is what the kernel charged the
    command and every process it started (the oracle: their rusage, all
    reaped by a subreaper), not a share of a machine that other tests may be
    loading; with its DataLoader's workers forked by the script, and started
    by a fork server, as from CPython 3.14 by default."""
    script = tmp_path / "train.py"
    script.write_text(
        f"import multiprocessing, runpy\nmultiprocessing.set_start_method({start!r})\n"
        f"runpy.run_path({str(ROOT / 'examples' / 'train.py')!r}, run_name='__main__')\n"
    )
    r = subprocess.run(
        [PYTHON, "-c", CHARGED_ALL, PROGRAM, "record", "-q", "-o", run_file, "--", PYTHON, script]
        + ["--epochs", "1", "--samples", "4096", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    charged = float(r.stdout.split()[-1])
    rep = report_json(run_file)
    assert metric(rep, "proc_count")["max"] >= 3  # the script and its 2 DataLoader workers
    assert metric(rep, "proc_threads")["max"] > 3
    # each sample is the tree's share over the interval since the one before
    points = samples(run_file, "proc_cpu_percent")
    seen = sum(v / 100 * (t1 - t0) for (t0, _), (t1, v) in zip(points, points[1:]))
    # the recorder's own CPU and the start-up before the first sample are
    # charged but not seen
    assert 0.25 * charged < seen <= 1.05 * charged + 0.1, (seen, charged)


# The training starts a daemon (double fork, setsid) that goes on working for
# a second and a half after the command itself has ended. The command ends
# once the daemon has recorded its first region, so that the recorder knows
# the daemon (it connected) by then: beside two CPU burners and the suite it
# once did not yet, 0.4 s after its fork.
DAEMON = """
import os, sys, time, trainprof
ready = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(300):
            with trainprof.region("daemon_work"):
                time.sleep(0.005)
            if i == 0:
                open(ready, "w").close()
        os._exit(0)
    os._exit(0)
with trainprof.region("main_work"):
    time.sleep(0.1)
deadline = time.monotonic() + 60
while not os.path.exists(ready) and time.monotonic() < deadline:
    time.sleep(0.01)
"""


def test_a_daemon_the_command_left_running_is_waited_for_or_said(tmp_path):
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, tmp_path / "ready")
    assert r.returncode == 0, r.stderr
    rows = {t["name"]: t["count"] for t in report_json(run)["timings"]}
    assert rows == {"daemon_work": 300, "main_work": 1}, rows
    # not waited for long enough: the run says which process it left behind
    run2 = tmp_path / "short.db"
    r = trainprof(
        "record",
        "-q",
        "--wait-after-exit",
        "0.3",
        "-o",
        run2,
        "--",
        PYTHON,
        script,
        tmp_path / "ready2",
    )
    assert r.returncode == 0, r.stderr
    rows = {t["name"]: t["count"] for t in report_json(run2)["timings"]}
    assert rows.get("daemon_work", 0) < 300
    with sqlite3.connect(run2) as db:
        said = db.execute(
            "SELECT reason FROM unavailable WHERE source ="
            " 'timings of processes that outlived the command'"
        ).fetchall()
    assert len(said) == 1 and "1 traced process (pid " in said[0][0], said
    r = trainprof("record", "--wait-after-exit", "-1", "--", "true")
    assert r.returncode == 2 and "wait-after-exit" in r.stderr


def test_sqlite_companions_left_beside_the_output_are_refused_with_why(tmp_path):
    out = tmp_path / "run.db"
    (tmp_path / "run.db-shm").symlink_to(tmp_path / "elsewhere")
    r = trainprof("record", "-q", "-o", out, "--", "true")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "run.db-shm is already there (a symbolic link)" in r.stderr, r.stderr
    assert "not an error" not in r.stderr and not out.exists()
    assert not (tmp_path / "elsewhere").exists()
    r = trainprof("record", "-q", "--force", "-o", out, "--", "true")  # it clears them
    assert r.returncode == 0 and out.exists()
