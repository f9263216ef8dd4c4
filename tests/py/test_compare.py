"""`trainprof compare`: two runs of one training, A against B (recorded for
real: fewer DataLoader workers, CPU burners beside one, the same run twice,
a run without steps), and scalability across runs of different world sizes."""

import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import sqlite3

import pytest
from conftest import (
    FAKE_NVML,
    PYTHON,
    ROOT,
    OthersCpu,
    record_burning_from_flag,
    report_from_rows,
    report_json,
    trainprof,
    words,
)
from test_html import chromium
from test_pace import DRIFTING
from test_timings import EMIT

# the tests that measure rates or name contention run alone (conftest:
# machine), and those that share their runs (loader_runs) with them


@pytest.mark.machine  # judges rates: two ranks at once, twice the samples per second
def test_two_world_sizes(tmp_path):
    one, two = tmp_path / "w1.db", tmp_path / "w2.db"
    gpus = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"}
    assert (
        trainprof(
            "record", "-q", "--interval", "0.05", "-o", one, "--", EMIT, "slow_epochs", env=gpus
        ).returncode
        == 0
    )
    both = f"RANK=0 WORLD_SIZE=2 {EMIT} slow_epochs & RANK=1 WORLD_SIZE=2 {EMIT} slow_epochs & wait"
    assert (
        trainprof(
            "record", "-q", "--interval", "0.05", "-o", two, "--", "sh", "-c", both, env=gpus
        ).returncode
        == 0
    )
    r = trainprof("compare", "--json", two, one)
    assert r.returncode == 0, r.stderr
    both = json.loads(r.stdout)
    assert both["a"]["world_size"] == 2 and both["b"]["world_size"] == 1
    assert {p["phase"] for p in both["phases"]} >= {"dataloader_next", "train_batch"}
    runs = {run["world_size"]: run for run in both["runs"]}
    assert set(runs) == {1, 2}
    assert runs[1]["speedup"] == 1.0 and runs[1]["efficiency"] == 1.0
    # two ranks do twice the samples in the same time: speed-up 2, efficiency 1
    assert 1.8 < runs[2]["speedup"] < 2.2
    assert 0.9 < runs[2]["efficiency"] < 1.1
    assert 0.5 < runs[1]["epoch_s"] < 0.8
    for run in runs.values():
        assert 610 * 0.45 < run["energy_per_epoch_j"] < 610 * 0.8
        assert run["energy_per_sample_j"] > 0
    # twice the samples on the same GPUs: half the energy per sample
    assert runs[2]["energy_per_sample_j"] < 0.6 * runs[1]["energy_per_sample_j"]
    text = trainprof("compare", one, two).stdout
    assert "speed-up" in text and any(x in text for x in ("1.99x", "2.00x", "2.01x"))
    page = tmp_path / "scaling.html"
    r = trainprof("html", "--compare", two, one, "-o", page)
    assert r.returncode == 0, r.stderr
    r = chromium("--dump-dom", page.as_uri())
    assert r.returncode == 0 and ":CONSOLE(" not in r.stderr
    dom = r.stdout
    assert dom.count("<svg") == 5  # A's and B's phases, then the four of the scaling
    assert "two runs compared" in dom and "At their scales" in dom
    for title in (
        "Samples per second",
        "Scaling efficiency",
        "Time per epoch",
        "Energy per sample",
    ):
        assert title in dom, title
    # bars in world-size order, labelled by world size and file
    assert dom.index("1 (w1.db)") < dom.index("2 (w2.db)")
    assert "<td>2</td>" in dom and "2.0" in dom
    r = trainprof("html", "--compare", "--all", one, two, "-o", tmp_path / "x.html")
    assert r.returncode == 2 and "--all is for one run's page" in r.stderr
    assert not (tmp_path / "x.html").exists()
    r = trainprof("html", "--compare", one, two)
    assert r.returncode == 2 and "-o FILE" in r.stderr


def test_bad_input(tmp_path):
    r = trainprof("compare", tmp_path / "only.db")
    assert r.returncode == 2 and "two or more run files" in r.stderr
    r = trainprof("compare", tmp_path / "a.db", tmp_path / "b.db")
    assert r.returncode == 2 and "no such file" in r.stderr


# ---- two runs of one training, A against B -----------------------------------------------

LOADER = pathlib.Path(__file__).parent / "programs" / "loader_train.py"


