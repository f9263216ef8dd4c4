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

Exits 1 on the first failure, saying which wheel and what."""

import glob
import os
import pathlib
import pty
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

PIP = pathlib.Path(__file__).resolve().parent.parent / ".venv" / "bin" / "pip"

SCRIPT = """
import time, trainprof
with trainprof.region("work"):
    end = time.time() + 1.5
    while time.time() < end:
        sum(i * i for i in range(1000))
print("done")
"""


def fail(wheel, what):
    print(f"test_wheel: {os.path.basename(wheel)}: {what}", file=sys.stderr)
    sys.exit(1)


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
    """Runs `trainprof top` in a pseudo-terminal, then presses q."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe("trainprof", ["trainprof", "top", "--interval", "0.2"], env)
    seen = b""
    end = time.time() + 3
    while time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    os.write(fd, b"q")
    end = time.time() + 5
    status = None
    while time.time() < end and status is None:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
        done, st = os.waitpid(pid, os.WNOHANG)
        status = st if done else None
    if status is None:
        os.kill(pid, 9)
        fail(wheel, "top did not quit on q")
    if os.waitstatus_to_exitcode(status) != 0:
        fail(wheel, f"top exited {os.waitstatus_to_exitcode(status)}: {seen[-400:]!r}")
    if b"CPU" not in seen and b"cpu" not in seen:
        fail(wheel, f"top drew no CPU line: {seen[-400:]!r}")


def check(wheel):
    tag = re.search(r"-(cp3\d+)-", os.path.basename(wheel)).group(1)
    py = interpreter(tag)
    if not py:
        print(f"test_wheel: {os.path.basename(wheel)}: no {tag} here, skipped")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        venv, home, work = tmp / "venv", tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        # the venv without a pip of its own (ensurepip: 2 CPU-seconds each);
        # the project's pip installs into it, as pip installs into any venv
        subprocess.run([py, "-m", "venv", "--without-pip", venv], check=True)
        env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(home),
            "TERM": "xterm",
            "LANG": "C.UTF-8",
        }
        r = subprocess.run(
            [PIP, "--python", venv / "bin" / "python", "install", "-q", "--no-index"]
            + ["--no-cache-dir", wheel],
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
        with sqlite3.connect(work / "run.db") as db:
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
    print(f"test_wheel: {os.path.basename(wheel)}: ok ({py})")
    return True


def main():
    dist = sys.argv[1] if len(sys.argv) > 1 else "dist"
    wheels = sorted(glob.glob(os.path.join(dist, "trainprof-*-manylinux*.whl")))
    if not wheels:
        print(f"test_wheel: no manylinux wheel in {dist} (make wheel)", file=sys.stderr)
        sys.exit(2)
    if not any([check(os.path.abspath(w)) for w in wheels]):
        print("test_wheel: no wheel had its interpreter here", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
