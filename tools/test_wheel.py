"""Installs each of trainprof's wheels (tools/wheel.sh) into a fresh venv of
its own CPython and checks what a `pip install trainprof` user gets:

  - `trainprof` on the venv's PATH, `import trainprof` and its version;
  - `trainprof record` of a Python script: the .pth autoload loaded the
    extension in the child (its stacks were sampled), the script's own region
    was timed, and `report` reads the file;
  - `record --serve`: /metrics answers while the script runs;
  - `trainprof top` in a pseudo-terminal (ncurses and the terminfo it finds)
    draws and quits on q;
  - nothing written outside the venv and the working directory (a fresh
    HOME stays empty).

    python3 tools/test_wheel.py [DIST]      (default dist/; `make test-wheel`)

The wheels are checked three at a time (each mostly waits: its script's
1.5 s, top's 3 s): 10 s for five against 28 s one after another.
Exits 1 where any failed, saying which wheel and what."""

import contextlib
import glob
import os
import pathlib
import re
import select
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PIP = pathlib.Path(__file__).resolve().parent.parent / ".venv" / "bin" / "pip"

SCRIPT = """
import time, trainprof
with trainprof.region("work"):
    end = time.time() + 1.5
    while time.time() < end:
        sum(i * i for i in range(1000))
print("done")
"""


def say(line):
    """One whole line at a time: the checks run on threads."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class WheelFailed(Exception):
    """What went wrong with one wheel (its check stops there)."""


def fail(wheel, what):
    raise WheelFailed(f"test_wheel: {os.path.basename(wheel)}: {what}")


def interpreter(tag):
    """The CPython of a wheel's tag (cp311 -> a python3.11), or None."""
    minor = tag[3:]
    candidates = sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
    )
    found = shutil.which(f"python3.{minor}")
    return candidates[-1] if candidates else found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def top_in_a_terminal(env, wheel):
    """Runs `trainprof top` in a pseudo-terminal, then presses q (a Popen on
    the terminal's other end, not pty.fork: the checks run on threads)."""
    main_fd, term_fd = os.openpty()
    top = subprocess.Popen(
        ["trainprof", "top", "--interval", "0.2"],
        env=env,
        stdin=term_fd,
        stdout=term_fd,
        stderr=term_fd,
        start_new_session=True,
    )
    os.close(term_fd)
    try:
        seen = read_for(main_fd, 3)
        os.write(main_fd, b"q")
        end = time.time() + 5
        while top.poll() is None and time.time() < end:
            seen += read_for(main_fd, 0.1)  # a full terminal would hold top up
        if top.poll() is None:
            top.kill()
            top.wait()
            fail(wheel, "top did not quit on q")
    finally:
        os.close(main_fd)
    status = top.returncode
    if status != 0:
        fail(wheel, f"top exited {status}: {seen[-400:]!r}")
    if b"CPU" not in seen and b"cpu" not in seen:
        fail(wheel, f"top drew no CPU line: {seen[-400:]!r}")


def read_for(fd, seconds):
    """What the terminal's other end shows within seconds."""
    seen = b""
    end = time.time() + seconds
    while time.time() < end:
        if not select.select([fd], [], [], 0.05)[0]:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed: top is gone
            break
        if not chunk:
            break
        seen += chunk
    return seen


