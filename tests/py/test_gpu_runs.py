"""Verdicts on real GPU trainings, from run files recorded on an H200
(tests/data/gpu-runs/, its README says how): each copied, re-summarized with
the code under test (`summarize --force`) and reported, as a user would. CI
has no GPU; these hold what a CPU run can't show: a host that can't feed its
GPU, a GPU that never answers, cuDNN's autotuning as the warm-up."""

import json
import re
import shutil
import sqlite3

import pytest
from conftest import ROOT, in_short, report_json, trainprof, words

RUNS = ROOT / "tests" / "data" / "gpu-runs"


@pytest.fixture
def resummarized(tmp_path):
    """The recording `name`, copied and summarized anew; its path."""

    def make(name):
        path = tmp_path / name
        shutil.copyfile(RUNS / name, path)
        r = trainprof("summarize", "--force", path)
        assert r.returncode == 0, r.stderr
        return path

    return make


def kinds(rep):
    return [v["kind"] for v in rep["verdicts"]]


def test_a_host_that_cannot_feed_its_gpu_is_host_bound(resummarized):
    """ResNet-18 at batch 64 under bf16 autocast: train_batch is the whole
    step on the host, while the GPU was busy 40 % of the steps (NVML) and
    idle 73 % of the captured ones. Not compute-bound: precision or a faster
    GPU does nothing for it."""
    run = resummarized("h200-resnet18-batch64.db")
    rep = report_json(run)
    assert "host_bound" in kinds(rep)
    assert "compute_bound" not in kinds(rep)
    # the GPU's under-use is the verdict's evidence, not a verdict beside it
    assert "gpu_underused" not in kinds(rep)
    [host] = [v for v in rep["verdicts"] if v["kind"] == "host_bound"]
    e = host["evidence"]
    assert e["gpu"] == 0 and e["gpu_busy_from"] == "nvml"
    assert 0.35 < e["gpu_busy_share"] < 0.45, e
    assert 0.70 < e["window_gpu_idle_share"] < 0.76, e
    assert 25 < e["sm_active_mean_percent"] < 35, e
    assert e["training_cpu_cores"] > 0.9  # one core, the step thread and autograd's together
    message = words(host["message"])
    assert "host-bound" in message and "reduce-overhead" in message
    assert "mixed precision or a faster GPU won't help" in message
    assert "faster or more GPUs" not in message and "tensor cores" not in message
    # while the GPU idled, the host was in forward and backward (the window's stacks)
    assert re.search(r"the host was in backward \d+%", message), message
    text = trainprof("report", run).stdout
    short = in_short(text)
    assert "1200 steps" in short and "[host_bound]" in short
    # nor is either of its paces (its Changes of pace judge each on its GPU's
    # busy share over it: 47 % and 40 %)
    assert "[compute_bound]" not in text
    regimes = rep["regimes"]["regimes"]
    assert len(regimes) == 2, regimes  # the wander from step 742 (below)
    assert [r["verdicts"] for r in regimes] == [["host_bound"], ["host_bound"]], regimes
    assert all(30 < r["machine"]["gpu_busy_percent"] < 55 for r in regimes), regimes
    # its GPU is the run's one, though a run of one process has no rank row
    # (its clock and throttling were never judged as causes before)
    assert all(r["machine"]["gpu_clock_mhz"] > 1000 for r in regimes), regimes
    # its device times are said to be what they are, and not denied beside them
    notes = words(text)
    assert "Device times are the span on the region's CUDA stream" in notes
    assert "no CUDA work was timed" not in notes


def test_cudnn_autotuning_is_warm_up_not_a_change_of_pace(resummarized):
    """Step 1 took 2.3 s (cuDNN's autotuning) and step 2 28 ms, then 12 ms a
    step: warm-up, out of the figures, and no change of pace at the start.
    (The pace wandered later: steps 742-1100 were 17 % slower, the last 100,
    1.2 s, back at 12 ms: too short a regime, so the regimes are 3-741 and
    742-1200, 15 % apart.)"""
    rep = report_json(resummarized("h200-resnet18-batch64.db"))
    [steps] = rep["steps"]
    assert steps["count"] == 1200  # the training's own count
    assert steps["warmup_steps"] == 2 and steps["warmup_s"] > 2.3
    assert steps["timed_steps"] + steps["warmup_steps"] + steps["profiled_steps"] == 1200
    assert steps["max_s"] < 1, steps  # no autotuning step in the figures
    regimes = rep["regimes"]["regimes"]
    assert regimes[0]["first_step"] == 3 and len(regimes) <= 2, regimes
    assert all(r["first_step"] > 700 for r in regimes[1:]), regimes
    train = next(t for t in rep["timings"] if t["name"] == "train_batch")
    inside = train["in_steps_s"] + train["in_profiled_steps_s"] + train["in_warmup_steps_s"]
    assert inside == pytest.approx(train["total_s"], rel=1e-6)
    text = trainprof("report", resummarized("h200-resnet18-batch64.db")).stdout
    assert "the first 2 steps (2.4 s) are warm-up" in words(text)


