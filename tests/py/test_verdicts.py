"""The system verdicts (GPUs, host memory, CPUs), per agent, from stored
summaries that the test sets where reality can't be made to misbehave: a
synthetic node (bench/gen_run) whose busy GPUs, half-used CPUs and memory well
below its total leave every rule quiet until one figure is changed; and a
real training beside CPU burners, for what only a real kernel says."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from conftest import PYTHON, ROOT, report_json, trainprof, words

GIB = 1 << 30


def node(tmp_path, name, gpus=2, first_rank=0):
    path = tmp_path / f"{name}.db"
    subprocess.run(
        [
            ROOT / "build" / "bench" / "gen_run",
            path,
            "0.02",
            "0.5",
            "2",
            str(gpus),
            "1",
            "1",
            name,
            str(first_rank),
        ],
        check=True,
        capture_output=True,
    )
    return path


def set_stat(path, metric, labels, tables=("summary_series", "summary_series_steps"), **stats):
    """Sets a stored summary's statistics of one series of the file's agent,
    over the whole run and over the steps (which the rules judge)."""
    with sqlite3.connect(path) as db:
        sets = ", ".join(f"{k} = ?" for k in stats)
        for table in tables:
            n = db.execute(
                f"UPDATE {table} SET {sets} WHERE series_id = (SELECT s.id FROM"
                " series s JOIN metric m ON m.id = s.metric_id WHERE m.name = ? AND"
                " s.labels = ?)",
                (*stats.values(), metric, labels),
            ).rowcount
            assert n == 1, (table, metric, labels)


def verdicts(*paths):
    """(kind, evidence, message) of each verdict of the report of paths."""
    rep = json.loads(trainprof("report", "--json", *paths).stdout)
    return [(v["kind"], v["evidence"], v["message"]) for v in rep["verdicts"]]


def test_a_quiet_node_has_no_verdict_and_each_rule_fires_on_its_figure(tmp_path):
    quiet = node(tmp_path, "quiet")
    assert verdicts(quiet) == []
    # CPUs maxed out on a node with GPUs (they feed the GPUs)
    cpu = node(tmp_path, "cpu")
    set_stat(cpu, "cpu_util_percent", "{}", mean=97.0, p50=98.0)
    # busy with others (the training's tree 0.5 of its 2 cores), who did not
    # hold it back (no pressure to speak of): not its saturation to cut
    assert verdicts(cpu) == []
    set_stat(cpu, "proc_cpu_percent", "{}", mean=180.0)  # 1.8 of 2 cores: the training's
    [(kind, ev, msg)] = verdicts(cpu)
    assert kind == "cpu_saturated" and ev["cpu_util_mean_percent"] == 97.0
    assert ev["agent"] is None and 0 < ev["pressure_cpu_some_mean_percent"] < 100
    assert "busy 97% of the time" in msg and "more workers won't load faster" in msg
    # host memory: the total is MemTotal (used + available), 512 GiB here
    mem = node(tmp_path, "mem")
    set_stat(mem, "host_mem_used_bytes", "{}", max=0.95 * 512 * GIB)
    [(kind, ev, msg)] = verdicts(mem)
    assert kind == "memory_pressure" and round(ev["mem_total_bytes"] / GIB) == 512
    assert "peak 486.4 of 512.0 GiB" in msg
    # a GPU below 90 % utilization, and one near its memory's end
    gpu = node(tmp_path, "gpu")
    set_stat(gpu, "gpu_util_percent", '{"gpu":"1"}', mean=40.0, p50=41.0)
    set_stat(gpu, "gpu_mem_used_bytes", '{"gpu":"0"}', max=78.0 * GIB)
    found = {(k, ev["gpu"]) for k, ev, _ in verdicts(gpu)}
    assert found == {("gpu_underused", 1), ("memory_pressure", 0)}


def test_cpu_saturation_under_a_cgroup_limit_and_contention_on_a_cpu_only_node(tmp_path):
    limited = node(tmp_path, "limited")
    with sqlite3.connect(limited) as db:
        db.execute("INSERT INTO meta VALUES ('cgroup_cpu_limit_cores', '1.5')")
    set_stat(limited, "proc_cpu_percent", "{}", mean=140.0)
    [(kind, ev, msg)] = verdicts(limited)
    assert kind == "cpu_saturated" and ev["cgroup_cpu_limit_cores"] == 1.5
    assert "used 1.4 of the 1.5 cores its cgroup allows" in msg
    # training on the CPU is meant to keep it busy: no verdict there
    cpu_only = node(tmp_path, "cpu-only", gpus=0)
    set_stat(cpu_only, "cpu_util_percent", "{}", mean=99.0)
    assert verdicts(cpu_only) == []
    # but others held them: the training's processes a sliver of it, tasks waiting
    set_stat(cpu_only, "pressure_cpu_some_percent", "{}", mean=60.0)
    [(kind, ev, msg)] = verdicts(cpu_only)
    assert kind == "cpu_contention" and ev["pressure_cpu_some_mean_percent"] == 60.0
    assert ev["others_cpu_percent"] > 45 and ev["cpu_count"] >= 1
    assert "Other processes held the CPUs" in msg and "busy 99% of the time" in msg


def add_series(path, metric, labels, **stats):
    """Adds a series of the file's agent with the statistics given (the
    same over the whole run and over the steps), as a recorder that read
    it would have stored its summary."""
    cols = ("count", "mean", "min", "p5", "p50", "p95", "max")
    row = [stats.get(c, stats.get("mean")) for c in cols]
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT OR IGNORE INTO metric (name, unit, help) VALUES (?, 'percent', '')", (metric,)
        )
        sid = db.execute(
            "INSERT INTO series (agent_id, metric_id, labels) SELECT s.agent_id,"
            " (SELECT id FROM metric WHERE name = ?), ? FROM series s LIMIT 1",
            (metric, labels),
        ).lastrowid
        for table in ("summary_series", "summary_series_steps"):
            db.execute(f"INSERT INTO {table} VALUES (?, {', '.join('?' * len(cols))})", (sid, *row))


def test_a_virtual_machine_s_host_that_took_its_cpus(tmp_path):
    """The steal a cloud VM's kernel counts (no real host can be made to
    steal on demand): 25 % of the CPUs' time over the steps, while the
    training used 1.5 cores, is cpu_steal, with its figures; 5 % is not."""
    vm = node(tmp_path, "vm")
    set_stat(vm, "proc_cpu_percent", "{}", mean=150.0)
    add_series(vm, "cpu_steal_percent", "{}", count=100, mean=25.0, p95=41.0)
    [(kind, ev, msg)] = verdicts(vm)
    assert kind == "cpu_steal", (kind, ev)
    assert ev["cpu_steal_mean_percent"] == 25.0 and ev["cpu_steal_p95_percent"] == 41.0
    assert ev["proc_cpu_mean_percent"] == 150.0 and ev["over"] == "steps"
    assert "host took its CPUs away 25% of the time" in msg and "used 1.5 of its" in msg
    text = trainprof("report", vm).stdout
    assert "[cpu_steal]" in text and "dedicated cores" in text, text
    set_stat(vm, "cpu_steal_percent", "{}", mean=5.0)
    assert verdicts(vm) == []


def test_every_agent_is_checked_and_named(tmp_path):
    """Before, only the first agent's host memory was checked, and a GPU
    verdict said "GPU 1" without saying of which of 8 nodes."""
    a, b = node(tmp_path, "node-0", first_rank=0), node(tmp_path, "node-1", first_rank=1)
    set_stat(b, "gpu_util_percent", '{"gpu":"1"}', mean=40.0, p50=41.0)
    set_stat(b, "host_mem_used_bytes", "{}", max=500.0 * GIB)
    set_stat(b, "cpu_util_percent", "{}", mean=95.0)
    set_stat(b, "proc_cpu_percent", "{}", mean=170.0)  # the training's own, 1.7 of 2 cores
    found = verdicts(a, b)
    assert sorted((k, ev["agent"]) for k, ev, _ in found) == [
        ("cpu_saturated", "node-1"),
        ("gpu_underused", "node-1"),
        ("memory_pressure", "node-1"),
    ]
    messages = " ".join(m for _, _, m in found)
    assert "GPU 1 of node-1 (Synthetic GPU 80GB) is under-used" in messages
    assert "Host memory of node-1 is near full" in messages
    assert "the CPUs of node-1 were busy 95%" in messages


def test_a_link_near_its_speed(tmp_path):
    """net_link_speed_bytes_per_s (sysfs's speed, an InfiniBand port's rate)
    against the link's traffic each way: p95 within 10 % of it fires."""
    path = node(tmp_path, "net")
    assert verdicts(path) == []
    set_stat(path, "net_recv_bytes_per_s", '{"interface":"ib0"}', p95=12.0e9, mean=5.0e9)
    [(kind, ev, msg)] = verdicts(path)
    assert kind == "network_saturated" and ev["link"] == "interface=ib0"
    assert ev["direction"] == "received" and ev["link_bytes_per_s"] == 12.5e9
    assert "receiving at 96% of its 12.50 GB/s" in msg
    # a link whose speed is unknown (a virtual NIC) is never judged
    with sqlite3.connect(path) as db:
        db.execute(
            "DELETE FROM summary_series WHERE series_id IN (SELECT s.id FROM series s"
            " JOIN metric m ON m.id = s.metric_id"
            " WHERE m.name = 'net_link_speed_bytes_per_s')"
        )
    assert verdicts(path) == []


