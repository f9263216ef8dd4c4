"""Runs every benchmark and prints their JSON results, one per line."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

for script in [
    "sample_cost.py",
    "record_cost.py",
    "report_speed.py",
    "python_region_cost.py",
    "training_overhead.py",
    "step_cost.py",
    "funcol_cost.py",
    "top_cost.py",
    "html_cost.py",
    "serve_cost.py",
    "startup_cost.py",
    "name_cost.py",
    "report_shapes.py",
]:
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)

# C-level timings benchmarks run under the recorder.
ROOT = HERE.parent
for args in (["region_cost"], ["event_rate", "1000000", "10"]):
    print(f"== {args[0]} (under trainprof record)", flush=True)
    subprocess.run(
        [
            str(ROOT / "build" / "trainprof"),
            "record",
            "-q",
            "--force",
            "-o",
            "/tmp/trainprof-bench.db",
            "--",
            str(ROOT / "build" / "bench" / args[0]),
            *args[1:],
        ],
        check=True,
    )