def test_the_capture_windows_tables_read_as_a_user_reads_them(resummarized):
    """CUPTI's own rows are no operator, and kernels show demangled and cut
    where they stay apart."""
    run = resummarized("h200-resnet18-batch64.db")
    rep = report_json(run)
    names = {o["name"] for o in rep["ops"]}
    assert "Activity Buffer Request" not in names and "INVALID" not in names
    assert "aten::conv2d" in names
    text = trainprof("report", run).stdout
    table = text[text.index("kernels (device ms") : text.index("the GPU sat idle")]
    assert "_ZN" not in table, table  # CUPTI gave one mangled and cut at 1,000 bytes
    assert "cutlass__5x_cudnn::Kernel<...>" in table
    assert "at::native::max_pool_backward_nhwc " in table  # no return type, no arguments
    kernels = [k for k in rep["kernels"] if k["name"].startswith("_ZN17cutlass")]
    assert kernels and kernels[0]["demangled"] == "cutlass__5x_cudnn::Kernel<...>"


def test_a_scheduled_window_s_cost_names_the_schedule_not_the_slow_steps(resummarized):
    """An 18 s run pays for its one scheduled window (steps 11-15) whole:
    trainprof's own work is over budget, mostly that window. The switch
    said is the schedule's and --ops off: --ops-on-slow, which took no
    window here, would change nothing."""
    run = resummarized("h200-resnet18-batch64.db")
    [own] = report_json(run)["own_cost"]
    assert own["over_budget"] and own["parts"]["capture_windows"] > 0.01, own
    short = words(in_short(trainprof("report", run).stdout))
    cost = short[short.index("[cost]") :]
    assert "mostly its capture windows (1 scheduled)" in cost, cost
    assert "--ops-every" in cost and "--ops off takes none" in cost
    assert "--ops-on-slow" not in cost


def test_a_gpu_that_never_answers_is_a_stall_at_the_scripts_line(resummarized):
    """After step 30 the script queued a 60 s kernel and called loss.item():
    its step thread sat 33 s in from_device at resnet.py:48 while the GPU
    was busy, until SIGTERM. The report leads with that stall."""
    run = resummarized("h200-resnet18-gpu-hang.db")
    rep = report_json(run)
    [stall] = [s for s in rep["stalls"] if not s["ended"]]
    assert stall["between_steps"] and stall["step"] == 30 and stall["phase"] == "from_device"
    assert stall["seconds"] > 30
    [thread] = [t for t in stall["threads"] if t["phase"] == "from_device"]
    assert thread["frames"][0]["file"].endswith("resnet.py") and thread["frames"][0]["line"] == 48
    assert thread["state"] == "on_cpu"  # CUDA's synchronize spins
    assert stall["gpu"] == 0 and stall["gpu_util_mean_percent"] >= 50
    # no verdict on the 30 steps before it
    assert not {"compute_bound", "host_bound", "input_bound"} & set(kinds(rep))
    text = trainprof("report", run).stdout
    short = in_short(text)
    assert short.startswith("[stalled]"), short
    assert "after step 30 in from_device, in <module> (resnet.py:48)" in short
    assert "its GPU 0 stayed busy meanwhile" in short
    assert short.index("[stalled]") < short.index("[stopped]")


def test_the_file_as_recorded_gets_the_verdict_of_today(tmp_path):
    """The recorder at 79abfcb stored a summary without this stall (the
    rule that finds a stall between steps came later): read as it was
    recorded, not summarized again, the file is reported by today's analysis
    (its stored summary is another trainprof's: its rows are read), and
    says how to store today's."""
    run = tmp_path / "as-recorded.db"
    shutil.copyfile(RUNS / "h200-resnet18-gpu-hang.db", run)
    r = trainprof("report", run)
    assert r.returncode == 0, r.stderr
    assert in_short(r.stdout).startswith("[stalled]"), in_short(r.stdout)
    assert "holds a summary another trainprof made" in r.stderr, r.stderr
    with sqlite3.connect(f"file:{run}?immutable=1", uri=True) as db:
        assert db.execute("SELECT COUNT(*) FROM summary_stall").fetchone() == (0,)  # as stored


def test_the_stall_is_kept_in_the_summary_and_read_back_the_same(resummarized, tmp_path):
    """What summarize stored is what the report reads: the stall between
    steps survives the stored summary and a merge of it (beside the other
    recording, as a second node)."""
    run = resummarized("h200-resnet18-gpu-hang.db")
    other = resummarized("h200-resnet18-batch64.db")
    with sqlite3.connect(other) as db:  # both were recorded as agent "vm"
        db.execute("UPDATE agent SET name = 'vm2'")
        db.execute("UPDATE meta SET value = 'vm2' WHERE key = 'agent'")
    merged = tmp_path / "merged.db"
    r = trainprof("merge", "--force", "-o", merged, run, other)
    assert r.returncode == 0, r.stderr
    for path in (run, merged):
        [stall] = report_json(path)["stalls"]
        assert stall["between_steps"] and stall["phase"] == "from_device", path
    assert json.loads(trainprof("report", "--json", run).stdout)["stalls"][0]["step"] == 30
