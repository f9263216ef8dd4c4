"""`trainprof top` driven through tmux, as a person at a terminal would."""

import re
import subprocess
import textwrap
import time
import uuid

import pytest

from conftest import FAKE_NVML, PROGRAM, PYTHON, trainprof


class Tmux:
    def __init__(self, command, width=80, height=24):
        self.name = f"tp-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y",
                        str(height), command], check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait_for(self, text, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared:\n{self.screen()}")

    def keys(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def alive(self):
        return subprocess.run(["tmux", "has-session", "-t", self.name],
                              capture_output=True).returncode == 0

    def resize(self, width, height):
        subprocess.run(["tmux", "resize-window", "-t", self.name, "-x", str(width), "-y",
                        str(height)], check=True)

    def kill(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.fixture
def top():
    sessions = []

    def start(env="", width=80, height=24):
        t = Tmux(f"env {env} {PROGRAM} top --interval 0.5", width, height)
        sessions.append(t)
        return t

    yield start
    for t in sessions:
        t.kill()


def test_machine_view_and_quit(top):
    t = top(f"TRAINPROF_NVML_LIB={FAKE_NVML} FAKE_NVML_GPUS=2")
    t.wait_for("GPU1")
    screen = t.wait_for("cpu0")
    assert "trainprof top" in screen and "CPU" in screen and "MEM" in screen
    assert "cpu0" in screen and "DISK" in screen and "NET" in screen
    assert "50.0%" in screen and "60.0%" in screen and "300 W" in screen
    assert "no trainprof record running" in screen
    assert all(len(line) <= 80 for line in screen.splitlines())
    t.keys("q")
    for _ in range(25):
        if not t.alive():
            break
        time.sleep(0.2)
    assert not t.alive()


def test_survives_resizes(top):
    t = top(f"TRAINPROF_NVML_LIB={FAKE_NVML}")
    t.wait_for("GPU0")
    for width, height in [(120, 40), (60, 16), (80, 24)]:
        t.resize(width, height)
        time.sleep(1.0)
        screen = t.wait_for("trainprof top")
        assert all(len(line) <= width for line in screen.splitlines())
    assert t.alive()


def test_shows_the_running_recording(top, tmp_path):
    script = tmp_path / "steps.py"
    script.write_text(textwrap.dedent("""
        import time, trainprof
        from trainprof import _native
        for _ in range(400):
            trainprof.step()
            with trainprof.region("load"):
                time.sleep(0.005)
            start = _native.now_ns()
            with trainprof.region("compute"):
                time.sleep(0.015)
            # as trainprof.torch reports a CUDA region: 10 ms on the device
            _native.device_time(trainprof.region("compute"), start, 10_000_000)
    """))
    rec = subprocess.Popen([PROGRAM, "record", "-q", "-o", tmp_path / "run.db", "--", PYTHON,
                            script])
    try:
        t = top()
        screen = t.wait_for("steps/s", timeout=20)
        assert "RECORD pid" in screen and "run.db" in screen
        screen = t.wait_for("%  GPU ")  # a phase's host share, then its device share
        assert "load" in screen
        # compute's line shows its device share: 10 ms of each ~21 ms step
        line = next(x for x in screen.splitlines() if "compute" in x)
        gpu = float(re.search(r"GPU\s+([\d.]+)%", line).group(1))
        assert 20 < gpu < 60, line
        assert "GPU" not in next(x for x in screen.splitlines() if "load" in x)
    finally:
        rec.kill()
        rec.wait()


def test_needs_a_terminal_and_a_sane_interval():
    r = trainprof("top")
    assert r.returncode == 2 and "not a terminal" in r.stderr
    r = trainprof("top", "--interval", "0.01")
    assert r.returncode == 2 and "--interval" in r.stderr
