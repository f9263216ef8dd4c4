"""Capture windows, summaries and the gate under crafted input (issue 57):
a window of a hundred thousands of profiler threads (the report stays
linear), a window whose step count no process makes, a window of no
complete step, summaries whose figures are infinite (html draws no NaN,
report says no inf, verdicts none on them), a gate that must not pass what
it could not measure, and `capture` against a recorder that answers
nonsense. Each run file is a real one (tests/data/gpu-runs/) edited as a
crafted one would be."""

import json
import re
import shutil
import sqlite3
import subprocess

from conftest import PROGRAM, ROOT, trainprof

RUN = ROOT / "tests" / "data" / "gpu-runs" / "h200-resnet18-batch64.db"
SYNTHETIC = ROOT / "tests" / "golden" / "runs" / "synthetic.db"


def copy(tmp_path, source=RUN, name="run.db"):
    path = tmp_path / name
    shutil.copyfile(source, path)
    return path


def ours(path):
    """path with its summary stored by this trainprof: a summary another one
    made is set aside for the rows, and the crafted figures must be read."""
    assert trainprof("summarize", "--force", "-q", path).returncode == 0
    return path


def test_a_window_of_half_a_million_threads_is_read_in_linear_time(tmp_path):
    """Each CPU event on a profiler thread of its own: the report scanned the
    threads for every event (quadratic: 8 s at 160 k events, about 80 s at
    500 k); now a hash finds a thread's open operators."""
    run = copy(tmp_path)
    with sqlite3.connect(run) as db:
        t0, name = db.execute(
            "SELECT start_ns, name FROM op_event WHERE kind = 1 ORDER BY start_ns LIMIT 1"
        ).fetchone()
        db.execute(
            "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n"
            " WHERE v < 500000) INSERT INTO op_event SELECT 1, 1, ?, NULL, 100000 + v,"
            " -1, 0, ? + v, 10, 0, 0, 0 FROM n",
            (name, t0),
        )
    r = subprocess.run(
        [PROGRAM, "report", "--json", run], capture_output=True, text=True, timeout=40
    )
    assert r.returncode == 0, r.stderr
    [w] = json.loads(r.stdout)["windows"]
    assert w["steps"] == 5


def test_a_window_whose_steps_no_process_counts_is_said_so(tmp_path):
    run = copy(tmp_path)
    for first, steps, said in (
        (2**63 - 1, 5, "steps out of range"),
        (-1, 5, "steps out of range"),
        (5, 0, "no complete step"),
    ):
        with sqlite3.connect(run) as db:
            db.execute("UPDATE op_window SET first_step = ?, steps = ?", (first, steps))
            if not steps:  # and none of its step marks: nothing says a step was captured
                db.execute("DELETE FROM op_event WHERE kind = 8")
        r = trainprof("report", run)
        assert r.returncode == 0, r.stderr
        line = next(l for l in r.stdout.splitlines() if "scheduled:" in l)
        assert said in line and "9223372036854775807" not in line, line


def no_number_that_is_none(text):
    """The tokens of text that are no number: inf, -inf, nan (infiniband's
    words are words)."""
    return re.findall(r"(?<![A-Za-z])-?(?:inf|nan)(?![A-Za-z])", text, re.IGNORECASE)


def test_summaries_with_infinite_figures_are_neither_drawn_nor_said(tmp_path):
    """Steps of 1e308 s (their sum inf), of 4.9e-324 s, a fetch of -inf:
    html drew 376 rects at y=-inf, report said '-inf ms per fetch'."""
    gpu = ours(copy(tmp_path, name="gpu.db"))
    with sqlite3.connect(gpu) as db:
        db.execute("UPDATE summary_step_phase SET train_batch = 1e308, other = 1e308")
        db.execute("UPDATE summary_step SET mean = -9e999, p50 = 4.9e-324, total_s = 9e999")
    synthetic = ours(copy(tmp_path, SYNTHETIC, "synthetic.db"))
    with sqlite3.connect(synthetic) as db:
        db.execute("UPDATE summary_timing SET mean = -9e999 WHERE name = 'dataloader_next'")
        db.execute("UPDATE summary_step SET mean = 9e999 WHERE rank = 13")
    for run in (gpu, synthetic):
        page = tmp_path / (run.stem + ".html")
        assert trainprof("html", "-o", page, run).returncode == 0
        attributes = re.findall(r'[a-z-]+="[^"]*"', page.read_text())
        assert not [a for a in attributes if no_number_that_is_none(a)], run
        text = trainprof("report", run).stdout
        assert not no_number_that_is_none(text), (run, no_number_that_is_none(text))
        rep = json.loads(trainprof("report", "--json", run).stdout)
        assert not [v for v in rep["verdicts"] if v["kind"] == "input_bound" and v["rank"] == 13]


def test_the_gate_never_passes_what_it_could_not_measure(tmp_path):
    """B's step groups of 1e308 s: its mean is inf, every resample dropped,
    the interval NaN. The gate said 'No change' and exited 0."""
    a = ours(copy(tmp_path, name="a.db"))
    b = ours(copy(tmp_path, name="b.db"))
    with sqlite3.connect(b) as db:
        db.execute("UPDATE summary_step_phase SET train_batch = 1e308")
    r = trainprof("compare", "--fail-if-slower", "5", a, b)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "could not be measured" in r.stderr and "no verdict" in r.stderr
    assert "No change" not in r.stdout and not no_number_that_is_none(r.stdout)
    assert trainprof("compare", "--fail-if-slower", "5", a, a).returncode == 0  # the peer


def test_a_window_of_impossible_times_and_ids_exports_a_trace(tmp_path):
    """A crafted window that starts at the most negative time and has an id
    near 2^63 (the fuzzer found its length overflowing, and a flow's id
    would): the trace is written, with the window's slice and no flow."""
    run = copy(tmp_path)
    with sqlite3.connect(run) as db:
        db.execute("UPDATE op_window SET start_ns = ?, id = ?", (-(2**63), 2**62))
        db.execute("UPDATE op_event SET window_id = ?", (2**62,))
        db.execute("UPDATE op_string SET window_id = ?", (2**62,))
    out = tmp_path / "trace.json"
    r = trainprof("export", "-f", "chrome", "-o", out, run)
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    windows = [e for e in events if e.get("cat") == "capture"]
    assert windows and all(e["dur"] >= 0 for e in windows)
    assert not [e for e in events if e.get("cat") == "launch"]
