"""The program's command line: help, version, exit statuses, bad input."""

import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile
import time

import pytest
import trainprof as package
from conftest import PROGRAM, PYTHON, trainprof


def test_help_and_version():
    r = trainprof("--help")
    assert r.returncode == 0 and "record" in r.stdout and "report" in r.stdout
    r = trainprof("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"trainprof {package.__version__}"
    r = trainprof("record", "--help")
    assert r.returncode == 0 and "--interval" in r.stdout and "--force" in r.stdout
    r = trainprof("report", "--help")
    assert r.returncode == 0 and "--json" in r.stdout
    r = trainprof("export", "--help")
    assert r.returncode == 0 and "chrome" in r.stdout and "csv" in r.stdout
    assert "export" in trainprof("--help").stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "usage: trainprof"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["record"], "record: expected a command to run (see trainprof record --help)"),
        (
            ["record", "--bogus", "true"],
            "record: unknown option --bogus (see trainprof record --help)",
        ),
        (["record", "-o"], "record: -o needs a value (see trainprof record --help)"),
        # every subcommand names the option and what is wrong with it, the same way
        (["merge", "-o"], "merge: -o needs a value"),
        (["export", "x.db", "--format"], "export: --format needs a value"),
        (["report", "--bogus=1", "x.db"], "report: unknown option --bogus (see"),
        (["summarize", "-qz", "x.db"], "summarize: unknown option -z (see"),
        (["top", "--interval"], "top: --interval needs a value"),
        (["bottleneck", "--steps"], "bottleneck: --steps needs a value"),
        (["serve", "-x"], "serve: unknown option -x (see trainprof serve --help)"),
        (["iobench", "--size"], "iobench: --size needs a value"),
        (["compare", "--x", "a.db", "b.db"], "compare: unknown option --x"),
        (["html", "x.db", "-o"], "html: -o needs a value"),
        (["report"], "expected a run file"),
        (["report", "a.db", "b.db"], "a.db: no such file"),
    ],
)
def test_usage_errors(args, message):
    r = trainprof(*args)
    assert r.returncode == 2
    assert message in r.stderr


@pytest.mark.parametrize("value", ["0.01", "61", "abc", "nan", "", "0.5s", "-1"])
def test_interval_out_of_range_refused(value, run_file):
    r = trainprof("record", "--interval", value, "-o", run_file, "--", "true")
    assert r.returncode == 2
    assert "--interval must be a number of seconds from 0.05 to 60" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not run_file.exists()


@pytest.mark.parametrize("value", ["0.05", "60", "2"])
def test_interval_limits_accepted(value, run_file):
    r = trainprof("record", "-q", "--interval", value, "-o", run_file, "--", "true")
    assert r.returncode == 0, r.stderr


def test_missing_command_exits_127(run_file):
    r = trainprof("record", "-o", run_file, "--", "no-such-command-xyz")
    assert r.returncode == 127
    assert "cannot run 'no-such-command-xyz'" in r.stderr
    assert not run_file.exists()


