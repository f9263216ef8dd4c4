"""How the fleet's readers grow with the node files: `report`, `html`,
`merge --summary` (and `report` and `html` of what it made) and `compare
--base` of N node files (the job against itself: what comparing costs, no
change to find), for each N given,
with the time per node file (flat: linear) and the peak memory (GNU time's
maximum resident set).

The node files come from bench/gen_run, as bench/compare_cost.py makes them
(1 hour each, 8 GPUs, 64 cores, 8 ranks at a 1-second step, sampled every
second, the summary stored), named a-1h-I.db in WORKDIR and reused:
generating a node costs about a second.

Usage: fleet_scale.py [--nodes 8,64,256] [--json] WORKDIR
"""

import argparse
import json
import pathlib
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = str(ROOT / "build" / "trainprof")
GEN = str(ROOT / "build" / "bench" / "gen_run")
RANKS = 8


def node_file(work, index):
    path = work / f"a-1h-{index}.db"
    if not path.exists():
        subprocess.run(
            [
                GEN,
                str(path),
                "1",
                "1",
                "64",
                "8",
                str(RANKS),
                "1.0",
                f"node{index}",
                str(RANKS * index),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return path


def measured(argv):
    """Wall seconds and peak resident MiB of argv, by GNU time."""
    with tempfile.NamedTemporaryFile("r") as f:
        subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", "-o", f.name, *argv],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seconds, kib = f.read().split()[-2:]
    return float(seconds), round(int(kib) / 1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="8,64,256")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("workdir")
    args = ap.parse_args()
    work = pathlib.Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in args.nodes.split(",")):
        with ThreadPoolExecutor(2) as pool:
            files = [str(p) for p in pool.map(lambda i: node_file(work, i), range(n))]
        merged = work / f"merged-{n}.db"
        row = {"nodes": n}
        for what, argv in (
            ("report", [PROGRAM, "report", *files]),
            ("html", [PROGRAM, "html", "--force", "-o", str(work / f"fleet-{n}.html"), *files]),
            (
                "merge_summary",
                [PROGRAM, "merge", "-q", "--force", "--summary", "-o", str(merged), *files],
            ),
            ("report_merged", [PROGRAM, "report", str(merged)]),
            (
                "html_merged",
                [
                    PROGRAM,
                    "html",
                    "--force",
                    "-o",
                    str(work / f"fleet-merged-{n}.html"),
                    str(merged),
                ],
            ),
            ("compare", [PROGRAM, "compare", *[x for f in files for x in ("--base", f)], *files]),
        ):
            seconds, mib = measured(argv)
            row[what] = {"s": seconds, "per_node_ms": round(1000 * seconds / n, 1), "peak_mib": mib}
        row["merged_mb"] = round(merged.stat().st_size / 1e6)
        row["html_kb"] = round((work / f"fleet-{n}.html").stat().st_size / 1e3)
        rows.append(row)
    if args.json:
        print(json.dumps(rows))
        return
    for row in rows:
        parts = [
            f"{k} {v['s']} s ({v['per_node_ms']} ms/node, {v['peak_mib']} MiB)"
            for k, v in row.items()
            if isinstance(v, dict)
        ]
        print(
            f"{row['nodes']} node files: "
            + "; ".join(parts)
            + f"; merged file {row['merged_mb']} MB, html {row['html_kb']} kB"
        )


if __name__ == "__main__":
    main()
