"""The bundled example training, with and without trainprof, side by side.

Each round runs examples/train.py three ways, in rotating order: plain;
under `trainprof record` (system metrics and PyTorch auto-timings); and
under torch.profiler (CPU activities). The script measures its own median step
time; the figure is the median over rounds of the ratio to the plain run of
the same round (paired runs, so drifts of the machine cancel out).
"""

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "train.py"), "--epochs", "2",
           "--samples", "8192", "--timing-json"]


def step_median(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["step_s_median"]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    ratios_tp, ratios_torch, plain_all = [], [], []
    with tempfile.TemporaryDirectory() as d:
        recorded = [str(ROOT / "build" / "trainprof"), "record", "-q", "--force", "-o",
                    f"{d}/run.db", "--"] + EXAMPLE
        variants = {"plain": EXAMPLE, "trainprof": recorded,
                    "torch_profiler": EXAMPLE + ["--torch-profiler"]}
        order = list(variants)
        for r in range(rounds):
            times = {}
            for name in order[r % 3:] + order[:r % 3]:
                times[name] = step_median(variants[name])
            plain_all.append(times["plain"])
            ratios_tp.append(times["trainprof"] / times["plain"])
            ratios_torch.append(times["torch_profiler"] / times["plain"])
    print(json.dumps({
        "rounds": rounds, "plain_step_ms_median": round(1e3 * statistics.median(plain_all), 3),
        "trainprof_over_plain": round(statistics.median(ratios_tp), 4),
        "torch_profiler_over_plain": round(statistics.median(ratios_torch), 4),
        "trainprof_ratios": [round(x, 4) for x in ratios_tp],
    }))


if __name__ == "__main__":
    main()
