"""Changes of pace: a training whose steps slow down midway because two CPU
burners start beside it (outside the recorded command) is split into two
regimes at the step they started, the cause named as contention; the same
training alone is one regime."""

import json
import os
import re
import statistics
import subprocess
import textwrap

import pytest
from conftest import (
    FAKE_NVML,
    PROGRAM,
    PYTHON,
    OthersCpu,
    in_short,
    record_burning_from_flag,
    report_json,
    trainprof,
    words,
)

# A CPU-bound training on one thread of STEPS steps (about 20 ms each, alone);
# at step FLAG_AT it writes FLAG (the test then starts the burners, whose
# steps take about 50 ms: 75 of them hold a regime, at least 2 s). With
# CPU_LOG it writes there the CPU time each step's computation took on its
# thread (seconds, one a line): the machine's own speed, which no wait for a
# CPU and no steal counts in.
STEPS, FLAG_AT = 225, 150
SCRIPT = """
import os, pathlib, time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
STEPS = int(os.environ["STEPS"])
torch.set_num_threads(1)
torch.manual_seed(0)
data = TensorDataset(torch.randn(STEPS * 32, 256), torch.randint(0, 4, (STEPS * 32,)))
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
flag, cpu_log, cpu = os.environ.get("FLAG"), os.environ.get("CPU_LOG"), []
for step, (x, y) in enumerate(DataLoader(data, batch_size=32)):
    if flag and step == int(os.environ["FLAG_AT"]):
        pathlib.Path(flag).write_text("go")
    t = time.thread_time()
    for _ in range(40):
        opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
    cpu.append(time.thread_time() - t)
if cpu_log:
    pathlib.Path(cpu_log).write_text("".join(f"{c}\\n" for c in cpu))
"""


def record(tmp_path, run_file, burners, steps=STEPS):
    script = tmp_path / "pace.py"
    script.write_text(textwrap.dedent(SCRIPT))
    flag = tmp_path / "flag"
    env = dict(os.environ, STEPS=str(steps), FLAG_AT=str(FLAG_AT), CPU_LOG=str(tmp_path / "cpu"))
    if burners:
        env["FLAG"] = str(flag)
    record_burning_from_flag(["-q", "-o", run_file, "--", PYTHON, script], env, flag, burners)