def record_loader(path, workers, *args, burners=0, steps=200):
    """loader_train.py under record; with burners, that many CPU burners run
    beside it from its first step to its end (its import and start-up
    alone, 2 to 3 times slower beside them, would only cost the suite)."""
    flag = path.parent / f"{path.stem}.flag"
    env = dict(os.environ, FLAG=str(flag), TRUTH=str(truth_of(path)))
    env.pop("TRAINPROF_NVML_LIB", None)
    args = ["-q", "-o", path, "--", PYTHON, LOADER, workers, steps, *args]
    record_burning_from_flag(args, env, flag, burners, timeout=300)


def truth_of(path):
    """Where loader_train.py under record to path writes what it measured."""
    return path.parent / f"{path.stem}.truth.json"


def compare_json(a, b):
    r = trainprof("compare", "--json", a, b)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def loader_runs(tmp_path_factory):
    """The same training with 2 DataLoader workers (twice) and with none."""
    d = tmp_path_factory.mktemp("loader")
    runs = {"two": d / "two.db", "two_again": d / "two_again.db", "none": d / "none.db"}
    record_loader(runs["two"], 2)
    record_loader(runs["two_again"], 2)
    record_loader(runs["none"], 0)
    return runs


@pytest.mark.machine
def test_fewer_workers_moved_the_input_and_say_why(loader_runs):
    c = compare_json(loader_runs["two"], loader_runs["none"])
    change = c["step_change"]
    assert change["comparable"] and change["changed"]
    assert change["low"] <= change["change"] <= change["high"] and change["low"] > 0.3
    assert c["samples_per_s_change"] < -0.2
    moved = {p["phase"] for p in c["phases"] if p["moved"]}
    assert moved == {"dataloader_next"}
    assert c["same_script"]
    assert {"key": "loader.num_workers", "a": "2", "b": "0"} in c["differences"]
    causes = c["causes"]
    assert causes[0]["kind"] == "phase" and causes[0]["phase"] == "dataloader_next"
    assert causes[0]["after"] > causes[0]["before"]
    # the step thread now reads the samples itself: the dataset's __getitem__
    assert len(causes) > 1, causes
    function = causes[1]
    assert function["kind"] == "function" and function["function"] == "Slow.__getitem__"
    assert function["after"] > function["before"] + 0.5
    # the capture windows' steps left out: the scheduled one's 5 at step 11, and
    # on a busy machine perhaps a slow step's window (at most one in 10 minutes),
    # each a step or two longer where the recorder's drain lags
    for side in ("a", "b"):
        assert 180 <= c[side]["steps"] <= 195, (side, c[side]["steps"])
    text = trainprof("compare", loader_runs["two"], loader_runs["none"]).stdout
    assert "B's steps take" in text and "longer than A's" in text
    assert "B's loader.num_workers is 0 where A's was 2." in text
    assert "Slow.__getitem__" in text


@pytest.mark.machine
def test_the_gate_fails_a_slower_run_and_passes_a_faster_one(loader_runs):
    two, none = loader_runs["two"], loader_runs["none"]
    r = trainprof("compare", "--fail-if-slower", "5", "--gate-anyway", two, none)
    assert r.returncode == 3, r.stderr
    assert "is slower than A" in r.stderr and "more than the 5% allowed" in r.stderr
    assert "In short" in r.stdout  # the comparison is printed all the same
    # Without --gate-anyway the gate gives no verdict on the code (4) where the
    # machine differed between the runs, as the comparison's causes say: beside
    # other work (CI's, or burners) the two recordings may meet different machines.
    the_code = {"phase", "function"}
    causes = {c["kind"] for c in compare_json(two, none)["causes"]} - the_code
    if "others_cpu_percent" not in causes:  # waiting for a CPU alone: the training's own
        causes -= {
            "cpu_pressure_percent",
            "training_cpu_wait_percent",
            "step_thread_cpu_wait_percent",
        }
    r = trainprof("compare", "--fail-if-slower", "5", two, none)
    assert r.returncode == (4 if causes else 3), (causes, r.stderr)
    assert ("machine differed" in r.stderr) == bool(causes), r.stderr
    r = trainprof("compare", "--fail-if-slower", "5", loader_runs["none"], loader_runs["two"])
    assert r.returncode == 0, r.stderr