def slow_input(path):
    """Makes rank 0's wait for batches half of its step time (as its stored
    timings say)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE summary_timing SET in_steps_s = (SELECT total_s * 0.5 FROM"
            " summary_step WHERE rank = 0) WHERE rank = 0 AND name = 'dataloader_next'"
        )


def test_input_bound_says_why_loading_is_slow(tmp_path):
    """The advice follows the machine: busy CPUs (more workers won't help),
    tasks waiting on storage (the data's place and format), or neither (more
    workers). Medians over the run, so the start-up counts little."""

    def input_verdict(path):
        [(kind, ev, msg)] = [x for x in verdicts(path) if x[0] == "input_bound"]
        return ev, msg

    workers = node(tmp_path, "workers")
    slow_input(workers)
    ev, msg = input_verdict(workers)
    assert ev["cause"] == "latency" and ev["dataloader_next_share"] == 0.5
    assert "num_workers" in msg
    cpu = node(tmp_path, "cpu")
    slow_input(cpu)
    set_stat(cpu, "cpu_util_percent", "{}", p50=97.0)
    set_stat(cpu, "proc_cpu_percent", "{}", p50=150.0)  # 1.5 of its 2 cores: 75 %
    ev, msg = input_verdict(cpu)
    assert ev["cause"] == "cpu" and ev["cpu_util_p50_percent"] == 97.0
    assert ev["training_cpu_p50_percent"] == 75.0
    assert "CPU-bound and more workers won't help" in msg and "num_workers" not in msg
    assert "(median), the training's own processes using 75% of them, so" in msg
    # the CPUs as busy, but mostly with another process: more workers can help
    set_stat(cpu, "proc_cpu_percent", "{}", p50=58.0)
    ev, msg = input_verdict(cpu)
    assert ev["cause"] == "contention" and ev["training_cpu_p50_percent"] == 29.0
    assert "the training's own processes used only 29% of the machine" in msg
    assert "won't help" not in msg
    storage = node(tmp_path, "storage")
    slow_input(storage)
    set_stat(storage, "pressure_io_some_percent", "{}", p50=40.0)
    ev, msg = input_verdict(storage)
    assert ev["cause"] == "io" and ev["pressure_io_some_p50_percent"] == 40.0
    assert "waited for storage 40% of the time" in msg and "trainprof iobench" in msg
    # a disk busy most of the time (iostat's %util), though tasks rarely stalled
    disk = node(tmp_path, "disk")
    slow_input(disk)
    set_stat(disk, "disk_busy_percent", '{"device":"nvme1n1"}', p50=97.0)
    ev, msg = input_verdict(disk)
    assert ev["cause"] == "io" and ev["disk_busy_p50_percent"] == 97.0
    assert "Disk nvme1n1 was busy 97% of the time during the training steps (median)" in msg


def test_the_rules_judge_the_training_steps(tmp_path):
    """The figures over the agent's steps decide, not the whole run's, which
    the start-up (importing torch on one core, preparing data) waters down;
    a file stored before them is judged on the whole run."""

    def input_cause(path):
        [(ev, msg)] = [(ev, msg) for kind, ev, msg in verdicts(path) if kind == "input_bound"]
        return ev["cause"], ev["over"], msg

    path = node(tmp_path, "steps")
    slow_input(path)
    set_stat(path, "cpu_util_percent", "{}", tables=["summary_series_steps"], p50=97.0)
    set_stat(path, "proc_cpu_percent", "{}", p50=180.0)  # the training's own: 90 %
    cause, over, msg = input_cause(path)
    assert (cause, over) == ("cpu", "steps")
    assert "busy 97% of the time during the training steps (median)" in msg
    set_stat(path, "cpu_util_percent", "{}", tables=["summary_series"], p50=98.0)
    set_stat(path, "cpu_util_percent", "{}", tables=["summary_series_steps"], p50=30.0)
    assert input_cause(path)[:2] == ("latency", "steps")
    # the same GPU idle before its steps: busy where it counts, no verdict
    set_stat(path, "gpu_util_percent", '{"gpu":"1"}', tables=["summary_series"], mean=40.0)
    assert "gpu_underused" not in [k for k, _, _ in verdicts(path)]
    with sqlite3.connect(path) as db:  # as recorded before these figures
        db.execute("DROP TABLE summary_series_steps")
    cause, over, msg = input_cause(path)
    assert (cause, over) == ("cpu", "run") and "of the time (median)" in msg
    [(ev, msg)] = [(ev, msg) for kind, ev, msg in verdicts(path) if kind == "gpu_underused"]
    assert ev["over"] == "run" and "averaged 40% (p50" in msg


def test_gpus_the_job_never_used_get_no_verdict(tmp_path):
    """NVML sees every GPU on the node. The job's are those its processes
    told (their CUDA UUID) or NVML listed its processes on; the others get
    no verdict, and the report says they were not the job's."""
    from conftest import FAKE_NVML
    from test_timings import EMIT

    run = tmp_path / "one-of-two.db"
    # the fake's GPUs are 50 % and 60 % busy: both under the target
    r = trainprof(
        "record",
        "-q",
        "-i",
        "0.05",
        "-o",
        run,
        "--",
        EMIT,
        "slow_epochs",
        env={
            "TRAINPROF_NVML_LIB": FAKE_NVML,
            "FAKE_NVML_GPUS": "2",
            "EMIT_CUDA_DEVICE": "fake-0000",
        },
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(trainprof("report", "--json", run).stdout)
    assert [g["used"] for g in rep["agents"][0]["gpus"]] == [True, False]
    underused = [ev["gpu"] for k, ev, _ in verdicts(run) if k == "gpu_underused"]
    assert underused == [0]
    assert (
        "gpu=1  Fake GPU 1  GPU-fake-0001  energy from counter  (not this job's"
        in trainprof("report", run).stdout
    )
    # NVML's process list names the job's process on GPU 1 too: both used
    with sqlite3.connect(run) as db:
        pid = db.execute("SELECT pid FROM thread LIMIT 1").fetchone()[0]
        db.execute("INSERT OR REPLACE INTO meta VALUES ('gpu.1.processes', ?)", (f"1,{pid}",))
    assert sorted(ev["gpu"] for k, ev, _ in verdicts(run) if k == "gpu_underused") == [0, 1]
    # a process list that is no list of pids is no evidence: judged as none
    with sqlite3.connect(run) as db:
        db.execute("DELETE FROM thread_device")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('gpu.1.processes', '12;drop')")
        db.execute("DELETE FROM meta WHERE key = 'gpu.0.processes'")
    rep = json.loads(trainprof("report", "--json", run).stdout)
    assert [g["used"] for g in rep["agents"][0]["gpus"]] == [None, None]
    # without either kind of evidence (a file from before): every GPU judged
    with sqlite3.connect(run) as db:
        db.execute("DELETE FROM thread_device")
        db.execute("DELETE FROM meta WHERE key LIKE 'gpu.%.processes'")
    rep = json.loads(trainprof("report", "--json", run).stdout)
    assert [g["used"] for g in rep["agents"][0]["gpus"]] == [None, None]


def test_a_busy_gpu_whose_sms_are_idle_is_under_used(tmp_path):
    """NVML's utilization counts any kernel on any SM; GPM's SM activity
    (Hopper and newer) says how much of the GPU worked: 98 % utilized with
    40 % of SM time busy is under-used, with 50 % it is not."""
    from conftest import FAKE_NVML
    from test_timings import EMIT

    run = tmp_path / "gpm.db"
    r = trainprof(
        "record",
        "-q",
        "-i",
        "0.1",
        "-o",
        run,
        "--",
        "sh",
        "-c",
        f"{EMIT} slow_epochs; sleep 2.5; {EMIT} slow_epochs",
        env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"},
    )
    assert r.returncode == 0, r.stderr
    for gpu in ("0", "1"):
        set_stat(run, "gpu_util_percent", f'{{"gpu":"{gpu}"}}', mean=98.0, p50=99.0)
    found = [
        (ev["gpu"], ev.get("sm_active_mean_percent"), msg)
        for k, ev, msg in verdicts(run)
        if k == "gpu_underused"
    ]
    assert [(g, sm) for g, sm, _ in found] == [(0, 40.0)]  # the fake's GPM: 40 %, 50 %
    assert "its SMs were busy only 40% of it (GPM's SM activity)" in found[0][2]


def test_mig_instances_map_ranks_and_are_judged_on_their_own_memory(tmp_path):
    """A GPU in MIG mode: the card's utilization is unavailable, a process
    driving an instance (its UUID, or CUDA_VISIBLE_DEVICES=MIG-...) maps to
    the GPU the instance is part of, and memory pressure is judged per
    instance against the instance's memory, not the card's."""
    from conftest import FAKE_NVML
    from test_timings import EMIT

    run = tmp_path / "mig.db"
    env = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2", "FAKE_NVML_MIG": "1"}
    command = (
        f"RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 EMIT_CUDA_DEVICE=fake-0000-1 {EMIT} "
        f"slow_epochs & RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 CUDA_VISIBLE_DEVICES=MIG-fake-"
        f"0000-0 {EMIT} slow_epochs & wait"
    )
    r = trainprof(
        "record",
        "-q",
        "-i",
        "0.05",
        "-o",
        run,
        "--",
        "env",
        "-u",
        "CUDA_VISIBLE_DEVICES",
        "sh",
        "-c",
        command,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(trainprof("report", "--json", run).stdout)
    assert {x["rank"]: x["gpu"] for x in rep["ranks"]["per_rank"]} == {0: 0, 1: 0}
    assert any("unavailable: MIG" in u["reason"] for u in rep["agents"][0]["unavailable"])
    # instance 1 near its 10 GiB; the card's total would be far from full
    set_stat(run, "gpu_mem_used_bytes", '{"gpu":"0","mig":"1"}', max=9.8 * GIB)
    memory = [
        (ev["gpu"], ev.get("mig"), ev["mem_total_bytes"], msg)
        for k, ev, msg in verdicts(run)
        if k == "memory_pressure"
    ]
    assert [m[:3] for m in memory] == [(0, 1, 10 * GIB)]
    assert "GPU 0 (MIG instance 1) memory came within 2% of full" in memory[0][3]


def test_a_gpu_held_back_by_heat_is_named_from_nvmls_reasons(tmp_path):
    """NVML's clock event reasons, not a guess from the clock: the fake holds
    GPU 1 at its power cap and its temperature limit all the time (0x24), GPU
    0 never. Heat is a verdict; a power cap alone is a busy GPU's lot."""
    from conftest import FAKE_NVML
    from test_timings import EMIT

    run = tmp_path / "reasons.db"
    r = trainprof(
        "record",
        "-q",
        "-i",
        "0.05",
        "-o",
        run,
        "--",
        EMIT,
        "slow_epochs",
        env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"},
    )
    assert r.returncode == 0, r.stderr
    found = [(ev, msg) for k, ev, msg in verdicts(run) if k == "gpu_throttled"]
    assert [ev["gpu"] for ev, _ in found] == [1]
    assert found[0][0]["reasons"] == 0x24 and found[0][0]["trouble_share"] == 1
    assert "GPU 1 (Fake GPU 1) was slowed by its temperature limit 100% of the time" in found[0][1]
    rep = json.loads(trainprof("report", "--json", run).stdout)
    assert [g["slowdown"]["reasons"] for g in rep["agents"][0]["gpus"]] == [0, 0x24]
    text = words(trainprof("report", run).stdout)
    assert "gpu=0 never held below its top clock" in text
    assert (
        "gpu=1 held below its top clock 100% of the time, by its power cap and its "
        "temperature limit"
    ) in text
    assert "gpu_clock_event_reasons" not in text  # a bitmask has no mean to show


# Steps of 10 ms that sleep, as a training waiting on its GPU does.
SLEEPER = (
    "import time, trainprof\nfor _ in range(300):\n    trainprof.step()\n    time.sleep(0.01)\n"
)


@pytest.mark.machine
def test_others_on_cpus_a_sleeping_training_leaves_idle_are_no_contention(tmp_path):
    """Beside as many CPU burners as the machine has CPUs, the CPUs are busy
    and others hold them, but a training that sleeps through its steps is not
    held back: its processes barely waited for a CPU (run-queue delay), and
    no cpu_contention is said (a busy compute-bound one gets it:
    test_compare's contention test)."""
    run = tmp_path / "sleeper.db"
    burning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        r = trainprof("record", "-q", "-o", run, "--", PYTHON, "-c", SLEEPER)
    finally:
        for b in burning:
            b.kill()
            b.wait()
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    figures = {
        m["name"]: m["in_steps"]["mean"]
        for a in rep["agents"]
        for m in a["metrics"]
        if not m["labels"] and m["in_steps"]
    }
    assert figures["cpu_util_percent"] >= 90, figures  # the burners held the CPUs
    assert figures["proc_cpu_wait_percent"] < 10, figures
    [step_thread] = [
        m["in_steps"]["mean"]
        for a in rep["agents"]
        for m in a["metrics"]
        if m["name"] == "step_thread_cpu_wait_percent"
    ]
    assert step_thread < 10, step_thread
    assert "cpu_contention" not in [v["kind"] for v in rep["verdicts"]], rep["verdicts"]