def test_burners_midway_make_two_regimes_with_contention_as_cause(tmp_path, run_file):
    # twice as many burners as the machine has CPUs: the training's thread gets
    # about a third of a CPU
    with OthersCpu() as load:  # besides its own burners
        record(tmp_path, run_file, burners=2 * (os.cpu_count() or 2))
    rep = report_json(run_file)
    regimes = rep["regimes"]["regimes"]
    assert len(regimes) >= 2, regimes
    if load.busy:  # others held the CPUs from the start: the burners add less than they take
        return
    first, last = regimes[0], regimes[-1]
    # the regimes begin after the warm-up: a first step over twice the median
    # (the first batch's lazy set-up on a slow moment: one CI run in many)
    warmup = rep["steps"][0]["warmup_steps"]
    assert warmup <= 2 and first["first_step"] == 1 + warmup and last["last_step"] == STEPS
    # a change placed within a few steps of the burners' start (step 151); a
    # loaded machine may have slowed the first steps too (a change of its own)
    # (the burners, processes of their own, take up to ~0.5 s to start on a slow
    # machine: a few tens of its short steps after step 151)
    at = [i for i, r in enumerate(regimes) if -10 <= r["first_step"] - (FLAG_AT + 1) <= 40]
    assert at, regimes
    before, after = regimes[at[0] - 1], regimes[at[0]]
    assert after["step_typical_s"] >= 1.3 * before["step_typical_s"]
    # each regime judged on its own split: a training on one CPU thread computes
    assert "compute_bound" in after["verdicts"] and "compute_bound" in before["verdicts"]
    cpu = [c for c in after["causes"] if c["kind"] == "others_cpu_percent"]
    assert cpu and cpu[0]["after"] >= cpu[0]["before"] + 15, after
    # and the training's own wait for a CPU (run-queue delay) with them: its
    # step thread's, which the recorder read (the tree's figure beside it)
    held = [c for c in after["causes"] if c["kind"] == "step_thread_cpu_wait_percent"]
    assert held and held[0]["after"] >= held[0]["before"] + 10, after
    assert after["machine"]["step_thread_cpu_wait_percent"] >= 10, after
    assert after["machine"]["training_cpu_wait_percent"] >= 10, after
    assert not [c for c in after["causes"] if c["kind"] == "training_cpu_wait_percent"], after
    # its step thread ran on a CPU less of the time, and its CPU time a step
    # did not grow with the step: it waited, it did not compute slower
    busy = [r["machine"]["step_thread_cpu_percent"] for r in (before, after)]
    assert busy[1] < busy[0] - 10, busy
    assert "step_thread_cpu_s" not in [c["kind"] for c in after["causes"]], after
    text = trainprof("report", run_file).stdout
    short = in_short(text)
    assert "[pace] The pace" in short and "processes not the training's used" in short, short
    assert "Changes of pace" in text
    # compare --regimes: the regimes around the biggest change, as two runs
    r = trainprof("compare", "--json", "--regimes", run_file)
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    assert c["step_change"]["changed"] and c["step_change"]["low"] > 0.15
    assert c["a"]["last_step"] < c["b"]["first_step"]
    assert "others_cpu_percent" in [x["kind"] for x in c["causes"]]
    assert c["step_change"]["whole_change"] is None and c["a"]["drift"] is None, c
    text = trainprof("compare", "--regimes", run_file).stdout
    assert "B's steps take" in text and "steps 1 to" not in text.split("B  ")[1]
    assert "Over the whole runs" not in text, text  # one run: no whole runs to set beside
    # the page's step chart shades every other regime after the first, each
    # named with its steps, and marks where each change begins: the report's
    # regimes, however many (a machine busy for a while on its own adds some:
    # 1-72, 73-200, 201-344, 345-400 in one quiet CI run of 400 steps)
    page = tmp_path / "run.html"
    assert trainprof("html", "-o", page, run_file).returncode == 0
    html = page.read_text()
    shaded = [
        (int(a), int(b))
        for a, b in re.findall(
            r'class="shade"[^>]*><title>steps (\d+)-(\d+): [\d.]+ ms a step', html
        )
    ]
    assert shaded == [(r["first_step"], r["last_step"]) for r in regimes[1::2]], (shaded, regimes)
    marked = [int(x) for x in re.findall(r"the pace changed at step (\d+):", html)]
    assert sorted(marked) == [r["first_step"] for r in regimes[1:]], (marked, regimes)


STEADY = 200  # steps: 4 s of them
# what the machine did that a change of pace names as its cause (report --json)
MACHINE_CAUSES = {
    "others_cpu_percent",
    "cpu_steal_percent",
    "training_cpu_wait_percent",
    "step_thread_cpu_wait_percent",
    "cpu_pressure_percent",
    "io_pressure_percent",
    "training_blocked",
    "swap_in_use_bytes",
    "step_thread_cpu_s",
}


def computed_slower(cpu, a, b):
    """Whether the steps' own CPU time (cpu: a step's, from step 1) moved
    from regime a to regime b the way their typical step did, by half of
    its change or more: the machine computed at another speed."""

    def median(r):
        return statistics.median(cpu[r["first_step"] - 1 : r["last_step"]])

    step, own = b["step_typical_s"] / a["step_typical_s"] - 1, median(b) / median(a) - 1
    return step * own > 0 and abs(own) >= abs(step) / 2


def test_a_steady_run_is_one_regime(tmp_path, run_file):
    with OthersCpu() as load:
        record(tmp_path, run_file, burners=0, steps=STEADY)
    rep = report_json(run_file)
    regimes = rep["regimes"]["regimes"]
    # from the first step past the warm-up (a first step of 40 ms against the
    # others' 5, once, right after the other CI work: a warm-up step of one)
    first = 1 + rep["steps"][0]["warmup_steps"]
    # other processes' load comes and goes, a virtual machine's host gives its
    # CPUs to others for a while, and its vCPU computes slower beside another
    # guest's work on the same core (the same steps took 41 to 54 ms of CPU
    # time a step on an idle VM, 20 steps at a time): a change of pace is
    # right then, where the test saw others' load, the report names what
    # changed on the machine, or the steps' own CPU time changed with them
    # (a CI run went 27 then 31 ms a step from step 80, with others at under
    # half a CPU on average; one here, 45 then 58 ms from step 165, nothing
    # named)
    cpu = [float(x) for x in (tmp_path / "cpu").read_text().split()]
    machine = all(
        MACHINE_CAUSES & {c["kind"] for c in r["causes"]} or computed_slower(cpu, before, r)
        for before, r in zip(regimes, regimes[1:])
    )
    if load.busy or (len(regimes) > 1 and machine):
        assert regimes[0]["first_step"] == first and regimes[-1]["last_step"] == STEADY, regimes
        return
    assert len(regimes) == 1, regimes
    assert regimes[0]["first_step"] == first and regimes[0]["last_step"] == STEADY, regimes
    assert regimes[0]["causes"] == []
    assert "[pace]" not in trainprof("report", run_file).stdout
    r = trainprof("compare", "--regimes", run_file)
    assert r.returncode == 0 and "kept one pace" in r.stdout, r.stdout


