"""The training's GPU memory as its allocator keeps it (issue 59), on a
machine without a GPU: the Python face's reader (trainprof.runtime.
device_memory) is handed a stand-in for torch.cuda whose memory_stats gives
the figures a case needs, and everything after it is real: the step marks
that take the readings, the ring, the recorder, the run file's cuda_*
series, the rules (analyze/gpu_memory.h) and the report's words.
tools/gpu-check.sh runs the same cases on a real GPU."""

import sqlite3
import textwrap

import pytest
from conftest import PYTHON, in_short, report_json, trainprof, words

G, M = 1 << 30, 1 << 20

# A training of STEPS steps of 10 ms whose allocator gives, at step k,
# ALLOC(k) allocated between steps, that plus ADDS at its peak, RESERVE
# more reserved, on a device of CAPACITY; every step marked read (the
# throttle off) unless THROTTLED. Then END: "" (a normal end), "oom" (the
# allocator's out-of-memory raised as torch raises it) or "kill" (SIGKILL).
SCRIPT = """
import os, signal, sys, time, types
import trainprof
from trainprof import _native
from trainprof.runtime import device_memory as dm

G, M = 1 << 30, 1 << 20
step = 0

def alloc(k):
    return {alloc}

def memory_stats(device):
    start = alloc(step)
    return {{
        "allocated_bytes.all.current": start,
        "reserved_bytes.all.current": start + {reserve},
        "allocated_bytes.all.peak": start + {adds},
        "reserved_bytes.all.peak": start + {adds} + {reserve},
        "num_alloc_retries": {retries},
        "num_ooms": 0,
    }}

cuda = types.SimpleNamespace(
    memory_stats=memory_stats,
    get_device_properties=lambda d: types.SimpleNamespace(total_memory={capacity}),
)
{facts}
dm.enable(types.SimpleNamespace(cuda=cuda), "cuda:0")
if not {throttled}:
    dm._EVERY_NS, dm._COST_SHARE = 0, 0
for step in range({steps}):
    trainprof.step()
    time.sleep(0.01)
if "{end}" == "oom":
    import torch
    raise torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "16.00 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process "
        "has 14.40 GiB memory in use."
    )
if "{end}" == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def record(
    tmp_path,
    steps=150,
    alloc="2 * G",
    adds="4 * G",
    reserve="1 * G",
    capacity="16 * G",
    retries=0,
    end="",
    facts="",
    throttled=False,
):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(SCRIPT).format(
            steps=steps,
            alloc=alloc,
            adds=adds,
            reserve=reserve,
            capacity=capacity,
            retries=retries,
            end=end,
            facts=facts,
            throttled=throttled,
        )
    )
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script)
    assert (r.returncode == 0) == (end == ""), r.stderr
    return run


def verdicts(rep, kind):
    return [v for v in rep["verdicts"] if v["kind"] == kind]


def test_a_leak_is_forecast_to_the_step_it_runs_out_at(tmp_path):
    """50 MiB more stays allocated after each step: its peak (the start and
    4 GiB) meets the 16 GiB at step 205; the forecast, made from 150 steps,
    names it within 10 %."""
    run = record(tmp_path, alloc="2 * G + k * 50 * M")
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    assert g["capacity_bytes"] == 16 * G and g["readings"] >= 150
    growth = g["growth"]
    assert growth["bytes_per_step"] == pytest.approx(50 * M, rel=0.05)
    assert growth["out_of_room_step"] == pytest.approx(205, rel=0.1)
    (v,) = verdicts(rep, "gpu_memory_growth")
    assert v["evidence"]["rank"] is None and "a leak on the device" in v["message"]
    assert "at about step" in v["message"]
    short = in_short(trainprof("report", run).stdout)
    assert "[gpu_memory_growth]" in short and "grows by" in short
    page = tmp_path / "run.html"
    assert trainprof("html", "-o", page, run).returncode == 0
    html = page.read_text()
    assert "<h3>GPU memory (the training's allocator, at step boundaries)" in html
    assert "<title>cuda_allocated_bytes</title>" in html
    # beside the step times, before the system metrics
    assert html.index("<title>cuda_allocated_bytes</title>") < html.index('id="system-metrics"')


def test_memory_that_settles_after_the_start_is_no_leak(tmp_path):
    """The first 40 steps allocate 3 GiB (a lazily built optimizer state,
    cuDNN's workspaces), then it stays: no growth, no verdict."""
    run = record(tmp_path, alloc="2 * G + min(k, 40) * 75 * M")
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    assert g["growth"] is None
    assert not verdicts(rep, "gpu_memory_growth")


def test_a_healthy_run_shows_its_headroom(tmp_path):
    """20 GiB between steps, 30 GiB more at the peak, on 65 GiB: a batch
    about 1.5 times larger fits; no verdict on memory."""
    run = record(tmp_path, steps=40, alloc="20 * G", adds="30 * G", capacity="65 * G")
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    assert g["between_steps_bytes"] == 20 * G and g["step_adds_bytes"] == 30 * G
    assert g["peak_allocated_bytes"] == 50 * G
    assert g["batch_factor"] == pytest.approx(1.5)
    assert not g["fragmented"] and g["growth"] is None and g["out_of_memory"] is None
    assert not verdicts(rep, "memory_pressure") and not verdicts(rep, "gpu_memory_growth")
    text = words(trainprof("report", run).stdout)
    assert "the training: peak 50.00 GiB of 65.00 GiB (77%)" in text
    assert "a batch about 1.5x larger would fit (an estimate" in text


def test_a_full_device_and_a_fragmented_cache_are_said(tmp_path):
    """A peak of 15 of 16 GiB is memory_pressure; 5 GiB reserved beyond it is
    fragmentation, and the advice names expandable segments, unless the
    training runs with them."""
    run = record(
        tmp_path,
        steps=40,
        alloc="5 * G",
        adds="10 * G",
        reserve="5 * G",
        capacity="16 * G",
        retries=7,
    )
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    assert g["fragmented"] and g["fragment_bytes"] == 5 * G and g["alloc_retries"] == 7
    (v,) = verdicts(rep, "memory_pressure")
    assert "peaked at 15.00 GiB of the 16.00 GiB it can use" in v["message"]
    assert "expandable_segments:True lets the allocator" in v["message"]
    text = words(trainprof("report", run).stdout)
    assert "It freed its cache 7 times to retry an allocation" in text
    again = tmp_path / "expandable"
    again.mkdir()
    run = record(
        again,
        steps=40,
        alloc="5 * G",
        adds="10 * G",
        reserve="5 * G",
        facts='_native.fact("cuda.alloc_conf=expandable_segments:True")',
    )
    (v,) = verdicts(report_json(run), "memory_pressure")
    assert "It runs with expandable segments already." in v["message"]


def test_an_out_of_memory_is_explained(tmp_path):
    """A leak that ends in torch.OutOfMemoryError: the death names what it
    asked for, what was allocated, reserved and free then (its last reading
    is taken as it raises), and the leak."""
    run = record(tmp_path, alloc="2 * G + k * 50 * M", end="oom")
    rep = report_json(run)
    (g,) = rep["gpu_memory"]
    oom = g["out_of_memory"]
    assert oom["tried_bytes"] == 2 * G and oom["free_bytes"] == int(1.5 * G)
    assert oom["allocated_bytes"] == 2 * G + 149 * 50 * M  # the last step's
    assert oom["step"] == 150
    short = in_short(trainprof("report", run).stdout)
    assert "It ran out of GPU memory asking for 2.00 GiB with 9.28 GiB allocated" in short
    assert "1.50 GiB free on the device" in short
    assert "had grown by" in short and "Try keeping no tensor with its graph" in short


def test_a_rank_killed_outright_leaves_its_last_figures(tmp_path):
    run = record(tmp_path, steps=60, alloc="2 * G + k * M", end="kill")
    with sqlite3.connect(run) as db:
        (last,) = db.execute(
            "SELECT value FROM samples WHERE metric = 'cuda_allocated_bytes'"
            " ORDER BY t_ns DESC LIMIT 1"
        ).fetchone()
    assert last == 2 * G + 59 * M
    (g,) = report_json(run)["gpu_memory"]
    assert g["readings"] == 60


def test_readings_are_rationed_by_time(tmp_path):
    """With its time ration on, 150 steps of 10 ms are read at most every
    0.1 s: a reading for fewer than a third of the steps. (Its cost ration
    aside: a reading put off by a loaded machine once counted as a costly
    one, and put the next off past the run's end.)"""
    run = record(tmp_path, steps=150, throttled=True, facts="dm._COST_SHARE = 0")
    (g,) = report_json(run)["gpu_memory"]
    assert 3 <= g["readings"] <= 50


def test_readings_are_rationed_by_their_cost(tmp_path):
    """A reading that takes 5 ms is not taken again for 1,000 times that
    (under 0.1 % of the training's time), whatever the time ration says."""
    slow = (
        "fast = cuda.memory_stats\n"
        "cuda.memory_stats = lambda d: (time.sleep(0.005), fast(d))[1]\n"
        "dm._EVERY_NS = 0"
    )
    run = record(tmp_path, steps=150, throttled=True, facts=slow)
    (g,) = report_json(run)["gpu_memory"]
    assert g["readings"] == 1


def test_a_cpu_training_reads_nothing(tmp_path):
    """A model on the CPU: the reader never turns on (and CUDA is never
    touched)."""
    script = tmp_path / "cpu.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            model = nn.Linear(8, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(30):
                opt.zero_grad()
                model(torch.randn(4, 8)).sum().backward()
                opt.step()
            assert not torch.cuda.is_initialized()
            """
        )
    )
    run = tmp_path / "cpu.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    rep = report_json(run)
    assert rep["gpu_memory"] == []
    assert "GPU memory" not in trainprof("report", run).stdout


@pytest.mark.parametrize(
    "message, tried, free",
    [
        (
            "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 3.50 MiB is free.",
            20 * M,
            int(3.5 * M),
        ),
        ("CUDA out of memory. Tried to allocate 1.50 GiB", int(1.5 * G), None),
        ("something else", None, None),
    ],
)
def test_the_out_of_memory_message_is_read(message, tried, free):
    from trainprof.runtime import device_memory

    assert device_memory.out_of_memory_figures(message) == (tried, free)


def test_an_out_of_memory_is_known_by_its_type_or_words():
    from trainprof.runtime import device_memory

    assert device_memory.is_out_of_memory("torch.OutOfMemoryError", "")
    assert device_memory.is_out_of_memory("RuntimeError", "CUDA out of memory. Tried")
    assert not device_memory.is_out_of_memory("RuntimeError", "shapes do not match")


def test_a_failing_reader_is_said_once_and_the_training_goes_on(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(
        textwrap.dedent(
            """
            import types, trainprof
            from trainprof.runtime import device_memory as dm
            def boom(device):
                raise RuntimeError("no allocator here")
            cuda = types.SimpleNamespace(
                memory_stats=boom,
                get_device_properties=lambda d: types.SimpleNamespace(total_memory=1 << 30),
            )
            dm.enable(types.SimpleNamespace(cuda=cuda), "cuda:0")
            for _ in range(20):
                trainprof.step()
            print("done")
            """
        )
    )
    r = trainprof("record", "-q", "-o", tmp_path / "bad.db", "--", PYTHON, script)
    assert r.returncode == 0 and r.stdout == "done\n"
    assert r.stderr.count("reading the GPU's memory failed (RuntimeError: no allocator here)") == 1
    assert report_json(tmp_path / "bad.db")["gpu_memory"] == []  # no reading went out