def check(wheel):
    tag = re.search(r"-(cp3\d+)-", os.path.basename(wheel)).group(1)
    py = interpreter(tag)
    if not py:
        say(f"test_wheel: {os.path.basename(wheel)}: no {tag} here, skipped")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        venv, home, work = tmp / "venv", tmp / "home", tmp / "work"
        runtime = tmp / "runtime"  # its top sees its own record, not another wheel's
        home.mkdir()
        work.mkdir()
        runtime.mkdir(mode=0o700)
        # the venv without a pip of its own (ensurepip: 2 CPU-seconds each);
        # the project's pip installs into it, as pip installs into any venv.
        # That pip (23.2, .venv's) can't run under 3.15, whose importlib.metadata
        # made Distribution.locate_file abstract: a 3.15 venv gets the pip its
        # CPython carries, as its users' do.
        own_pip = int(tag[3:]) >= 15
        subprocess.run(
            [py, "-m", "venv", *([] if own_pip else ["--without-pip"]), venv], check=True
        )
        pip = [venv / "bin" / "pip"] if own_pip else [PIP, "--python", venv / "bin" / "python"]
        env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "TERM": "xterm",
            "LANG": "C.UTF-8",
        }
        r = subprocess.run(
            [*pip, "install", "-q", "--no-index", "--no-cache-dir", wheel],
            env=env,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            fail(wheel, f"pip install failed: {r.stderr[-500:]}")

        def run(*args, **kw):
            return subprocess.run(
                list(args), env=env, cwd=work, capture_output=True, text=True, timeout=120, **kw
            )

        if shutil.which("trainprof", path=env["PATH"]) != str(venv / "bin" / "trainprof"):
            fail(wheel, "trainprof is not on the venv's PATH")
        version = run("trainprof", "--version").stdout.split()[-1]
        imported = run("python", "-c", "import trainprof; print(trainprof.__version__)")
        if imported.returncode or imported.stdout.strip() != version:
            fail(wheel, f"import trainprof: {imported.stdout}{imported.stderr}")
        (work / "work.py").write_text(SCRIPT)
        port = free_port()
        rec = subprocess.Popen(
            [
                "trainprof",
                "record",
                "-q",
                "--serve",
                f"127.0.0.1:{port}",
                "-o",
                "run.db",
                "--",
                "python",
                "work.py",
            ],
            env=env,
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        metrics = ""
        end = time.time() + 10
        while time.time() < end and "trainprof_info" not in metrics and rec.poll() is None:
            try:
                metrics = (
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1)
                    .read()
                    .decode()
                )
            except OSError:
                time.sleep(0.1)
        out, err = rec.communicate(timeout=60)
        if rec.returncode or "done" not in out:
            fail(wheel, f"record failed ({rec.returncode}): {err[-500:]}")
        if "trainprof_info" not in metrics:
            fail(wheel, "record --serve: /metrics did not answer")
        with contextlib.closing(sqlite3.connect(work / "run.db")) as db:
            regions = db.execute(
                "SELECT COUNT(*) FROM region r JOIN name n ON n.id = r.name_id"
                " WHERE n.text = 'work'"
            ).fetchone()[0]
            stacks = db.execute("SELECT COUNT(*) FROM stack_sample").fetchone()[0]
        if regions != 1:
            fail(wheel, f"the script's region was timed {regions} times, not once")
        if stacks == 0:
            fail(wheel, "no stack sampled: the .pth autoload did not load the extension")
        report = run("trainprof", "report", "run.db")
        if report.returncode or "In short" not in report.stdout:
            fail(wheel, f"report failed: {report.stderr[-500:]}")
        top_in_a_terminal(env, wheel)
        written = [str(p.relative_to(home)) for p in home.rglob("*")]
        if written:
            fail(wheel, f"files written in HOME: {written[:5]}")
        extra = sorted(p.name for p in work.iterdir()) != ["run.db", "work.py"]
        if extra:
            fail(wheel, f"files written beside the run: {sorted(p.name for p in work.iterdir())}")
    say(f"test_wheel: {os.path.basename(wheel)}: ok ({py})")
    return True


def main():
    dist = sys.argv[1] if len(sys.argv) > 1 else "dist"
    wheels = sorted(glob.glob(os.path.join(dist, "trainprof-*-manylinux*.whl")))
    if not wheels:
        print(f"test_wheel: no manylinux wheel in {dist} (make wheel)", file=sys.stderr)
        sys.exit(2)

    def checked(wheel):
        try:
            return check(os.path.abspath(wheel)), None
        except (WheelFailed, subprocess.TimeoutExpired) as e:
            return False, str(e)

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(checked, wheels))
    failures = [why for _, why in results if why]
    for why in failures:
        print(why, file=sys.stderr)
    if failures:
        sys.exit(1)
    if not any(ok for ok, _ in results):
        print("test_wheel: no wheel had its interpreter here", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
