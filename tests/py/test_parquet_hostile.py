"""`export --format parquet` under hostile input (issue 57): agent names no
folder can hold, node files exported one at a time into one folder, a table
folder that is a symbolic link, more ranks than pyarrow's 1,024 partitions, a
large run in bounded memory, a text where a number belongs, a bad second
input (all or nothing), and a Python that lacks trainprof. Each input is a
real run file (tests/data/gpu-runs/) edited as a crafted one would be."""

import json
import os
import shutil
import sqlite3
import subprocess

import pytest
from conftest import PROGRAM, PYTHON, ROOT, trainprof

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

RUN = ROOT / "tests" / "data" / "gpu-runs" / "h200-resnet18-batch64.db"
ENV = {"TRAINPROF_PYTHON": PYTHON}


def copy(tmp_path, name, **meta):
    """The recording copied as name, its meta keys set as given (another
    run: another start)."""
    path = tmp_path / name
    shutil.copyfile(RUN, path)
    with sqlite3.connect(path) as db:
        for key, value in meta.items():
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))
    return path


def export(out, *runs, force=False, env=ENV):
    args = ["export", "--format", "parquet", "-o", out] + (["--force"] if force else [])
    return trainprof(*args, *runs, env=env, timeout=600)


def rows(out, table, where="true"):
    return duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{out}/{table}/**/*.parquet',"
        f" hive_partitioning = true) WHERE {where}"
    ).fetchall()[0][0]


def test_an_agent_name_no_folder_can_hold_gets_a_key_of_its_own(tmp_path):
    """100 'é' (200 bytes, which pyarrow escaped to 600) and 250 ASCII
    characters: each past the file system's 255-byte name."""
    for name in ("é" * 100, "n" * 250):
        run = copy(tmp_path, "run.db")
        with sqlite3.connect(run) as db:
            db.execute("UPDATE agent SET name = ?", (name,))
        out = tmp_path / "out"
        r = export(out, run, force=True)
        assert r.returncode == 0, r.stderr
        [(agent, agent_name, n)] = duckdb.sql(
            f"SELECT agent, agent_name, count(*) FROM read_parquet('{out}/samples/*/*.parquet',"
            " hive_partitioning = true) GROUP BY ALL"
        ).fetchall()
        assert agent_name == name and n > 1000
        assert len(agent.encode()) <= 64 and "~" in agent, agent
        shutil.rmtree(out)


def test_node_files_exported_one_at_a_time_add_up(tmp_path):
    """Each node writing its own file into shared storage: 1,200 steps and
    a stored summary each, both kept; the same file again replaces its own."""
    a, b = copy(tmp_path, "a.db"), copy(tmp_path, "b.db", start_wall_ns=1, agent="node-b")
    out = tmp_path / "out"
    assert export(out, a).returncode == 0
    assert export(out, b, force=True).returncode == 0
    assert rows(out, "steps") == 2400
    assert rows(out, "summary_step") == 2
    assert export(out, b, force=True).returncode == 0  # again: its own files replaced
    assert rows(out, "steps") == 2400


def test_a_table_folder_that_is_a_symbolic_link_is_refused(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "steps").symlink_to(elsewhere)
    r = export(out, copy(tmp_path, "a.db"), force=True)
    assert r.returncode == 2 and "is a symbolic link" in r.stderr, r.stderr
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["steps"]  # nothing landed


def test_more_ranks_than_pyarrows_partitions(tmp_path):
    """A merged job of 1,100 ranks, a step each."""
    run = copy(tmp_path, "ranks.db")
    with sqlite3.connect(run) as db:
        db.execute(
            "WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 1099)"
            " INSERT INTO thread (id, agent_id, pid, tid, rank, local_rank, world_size,"
            " name) SELECT 1000 + v, 1, 10000 + v, 10000 + v, v, 0, 1100, 'python' FROM n"
        )
        db.execute("INSERT INTO mark SELECT id, 3, 1000000000, 0 FROM thread WHERE id >= 1000")
        db.execute("INSERT INTO mark SELECT id, 9, 1100000000, 0 FROM thread WHERE id >= 1000")
    out = tmp_path / "out"
    r = export(out, run)
    assert r.returncode == 0, r.stderr
    assert len(list((out / "steps").glob("rank=*"))) == 1101  # and the recording's own -1
    assert rows(out, "marks", "rank >= 0") == 2200


