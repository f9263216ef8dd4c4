"""Runs every benchmark and prints their JSON results, one per line."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

for script in ["sample_cost.py", "record_cost.py", "report_speed.py"]:
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)
