"""A run file crafted to make the outputs lie: text spliced into JSON,
invalid UTF-8, terminal escapes, CSV separators and non-finite numbers. Every
output encodes what it writes (issue 25)."""

import csv
import io
import json
import shutil
import sqlite3
import subprocess
import textwrap

import pytest
from conftest import PROGRAM, PYTHON, ROOT, report_json, trainprof

ESC = "\x1b[2K\r"


def run_bytes(*args):
    r = subprocess.run([PROGRAM, *map(str, args)], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    script = d / "work.py"
    script.write_text(
        textwrap.dedent("""
        import time, trainprof
        for _ in range(20):
            trainprof.step()
            with trainprof.region("work"):
                time.sleep(0.01)
    """)
    )
    run = d / "run.db"
    r = trainprof("record", "-q", "-i", "0.1", "-o", run, "--", PYTHON, script)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(run) as db:
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'argv'", ('["python"], "injected": {"x": 1}',)
        )
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'command'", (f"train.py {ESC}rm -rf / #",)
        )
        # a region name with invalid UTF-8, an escape, a comma and a quote
        evil = b'w\xff\xfe,"k' + ESC.encode()
        db.execute("UPDATE name SET text = CAST(? AS TEXT) WHERE text = 'work'", (evil,))
        db.execute("UPDATE summary_timing SET name = CAST(? AS TEXT) WHERE name = 'work'", (evil,))
        db.execute("UPDATE agent SET name = ?", ('node"}' + ESC,))
        cpu = db.execute(
            "SELECT s.id FROM series s JOIN metric m ON m.id = s.metric_id"
            " WHERE m.name = 'cpu_util_percent' AND s.labels = '{}'"
        ).fetchone()[0]
        db.execute("UPDATE series SET labels = ? WHERE id = ?", ('{}, "injected": true', cpu))
        db.execute("UPDATE metric SET name = 'cpu,\"util' WHERE name = 'cpu_util_percent'")
        db.execute(
            "UPDATE summary_series SET mean = 9e999, max = -9e999 WHERE series_id = ?", (cpu,)
        )
    return run


def test_report_json_is_valid_and_says_only_what_it_means(crafted):
    raw = run_bytes("report", "--json", crafted)
    rep = json.loads(raw.decode("utf-8"))  # strict: valid UTF-8 and valid JSON
    assert rep["run"]["argv"] is None  # not an array of strings: not passed on
    assert "injected" not in raw.decode()
    cpu = [m for m in rep["agents"][0]["metrics"] if m["name"] == 'cpu,"util']
    assert {"cpu": "0"} in [m["labels"] for m in cpu]  # the other series' labels, as objects
    [tampered] = [m for m in cpu if m["labels"] is None]  # not a flat object: not passed on
    assert tampered["mean"] is None and tampered["max"] is None  # inf: null
    names = {t["name"] for t in rep["timings"]}
    assert 'w\ufffd\ufffd,"k\x1b[2K\r' in names


def test_text_report_shows_escapes_instead_of_obeying_them(crafted):
    out = run_bytes("report", crafted)
    text = out.decode("utf-8")
    assert "\x1b" not in text and "\r" not in text
    assert "train.py \\x1b[2K\\x0drm -rf /" in text
    assert "w\ufffd\ufffd," in text


def test_trace_html_and_csv_encode_what_they_write(crafted, tmp_path):
    trace = tmp_path / "trace.json"
    run_bytes("export", "--format", "chrome", "-o", trace, crafted)
    events = json.loads(trace.read_bytes().decode("utf-8"))["traceEvents"]
    assert any(e.get("name", "").startswith("w\ufffd\ufffd,") for e in events)
    page = tmp_path / "run.html"
    run_bytes("html", "-o", page, crafted)
    html = page.read_bytes().decode("utf-8")
    assert "\x1b" not in html
    table = tmp_path / "run.csv"
    run_bytes("export", "--format", "csv", "-o", table, crafted)
    rows = list(csv.reader(io.StringIO(table.read_bytes().decode("utf-8"))))
    assert all(len(r) == 5 for r in rows)
    assert any(r[2] == 'cpu,"util' for r in rows[1:])


