"""`trainprof summarize`: the stored summary of a file whose recorder was killed,
or whose end another process held open."""

import contextlib
import json
import sqlite3
import subprocess
import time

import pytest
from conftest import (
    PROGRAM,
    PYTHON,
    assert_same_report,
    kill_with_children,
    killed_recording,
    report_from_rows,
    report_json,
    trainprof,
)
from test_timings import EMIT

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits


def killed_node(path, rank, after_s=2.5):
    """A node's run file of emit_events (one rank: regions, then 1.2 s of steps
    and epochs) whose recorder was SIGKILLed after the writer's second commit,
    while the command still ran: rows, but no stored summary."""
    p = subprocess.Popen(
        [
            PROGRAM,
            "record",
            "-q",
            "-i",
            "0.05",
            "--agent",
            f"node-{rank}",
            "-o",
            str(path),
            "--",
            "sh",
            "-c",
            f"{EMIT} nested; {EMIT} slow_epochs; exec sleep 10",
        ],
        env={"RANK": str(rank), "LOCAL_RANK": "0", "WORLD_SIZE": "2", "PATH": "/usr/bin:/bin"},
    )
    time.sleep(after_s)
    kill_with_children(p)
    return path


def started(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT 1 FROM meta WHERE key = 'start_wall_ns'").fetchone()
    except sqlite3.Error:
        return None


def test_summarize_stores_what_the_rows_give(tmp_path):
    k = killed_node(tmp_path / "k.db", 0)
    before = report_json(k)
    assert "summarized" not in before["run"]["meta"]
    assert before["timings"] and before["epochs"] and before["ranks"]["per_rank"]
    rows = report_from_rows(k, tmp_path)
    r = trainprof("summarize", k)
    assert r.returncode == 0 and f"summarized {k} in" in r.stderr
    assert_same_report(report_json(k), rows)
    r = trainprof("summarize", k)
    assert r.returncode == 0 and "already holds its summary" in r.stderr
    r = trainprof("summarize", "--force", "-q", k)
    assert r.returncode == 0 and r.stderr == ""
    assert_same_report(report_json(k), rows)


def test_summarized_node_files_report_without_a_full_merge(tmp_path):
    a, b = killed_node(tmp_path / "a.db", 0), killed_node(tmp_path / "b.db", 1)
    full = json.loads(trainprof("report", "--json", a, b).stdout)
    assert "summary_only" not in full["run"]["meta"]  # no summary: every row was merged
    assert trainprof("summarize", "-q", a, b).returncode == 0
    direct = json.loads(trainprof("report", "--json", a, b).stdout)
    assert direct["run"]["meta"].pop("summary_only") == "1"
    merged = tmp_path / "all.db"
    assert trainprof("merge", "-o", merged, a, b).returncode == 0
    whole = report_json(merged)
    whole["run"]["path"] = direct["run"]["path"]
    assert whole["run"]["meta"].pop("plots") == "1"  # html's: a merge for report leaves them
    assert direct == whole and {x["rank"] for x in direct["ranks"]["per_rank"]} == {0, 1}


def test_summarize_leaves_a_live_recording_and_names_bad_files(tmp_path):
    live = tmp_path / "live.db"
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "-i", "0.1", "-o", str(live), "--", "sleep", "4"]
    )
    try:
        deadline = time.monotonic() + 3
        while not started(live) and time.monotonic() < deadline:
            time.sleep(0.05)
        r = trainprof("summarize", live)
        assert r.returncode == 2 and "is still being recorded" in r.stderr
    finally:
        assert p.wait(timeout=30) == 0
    assert report_json(live)["run"]["meta"]["summarized"] == "1"  # record stored it at the end
    k = killed_node(tmp_path / "k.db", 0)
    text = tmp_path / "notes.txt"
    text.write_text("not a run file\n")
    r = trainprof("summarize", text, k)
    assert r.returncode == 2 and f"summarize: {text}: not a trainprof run file" in r.stderr
    assert report_json(k)["run"]["meta"]["summarized"] == "1"  # the good file still was
    r = trainprof("summarize")
    assert r.returncode == 2 and "expected one or more run files" in r.stderr
    r = trainprof("summarize", "--help")
    assert r.returncode == 0 and "killed" in r.stdout