@pytest.mark.machine
def test_the_same_run_twice_is_no_change(loader_runs):
    """No change is found where the training itself measured none. The same
    run twice is not always the same: on this VM the workers' 1.5 ms sleeps
    once overshot more in one run than in the other, and its steps took 23 %
    longer (a change, rightly found); and others may hold the CPUs unevenly.
    So the script's own timings (loader_train.py's TRUTH) say which figures
    met the same machine twice, within 2 % of a step: those must not move."""
    two, again = loader_runs["two"], loader_runs["two_again"]
    c = compare_json(two, again)
    change = c["step_change"]
    assert change["comparable"]
    assert [d["key"] for d in c["differences"]] == []  # one command, one machine
    ta, tb = (json.loads(truth_of(x).read_text()) for x in (two, again))
    same = {k: abs(tb[k] - ta[k]) < 0.02 * ta["step_s"] for k in ("step_s", "wait_s", "train_s")}
    moved = {p["phase"] for p in c["phases"] if p["moved"]}
    if same["wait_s"]:
        assert "dataloader_next" not in moved, (ta, tb, c["phases"])
    if same["train_s"]:
        assert "train_batch" not in moved, (ta, tb, c["phases"])
    r = trainprof("compare", "--fail-if-slower", "5", two, again)
    if not all(same.values()):
        # the two runs met different machines, and a phase may have moved:
        # the gate still follows the interval it printed (4 where it saw the
        # machines differ: others' CPU is a cause)
        slower = 3 if "machine differed" not in r.stderr else 4
        assert r.returncode == (slower if change["low"] > 0.05 else 0), (change, r.stderr)
        return
    assert not change["changed"], (ta, tb, change)
    assert not moved, (ta, tb, c["phases"])
    assert r.returncode == 0, r.stderr
    assert "No change in step time" in r.stdout


def test_contention_beside_the_second_run_is_named(tmp_path):
    """A compute-bound training (no wait in its loader, a wider model, larger
    batches), then the same with one CPU burner more than the machine has
    CPUs beside it."""
    quiet, busy = tmp_path / "quiet.db", tmp_path / "busy.db"
    # 300 steps of about 7 ms on one thread: 2 s of steps for the burners to slow.
    # As many burners as CPUs left the training a CPU of its own at times (the
    # scheduler cannot share 3 threads evenly over 2 CPUs: CI once saw less
    # than 20 % slower); one more makes every CPU shared
    with OthersCpu() as load:  # "quiet" where nothing else runs
        record_loader(quiet, 0, "0", "4096", "256", steps=300)
    record_loader(busy, 0, "0", "4096", "256", burners=(os.cpu_count() or 2) + 1, steps=300)
    c = compare_json(quiet, busy)
    kinds = {cause["kind"]: cause for cause in c["causes"]}
    assert c["b"]["machine"]["others_cpu_percent"] > 40
    # B's own report leads with who held the CPUs (its step computes: it
    # would be compute_bound alone)
    answer = words(trainprof("report", busy).stdout).split(" System metrics")[0]
    assert "[cpu_contention] Other processes held the CPUs" in answer, answer
    [held] = [v["evidence"] for v in report_json(busy)["verdicts"] if v["kind"] == "cpu_contention"]
    assert held["training_cpu_wait_percent"] >= 10 and held["others_cpu_percent"] > 45, held
    # its one process's step thread, read by the recorder, is what waited
    assert held["step_thread_cpu_wait_percent"] >= 10 and held["step_threads"] == 1, held
    assert "the training's step thread waited for a CPU" in answer, answer
    if load.busy:  # others took CPUs from A as well: B's burners add less than they take
        assert c["step_change"]["comparable"] and kinds, (load.cpus, c)
        return
    assert c["step_change"]["changed"] and c["step_change"]["change"] > 0.2, c["step_change"]
    assert "others_cpu_percent" in kinds
    assert kinds["others_cpu_percent"]["after"] > kinds["others_cpu_percent"]["before"] + 30
    held = kinds.get("step_thread_cpu_wait_percent")  # its step thread's wait for a CPU
    assert held and held["after"] >= held["before"] + 10, kinds
    assert "its step thread waited for a CPU" in words(trainprof("compare", quiet, busy).stdout)
    text = words(trainprof("compare", quiet, busy).stdout)
    assert "processes not the training's used" in text
    # the gate blames code only for what code did: B is slower, but beside
    # burners, so it says so and gives its own status, unless told to judge
    r = trainprof("compare", "--fail-if-slower", "5", quiet, busy)
    assert r.returncode == 4, r.stderr
    said = words(r.stderr)
    assert "but the machine differed" in said and "processes not the training's used" in said
    assert "--gate-anyway" in said
    r = trainprof("compare", "--fail-if-slower", "5", "--gate-anyway", quiet, busy)
    assert r.returncode == 3, r.stderr