GOLDEN_RUNS = __import__("pathlib").Path(__file__).resolve().parents[1] / "golden" / "runs"
READERS = [
    ("report",),
    ("report", "--json"),
    ("export", "--format", "chrome"),
    ("export", "--format", "csv"),
    ("export", "--format", "folded"),
    ("export", "--format", "json"),
]


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE region",
        "DROP TABLE sample",
        "DROP TABLE stack_sample",
        "DROP TABLE mark",
        "DROP TABLE thread",
    ],
)
def test_every_reader_says_bad_input_alike(tmp_path, damage):
    """A damaged run file is bad input to every reader that needs what is
    missing: exit status 2 and one line, never 1 (which says the output
    failed), whatever the format."""
    run = tmp_path / "m.db"
    run.write_bytes((GOLDEN_RUNS / "stacks.db").read_bytes())
    with sqlite3.connect(run) as db:
        db.execute(damage)
    for args in READERS:
        r = trainprof(*args, run)
        assert r.returncode in (0, 2), (args, r.returncode, r.stderr)
        if r.returncode:
            assert len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        out = tmp_path / "out"
        r2 = trainprof(*args, "-o", out, "--force", run) if args[0] == "export" else r
        assert r2.returncode == r.returncode, (args, r2.stderr)
        assert not list(tmp_path.glob("out.tmp-*"))


def test_a_copy_without_its_write_ahead_log_is_said_to_be_one(tmp_path):
    """A recording killed before its first checkpoint keeps everything in its
    -wal file: a copy of the .db alone is said to be that, not "an SQLite
    database of another kind"."""
    run = tmp_path / "killed.db"
    p = subprocess.Popen([PROGRAM, "record", "-q", "-o", str(run), "--", "sleep", "30"])
    try:
        import time

        deadline = time.monotonic() + 20
        while not (tmp_path / "killed.db-wal").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1)
    finally:
        from conftest import kill_with_children

        kill_with_children(p)
    copy = tmp_path / "copy" / "killed.db"
    copy.parent.mkdir()
    copy.write_bytes(run.read_bytes())
    for args in (("report",), ("export",), ("html", "-o", tmp_path / "x.html")):
        r = trainprof(*args, copy)
        assert r.returncode == 2 and "write-ahead log" in r.stderr and "-wal" in r.stderr, r.stderr
    assert trainprof("report", run).returncode == 0  # with its -wal: read as it is


# A process that makes a database in WAL mode and dies in its first
# transaction, once its pages spilled into the log (a small page cache) but
# before the commit: what a recorder SIGKILLed in its schema's commit leaves.
DIES_BEFORE_COMMIT = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA cache_size=2")
db.execute("BEGIN")
db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
db.executemany("INSERT INTO meta VALUES (?, ?)", ((str(i), "x" * 500) for i in range(2000)))
os._exit(9)
"""


def test_a_log_whose_first_commit_never_came_is_said_to_be_one(tmp_path):
    """Its -wal holds pages and no commit: "a recording killed before its
    first commit", not "an SQLite database of another kind" (a CI run's
    recorder SIGKILLed at that moment was told the second)."""
    run = tmp_path / "killed.db"
    subprocess.run([PYTHON, "-c", DIES_BEFORE_COMMIT, str(run)], timeout=60)
    assert (tmp_path / "killed.db-wal").stat().st_size > 4096  # pages, no commit
    for args in (("report",), ("report", "--json"), ("export",)):
        r = trainprof(*args, run)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "holds no commit: a recording killed before its first commit" in r.stderr, r.stderr


@pytest.mark.parametrize("stored", ["before", -5, 10**9])
def test_a_rank_s_measured_steps_are_trusted_only_within_its_steps(tmp_path, stored):
    """summary_rank.measured_steps divides every per-step figure of a rank:
    a file summarized before it (no column) measured all its steps, and a
    crafted count (negative, beyond the rank's steps) is read as its steps,
    never as a divisor of its own."""
    run = tmp_path / "ddp.db"
    shutil.copy(ROOT / "tests" / "golden" / "runs" / "ddp.db", run)
    trainprof("summarize", "--force", run)
    with sqlite3.connect(run) as db:
        kept = db.execute("SELECT rank, steps, measured_steps FROM summary_rank").fetchall()
        assert kept and all(0 < m < n for _, n, m in kept), kept  # its warm-up left out
        if stored == "before":
            db.execute("ALTER TABLE summary_rank DROP COLUMN measured_steps")
        else:
            db.execute("UPDATE summary_rank SET measured_steps = ?", (stored,))
    db.close()
    for row in report_json(run)["ranks"]["per_rank"]:
        assert row["measured_steps"] == row["steps"] == 17, row
        assert 0 < row["own_s_per_step"] < 1, row
