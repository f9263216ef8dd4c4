"""`trainprof iobench`: the storage under a path, measured for real."""

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from conftest import PROGRAM, ROOT, trainprof, words

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits


def test_directory_json(tmp_path):
    r = trainprof("iobench", tmp_path, "--size", "16", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bytes"] == 16 << 20
    assert out["sequential_mb_s"] > 0 and out["random_iops"] > 0
    assert abs(out["random_mb_s"] - out["random_iops"] * 4096 / 1e6) < 1e-6
    assert "class" in out and "run" not in out
    assert list(tmp_path.iterdir()) == []  # the test file is gone


def test_existing_file_is_only_read(tmp_path):
    data = tmp_path / "shard.bin"
    data.write_bytes(b"x" * (8 << 20))
    r = trainprof("iobench", data)
    assert r.returncode == 0, r.stderr
    assert "sequential 1 MiB reads" in r.stdout and "IOPS" in r.stdout
    assert data.stat().st_size == 8 << 20


def test_compared_with_a_recorded_run(tmp_path):
    run = tmp_path / "run.db"
    assert (
        trainprof("record", "-q", "--interval", "0.1", "-o", run, "--", "sleep", "0.5").returncode
        == 0
    )
    r = trainprof("iobench", tmp_path, "--size", "8", "--run", run, "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["run"]
    assert got["read_max_mb_s"] >= 0 and "request_kib" in got
    r = trainprof("iobench", tmp_path, "--size", "8", "--run", run)
    assert "the recorded training read" in r.stdout


def test_the_run_s_reads_are_its_steps_not_its_start_up(tmp_path):
    """The whole run's peak read rate is often torch's own import from a cold
    cache; iobench compares with what the training read during its steps."""
    run = tmp_path / "node.db"
    subprocess.run(
        [ROOT / "build" / "bench" / "gen_run", run, "0.02", "0.5", "2", "0", "1", "1", "node", "0"],
        check=True,
        capture_output=True,
    )
    with sqlite3.connect(run) as db:
        series = db.execute(
            "SELECT s.id FROM series s JOIN metric m ON m.id = s.metric_id"
            " WHERE m.name = 'disk_read_bytes_per_s' AND s.labels = '{}'"
        ).fetchone()[0]
        db.execute("UPDATE summary_series SET max = 900e6 WHERE series_id = ?", (series,))
        db.execute("UPDATE summary_series_steps SET max = 50e6 WHERE series_id = ?", (series,))
    r = trainprof("iobench", tmp_path, "--size", "8", "--run", run, "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["run"]
    assert got["over"] == "steps" and got["read_max_mb_s"] == 50
    text = words(trainprof("iobench", tmp_path, "--size", "8", "--run", run).stdout)
    assert "on average during its steps (peak 50.0 MB/s" in text


def test_the_dataset_s_own_files_read_as_a_loader_reads_them(tmp_path):
    """Each file whole, in sorted order and shuffled, up to --size MB; the
    test file iobench writes there is none of them."""
    data = tmp_path / "data"
    sizes = {}
    for k in range(60):
        sub = data / f"class{k % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        f = sub / f"img{k}.jpg"
        f.write_bytes(os.urandom(20000 + 1000 * k))
        sizes[f] = f.stat().st_size
    (data / "link").symlink_to(next(iter(sizes)))  # not followed: counted once
    r = trainprof("iobench", data, "--size", "8", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)["dataset"]
    assert d["files_found"] == 60 and d["files_read"] == 60
    assert d["bytes_read"] == sum(sizes.values())
    assert d["sorted_mb_s"] > 0 and d["shuffled_files_per_s"] > 0
    assert abs(d["mean_file_kib"] - sum(sizes.values()) / 60 / 1024) < 1e-6
    # --size bounds what is read: 1 MB of these files is a few dozen of them
    d = json.loads(trainprof("iobench", data, "--size", "1", "--json").stdout)["dataset"]
    assert d["files_found"] == 60 and 1 <= d["files_read"] < 60
    text = words(trainprof("iobench", data, "--size", "8").stdout)
    assert "the dataset's files under" in text and "shuffled (a random sampler)" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no files under" in trainprof("iobench", empty, "--size", "8").stdout


def test_bad_input(tmp_path):
    small = tmp_path / "small.bin"
    small.write_bytes(b"x" * 1000)
    cases = [
        ([], 2, "expected one PATH"),
        ([tmp_path / "missing"], 2, "No such file"),
        ([tmp_path, "--size", "0"], 2, "--size must be"),
        (["/dev/null"], 2, "neither a directory nor a regular file"),
        ([small], 1, "smaller than 1 MiB"),
        ([tmp_path, "--run", small], 2, "not a trainprof run file"),
    ]
    for args, status, message in cases:
        r = trainprof("iobench", *args)
        assert r.returncode == status and message in r.stderr, (args, r.stderr)


def test_ctrl_c_removes_the_test_file(tmp_path):
    p = subprocess.Popen(
        [PROGRAM, "iobench", tmp_path, "--size", "4096"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == -signal.SIGINT
    assert list(tmp_path.iterdir()) == []