@pytest.mark.machine
def test_a_run_without_steps_compares_what_it_can(tmp_path, loader_runs):
    idle = tmp_path / "idle.db"
    r = trainprof("record", "-q", "-o", idle, "--", PYTHON, "-c", "import time; time.sleep(1)")
    assert r.returncode == 0, r.stderr
    r = trainprof("compare", loader_runs["two"], idle)
    assert r.returncode == 0, r.stderr
    assert "No step time to compare: B had no steps" in r.stdout
    assert "These are runs of different programs" in r.stdout
    assert "The machine over the steps" in r.stdout
    r = trainprof("compare", "--fail-if-slower", "5", loader_runs["two"], idle)
    assert r.returncode == 2 and "has no steps to time" in r.stderr
    r = trainprof("compare", "--fail-if-slower", "5", loader_runs["two"], idle, idle)
    assert r.returncode == 2 and "compares two run files" in r.stderr


@pytest.mark.machine
def test_two_runs_on_one_page(tmp_path, loader_runs):
    page = tmp_path / "two.html"
    r = trainprof("html", "--compare", loader_runs["two"], loader_runs["none"], "-o", page)
    assert r.returncode == 0, r.stderr
    r = chromium("--dump-dom", page.as_uri())
    assert r.returncode == 0 and ":CONSOLE(" not in r.stderr
    assert "two runs compared" in r.stdout and "A step, by phase" in r.stdout
    assert "loader.num_workers" in r.stdout and "<svg" in r.stdout


def test_a_stalled_run_gets_the_verdicts_report_gives_it(tmp_path):
    """compare reads each side's course as report does: a run that stalled
    gets no verdict on its step time (report gives it none), where compare
    once gave it a steady run's (communication_bound)."""
    runs = ROOT / "tests" / "golden" / "runs"
    steady, stalled = tmp_path / "example.db", tmp_path / "stalled.db"
    shutil.copy(runs / "example.db", steady)
    shutil.copy(runs / "stalled.db", stalled)
    assert report_json(stalled)["verdicts"] == []
    r = trainprof("compare", steady, stalled)
    assert r.returncode == 0, r.stderr
    assert "only B's" not in r.stdout
    assert "communication_bound" not in r.stdout


# A training whose Dataset reads from a cache (1 ms a sample, 8 ms a batch,
# no workers), and from a slow store from batch SLOW_FROM on (4 ms a sample,
# 32 ms a batch): its steps 16 ms before then (2.6 s of them: a pace lasts 2 s
# or more), 40 ms since.
PACED = """
import os, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
SLOW_FROM = int(os.environ["SLOW_FROM"])
def read_cache(i):
    time.sleep(0.001)
def read_store(i):
    time.sleep(0.004)
class Data(Dataset):
    def __len__(self):
        return 8 * 240
    def __getitem__(self, i):
        (read_store if i // 8 >= SLOW_FROM else read_cache)(i)
        return torch.ones(16), 0
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(Data(), batch_size=8):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    time.sleep(0.007)
"""


