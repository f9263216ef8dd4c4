"""tools/gpu-check.sh installs the package on a lent GPU machine, which has
no meson: it builds the extension with cc from the sources it names. Once a
new C file of the extension was missing there, the extension failed to load
(an undefined symbol), the training ran without trainprof, and a whole
lease's benchmark measured nothing. Here the same route builds the package
for this Python, and the package it makes must load."""

import os
import subprocess
import sys

from conftest import ROOT


def test_the_gpu_machines_package_builds_and_loads(tmp_path):
    site = tmp_path / "site"
    r = subprocess.run(
        ["bash", ROOT / "tools" / "gpu-check.sh", "package", site],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    probe = (
        "import trainprof, trainprof._native as n, trainprof.steps.tracker;"
        "print(trainprof.__file__); print(n.__file__); print(n.now_ns() > 0)"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(site), "TRAINPROF_AUTO": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    package, extension, clock = r.stdout.split()
    assert package.startswith(str(site)) and extension.startswith(str(site)), r.stdout
    assert clock == "True"
    # every module meson installs is there
    installed = {p.relative_to(site / "trainprof") for p in (site / "trainprof").rglob("*.py")}
    source = {
        p.relative_to(ROOT / "python" / "trainprof")
        for p in (ROOT / "python" / "trainprof").rglob("*.py")
    }
    assert source <= installed
