"""`trainprof mcp`: trainprof's answers for an assistant, as a Model Context
Protocol server over stdio, built on the official MCP Python SDK (``pip
install 'trainprof[mcp]'``; docs/mcp.md). `trainprof mcp --root DIR...`
runs ``python -m trainprof.mcp_server --trainprof PROGRAM --root DIR...``.

Each tool runs trainprof's own commands (the figures are theirs) or reads a
run file read-only, and returns JSON. Every path an assistant names must
lie inside one of the folders the server was started with (after symbolic
links are followed); bad arguments, and anything trainprof refuses, come
back as the tool's error (one line), never a traceback. Outputs are
bounded: lists, series and reports are cut to a size a model can read, and
say so."""

import argparse
import json
import os
import sqlite3
import subprocess
import sys

MAX_FILES = 500  # run files a listing names
MAX_POINTS = 5000  # points a series may ask for
MAX_REPORT_CHARS = 2_000_000  # a full report beyond is refused: ask for the summary

# a report's parts an assistant needs first; full=True gives every table
SUMMARY_KEYS = (
    "run",
    "steps",
    "epochs",
    "verdicts",
    "stalls",
    "deaths",
    "stop",
    "regimes",
    "gpu_memory",
    "own_cost",
    "ranks",
)


class Refused(Exception):
    """An argument or a run file the tool can't take: its one-line reason."""