def test_a_schema_3_file_is_read_from_rows_and_summarized_into_the_current_schema(tmp_path):
    k = killed_node(tmp_path / "old.db", 0)
    assert trainprof("summarize", "-q", k).returncode == 0
    # as trainprof wrote it before schema 4: no in_steps_s, no device times
    # (schema 5), user_version 3
    db = sqlite3.connect(k)
    db.execute("DROP VIEW device_times")
    db.execute("DROP TABLE device_time")
    db.execute("DROP TABLE summary_plot")  # and before html's stored plots
    db.execute("DROP TABLE summary_step_phase")
    db.execute("DELETE FROM meta WHERE key IN ('plots', 'summary_by')")  # nor its maker
    for column in (
        "in_steps_s",
        "device_count",
        "device_total_s",
        "device_mean",
        "device_min",
        "device_p5",
        "device_p50",
        "device_p95",
        "device_max",
    ):
        db.execute(f"ALTER TABLE summary_timing DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 3")
    db.commit()  # the DELETE opened a transaction
    db.close()
    rep = report_json(k)  # its stored summary is set aside: shares need in_steps_s
    assert rep["run"]["meta"]["summarized"] == "1" and rep["timings"]
    rows = report_from_rows(k, tmp_path)
    rows["run"]["meta"]["summarized"] = "1"
    assert rep == rows
    r = trainprof("summarize", k)
    assert r.returncode == 0 and "(schema 3, now 10)" in r.stderr
    db = sqlite3.connect(k)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 10
    assert db.execute("SELECT count(*) FROM stack_sample").fetchone()[0] == 0  # 8 and 9's tables
    assert db.execute("SELECT count(*) FROM device_times").fetchone()[0] == 0
    # its marks stay words, which the marks view and every reader take
    kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM marks")}
    assert kinds and kinds <= {"step", "epoch", "samples", "step_end"}, kinds
    assert db.execute("SELECT value FROM meta WHERE key = 'plots'").fetchone() == ("1",)
    assert db.execute("SELECT count(*) FROM summary_plot").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM summary_step_phase WHERE rank = 0").fetchone()[0] > 0
    db.close()
    assert_same_report(report_json(k), report_from_rows(k, tmp_path))
    db = sqlite3.connect(k)
    db.execute("PRAGMA user_version = 2")
    db.close()
    r = trainprof("summarize", k)
    assert r.returncode == 2 and "schema 2, which has no summary tables" in r.stderr


def test_a_recorder_killed_in_its_first_second_leaves_a_readable_file(tmp_path):
    # the start metadata is committed at once, not with the first second's batch
    k = killed_recording(tmp_path / "early.db", after_s=0.3, recorded=False)
    rep = report_json(k)
    assert rep["run"]["meta"]["start_wall_ns"] and rep["run"]["meta"]["status"] == "recording"
    assert trainprof("summarize", "-q", k).returncode == 0