# A training whose Dataset decodes fast for its first half and slowly for its
# second: the change is explained by the function that took over, on the
# step thread (no workers) or in the DataLoader workers.
DECODE = """
import os, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
torch.set_num_threads(1)
STEPS = 500

def spin(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass

def fast_decode(i):
    spin(3)

def slow_decode(i):
    # waits (a slow store), not spins: a spinning decode in two workers
    # on the two cores other tests share was slowed before the change as
    # much as after it, and no change was found (one CI run in several)
    time.sleep(float(os.environ["SLOW_MS"]) / 1000)

class Images(Dataset):
    def __len__(self):
        return STEPS
    def __getitem__(self, i):
        (fast_decode if i < STEPS // 2 else slow_decode)(i)
        return torch.randn(16, 64), torch.randint(0, 4, (16,))

if __name__ == "__main__":  # workers from a fork server (3.14+) import the script
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Images(), batch_size=None, num_workers=int(os.environ["WORKERS"]))
    for x, y in loader:
        spin(8)
        opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
"""


# judges where the steps' pace changed, which other tests' load moves: in
# the spread a slow VM made the first half as slow as the second (no change
# found, or one at step 130 of 500, in three CI runs of many): run alone
@pytest.mark.machine
@pytest.mark.parametrize("workers,slow_ms", [(0, 15), (2, 40)])
def test_a_function_that_takes_over_a_phase_is_the_change_cause(
    tmp_path, run_file, workers, slow_ms
):
    script = tmp_path / "decode.py"
    script.write_text(textwrap.dedent(DECODE))
    env = dict(os.environ, WORKERS=str(workers), SLOW_MS=str(slow_ms))
    subprocess.run(
        [PROGRAM, "record", "-q", "-o", str(run_file), "--", PYTHON, str(script)],
        env=env,
        check=True,
        timeout=240,
    )
    regimes = report_json(run_file)["regimes"]["regimes"]
    # the first slow item is step 251's; workers decode up to four batches
    # ahead (prefetch_factor 2, 2 workers), spinning on the cores the step
    # thread needs: on a busy machine its steps slow a few before it (240 in
    # one CI run, 234 in one with four xdist workers on two cores); the
    # contention can as well blur the first slow steps (264 in another)
    at = [i for i, r in enumerate(regimes) if -25 <= r["first_step"] - 251 <= 20]
    assert at, regimes
    causes = regimes[at[0]]["causes"]
    assert causes[0]["kind"] == "phase" and causes[0]["phase"] == "dataloader_next", causes
    function = [c for c in causes if c["kind"] == "function"]
    assert function, causes
    assert function[0]["function"] == "slow_decode" and function[0]["phase"] == "dataloader_next"
    assert function[0]["samples_of"] == ("dataloader_workers" if workers else "step_thread")
    # before: the workers' samples of the regime before the change, which
    # holds the slow items they decoded ahead of step 251 (1-2 % when the
    # change is found at 252) and every slow step the change was found late
    # by: 7 % at step 266, in a CI run whose VM's host stole 20 % of the CPU
    # over the first half (the report said so)
    late = max(0, regimes[at[0]]["first_step"] - 252)
    assert function[0]["before"] <= 0.03 + 0.005 * late and function[0]["after"] >= 0.5, (
        regimes[at[0]]["first_step"],
        function,
    )
    assert function[0]["file"].endswith("decode.py") and function[0]["line"] > 0
    text = trainprof("report", run_file).stdout
    change = " ".join(text.split("Changes of pace\n")[1].split("\n\n")[0].split())
    assert "slow_decode (" in change and "samples instead of" in change, change
    # the step verdicts are the latest pace's, not the average of the two paces
    rep = report_json(run_file)
    last = regimes[-1]
    [v] = [v for v in rep["verdicts"] if v["kind"] == "input_bound"]
    assert v["evidence"]["since_step"] == last["first_step"], (v, last)
    # and what its loading waits on is read over that pace too (the regime's
    # medians of the machine's figures)
    assert v["evidence"]["over"] == "latest_pace", v
    assert 0 <= v["evidence"]["cpu_util_p50_percent"] <= 100, v
    share = last["phase_s"]["dataloader_next"] / last["step_mean_s"]
    assert abs(v["evidence"]["dataloader_next_share"] - share) < 1e-3, (v, last)
    assert "compute_bound" not in [x["kind"] for x in rep["verdicts"]]
    short = " ".join(in_short(text).split())
    assert f"since step {last['first_step']}, the training is input-bound" in short, short
    assert f"before step {last['first_step']} its steps were" in short, short
    # and the split of a step that "In short" gives is that pace's too
    split = short.split(f"since step {last['first_step']}, a step: ", 1)[1].split(" [")[0]
    assert f"dataloader_next {round(100 * share)}%" in split, short


