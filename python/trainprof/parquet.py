"""trainprof's run files as Parquet, for the engines fleets already run
(DuckDB, Spark, Trino, pandas): ``trainprof export --format parquet -o DIR
RUN.db...`` runs ``python -m trainprof.parquet DIR RUN.db...``. Apache
Arrow's writer (pyarrow) does the encoding; this module only reads the run
files (SQLite, as they are: each a hostile input checked by SQLite) and
shapes their rows. The tables (docs/run-file.md has their columns), each a
directory of Parquet files, hive-partitioned:

- ``samples/agent=NAME/``: every system metric sample;
- ``regions/rank=N/``: every timed region (phases, user regions, pauses);
- ``marks/rank=N/``: step, step_end, epoch and samples marks;
- ``steps/rank=N/``: each thread's steps as the report counts them (a step
  mark to the next, never across an epoch mark; a step_end closes one),
  with their samples and batches, and whether a capture window ran in them
  (``profiled``) or they are the thread's warm-up (``warmup``: its first
  steps, for as long as each held a ``compile`` region): the report's step
  figures are those of the others;
- ``summary_timing``, ``summary_step``, ``summary_epoch``, ``summary_rank``:
  the summaries each file stored (its agent's), one file each per run file.

Times are seconds since the run's start (``*_s``). Several run files (a
job's nodes) write into the same directories, a file each per partition.
"""

import bisect
import os
import sqlite3
import sys

MARK_KINDS = {3: "step", 4: "epoch", 6: "samples", 9: "step_end"}
SUMMARIES = ("summary_timing", "summary_step", "summary_epoch", "summary_rank")


class ExportError(Exception):
    """A run file that can't be read, or an output that can't be written."""


def _open(path):
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.execute("SELECT count(*) FROM meta").fetchone()
    except sqlite3.Error as e:
        raise ExportError(f"{path}: not a readable trainprof run file ({e})") from None
    return db


def _has_table(db, name):
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _rows(db, sql):
    cur = db.execute(sql)
    names = [d[0] for d in cur.description]
    columns = {n: [] for n in names}
    for row in cur:
        for n, v in zip(names, row):
            columns[n].append(v)
    return columns


THREADS = ("FROM {t} x JOIN thread t ON t.id = x.thread_id JOIN agent a ON a.id = t.agent_id")


def _samples(db):
    return _rows(db, "SELECT a.name AS agent, m.name AS metric, m.unit AS unit, s.labels AS labels,"
                     " p.t_ns / 1e9 AS t_s, p.value AS value FROM sample p"
                     " JOIN series s ON s.id = p.series_id JOIN agent a ON a.id = s.agent_id"
                     " JOIN metric m ON m.id = s.metric_id ORDER BY s.id, p.t_ns")


def _regions(db):
    return _rows(db, "SELECT a.name AS agent, t.pid AS pid, t.tid AS tid, t.rank AS rank,"
                     " n.text AS name, x.depth AS depth, x.start_ns / 1e9 AS start_s,"
                     " x.end_ns / 1e9 AS end_s, (x.end_ns - x.start_ns) / 1e9 AS duration_s "
                     + THREADS.format(t="region") + " JOIN name n ON n.id = x.name_id"
                     " ORDER BY x.thread_id, x.start_ns")


def _marks(db):
    marks = _rows(db, "SELECT a.name AS agent, t.pid AS pid, t.tid AS tid, t.rank AS rank,"
                      " x.thread_id AS thread, x.kind AS kind, x.t_ns AS t_ns, x.value AS value "
                      + THREADS.format(t="mark") + " ORDER BY x.thread_id, x.t_ns")
    marks["kind"] = [MARK_KINDS.get(k, str(k)) for k in marks["kind"]]
    return marks


def _spans(db, sql):
    """{thread: (sorted starts, ends)} of the spans sql selects (thread, start, end)."""
    spans = {}
    for thread, a, b in db.execute(sql):
        spans.setdefault(thread, []).append((a, b))
    return {t: ([a for a, _ in sorted(v)], [b for _, b in sorted(v)]) for t, v in spans.items()}


def _overlaps(spans, thread, a, b):
    starts, ends = spans.get(thread, ((), ()))
    i = bisect.bisect_left(starts, b)  # the spans starting before b
    return any(ends[k] > a for k in range(max(0, i - 64), i))