def test_a_file_held_open_as_the_recording_ends_says_where_its_last_rows_are(tmp_path):
    """SQLite leaves WAL mode only where no one else has the file open: a
    connection that stays open past the end keeps the run's last rows (its
    summary among them) in the -wal beside the file. record waits a few
    seconds for it to let go, then says so in its closing lines, and the
    file with its -wal holds the whole run."""
    script = tmp_path / "busy.py"
    script.write_text("import time\nend = time.time() + 1\nwhile time.time() < end: pass\n")
    run = tmp_path / "run.db"
    rec = subprocess.Popen(
        [PROGRAM, "record", "-o", run, "--", PYTHON, script], stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 20
    while not started(run) and time.time() < deadline:  # its tables made, not only the file
        time.sleep(0.05)
    with contextlib.closing(sqlite3.connect(f"file:{run}?mode=ro", uri=True)) as held:
        held.execute("SELECT COUNT(*) FROM meta").fetchone()  # its -shm mapped
        err = rec.communicate(timeout=60)[1]
        assert rec.returncode == 0, err
        assert f"its last rows are in {run}-wal beside it; copy the two together" in err, err
        assert (tmp_path / "run.db-wal").stat().st_size > 0
    r = trainprof("report", "--json", run)  # the file and its -wal: all of it
    assert r.returncode == 0 and json.loads(r.stdout)["run"]["complete"] is True, r.stderr


def another_trainprofs_summary(path):
    """path's stored summary as another trainprof's analysis left it: a
    maker of its own and a figure that analysis gave otherwise (a count of
    regions the rows do not hold)."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE meta SET value = '0123456789abcdef' WHERE key = 'summary_by'")
        assert db.execute("UPDATE summary_timing SET count = count + 1000").rowcount > 0


def counts(rep):
    return {(t.get("rank"), t["name"]): t["count"] for t in rep["timings"]}


def test_a_summary_another_trainprof_made_is_made_again_from_the_rows(tmp_path):
    """A verdict fixed since a file was recorded is the fixed one when it is
    read again: a summary stored by another trainprof's analysis is set
    aside where the rows are at hand (said on stderr, with how to store this
    one's), and `summarize` stores this one's without --force. A fleet's
    summary-only merge has no rows to read: it carries such summaries as they
    are (many node files' rows would not fit where a merge is made), and its
    report says whose they are."""
    a, b = killed_node(tmp_path / "a.db", 0), killed_node(tmp_path / "b.db", 1)
    for k in (a, b):
        assert trainprof("summarize", "-q", k).returncode == 0
    rows = counts(report_from_rows(a, tmp_path))
    assert rows and counts(report_json(a)) == rows
    another_trainprofs_summary(a)
    r = trainprof("report", "--json", a)
    assert r.returncode == 0 and counts(json.loads(r.stdout)) == rows  # not the +1000
    said = r.stderr.strip().splitlines()
    assert len(said) == 1 and said[0] == (
        f"trainprof report: {a} holds a summary another trainprof made: its figures and "
        f"verdicts are made again from its rows (`trainprof summarize {a}` stores them, for a "
        "faster read)"
    ), said
    r = trainprof("compare", a, b)  # each side's said
    assert f"trainprof compare: {a} holds a summary another" in r.stderr, r.stderr
    assert str(b) not in r.stderr
    # the fleet's summary: a's as that trainprof made it, and said so
    fleet = tmp_path / "fleet.db"
    assert trainprof("merge", "--summary", "-o", fleet, a, b).returncode == 0
    r = trainprof("report", "--json", fleet)
    assert r.returncode == 0 and max(counts(json.loads(r.stdout)).values()) > 1000
    assert "holds summaries another trainprof made and none of the rows" in r.stderr, r.stderr
    r = trainprof("report", "--json", a, b)  # the same, merged on the way
    assert "a.db + " in r.stderr and "holds summaries another" in r.stderr, r.stderr
    # ... and a merge of every row is read from its rows
    merged = tmp_path / "merged.db"
    assert trainprof("merge", "-o", merged, a, b).returncode == 0
    r = trainprof("report", "--json", merged)
    assert r.returncode == 0 and max(counts(json.loads(r.stdout)).values()) < 1000
    assert "made again from its rows" in r.stderr
    # stored anew, the file reads its own summary, and says nothing
    r = trainprof("summarize", a)  # no --force needed
    assert r.returncode == 0 and f"summarized {a} in" in r.stderr, r.stderr
    r = trainprof("report", "--json", a)
    assert r.returncode == 0 and r.stderr == "" and counts(json.loads(r.stdout)) == rows
    assert_same_report(json.loads(r.stdout), report_from_rows(a, tmp_path))