# Steps of 10 ms, then of 20 ms once the GPU runs hot: the script holds the
# fake GPU's thermal slowdown from step 221 on (a file the fake reads).
THROTTLED = """
import os, pathlib, time, trainprof
for i in range(340):
    trainprof.step()
    if i == 220:
        pathlib.Path(os.environ["FAKE_NVML_THERMAL_WHILE"]).touch()
    with trainprof.region("compute"):
        time.sleep(0.01 if i < 220 else 0.02)
"""


def test_a_gpu_held_back_by_heat_midway_is_the_change_cause(tmp_path, run_file):
    """A process of one GPU and no rank: its regimes judge that GPU (they
    once found none without a rank's row, so its clock and its slowdowns
    were never a cause), and the slower one names the heat."""
    script = tmp_path / "hot.py"
    script.write_text(textwrap.dedent(THROTTLED))
    env = {
        "TRAINPROF_NVML_LIB": FAKE_NVML,
        "FAKE_NVML_GPUS": "1",
        "FAKE_NVML_THERMAL_WHILE": str(tmp_path / "hot"),
    }
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, env=env)
    assert r.returncode == 0, r.stderr
    regimes = report_json(run_file)["regimes"]["regimes"]
    assert len(regimes) == 2 and abs(regimes[1]["first_step"] - 221) <= 3, regimes
    # (a sample of the regime before may fall at its end, just held back)
    assert regimes[0]["machine"]["gpu_trouble_share"] < 0.4, regimes
    assert regimes[1]["machine"]["gpu_trouble_share"] > 0.6, regimes
    held = [c for c in regimes[1]["causes"] if c["kind"] == "gpu_trouble_share"]
    assert held and held[0]["after"] - held[0]["before"] >= 0.2, regimes[1]["causes"]
    text = words(trainprof("report", run_file).stdout)
    assert "its GPU was held back by heat, a hardware slowdown or the power brake" in text


# Steps of 7 ms whose loop logs its metrics outside every phase: from step
# 401 on with a function that takes 15 ms, not 3 (no torch: a cheap script,
# its phases named by trainprof.region).
LOGGING = """
import time, trainprof
def log_to_a_file():
    time.sleep(0.003)
def log_to_a_remote_store():
    time.sleep(0.015)
for i in range(560):
    trainprof.step()
    with trainprof.region("train_batch"):
        time.sleep(0.004)
    {log}(log_to_a_file if i < 400 else log_to_a_remote_store)()
"""


