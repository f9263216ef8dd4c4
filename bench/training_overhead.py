"""The bundled example training, with and without trainprof, side by side.

Each round runs examples/train.py three ways, in rotating order: plain;
under `trainprof record` (system metrics and PyTorch auto-timings); and
under torch.profiler (CPU activities, and CUDA's on a GPU). The script
measures its own median step time; the figure is the median over rounds of
the ratio to the plain run of the same round (paired runs, so drifts of the
machine cancel out).

    bench/training_overhead.py [ROUNDS] [--alt DIR] [-- EXAMPLE ARGS]

With `-- --device cuda` a fourth way runs: under `record` with
TRAINPROF_DEVICE_TIMES=0, which shows what the CUDA-event device times cost.
With --alt DIR, "trainprof@alt" runs under `record` too, importing the
trainprof package found in DIR (another version of the Python side, e.g.
the last commit's), so that two versions are measured in the same rounds.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = [
    sys.executable,
    str(ROOT / "examples" / "train.py"),
    "--epochs",
    "2",
    "--samples",
    "8192",
    "--timing-json",
]


def step_median(cmd, env=None):
    out = subprocess.run(
        cmd, capture_output=True, text=True, check=True, env={**os.environ, **(env or {})}
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["step_s_median"]


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    alt = None
    if "--alt" in args:
        i = args.index("--alt")
        alt = args[i + 1]
        del args[i : i + 2]
    rounds = int(args[0]) if args else 5
    example = EXAMPLE + extra
    program = os.environ.get("TRAINPROF", str(ROOT / "build" / "trainprof"))
    ratios = {}
    plain_all = []
    with tempfile.TemporaryDirectory() as d:
        recorded = [program, "record", "-q", "--force", "-o", f"{d}/run.db", "--"] + example
        variants = {
            "plain": (example, None),
            "trainprof": (recorded, None),
            "torch_profiler": (example + ["--torch-profiler"], None),
        }
        if "cuda" in " ".join(extra):
            variants["trainprof_no_device_times"] = (recorded, {"TRAINPROF_DEVICE_TIMES": "0"})
        if alt:
            path = os.pathsep.join(filter(None, [alt, os.environ.get("PYTHONPATH")]))
            variants["trainprof@alt"] = (recorded, {"PYTHONPATH": path})
        order = list(variants)
        for r in range(rounds):
            times = {}
            for name in order[r % len(order) :] + order[: r % len(order)]:
                times[name] = step_median(*variants[name])
            print(
                f"round {r + 1}: " + ", ".join(f"{k} {1e3 * v:.3f} ms" for k, v in times.items()),
                file=sys.stderr,
                flush=True,
            )
            plain_all.append(times["plain"])
            for name in order[1:]:
                ratios.setdefault(name, []).append(times[name] / times["plain"])
    result = {
        "rounds": rounds,
        "example_args": extra,
        "plain_step_ms_median": round(1e3 * statistics.median(plain_all), 3),
    }
    for name, values in ratios.items():
        result[f"{name}_over_plain"] = round(statistics.median(values), 4)
    result["trainprof_ratios"] = [round(x, 4) for x in ratios["trainprof"]]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
