"""The suite's own rule for tests that judge the machine (conftest.py): one
that fails while the VM's host took STEAL_RERUN of the CPU or more is run
once more, and says so; any other failure fails at once. Run through a
pytest of its own on a copy of conftest.py, the host's steal played by the
test module (it replaces the conftest's reading of /proc/stat)."""

import pathlib
import subprocess
import sys
import textwrap

HERE = pathlib.Path(__file__).resolve().parent

TESTS = """
import os, pathlib, pytest
import conftest

STOLEN = float(os.environ["STOLEN"])  # the host's share while a test runs
ticks = [0, 0]

def played():  # each reading 100 ticks on, STOLEN of them stolen
    ticks[0] += round(100 * STOLEN)
    ticks[1] += 100
    return tuple(ticks)

conftest._steal_and_total_ticks = played
RUNS = pathlib.Path(os.environ["RUNS"])

def ran(name):
    path = RUNS / name
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n

@pytest.mark.machine
def test_fails_the_first_time():
    assert ran("first") > 1, "the machine was not as judged"

@pytest.mark.machine
def test_always_fails():
    ran("always")
    assert False, "wrong every time"

def test_spread_fails_the_first_time():
    assert ran("spread") > 1
"""


def run_suite(tmp_path, stolen):
    (tmp_path / "conftest.py").write_text((HERE / "conftest.py").read_text())
    (tmp_path / "test_played.py").write_text(textwrap.dedent(TESTS))
    runs = tmp_path / "runs"
    runs.mkdir()
    log = tmp_path / "cpu.log"
    env = {
        "STOLEN": str(stolen),
        "RUNS": str(runs),
        "PATH": "/usr/bin:/bin",
        "TEST_CPU_LOG": str(log),
    }
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    counts = {p.name: int(p.read_text()) for p in runs.iterdir()}
    # and the conftest's CPU log still wraps every test, run once more or not
    logged = [line.split()[-1].split("::")[1] for line in log.read_text().splitlines()]
    tests = ["test_always_fails", "test_fails_the_first_time", "test_spread_fails_the_first_time"]
    assert sorted(logged) == tests, logged
    return r.stdout + r.stderr, counts


def test_a_machine_test_failing_while_the_host_steals_is_run_once_more(tmp_path):
    out, counts = run_suite(tmp_path, 0.20)
    # run again once, not more; a test of the spread is never run again
    assert counts == {"first": 2, "always": 2, "spread": 1}, (counts, out)
    assert "2 failed, 1 passed" in out, out
    said = "test_played.py::test_fails_the_first_time: failed while the VM's host stole 20% of the CPU; once more"
    assert said in out, out
    # the second failure carries what the first said
    always = out.split("test_always_fails _")[1]
    assert "first run" in always and "stole 20% of the CPU" in always, out
    assert always.count("wrong every time") >= 2, out


def test_a_machine_test_failing_on_a_host_that_steals_little_fails_at_once(tmp_path):
    out, counts = run_suite(tmp_path, 0.04)
    assert counts == {"first": 1, "always": 1, "spread": 1}, (counts, out)
    assert "3 failed" in out and "once more" not in out, out