# judges where a change point falls in wall time: beside the spread's other
# tests, their load once doubled B's steps from step 145, before its store
# slowed at 160, and the change was found there (the report rightly said
# that other processes took the CPUs), its cache's reads 11 % of the latest
# pace's loading
@pytest.mark.machine
def test_a_run_whose_pace_changed_is_compared_on_its_latest_pace(tmp_path):
    """B's data moved to a slow store two thirds into the run: it is
    compared on its steps since (as its report judges them), not on an
    average of two paces that no step took; the whole runs' change beside."""
    script = tmp_path / "paced.py"
    script.write_text(PACED)
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for path, slow_from in ((a, 100000), (b, 160)):
        env = {"SLOW_FROM": str(slow_from)}
        r = trainprof("record", "-q", "-o", path, "--", PYTHON, script, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
    rep_b = report_json(b)
    latest = rep_b["regimes"]["regimes"][-1]
    # the change where the store slowed (a busy machine may blur the first slow steps)
    assert 150 <= latest["first_step"] <= 200 and latest["last_step"] == 240, latest
    # B's own verdict, judged on its steps since, says where their loading went
    # over those steps: the store's reader, not the cache's of the steps before
    [inp] = [v for v in rep_b["verdicts"] if v["kind"] == "input_bound"]
    assert inp["evidence"]["since_step"] == latest["first_step"], inp["evidence"]
    said = words(inp["message"])
    inside = re.search(r"Inside: dataloader_next's time goes to read_store \([^)]*\) (\d+)%", said)
    assert inside and int(inside.group(1)) >= 85, said
    # a busy machine may set the change a step early (step 160, its batch the
    # cache's): that step's read at most a trace after the store's
    cache = re.search(r"read_cache \([^)]*\) (\d+)%", said)
    assert cache is None or (latest["first_step"] <= 160 and int(cache.group(1)) <= 5), said
    # what the report reads of the samples since the change (the stack counts
    # over the latest pace, each change's function) is stored with the
    # summary: with the samples gone its verdicts and changes stand, and they
    # are what the rows give
    bare = tmp_path / "b-bare.db"
    shutil.copy(b, bare)
    with sqlite3.connect(bare) as db:
        key = (latest["first_step"], latest["last_step"])
        stored = db.execute(
            "SELECT count(*) FROM summary_stack_latest WHERE first_step = ? AND last_step = ?", key
        ).fetchone()[0]
        assert stored > 0 and db.execute("SELECT count(*) FROM summary_pace_function").fetchone()
        db.execute("DELETE FROM stack_sample")
    db.close()
    rows = report_from_rows(b, tmp_path)
    for rep in (report_json(bare), rows):
        assert rep["verdicts"] == rep_b["verdicts"] and rep["regimes"] == rep_b["regimes"], rep
    c = compare_json(a, b)
    # A keeps one pace on a quiet machine; beside the spread's other tests
    # their load comes and goes (three paces once): its side is then its
    # latest pace, as its report judges it
    paces_a = len(report_json(a)["regimes"]["regimes"])
    assert c["a"]["paces"] == paces_a and ("first_step" in c["a"]) == (paces_a > 1), c["a"]
    assert c["b"]["paces"] >= 2 and c["b"]["first_step"] == latest["first_step"], c["b"]
    # B's side is its latest pace's steps: 40 ms or so against 16
    assert abs(c["b"]["step_mean_s"] / latest["step_mean_s"] - 1) < 0.02, (c["b"], latest)
    change, whole = c["step_change"]["change"], c["step_change"]["whole_change"]
    # about +150 % on a quiet machine; beside the spread's other tests A's
    # short sleeps ran longer too (+95 % once): the change is what B's steps
    # since took against A's, whatever each took
    assert c["step_change"]["changed"] and change > 0.3, c["step_change"]
    expected = c["b"]["step_mean_s"] / c["a"]["step_mean_s"] - 1
    assert abs(change - expected) < 0.02, (c["step_change"], expected)
    # over the whole runs a third of the steps were slow: far less of a change
    # (+50 % quiet)
    assert 0 < whole < change / 2, c["step_change"]
    assert 0.003 < c["b"]["pace_before_step_mean_s"] < 1.5 * c["a"]["step_mean_s"], c
    moved = {p["phase"] for p in c["phases"] if p["moved"]}
    assert moved == {"dataloader_next"}, c["phases"]
    # the function that took the loader over, judged on B's steps since: nearly
    # all of them in read_store (over B's whole run, 2 in 3 of its loader's
    # samples: the cache's steps before diluted it)
    [function] = [x for x in c["causes"] if x["kind"] == "function"]
    assert function["function"] == "read_store" and function["samples_of"] == "step_thread"
    assert function["before"] < 0.05 and function["after"] > 0.85, function
    text = words(trainprof("compare", a, b).stdout)
    assert "read_store (" in text and "of dataloader_next's samples instead of 0%" in text, text
    page = tmp_path / "paced.html"  # its chart's bar says which steps it is
    assert trainprof("html", "--compare", a, b, "-o", page).returncode == 0
    assert f">B, steps {latest['first_step']} to 240<" in page.read_text(), page.read_text()
    # B as a summary-only merge holds it (its stored counts, no samples: a copy
    # so marked; a real one needs two nodes) knows only its whole run's
    # samples: it names no function over its latest pace rather than a diluted one
    only = tmp_path / "b-summary.db"
    shutil.copy(b, only)
    with sqlite3.connect(only) as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('summary_only', '1')")
        db.execute("DELETE FROM stack_sample")
    db.close()
    c = compare_json(a, only)
    assert c["b"]["paces"] >= 2 and c["step_change"]["changed"], c["b"]
    assert [x["kind"] for x in c["causes"]][:1] == ["phase"], c["causes"]
    assert "function" not in {x["kind"] for x in c["causes"]}, c["causes"]
    since = latest["first_step"]
    assert f"B {b}, steps {since} to 240: its latest pace" in text, text
    assert f"B's pace changed at step {since}: its steps took" in text, text
    assert "compared on its steps since, as its report judges them" in text, text
    assert "Over the whole runs, the steps before the change of pace included" in text, text
    # the gate judges the latest pace too, and says so (anyway: where the
    # tests beside kept the CPUs busier during one run than the other, the
    # gate rightly declines with exit status 4, which is not what this judges)
    r = trainprof("compare", "--fail-if-slower", "50", "--gate-anyway", a, b)
    assert r.returncode == 3, r.stderr
    assert f"its steps since step {since} (its latest pace) take at least" in r.stderr, r.stderr
    # A's pace changed, B's did not: said of A, and the function judged on A's
    # steps since (the store's share of its loader fell)
    text = words(trainprof("compare", b, a).stdout)
    assert f"A's pace changed at step {since}" in text and "B's steps take" in text, text
    [function] = [x for x in compare_json(b, a)["causes"] if x["kind"] == "function"]
    assert function["function"] == "read_store" and function["before"] > 0.85, function


# The loop's own logging, outside every phase of its 7 ms steps: to a file
# (3 ms) in A, to a remote store (15 ms) in B (no torch: a cheap script).
LOGGING = """
import sys, time, trainprof
def log_to_a_file():
    time.sleep(0.003)
def log_to_a_remote_store():
    time.sleep(0.015)
log = log_to_a_remote_store if sys.argv[1] == "remote" else log_to_a_file
for i in range(300):
    trainprof.step()
    with trainprof.region("train_batch"):
        time.sleep(0.004)
    {log}log()
"""


# the logging in a region of the user's own, between the phases: its
# samples carry only its name, and count in "other" still
@pytest.mark.parametrize("log", ["", 'with trainprof.region("logging"): '])
def test_the_loop_s_own_code_that_moved_is_named_between_two_runs(tmp_path, log):
    """B's steps spend longer outside their phases ("other"): the function
    that took that time is named, as for a phase (it was not looked for)."""
    script = tmp_path / "logging.py"
    script.write_text(LOGGING.replace("{log}", log))
    runs = {}
    for where in ("file", "remote"):
        runs[where] = tmp_path / f"{where}.db"
        r = trainprof("record", "-q", "-o", runs[where], "--", PYTHON, script, where)
        assert r.returncode == 0, r.stderr
    c = compare_json(runs["file"], runs["remote"])
    assert c["causes"][0]["kind"] == "phase" and c["causes"][0]["phase"] == "other", c["causes"]
    [function] = [x for x in c["causes"] if x["kind"] == "function"]
    assert function["function"] == "log_to_a_remote_store" and function["phase"] == "other"
    assert function["before"] <= 0.05 and function["after"] >= 0.5, function
    said = words(trainprof("compare", runs["file"], runs["remote"]).stdout)
    assert "log_to_a_remote_store (" in said, said


def test_a_run_whose_steps_grew_all_along_is_said_to_have_drifted(tmp_path):
    """B's steps grew steadily (a history walked every step): compare says
    so, as B's report does, not that its pace changed at the step where the
    change points cut the slope; JSON gives B's quarters, A's none."""
    runs = {name: tmp_path / f"{name}.db" for name in ("steady", "drifting")}
    (tmp_path / "steady.py").write_text(DRIFTING.replace("0.00004 *", "0 *"))
    (tmp_path / "drifting.py").write_text(DRIFTING)

    def record(name):
        return trainprof("record", "-q", "-o", runs[name], "--", PYTHON, tmp_path / f"{name}.py")

    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # both at once: they mostly sleep
        for r in pool.map(record, runs):
            assert r.returncode == 0, r.stderr
    drift = report_json(runs["drifting"])["regimes"]["drift"]
    assert drift, "the drifting run's own report found no drift"
    c = compare_json(runs["steady"], runs["drifting"])
    assert c["a"]["drift"] is None and c["b"]["drift"] == drift, c["b"]
    text = words(trainprof("compare", runs["steady"], runs["drifting"]).stdout)
    assert "B's steps grew steadily over its run, at no one step:" in text, text
    assert "pace changed" not in text, text
    first, last = drift["first_quarter_steps"], drift["last_quarter_steps"]
    assert f"first quarter (steps {first[0]}-{first[1]})" in text, text
    assert f"over its last (steps {last[0]}-{last[1]}; A's" in text, text
