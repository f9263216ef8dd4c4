"""Sampled stacks inside a sandbox: seccomp filters that refuse, kill or trap
process_vm_readv, take pipes, leave no way to read, or arrive while
sampling; the training is never harmed and the report says what it lost."""

import os
import sqlite3
import textwrap

import pytest
from conftest import PYTHON, ROOT, report_json, trainprof
from test_stacks import HOT, group

NO_VM_READV = os.environ.get("NO_VM_READV", str(ROOT / "build" / "tests" / "no_vm_readv"))


def test_a_sandbox_that_refuses_process_vm_readv_still_gets_stacks_and_phases(tmp_path):
    """Docker's default seccomp profile refuses process_vm_readv: the walker
    and the read of each thread's open region go through a pipe instead."""
    script = tmp_path / "script.py"
    script.write_text(HOT)
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "-o",
        run,
        "--stacks",
        "200",
        "--",
        NO_VM_READV,
        PYTHON,
        script,
        "1",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    report = report_json(run)
    assert group(report, "load")["functions"][0]["function"] == "parse_records"
    assert group(report, "compute")["functions"][0]["function"] == "matmul_by_hand"


def sandboxed(tmp_path, *policy, script=HOT, seconds="1"):
    """Records script under a seccomp policy of no_vm_readv: the run file, and
    the training's own exit status and stdout are checked by the caller."""
    path = tmp_path / "script.py"
    path.write_text(script)
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "-q",
        "--force",
        "-o",
        run,
        "--stacks",
        "200",
        "--",
        NO_VM_READV,
        *policy,
        PYTHON,
        path,
        seconds,
        timeout=300,
    )
    with sqlite3.connect(run) as db:
        samples = db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
        said = [
            reason
            for (reason,) in db.execute(
                "SELECT reason FROM unavailable WHERE source = 'Python stacks'"
            )
        ]
    return r, run, samples, said


def test_a_sandbox_that_kills_or_traps_process_vm_readv_never_harms_the_training(tmp_path):
    """A filter that kills (or sends SIGSYS to) the process calling
    process_vm_readv: the sampler learns it from a probe child before its
    first read, and reads through pipes; the training runs to its end."""
    for action in ("--kill", "--trap"):
        r, run, samples, said = sandboxed(tmp_path, action)
        assert r.returncode == 0, (action, r.returncode, r.stderr)
        assert samples > 0 and said == [], (action, samples, said)
        report = report_json(run)
        assert group(report, "load")["functions"][0]["function"] == "parse_records"


def test_a_sandbox_that_takes_pipes_leaves_process_vm_readv(tmp_path):
    """Pipes are the sampler's way; a filter that refuses pipe2, or kills
    the process that calls it, leaves process_vm_readv, which a probe child
    finds (a killed one first): the training runs to its end, sampled."""
    for policy in (("--vm-ok", "--no-pipe"), ("--vm-ok", "--kill-pipe")):
        r, run, samples, said = sandboxed(tmp_path, *policy)
        assert r.returncode == 0, (policy, r.returncode, r.stderr)
        assert samples > 0 and said == [], (policy, samples, said)
        report = report_json(run)
        assert group(report, "load")["functions"][0]["function"] == "parse_records"


def test_a_sandbox_that_leaves_no_way_to_read_says_so_once(tmp_path):
    """EACCES instead of EPERM still leaves the pipe; with pipe2 refused too
    (and process_vm_readv killed or refused) nothing is read, the training
    runs on, and the run says why in one row."""
    r, run, samples, said = sandboxed(tmp_path, "--eacces")
    assert r.returncode == 0 and samples > 0 and said == [], (r.stderr, samples, said)
    for policy in (
        ("--no-pipe",),
        ("--kill", "--no-pipe"),
        ("--trap", "--no-pipe"),
        ("--kill", "--kill-pipe"),
    ):
        r, run, samples, said = sandboxed(tmp_path, *policy)
        assert r.returncode == 0, (policy, r.returncode, r.stderr)
        assert samples == 0 and len(said) == 1, (policy, samples, said)
        assert "seccomp filter" in said[0] and "no Python stack was read" in said[0]
        text = trainprof("report", run).stdout
        assert "Python stacks" in text and "seccomp filter" in text


# The training adds a filter that kills process_vm_readv to every thread of
# its process (TSYNC: the sampler's too) after a second of sampling: the
# sampler sees its filters change before its next read, probes again and
# goes on through pipes.
LATER_FILTER = textwrap.dedent("""
    import ctypes, struct, sys, time, trainprof
    def parse_records(n):
        x = 0
        for i in range(n):
            x += i * i
        return x
    def kill_process_vm_readv():
        libc = ctypes.CDLL(None, use_errno=True)
        insns = [(0x20, 0, 0, 4), (0x15, 0, 3, 0xC000003E), (0x20, 0, 0, 0),
                 (0x15, 0, 1, 310), (0x06, 0, 0, 0x80000000), (0x06, 0, 0, 0x7FFF0000)]
        code = b"".join(struct.pack("HBBI", *i) for i in insns)
        buf = ctypes.create_string_buffer(code)
        prog = struct.pack("HxxxxxxQ", len(insns), ctypes.addressof(buf))
        pbuf = ctypes.create_string_buffer(prog)
        assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
        # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, prog)
        assert libc.syscall(317, 1, 1, pbuf) == 0, ctypes.get_errno()
    end = time.time() + float(sys.argv[1])
    armed = False
    while time.time() < end:
        if not armed and time.time() > end - float(sys.argv[1]) / 2:
            kill_process_vm_readv()
            armed = True
        trainprof.step()
        with trainprof.region("load"):
            parse_records(60000)
    print("finished")
""")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the filter is x86-64's")
def test_a_filter_added_while_sampling_is_probed_before_the_next_read(tmp_path):
    path = tmp_path / "later.py"
    path.write_text(LATER_FILTER)
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", "-o", run, "--stacks", "200", "--", PYTHON, path, "2", timeout=300
    )
    assert r.returncode == 0 and "finished" in r.stdout, (r.returncode, r.stderr)
    with sqlite3.connect(run) as db:
        steps = [t for (t,) in db.execute("SELECT t_ns FROM mark WHERE kind IN (3, 'step')")]
        late = db.execute(
            "SELECT COUNT(*) FROM stack_sample WHERE t_ns > ?", (steps[len(steps) * 3 // 4],)
        ).fetchone()[0]
    assert late > 0  # sampled on after the filter, through pipes