# logging in a region of the user's own, between the phases: its samples
# carry only its name, and count in "other" still
@pytest.mark.parametrize("log", ["", 'with trainprof.region("logging"): '])
def test_the_loop_s_own_code_that_slowed_is_named_as_the_change_cause(tmp_path, run_file, log):
    """The time a step spends outside its phases ("other": the loop's own
    code, its logging) grew: the function that took it over is named, as it
    is for a phase (it was never looked for outside the phases)."""
    script = tmp_path / "logging.py"
    script.write_text(textwrap.dedent(LOGGING).replace("{log}", log))
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    regimes = report_json(run_file)["regimes"]["regimes"]
    # the change at step 401, give or take what a busy machine does to 7 ms
    # steps of sleeps (397 once in CI beside the other tests)
    at = [i for i, g in enumerate(regimes) if abs(g["first_step"] - 401) <= 8]
    assert at, regimes
    causes = regimes[at[0]]["causes"]
    assert causes[0]["kind"] == "phase" and causes[0]["phase"] == "other", causes
    [function] = [c for c in causes if c["kind"] == "function"]
    assert function["function"] == "log_to_a_remote_store" and function["phase"] == "other"
    assert function["before"] <= 0.05 and function["after"] >= 0.5, function
    assert function["file"].endswith("logging.py") and function["line"] > 0
    change = words(trainprof("report", run_file).stdout).split("Changes of pace")[1]
    assert "other went from" in change and "log_to_a_remote_store (" in change, change


# A training that slows down all along: its loop keeps a history of its
# metrics and walks it every step (here a sleep as long as the history),
# 4.5 ms a step at first and 28 ms at the end, 10 s in all.
DRIFTING = """
import time, trainprof
history = []
def log_metrics():
    history.append(1.0)
    time.sleep(0.0005 + 0.00004 * len(history))
for i in range(600):
    trainprof.step()
    with trainprof.region("train_batch"):
        time.sleep(0.004)
    log_metrics()
"""


def test_steps_that_grow_all_along_are_a_drift_not_a_change_at_one_step(tmp_path, run_file):
    """Change points cut a slope somewhere ("the pace changed from step
    229"), sending the reader after an event that never was: the report
    says the steps grew steadily, from the first quarter's to the last's,
    and the phase and the function that grew with them."""
    script = tmp_path / "drifting.py"
    script.write_text(textwrap.dedent(DRIFTING))
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    regimes = report_json(run_file)["regimes"]
    drift = regimes["drift"]
    # what a failure needs to be read (once in CI's spread: no drift, the
    # regimes 1-216, ..., 505-599), whole: each regime's steps, span and levels
    paces = [
        (g["first_step"], g["last_step"], round(g["start_s"], 2), round(g["end_s"], 2),
         round(1e3 * g["step_typical_s"], 2), round(1e3 * g["step_mean_s"], 2))
        for g in regimes["regimes"]
    ]  # fmt: skip
    assert drift and drift["first_quarter_steps"][0] <= 3, paces
    assert drift["last_quarter_steps"][1] >= 595, drift  # to the last step
    assert drift["last_quarter_step_s"] > 2.5 * drift["first_quarter_step_s"], drift
    short = " ".join(in_short(trainprof("report", run_file).stdout).split())
    assert "[pace] The steps grew steadily over the run, at no one step:" in short, short
    assert "The pace changed" not in short and "other went from" in short, short
    # nothing is said to have begun at the step where change points cut the slope
    assert "since step" not in short.lower(), short
    # the function the time outside the phases is made of, before and after
    # alike, grew with it (its share of the samples did not move)
    assert "log_metrics (" in short and "grew with it" in short, short
    # the paces the change points cut are listed as that: cuts of a slope
    # (the verdicts judge the latest)
    if len(regimes["regimes"]) >= 2:
        full = " ".join(trainprof("report", run_file).stdout.split())
        assert "The paces above are where change points cut that slope" in full, full
        # and compare --regimes says its two sides are such cuts
        said = " ".join(trainprof("compare", "--regimes", run_file).stdout.split())
        assert "The run's steps grew steadily, at no one step:" in said, said
        assert "A and B are where change points cut that slope" in said, said
        sides = json.loads(trainprof("compare", "--json", "--regimes", run_file).stdout)
        assert sides["a"]["drift"] == sides["b"]["drift"] == drift, sides["a"]
    # the page says it too: the first and the last quarter shaded, no step
    # marked as the one where the pace changed
    page = tmp_path / "run.html"
    assert trainprof("html", "-o", page, run_file).returncode == 0
    html = page.read_text()
    assert "the pace changed at step" not in html and "grew steadily" in html
    quarters = re.findall(r'class="shade"[^>]*><title>the (first|last) quarter, steps (\d+)-', html)
    assert quarters == [
        ("first", str(drift["first_quarter_steps"][0])),
        ("last", str(drift["last_quarter_steps"][0])),
    ], quarters