def test_a_large_run_is_written_in_bounded_memory(tmp_path):
    """1.5 M samples: read and written in batches, not held whole."""
    run = copy(tmp_path, "big.db")
    with sqlite3.connect(run) as db:
        db.execute(
            "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n"
            " WHERE v < 1500000) INSERT INTO sample SELECT 1, 100000000000 + v, v FROM n"
        )
    out = tmp_path / "out"
    # VmHWM, the peak of this program's own memory: getrusage's ru_maxrss keeps
    # the forking pytest's size from before the exec (550 MiB late in a suite)
    r = subprocess.run(
        [
            PYTHON,
            "-c",
            "import sys; from trainprof.parquet import main;"
            " rc = main(sys.argv[1:]);"
            " print([l.split()[1] for l in open('/proc/self/status')"
            " if l.startswith('VmHWM:')][0]); sys.exit(rc)",
            out,
            run,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    peak_mib = int(r.stdout.split()[-1]) >> 10
    assert peak_mib < 400, f"{peak_mib} MiB"  # held whole: 800 MiB and more
    assert peak_mib > 20, f"{peak_mib} MiB"  # the figure is the program's own
    assert rows(out, "samples") > 1500000


def test_a_text_where_a_number_belongs_is_null_and_a_bad_input_lands_nothing(tmp_path):
    run = copy(tmp_path, "a.db")
    with sqlite3.connect(run) as db:
        db.execute(
            "UPDATE mark SET value = 'many' WHERE rowid IN (SELECT rowid FROM mark"
            " WHERE kind = 6 LIMIT 3)"
        )
        db.execute("UPDATE summary_step SET total_s = 'long'")
    out = tmp_path / "out"
    r = export(out, run)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert rows(out, "marks", "kind = 'samples' AND value IS NULL") == 3
    # a second input that is no run file: nothing of the first is left behind
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    out2 = tmp_path / "out2"
    r = export(out2, run, bad)
    assert r.returncode == 2 and "bad.db" in r.stderr and "Traceback" not in r.stderr
    assert not out2.exists() or list(out2.iterdir()) == []


def test_the_python_that_has_trainprof_is_found_or_named(tmp_path):
    """A source build's PATH may lack the Python with trainprof: the
    build's own .venv is found; a Python without it is named, with what to
    install."""
    run = copy(tmp_path, "a.db")
    env = {k: v for k, v in os.environ.items() if k != "TRAINPROF_PYTHON"}
    env["PATH"] = "/usr/bin:/bin"
    r = subprocess.run(
        [PROGRAM, "export", "--format", "parquet", "-o", tmp_path / "out", run],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if PROGRAM.endswith("build/trainprof"):  # the source tree's .venv beside build/
        assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [PROGRAM, "export", "--format", "parquet", "-o", tmp_path / "out2", run],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "TRAINPROF_PYTHON": "/bin/false"},
    )
    assert r.returncode == 2 and "ModuleNotFoundError" not in r.stderr
    assert "no Python here imports trainprof" in r.stderr and "/bin/false" in r.stderr


@pytest.mark.parametrize("stall_after", [b"\xff\xfe", "-3", "0x1p-6"])
def test_the_stall_threshold_a_file_sets_is_read_as_the_report_reads_it(tmp_path, stall_after):
    """record's --stall-after, kept in the file's meta, sets which steps
    stalled; a crafted one (no UTF-8, no number, none above 0) is none set,
    as for the report: its steps then stall past ten median steps. A
    number as strtod reads it, hexadecimal too (0x1p-6: 15.6 ms)."""
    run = copy(tmp_path, "a.db")
    with sqlite3.connect(run) as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('stall_after_s', ?)", (stall_after,))
    out = tmp_path / "out"
    r = export(out, run)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    r = trainprof("report", "--json", run)
    assert r.returncode == 0, r.stderr
    [steps] = json.loads(r.stdout)["steps"]
    stalled = rows(out, "steps", "stalled")
    assert rows(out, "steps", "NOT stalled") == steps["count"], (stalled, steps)
    assert (stalled > 0) == (stall_after == "0x1p-6"), stalled


@pytest.mark.parametrize(
    "where",
    [
        "UPDATE agent SET name = CAST(X'766dff' AS TEXT)",  # the first table's
        # the regions' (the samples were written by then), and a run id's
        "UPDATE name SET text = CAST(X'74726169ff6e' AS TEXT) WHERE text = 'forward'",
        "UPDATE meta SET value = CAST(X'707974686f6e33e282' AS TEXT) WHERE key = 'command'",
    ],
)
def test_text_that_is_not_utf8_is_written_as_the_other_outputs_write_it(tmp_path, where):
    """A damaged or crafted file's text that is not UTF-8: each invalid byte
    a U+FFFD, as in the CSV export, and every row once (what the fast
    decoder wrote before it met the text is not left behind)."""
    run = copy(tmp_path, "run.db")
    with sqlite3.connect(run) as db:
        db.execute(where)
        assert db.total_changes == 1
    out = tmp_path / "out"
    r = export(out, run)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert (rows(out, "samples"), rows(out, "regions"), rows(out, "steps")) == (3560, 6182, 1200)
    csv = trainprof("export", "--format", "csv", run).stdout.splitlines()[1].split(",")[1]
    [(agent,)] = duckdb.sql(
        f"SELECT DISTINCT agent_name FROM read_parquet('{out}/samples/*/*.parquet')"
    ).fetchall()
    assert agent == csv and agent == ("vm\ufffd" if "agent" in where else "vm")
    names = {
        n
        for (n,) in duckdb.sql(f"SELECT DISTINCT name FROM '{out}/regions/*/*.parquet'").fetchall()
    }
    renamed = "forward" in where
    assert ("trai\ufffdn" in names, "forward" in names) == (renamed, not renamed)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
