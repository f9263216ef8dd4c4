"""`report`'s text leads with the answer (what the run was, the main verdict
and the one thing to try), then the detail; series that never moved fold
into a line; an input-bound verdict says what the loading waits on, the
training's own CPU told apart from another process's."""

import json
import os
import sqlite3
import textwrap

import pytest
from conftest import (
    EMIT,
    FAKE_NVML,
    PYTHON,
    ROOT,
    OthersCpu,
    record_burning_from_flag,
    trainprof,
    words,
)

GOLDEN = ROOT / "tests" / "golden" / "runs"


def report(*args):
    r = trainprof("report", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def short(text):
    """The lines of the "In short" block."""
    block = text.split("\nIn short\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


def own_line(lines):
    """The index of the "In short" line that says trainprof's own cost."""
    return next(i for i, x in enumerate(lines) if x.startswith("  trainprof's own work"))


def test_the_answer_comes_before_the_detail():
    run = GOLDEN / "synthetic2.db"
    text = report(run)
    rep = json.loads(report("--json", run))
    assert text.index("In short") < text.index("System metrics") < text.index("\nVerdicts\n")
    lines = short(text)
    assert all(len(x) <= 100 for x in lines), lines
    steps = rep["steps"][0]
    assert lines[0].startswith(f"  {steps['count']} steps of the first rank, ")
    assert f"{steps['steps_per_s']:.1f} steps/s" in lines[0]
    # the lead: the verdict explaining the most step time, here the collectives
    kinds = [v["kind"] for v in rep["verdicts"]]
    assert len(kinds) > 2 and kinds[0] != "communication_bound"
    assert lines[2].startswith("  [communication_bound] ")
    # then the pointer to the rest, and last what trainprof's own work cost
    own = own_line(lines)
    assert f"({len(kinds) - 1} more verdicts, with the evidence" in lines[own - 1]
    assert all(x.startswith("    ") for x in lines[own + 1 :]), lines
    # a run where no rule fires says so up front
    quiet = short(report(GOLDEN / "stacks.db"))
    own = own_line(quiet)
    assert quiet[0].startswith("  350 steps, "), quiet
    assert quiet[own - 1] == "  No rule of thumb fired: nothing stands out as the bottleneck."
    # the phases of a step, in the steps' line
    said = " ".join(x.strip() for x in short(report(GOLDEN / "example.db")))
    assert "a step: train_batch 87%, dataloader_next 10%, other 3%" in said


def test_series_that_never_moved_fold_into_a_line_and_all_shows_them():
    run = GOLDEN / "example.db"
    text, every = report(run), report("--all", run)
    rows = [x.split() for x in text.splitlines() if x.startswith("  swap_used_bytes ")]
    assert rows == []
    folded = text.split("also recorded, all zero (--all shows them): ", 1)[1].split("\n\n")[0]
    assert "swap_used_bytes" in folded and "net_sent_bytes_per_s (all, interface=eth0" in folded
    assert any(x.startswith("  swap_used_bytes ") for x in every.splitlines())
    assert "also recorded" not in every
    # nothing is lost to the JSON
    metrics = {m["name"] for m in json.loads(report("--json", run))["agents"][0]["metrics"]}
    assert "swap_used_bytes" in metrics


LOADER = textwrap.dedent("""
    import os, pathlib, sys, time, torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):          # waits, as a remote read would: no CPU
        def __len__(self): return 100000
        def __getitem__(self, i):
            time.sleep(0.004)
            return torch.ones(8)

    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    end = time.time() + float(sys.argv[1])
    pathlib.Path(os.environ["FLAG"]).write_text("go")  # the test's burners start
    for x in DataLoader(Slow(), batch_size=4):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        if time.time() > end:
            break
""")


def input_cause(tmp_path, burners):
    """The run's input_bound evidence and short lines; burners run beside
    its steps (from its loop's start: its import alone would only cost)."""
    script = tmp_path / "train.py"
    script.write_text(LOADER)
    run, flag = tmp_path / f"run{burners}.db", tmp_path / f"flag{burners}"
    env = dict(os.environ, FLAG=str(flag))
    env.pop("TRAINPROF_NVML_LIB", None)
    args = ["-q", "-i", "0.2", "-o", run, "--", PYTHON, script, "4"]
    record_burning_from_flag(args, env, flag, burners, timeout=300)
    rep = json.loads(report("--json", run))
    [ev] = [v["evidence"] for v in rep["verdicts"] if v["kind"] == "input_bound"]
    return ev, short(report(run))


@pytest.fixture(scope="module")
def quiet_input(tmp_path_factory):
    """The input-bound run with no burners of its own (two tests read it):
    its evidence, its report's short lines, its run file, and what others
    did beside it (OthersCpu)."""
    d = tmp_path_factory.mktemp("quiet")
    with OthersCpu() as load:
        ev, lines = input_cause(d, burners=0)
    return ev, lines, d / "run0.db", load


def test_input_bound_tells_the_training_s_cpu_from_another_process_s(tmp_path, quiet_input):
    """The issue's run: a Dataset that only waits while other processes keep
    the CPUs busy. Before, the advice said "CPU-bound, more workers won't
    help"; the training's own processes used little of the machine."""
    ev, lines = input_cause(tmp_path, burners=2)
    assert ev["cpu_util_p50_percent"] >= 90 and ev["training_cpu_p50_percent"] < 45
    assert any(x.startswith("  [input_bound] ") for x in lines)  # it leads
    said = words(" ".join(lines))
    assert "more workers won't help" not in said
    # the Dataset sleeps: others busy on the cycles it leaves idle do not slow
    # it (its processes barely waited for a CPU: 4-6 % of the time, measured),
    # so the advice is its latency's, and the report says why others are not
    # the cause; where it did wait for them, they are
    if ev["training_cpu_wait_p50_percent"] < 10:
        assert ev["cause"] == not_held_back(ev), ev
        if ev["cause"] == "latency":
            assert "they are not what slows its loading" in said
            assert "more DataLoader workers" in said
    else:
        assert ev["cause"] == "contention", ev
    # the same run with no burners of its own: on idle CPUs the loader's latency
    # is the cause; where other processes kept the CPUs busy and it waited, they are
    ev, _, _, load = quiet_input
    if load.busy and ev["cpu_util_p50_percent"] >= 90:
        held = ev["training_cpu_wait_p50_percent"] >= 10
        assert ev["cause"] == ("contention" if held else not_held_back(ev)), (load.cpus, ev)
    else:
        assert ev["cause"] == not_held_back(ev) and ev["cpu_util_p50_percent"] < 90, (load.cpus, ev)


def not_held_back(ev):
    """The cause of a loader not held back by others on the CPUs: its latency,
    unless the machine's storage was busy meanwhile (tasks waiting on I/O a
    quarter of the time, or a disk busy 90 %, medians) and the training's
    threads were seen waiting on it (state D) a quarter of its loading's
    share: a slow VM's disk was busy in CI while this training slept in its
    Dataset, and the verdict named the disk."""
    storage = ev["pressure_io_some_p50_percent"] >= 25 or ev["disk_busy_p50_percent"] >= 90
    waited = ev["training_blocked_mean"] >= 0.25 * ev["dataloader_next_share"]
    return "io" if storage and waited else "latency"


def test_facts_reach_the_run_file_under_their_prefix_and_bad_ones_never_leave(tmp_path):
    run = tmp_path / "facts.db"
    r = trainprof("record", "-q", "-o", run, "--", EMIT, "facts")
    assert r.returncode == 0, r.stderr  # the sender refused the malformed one itself
    meta = json.loads(report("--json", run))["run"]["meta"]
    assert meta["fact.model.device"] == "cpu" and meta["fact.loader.num_workers"] == "3"
    assert not [
        k
        for k in meta
        if k.startswith("fact.") and k not in ("fact.model.device", "fact.loader.num_workers")
    ]


@pytest.mark.machine  # its run judges the machine's load (the fixture's OthersCpu)
def test_the_advice_fits_what_the_script_does(quiet_input):
    """A CPU training with a loader of no workers: the facts the instrumentation
    saw are in the run file, the input-bound advice names num_workers=0 and
    leaves pin_memory out (it speeds copies to a GPU only)."""
    ev, _, run, load = quiet_input
    rep = json.loads(report("--json", run))
    meta = rep["run"]["meta"]
    assert meta["fact.model.device"] == "cpu" and meta["fact.model.dtype"] == "float32"
    assert meta["fact.model.compiled"] == "0" and meta["fact.model.autocast"] == "0"
    assert meta["fact.loader.num_workers"] == "0" and meta["fact.loader.batch_size"] == "4"
    # every fact a CPU training with a loader tells (lib/facts.h's keys), and no other
    assert sorted(k for k in meta if k.startswith("fact.")) == [
        "fact.loader.batch_size",
        "fact.loader.num_workers",
        "fact.loader.persistent_workers",
        "fact.loader.pin_memory",
        "fact.model.autocast",
        "fact.model.compiled",
        "fact.model.device",
        "fact.model.dtype",
        "fact.torch.cuda",
        "fact.torch.version",
    ]
    [message] = [v["message"] for v in rep["verdicts"] if v["kind"] == "input_bound"]
    assert "pin_memory" not in message, message
    if ev["cause"] == "contention":  # others kept the CPUs busy: free them first, it says
        assert load.busy and "other processes compete" in message, (load.cpus, message)
    else:
        assert "num_workers=0 now" in message, message


def test_autocast_and_its_dtype_are_facts_of_the_run(tmp_path):
    """A model under torch.autocast: the run says so, and in which dtype,
    so that the advice never suggests what the script already does."""
    script = tmp_path / "autocast.py"
    script.write_text(
        textwrap.dedent("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(20):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(32, 64)).float().square().mean()
            loss.backward()
            opt.step()
    """)
    )
    run = tmp_path / "autocast.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    meta = json.loads(report("--json", run))["run"]["meta"]
    assert meta["fact.model.autocast"] == "1" and meta["fact.model.autocast_dtype"] == "bfloat16"
    assert meta["fact.model.dtype"] == "float32"


def test_compute_advice_on_the_cpu_says_nothing_of_tensor_cores(tmp_path):
    script = tmp_path / "compute.py"
    script.write_text(
        textwrap.dedent("""
        import sys, time, torch
        from torch.utils.data import DataLoader, TensorDataset
        loader = DataLoader(TensorDataset(torch.randn(256, 256)), batch_size=64)
        model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)])
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        end = time.time() + float(sys.argv[1])
        while time.time() < end:
            for (x,) in loader:
                opt.zero_grad()
                model(x).square().mean().backward()
                opt.step()
    """)
    )
    run = tmp_path / "compute.db"
    # a node with a GPU (the fake NVML's, with GPM) the CPU model doesn't use
    r = trainprof(
        "record",
        "-q",
        "-i",
        "0.2",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        "3",
        timeout=300,
        env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "1"},
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(report("--json", run))
    said = [(v["kind"], v["message"][:300]) for v in rep["verdicts"]]
    assert [k for k, _ in said].count("compute_bound") == 1, (said, rep["steps"])
    [message] = [v["message"] for v in rep["verdicts"] if v["kind"] == "compute_bound"]
    assert "tensor cores" not in message and "FP16" not in message
    assert "the model runs on the CPU" in message and "torch.compile" in message
    # the same run had its model been on that GPU, busy half the time (the
    # fake's 50 %): the host could not keep it busy, and neither precision
    # nor tensor cores are the advice
    with sqlite3.connect(run) as db:
        db.execute("UPDATE meta SET value = 'cuda' WHERE key = 'fact.model.device'")
    rep = json.loads(report("--json", run))
    [message] = [v["message"] for v in rep["verdicts"] if v["kind"] == "host_bound"]
    assert "tensor cores" not in message and "faster or more GPUs" not in message, message
    assert not [v for v in rep["verdicts"] if v["kind"] in ("compute_bound", "gpu_underused")]
    # ... and busy 95 %: compute-bound, GPM's tensor activity (the fake's 30 %) cited
    with sqlite3.connect(run) as db:
        db.execute(
            "UPDATE sample SET value = 95 WHERE series_id IN (SELECT s.id FROM series s"
            " JOIN metric m ON m.id = s.metric_id WHERE m.name = 'gpu_util_percent')"
        )
    assert trainprof("summarize", "--force", run).returncode == 0
    rep = json.loads(report("--json", run))
    [message] = [v["message"] for v in rep["verdicts"] if v["kind"] == "compute_bound"]
    assert "Its GPU's tensor cores were busy 30% of the time (GPM)." in message, message
