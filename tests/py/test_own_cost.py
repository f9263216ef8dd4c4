"""What trainprof's own work cost the training, in every report (issue 56):
measured by the sampled stacks (its wrappers, device times, capture
windows) and, for the regions a script times itself, estimated at what a
region costs; over the 1 % budget the report says so with the option that
lowers it, and the recorder backs off (no capture window after a slow step,
the scheduled ones further apart) and says that it did."""

import json
import textwrap

from conftest import PYTHON, in_short, report_json, trainprof, words

# 300 regions a step around nothing, for 2 s: a region per micro-operation
MICRO = """
import time, trainprof
end = time.monotonic() + 2
while time.monotonic() < end:
    trainprof.step()
    for i in range(300):
        with trainprof.region("op"):
            pass
"""

# a plain loop, its steps a few ms of arithmetic between marks
PLAIN = """
import time, trainprof
end = time.process_time() + 2.5
while time.process_time() < end:
    trainprof.step()
    with trainprof.region("work"):
        x = 0
        for i in range(20000):
            x += i
"""


def record(tmp_path, text, *args):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(text))
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", *args, "-o", run, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    return run


def test_a_region_per_micro_operation_is_over_budget_and_backed_off(tmp_path):
    run = record(tmp_path, MICRO)
    rep = report_json(run)
    [own] = rep["own_cost"]
    assert own["over_budget"] and own["share"] > 0.05, own
    assert own["script_regions_per_step"] > 250, own
    backoff = rep["backoff"]
    assert backoff is not None and backoff["mostly"] == "regions", backoff
    assert backoff["estimated_share"] > 0.01 and backoff["step"] >= 50
    short = in_short(trainprof("report", run).stdout)
    assert "[cost] trainprof's own work took" in short and "over its 1% budget" in short
    assert "time fewer, longer ones" in short and "The recorder backed off" in short
    with __import__("sqlite3").connect(run) as db:  # the run file says it, for every reader
        [(value,)] = db.execute("SELECT value FROM meta WHERE key = 'backoff'").fetchall()
    assert value.endswith(" regions")


def test_every_report_says_what_trainprof_cost(tmp_path):
    """A loop of a few regions a step: measured, said, and no back-off."""
    run = record(tmp_path, PLAIN)
    rep = report_json(run)
    [own] = rep["own_cost"]
    assert own["samples"] > 50 and 0 <= own["share"] < 1, own
    assert set(own["parts"]) == {"wrappers", "device_times", "capture_windows"}
    assert rep["backoff"] is None
    assert "trainprof's own work" in in_short(trainprof("report", run).stdout)


def test_without_stack_samples_the_cost_is_said_unmeasured(tmp_path):
    run = record(tmp_path, PLAIN, "--stacks", "0")
    assert json.loads(trainprof("report", "--json", run).stdout)["own_cost"] == []
    assert "trainprof's own work: not measured" in words(trainprof("report", run).stdout)