def _steps(db, marks):
    """Each thread's steps from its marks (the report's rule), flagged."""
    windows = _spans(db, "SELECT thread_id, start_ns, end_ns FROM op_window WHERE skipped = 0"
                     if _has_table(db, "op_window") else "SELECT 0, 0, 0 WHERE 0")
    compiles = _spans(db, "SELECT r.thread_id, r.start_ns, r.end_ns FROM region r"
                          " JOIN name n ON n.id = r.name_id WHERE n.text = 'compile'")
    out = {k: [] for k in ("agent", "pid", "tid", "rank", "epoch", "step", "start_s", "end_s",
                           "duration_s", "samples", "batches", "warmup", "profiled")}
    open_step = None  # (t_ns, samples, batches) of the thread's open step
    thread = epoch = number = None
    warming = True

    def close(i, end_ns):
        nonlocal warming, number
        start, samples, batches = open_step
        number += 1
        warming = warming and _overlaps(compiles, thread, start, end_ns)
        for key, value in (("agent", marks["agent"][i]), ("pid", marks["pid"][i]),
                           ("tid", marks["tid"][i]), ("rank", marks["rank"][i]),
                           ("epoch", epoch), ("step", number), ("start_s", start / 1e9),
                           ("end_s", end_ns / 1e9), ("duration_s", (end_ns - start) / 1e9),
                           ("samples", samples), ("batches", batches), ("warmup", warming),
                           ("profiled", _overlaps(windows, thread, start, end_ns))):
            out[key].append(value)

    for i, (th, kind, t, value) in enumerate(zip(marks["thread"], marks["kind"], marks["t_ns"],
                                                 marks["value"])):
        if th != thread:
            thread, epoch, number, open_step, warming = th, None, 0, None, True
        if kind == "samples":
            if open_step is not None:
                open_step = (open_step[0], open_step[1] + value, open_step[2] + 1)
        elif kind == "epoch":
            epoch, open_step = value, None  # no step across an epoch mark
        elif kind in ("step", "step_end"):
            if open_step is not None:
                close(i, t)
            open_step = (t, 0, 0) if kind == "step" else None
    # none is warm-up on a thread whose every step held a compile (timings.h)
    threads = {}
    for i, key in enumerate(zip(out["agent"], out["pid"], out["tid"])):
        threads.setdefault(key, []).append(i)
    for rows in threads.values():
        if all(out["warmup"][i] for i in rows):
            for i in rows:
                out["warmup"][i] = False
    return out


def _write(pa, pq, columns, root, partition, name):
    if not columns or not next(iter(columns.values())):
        return 0
    table = pa.table(columns)
    if partition:
        pq.write_to_dataset(table, root_path=root, partition_cols=[partition],
                            basename_template=name + "-{i}.parquet",
                            existing_data_behavior="overwrite_or_ignore")
    else:
        os.makedirs(root, exist_ok=True)
        pq.write_table(table, os.path.join(root, name + ".parquet"))
    return table.num_rows


def export(out_dir, paths):
    """Writes the run files' tables under out_dir; returns {table: rows}."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError("--format parquet needs Apache Arrow's pyarrow in the Python that runs "
                          "trainprof's package (pip install pyarrow)") from None
    counts = {}
    for i, path in enumerate(paths):
        db = _open(path)
        try:
            name = f"part-{i}"
            marks = _marks(db)
            tables = {"samples": (_samples(db), "agent"), "regions": (_regions(db), "rank"),
                      "steps": (_steps(db, marks), "rank")}
            marks["t_s"] = [t / 1e9 for t in marks.pop("t_ns")]
            marks.pop("thread")
            tables["marks"] = (marks, "rank")
            for summary in SUMMARIES:
                if _has_table(db, summary):
                    tables[summary] = (_rows(db, f"SELECT * FROM {summary}"), None)
            for table, (columns, partition) in tables.items():
                counts[table] = counts.get(table, 0) + _write(
                    pa, pq, columns, os.path.join(out_dir, table), partition, name)
        except sqlite3.Error as e:
            raise ExportError(f"{path}: {e}") from None
        finally:
            db.close()
    return counts


def main(argv):
    if len(argv) < 2:
        print("usage: python -m trainprof.parquet OUT_DIR RUN_FILE...", file=sys.stderr)
        return 2
    try:
        counts = export(argv[0], argv[1:])
    except (ExportError, OSError) as e:
        print(f"trainprof: error: export: {e}", file=sys.stderr)
        return 2
    print("trainprof: wrote " + ", ".join(f"{t} ({n} rows)" for t, n in counts.items())
          + f" under {argv[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