class Server:
    """What the tools share: the trainprof program, the roots."""

    def __init__(self, program, roots):
        self.program = program
        self.roots = [os.path.realpath(r) for r in roots]

    def inside(self, path):
        """path resolved, refused where it lies outside every root."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise Refused("a path must be a non-empty string")
        full = os.path.realpath(os.path.join(self.roots[0], os.path.expanduser(path)))
        for root in self.roots:
            if os.path.commonpath([root, full]) == root:
                return full
        raise Refused(
            f"{path}: outside the folders this server may read ({', '.join(self.roots)}): "
            "start it with --root for another"
        )

    def run_file(self, path):
        full = self.inside(path)
        if not os.path.isfile(full):
            raise Refused(f"{path}: no such run file")
        return full

    def trainprof(self, *args, timeout=600):
        r = subprocess.run([self.program, *args], capture_output=True, text=True, timeout=timeout)
        if r.returncode not in (0, 3, 4):  # compare's gate statuses are answers
            line = (r.stderr.strip().splitlines() or ["failed"])[-1]
            raise Refused(line.removeprefix("trainprof: error: "))
        return r.stdout

    # ---- the tools, each a plain method (docs in tool_docs) ----

    def list_recordings(self):
        out = []
        for line in self.trainprof("capture", "--list").splitlines():
            pid, started, path = line.split("\t", 2)
            if any(os.path.commonpath([r, os.path.realpath(path)]) == r for r in self.roots):
                out.append({"pid": int(pid), "started_unix_s": int(started), "run_file": path})
        return {"recordings": out}

    def list_run_files(self, folder=""):
        tops = [self.inside(folder)] if folder else self.roots
        found = []
        for top in tops:
            for where, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in files:
                    if name.endswith(".db"):
                        full = os.path.join(where, name)
                        try:
                            st = os.stat(full)
                        except OSError:
                            continue
                        found.append((st.st_mtime, full, st.st_size))
        found.sort(reverse=True)
        files = [
            {"path": p, "bytes": size, "modified_unix_s": int(t)}
            for t, p, size in found[:MAX_FILES]
        ]
        return {"run_files": files, "left_out": max(0, len(found) - MAX_FILES)}

    def report(self, paths, full=False):
        if isinstance(paths, str):
            paths = [paths]
        if not paths or len(paths) > 1024:
            raise Refused("paths: one run file, or up to 1,024 (one per node of a job)")
        text = self.trainprof("report", "--json", *[self.run_file(p) for p in paths])
        if full:
            if len(text) > MAX_REPORT_CHARS:
                raise Refused(
                    f"the full report is {len(text):,} characters: ask without full for the "
                    "summary, or for one metric's series"
                )
            return json.loads(text)
        rep = json.loads(text)
        return {k: rep.get(k) for k in SUMMARY_KEYS}

    def compare(self, baseline, candidate):
        return json.loads(
            self.trainprof("compare", "--json", self.run_file(baseline), self.run_file(candidate))
        )

    def stalls_and_deaths(self, path):
        rep = json.loads(self.trainprof("report", "--json", self.run_file(path)))
        return {k: rep.get(k) for k in ("stalls", "deaths", "stop", "regimes")}

    def capture(self, run_file):
        out = self.trainprof("capture", self.run_file(run_file), timeout=30)
        return {"answer": out.strip()}

    def metric_series(self, path, metric, labels=None, start_s=None, end_s=None, max_points=500):
        if not isinstance(max_points, int) or not 1 <= max_points <= MAX_POINTS:
            raise Refused(f"max_points: 1 to {MAX_POINTS}")
        full = self.run_file(path)
        try:
            db = sqlite3.connect(f"file:{full}?mode=ro", uri=True)
        except sqlite3.Error as e:
            raise Refused(f"{path}: not a run file ({e})") from None
        try:
            return _series(db, metric, labels or {}, start_s, end_s, max_points)
        except sqlite3.DatabaseError as e:
            raise Refused(f"{path}: not a run file trainprof can read ({e})") from None
        finally:
            db.close()


def _series(db, metric, labels, start_s, end_s, max_points):
    """A metric's samples in [start_s, end_s] (seconds since the run's
    start), of the series whose labels are labels, averaged into at most
    max_points buckets of equal time."""
    row = db.execute("SELECT id, unit FROM metric WHERE name = ?", (metric,)).fetchone()
    if row is None:
        names = [r[0] for r in db.execute("SELECT name FROM metric ORDER BY id")]
        raise Refused(f"metric {metric!r}: not in this run file (it has {', '.join(names)})")
    metric_id, unit = row
    series = [
        (sid, json.loads(text))
        for sid, text in db.execute(
            "SELECT id, labels FROM series WHERE metric_id = ? ORDER BY id", (metric_id,)
        )
    ]
    chosen = [sid for sid, lab in series if lab == labels]
    if not chosen:
        raise Refused(
            f"labels {json.dumps(labels)}: no series of {metric} has them "
            f"(it has {', '.join(json.dumps(lab) for _, lab in series[:20])})"
        )
    lo = -1 if start_s is None else int(float(start_s) * 1e9)
    hi = 2**62 if end_s is None else int(float(end_s) * 1e9)
    rows = db.execute(
        "SELECT t_ns, value FROM sample WHERE series_id = ? AND t_ns BETWEEN ? AND ? ORDER BY t_ns",
        (chosen[0], lo, hi),
    ).fetchall()
    points = rows
    if len(rows) > max_points:
        t0, t1 = rows[0][0], rows[-1][0]
        width = (t1 - t0) / max_points or 1
        buckets = {}
        for t, v in rows:
            k = min(int((t - t0) / width), max_points - 1)
            n, tsum, vsum = buckets.get(k, (0, 0, 0.0))
            buckets[k] = (n + 1, tsum + t, vsum + v)
        points = [(tsum / n, vsum / n) for n, tsum, vsum in (buckets[k] for k in sorted(buckets))]
    return {
        "metric": metric,
        "unit": unit,
        "labels": labels,
        "samples": len(rows),
        "averaged": len(rows) > max_points,
        "points": [[round(t / 1e9, 6), v] for t, v in points],
    }


TOOL_DOCS = {
    "list_recordings": (
        "The live recordings: every `trainprof record` of this user running now whose run file "
        "lies in the server's folders. Returns {recordings: [{pid, started_unix_s, run_file}]}. "
        "A live run file can be reported while it records (figures so far) and asked for a "
        "capture window."
    ),
    "list_run_files": (
        "Run files (*.db) under folder (a path inside the server's folders; default: all of "
        "them), newest first, at most 500. Returns {run_files: [{path, bytes, "
        "modified_unix_s}], left_out: count}."
    ),
    "report": (
        "trainprof's report of a training run: the verdict first (why it is slow, what to "
        "try), with its evidence. paths: one run file, or several (one per node of a job, "
        "merged). Returns the report's JSON: run (facts, command, duration_s), steps (per "
        "rank: count, mean_s, steps_per_s, samples_per_s), epochs, verdicts ([{kind, message, "
        "evidence}]), stalls, deaths, stop, regimes (changes of pace), gpu_memory (bytes), "
        "own_cost (shares of 1), ranks; full=true adds every table (metrics, timings by "
        "phase, stacks, operators) but may be large. Times in seconds, sizes in bytes, "
        "shares of 1, percents 0 to 100."
    ),
    "compare": (
        "What changed between two runs of one training: baseline A, candidate B. Returns "
        "`trainprof compare --json`: the change in step time with its 95 % interval, the "
        "phases that moved, their causes, and what differs in the script's setup. Seconds "
        "and shares of 1."
    ),
    "stalls_and_deaths": (
        "How a run went wrong: stalls (a rank without progress: where, since when, what its "
        "stack was), deaths (a process that died: rank, step, phase, exception or signal, "
        "an out-of-memory's figures), the stop (a signal that ended it) and regimes (changes "
        "of pace). Times in seconds since the run's start."
    ),
    "capture": (
        "Asks a live recording (its run file, from list_recordings) for a capture window: "
        "PyTorch's profiler over its next few steps; the report then has their operators "
        "and kernels. Returns {answer: the recorder's words, which steps it will cover}."
    ),
    "metric_series": (
        "A system metric's samples over time from a run file: metric (e.g. "
        "gpu_util_percent, cpu_util_percent, host_mem_used_bytes, cuda_allocated_bytes; "
        'docs/metrics.md), labels (e.g. {"gpu": "0"}; {} for the whole machine), start_s '
        "and end_s (seconds since the run's start, optional), at most max_points (1 to "
        "5000; more samples are averaged into that many equal spans). Returns {metric, "
        "unit, labels, samples, averaged, points: [[t_s, value]]} in the metric's unit."
    ),
}


def build(server):
    """The MCP server of server's tools (the SDK imported here: only `trainprof mcp`
    needs it)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    app = MCPServer(
        "trainprof",
        instructions=(
            "trainprof profiles neural-network training runs into SQLite run files. Start with "
            "list_run_files or list_recordings, then report; compare two runs; "
            "stalls_and_deaths for a run that hung or died."
        ),
    )

    def tool(method):
        def call(**kwargs):
            try:
                return method(**kwargs)
            except Refused as e:
                raise ToolError(str(e)) from None
            except subprocess.TimeoutExpired:
                raise ToolError("trainprof took too long (10 minutes)") from None
            except (TypeError, ValueError) as e:
                raise ToolError(f"bad arguments: {e}") from None

        return call

    def list_recordings() -> dict:
        return tool(server.list_recordings)()

    def list_run_files(folder: str = "") -> dict:
        return tool(server.list_run_files)(folder=folder)

    def report(paths: list[str], full: bool = False) -> dict:
        return tool(server.report)(paths=paths, full=full)

    def compare(baseline: str, candidate: str) -> dict:
        return tool(server.compare)(baseline=baseline, candidate=candidate)

    def stalls_and_deaths(path: str) -> dict:
        return tool(server.stalls_and_deaths)(path=path)

    def capture(run_file: str) -> dict:
        return tool(server.capture)(run_file=run_file)

    def metric_series(
        path: str,
        metric: str,
        labels: dict[str, str] | None = None,
        start_s: float | None = None,
        end_s: float | None = None,
        max_points: int = 500,
    ) -> dict:
        return tool(server.metric_series)(
            path=path,
            metric=metric,
            labels=labels,
            start_s=start_s,
            end_s=end_s,
            max_points=max_points,
        )

    for fn in (
        list_recordings,
        list_run_files,
        report,
        compare,
        stalls_and_deaths,
        capture,
        metric_series,
    ):
        # every tool but capture only reads: a host may run those without asking
        reads = fn is not capture
        hints = ToolAnnotations(
            read_only_hint=reads,
            destructive_hint=False,
            idempotent_hint=reads,
            open_world_hint=False,
        )
        app.tool(name=fn.__name__, description=TOOL_DOCS[fn.__name__], annotations=hints)(fn)
    return app


def _fail(message):
    print(f"trainprof: error: mcp: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="trainprof mcp")
    parser.add_argument("--trainprof", default="trainprof")
    parser.add_argument("--root", action="append", default=[])
    parser.error = lambda message: _fail(message)  # one line, exit status 2
    args = parser.parse_args(argv)
    if sys.version_info < (3, 10):
        return _fail("the MCP Python SDK needs Python 3.10 or newer")
    roots = args.root or [os.getcwd()]
    for r in roots:
        if not os.path.isdir(r):
            return _fail(f"--root {r}: not a folder")
    try:
        app = build(Server(args.trainprof, roots))
    except ImportError as e:
        return _fail(
            f"the MCP Python SDK is not installed here ({sys.executable}: {e}): "
            "pip install 'trainprof[mcp]'"
        )
    app.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