def test_not_executable_exits_126(run_file, tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    r = trainprof("record", "-o", run_file, "--", script)
    assert r.returncode == 126


def test_exit_status_passes_through(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", "sh", "-c", "exit 3")
    assert r.returncode == 3


def test_death_by_signal_is_128_plus_n(run_file):
    r = trainprof("record", "-q", "-o", run_file, "--", "sh", "-c", "kill -9 $$")
    assert r.returncode == 128 + 9
    out = trainprof("report", run_file).stdout
    assert "exit status 137 (killed by SIGKILL)" in out


def test_output_exists_refused_without_force(run_file):
    run_file.write_text("precious")
    r = trainprof("record", "-o", run_file, "--", "true")
    assert r.returncode == 2
    assert "already exists (use --force to overwrite it)" in r.stderr
    assert run_file.read_text() == "precious"
    r = trainprof("record", "-q", "--force", "-o", run_file, "--", "true")
    assert r.returncode == 0
    assert trainprof("report", run_file).returncode == 0


def test_unwritable_output(tmp_path):
    r = trainprof("record", "-o", tmp_path / "missing-dir" / "run.db", "--", "true")
    assert r.returncode == 2
    assert "cannot create" in r.stderr and "No such file or directory" in r.stderr


def test_output_is_a_directory(tmp_path):
    r = trainprof("record", "--force", "-o", tmp_path, "--", "true")
    assert r.returncode == 2
    assert "is a directory, not a run file path" in r.stderr


def test_report_refuses_foreign_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    empty = tmp_path / "empty.db"  # a recorder killed in its first milliseconds leaves this
    empty.touch()
    for path, message in [
        (empty, "an empty file: a run that ended before it began"),
        (tmp_path / "missing.db", "no such file"),
        (text, "not a trainprof run file (not an SQLite database)"),
        (other, "not a trainprof run file (an SQLite database of another kind)"),
        (tmp_path, "not a regular file"),
    ]:
        r = trainprof("report", path)
        assert r.returncode == 2, path
        assert message in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert "Traceback" not in r.stderr and r.stdout == ""


def test_report_refuses_newer_schema(run_file):
    assert trainprof("record", "-q", "-o", run_file, "--", "true").returncode == 0
    with sqlite3.connect(run_file) as db:  # one past what this build writes
        newer = db.execute("PRAGMA user_version").fetchone()[0] + 1
        db.execute(f"PRAGMA user_version = {newer}")
    r = trainprof("report", "--json", run_file)
    assert r.returncode == 2
    assert f"schema version {newer} is newer than this trainprof reads" in r.stderr


def test_default_output_name(tmp_path):
    r = trainprof("record", "-q", "--", "true", cwd=tmp_path)
    assert r.returncode == 0
    made = list(tmp_path.glob("trainprof-*.db"))
    assert len(made) == 1


def test_python_package_outside_record():
    import subprocess

    out = subprocess.run(
        [PYTHON, "-c", "import trainprof; print(trainprof.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == package.__version__


def test_output_name_patterns(tmp_path):
    import socket

    r = trainprof(
        "record",
        "-q",
        "-o",
        tmp_path / "run-%h-%r-100%%.db",
        "--",
        "true",
        env={"SLURM_NODEID": "3"},
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"run-{socket.gethostname()}-3-100%.db").exists()
    r = trainprof("record", "-q", "-o", tmp_path / "run-%x.db", "--", "true")
    assert r.returncode == 2 and "unknown %x" in r.stderr
    assert not list(tmp_path.glob("run-%x*"))
    # a node rank is a number: one that is a path (or anything else) is refused
    r = trainprof("record", "-q", "-o", tmp_path / "run-%r.db", "--", "true",
                  env={"SLURM_NODEID": "", "NODE_RANK": "../../x"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "--output: %r: NODE_RANK is '../../x', not a node rank (a whole number)" in r.stderr
    assert not list(tmp_path.parent.parent.glob("x*"))


@pytest.mark.parametrize(
    "pattern, hint",
    [
        ("run-%r.db", "%r is 0 here: no SLURM_NODEID, NODE_RANK or GROUP_RANK in the environment"),
        ("run-%h.db", "%h is the same for every recording on this host: one `record` per node"),
        ("run-%h-%r.db", None),
        ("run.db", None),
    ],
)
def test_a_name_taken_by_the_same_job_says_why(tmp_path, pattern, hint):
    """Two recorders of one job given one -o: where the pattern makes the
    same name for both (%r with no node rank set, %h on one host), the
    refusal says why; a plain name, or %h and %r with a node rank set (then
    the name was taken by something else), says nothing more."""
    env = {k: "" for k in ("SLURM_NODEID", "NODE_RANK", "GROUP_RANK")}
    if "%h" in pattern and "%r" in pattern:
        env["NODE_RANK"] = "1"
    args = ("record", "-q", "-o", tmp_path / pattern, "--", "true")
    assert trainprof(*args, env=env).returncode == 0
    r = trainprof(*args, env=env)
    assert r.returncode == 2 and "already exists (use --force to overwrite it)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    if hint:
        assert hint in r.stderr
    else:
        assert r.stderr.rstrip().endswith("already exists (use --force to overwrite it)")


def test_an_output_is_never_one_of_the_inputs(run_file, tmp_path):
    """html, export and merge given their own input as the output (under
    another name too), --force or not: refused before anything is read or
    written, exit status 2, the run file intact."""
    assert trainprof("record", "-q", "-o", run_file, "--", "true").returncode == 0
    before = run_file.read_bytes()
    alias = tmp_path / "alias.db"
    alias.symlink_to(run_file)
    for cmd in (
        ("html", "-o", run_file, "--force", run_file),
        ("export", "--format", "csv", "-o", alias, "--force", run_file),
        ("merge", "--force", "-o", run_file, run_file, alias),
    ):
        r = trainprof(*cmd)
        assert r.returncode == 2 and "is one of the inputs" in r.stderr, (cmd, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    assert run_file.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp-*"))


def test_a_live_run_file_is_never_replaced(run_file, tmp_path):
    """A second `record --force` on a run file another recorder is writing
    (it deleted it, and the first then reported the second's command) is
    refused; a run file path that is a link is replaced, not followed."""
    first = subprocess.Popen([PROGRAM, "record", "-q", "-o", run_file, "--", "sleep", "1.5"])
    try:
        for _ in range(100):
            if run_file.exists():
                break
            time.sleep(0.02)
        r = trainprof("record", "-q", "--force", "-o", run_file, "--", "true")
        assert r.returncode == 2 and "is being recorded right now" in r.stderr
    finally:
        assert first.wait(timeout=30) == 0
    assert "sleep 1.5" in trainprof("report", run_file).stdout
    victim = tmp_path / "victim"
    victim.write_text("not a run file")
    link = tmp_path / "link.db"
    link.symlink_to(victim)
    r = trainprof("record", "-q", "-o", link, "--", "true")
    assert r.returncode == 2 and "already exists" in r.stderr
    assert trainprof("record", "-q", "--force", "-o", link, "--", "true").returncode == 0
    assert victim.read_text() == "not a run file" and not link.is_symlink()


def test_the_registry_of_live_recordings_is_never_a_link(tmp_path):
    """`top` finds live recordings in a directory of ours (XDG_RUNTIME_DIR's
    trainprof-records, else /tmp/trainprof-UID/records). A link planted
    there, even to a private directory of ours, is not followed."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "trainprof-records").symlink_to(victim)
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "-o", tmp_path / "a.db", "--", "sleep", "1"],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    seen = set()
    while p.poll() is None:
        seen |= {f.name for f in victim.iterdir()}
        time.sleep(0.05)
    assert p.returncode == 0 and not seen


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to read as another user")
def test_a_killed_recording_reads_where_its_reader_cannot_write(run_file):
    """A recorder killed before it switched its file out of WAL mode, its
    -wal and -shm gone, in a directory the reader can't write: SQLite can't
    make the -shm ("attempt to write a readonly database"), so the file is
    read as it lies on disk."""
    assert trainprof("record", "-q", "-o", run_file, "--", "true").returncode == 0
    with sqlite3.connect(run_file) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shared = pathlib.Path(tempfile.mkdtemp(prefix="tp-readonly-"))
    try:
        shared.chmod(0o755)  # the reader (nobody) can list it, not write into it
        target = shared / "run.db"
        target.write_bytes(run_file.read_bytes())
        target.chmod(0o644)

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)

        r = subprocess.run(
            [PROGRAM, "report", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=as_nobody,
        )
        assert r.returncode == 0, r.stderr
        assert "command   true" in r.stdout
    finally:
        shutil.rmtree(shared)


COMMANDS = (
    "record report html merge summarize compare bottleneck iobench top capture serve export".split()
)


def test_an_option_is_spelt_one_way_in_every_command():
    """Each command's --help against the others': an option that two commands
    share has the same short name (or none) in both, and a short name means
    one option wherever it is used (record -f once forced where export -f
    names the format, and html -f or merge -f were refused)."""
    import re

    short_of, long_of = {}, {}
    for command in COMMANDS:
        r = trainprof(command, "--help")
        assert r.returncode == 0, (command, r.stderr)
        for m in re.finditer(r"^\s+(?:-(\w), )?--([a-z][a-z0-9-]*)", r.stdout, re.M):
            short, long = m.group(1) or "", m.group(2)
            short_of.setdefault(long, {})[command] = short
            if short:
                long_of.setdefault(short, {})[command] = long
    assert {"force", "output", "quiet", "json"} <= short_of.keys()  # the parse finds them
    assert {o: c for o, c in short_of.items() if len(set(c.values())) > 1} == {}
    assert {s: c for s, c in long_of.items() if len(set(c.values())) > 1} == {}


def test_a_command_of_several_lines_is_one_line_of_the_report(tmp_path):
    """A `python -c` program's newlines (and any control character: an
    escape sequence in an argument) are shown as escapes on the report's
    command line, cut after a few hundred bytes; --json keeps it whole."""
    program = "import time\n# \x1b[2J a comment " + "é" * 200 + "\ntime.sleep(0.1)\n"
    run = tmp_path / "run.db"
    r = trainprof("record", "-q", "-o", run, "--", PYTHON, "-c", program)
    assert r.returncode == 0, r.stderr
    text = trainprof("report", run).stdout
    [line] = [l for l in text.splitlines() if l.startswith("  command ")]
    assert "-c 'import time\\x0a# \\x1b[2J a comment éé" in line, line
    assert line.endswith(" ... (cut; report --json has it whole)"), line
    assert "time.sleep" not in text and "\x1b" not in text
    assert len(line.encode()) < 400
    assert json.loads(trainprof("report", "--json", run).stdout)["run"]["command"].endswith(
        "\ntime.sleep(0.1)\n'"
    )


def test_a_python_command_without_trainprof_s_package_is_told_why(tmp_path):
    """`python -S` reads no .pth file, as a Python without trainprof (another
    environment's) or one whose import of it failed: no process reported, and
    record and report say why there are no timings, and what to do. The
    same Python with the package loaded but nothing to time is not told so."""
    run = tmp_path / "bare.db"
    r = trainprof("record", "-o", run, "--", PYTHON, "-S", "-c", "import time; time.sleep(0.3)")
    assert r.returncode == 0, r.stderr
    closing = " ".join(r.stderr.split())
    assert "no process of it loaded trainprof's Python package" in closing, r.stderr
    assert "Install trainprof into that Python" in closing
    text = " ".join(trainprof("report", run).stdout.split())
    assert "No training steps found: the command ran Python, but no process" in text
    assert "Timings: none recorded: the command ran Python" in text
    page = tmp_path / "bare.html"
    assert trainprof("html", run, "-o", page).returncode == 0
    assert "No training steps found: the command ran Python, but no process" in page.read_text()
    run = tmp_path / "loaded.db"
    r = trainprof("record", "-o", run, "--", PYTHON, "-c", "import time; time.sleep(0.3)")
    assert r.returncode == 0, r.stderr
    assert "trainprof's Python package" not in r.stderr
    assert "trainprof's Python package" not in trainprof("report", run).stdout
