"""trainprof's run files as Parquet, for the engines fleets already run
(DuckDB, Spark, Trino, pandas): ``trainprof export --format parquet -o DIR
RUN.db...`` runs ``python -m trainprof.parquet DIR RUN.db...``. Apache
Arrow's writer (pyarrow) does the encoding; this module only reads the run
files (SQLite, as they are: each a hostile input checked by SQLite) and
shapes their rows. The tables (docs/run-file.md has their columns), each a
directory of Parquet files, hive-partitioned:

- ``samples/agent=KEY/``: every system metric sample (``agent`` is the
  agent's name where it can be a folder's: up to 64 bytes of letters,
  digits, ``.``, ``_`` and ``-``; else a key of its safe part and a hash;
  ``agent_name`` is the name as recorded);
- ``regions/rank=N/``: every timed region (phases, user regions, pauses);
- ``marks/rank=N/``: step, step_end, epoch and samples marks;
- ``steps/rank=N/``: each thread's steps as the report counts them (a step
  mark to the next, never across an epoch mark; a step_end closes one),
  with their samples and batches, and the report's kind of each, at most
  one flag true: the thread's warm-up (``warmup``: its first steps, for as
  long as each held a ``compile`` region, then for as long as each took
  more than twice the rank's median step), a capture window ran in it
  (``profiled``), or it stalled and went on (``stalled``: longer than the
  rank's stall threshold, record's --stall-after or ten median steps and
  at least 30 s): the report's step figures are those of the others, and
  its step count leaves the stalled ones out;
- ``summary_timing``, ``summary_step``, ``summary_epoch``, ``summary_rank``
  and, where the first rank's pace changed, ``summary_rank_latest`` (the
  ranks over the latest pace, with its ``first_step`` and ``last_step``),
  and ``summary_gpu`` (each GPU's clock event reasons over the steps):
  the summaries each file stored (its agent's), one file each per run file,
  as the analysis that stored them made them (the file's meta ``summary_by``;
  ``trainprof summarize`` first stores this trainprof's where it differs).

Times are seconds since the run's start (``*_s``). Several run files (a
job's nodes) write into the same directories, each under file names of its
own (``<run>-<n>.parquet``, ``<run>`` from the run file's start and agent):
node files exported one at a time into one folder add up, and exporting a
file again replaces its own files only. Rows are read and written in
batches (memory stays bounded whatever the run's size); a value of the
wrong type (a crafted file's text where a number belongs) is written as
null, and a text that is not UTF-8 has each invalid byte written as U+FFFD,
as trainprof's other outputs write it. An export is all or nothing: every table is written into a staging
folder inside DIR first and moved into place once every input was read; no
folder on the way may be a symbolic link.
"""

import codecs
import hashlib
import os
import re
import shutil
import sqlite3
import sys

from trainprof.parquet_steps import STEP_COLUMNS, settle_kinds, thread_steps

MARK_KINDS = {3: "step", 4: "epoch", 6: "samples", 9: "step_end"}
SUMMARIES = (
    "summary_timing",
    "summary_step",
    "summary_epoch",
    "summary_rank",
    "summary_rank_latest",
    "summary_gpu",
)
BATCH_ROWS = 65536  # rows read from SQLite and handed to Arrow at a time
MAX_PARTITIONS = 1 << 20  # ranks or agents of one table (pyarrow's default: 1,024)
SAFE_KEY = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _each_byte_replaced(error):
    """A decoding error handler: one U+FFFD for each byte of the invalid
    sequence, as util/utf8.h's tp_utf8_clean cleans text (Python's own
    "replace" gives one for a maximal subpart)."""
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("trainprof-each-byte", _each_byte_replaced)


def _clean_text(data):
    """A run file's text as str, valid UTF-8 or not (a text_factory)."""
    return data.decode("utf-8", "trainprof-each-byte")


class ExportError(Exception):
    """A run file that can't be read, or an output that can't be written."""


def _open(path):
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    try:
        # Arrow's writer reads the rows' batches from a thread of its own
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        db.execute("SELECT count(*) FROM meta").fetchone()
    except sqlite3.Error as e:
        raise ExportError(f"{path}: not a readable trainprof run file ({e})") from None
    return db


def _has_table(db, name):
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _meta_seconds(db, key):
    """The run file's meta value of key as a number of seconds above 0 (as
    store/run_settings.c reads it), else 0: read as bytes, since a crafted
    file's text need not be UTF-8."""
    row = db.execute("SELECT CAST(value AS BLOB) FROM meta WHERE key = ?", (key,)).fetchone()
    text = row[0] if row and isinstance(row[0], bytes) else b""
    try:
        text = text.decode("ascii") if text and not text[-1:].isspace() else "0"
        value = float.fromhex(text) if "x" in text.lower() else float(text)  # strtod's hex too
    except (UnicodeDecodeError, ValueError):
        return 0.0
    return value if 0 < value < float("inf") else 0.0


def agent_key(name):
    """The folder-safe partition value of an agent's name (see above)."""
    if SAFE_KEY.fullmatch(name) and name not in (".", ".."):
        return name
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40].strip(".") or "agent"
    return f"{safe}~{hashlib.sha1(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def run_id(db, path):
    """A name of the run file's own for its output files: its start, its
    recorder and its agent, hashed (the same file gives the same name)."""
    meta = dict(
        db.execute(
            "SELECT key, value FROM meta WHERE key IN"
            " ('start_wall_ns', 'recorder_pid', 'agent', 'command')"
        ).fetchall()
    )
    if not meta:
        meta = {"path": os.path.abspath(path)}
    text = "\0".join(f"{k}={meta[k]}" for k in sorted(meta))
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# SQL expressions that give a column's value where it has the type the
# schema says, else NULL: SQLite stores what a crafted file put there
def _int(expr):
    return (
        f"(CASE typeof({expr}) WHEN 'integer' THEN {expr}"
        f" WHEN 'real' THEN CAST({expr} AS INTEGER) END)"
    )


def _real(expr):
    return f"(CASE WHEN typeof({expr}) IN ('integer', 'real') THEN {expr} * 1.0 END)"


def _text(expr):
    return f"(CASE typeof({expr}) WHEN 'text' THEN {expr} END)"


THREADS = "FROM {t} x JOIN thread t ON t.id = x.thread_id JOIN agent a ON a.id = t.agent_id"


def _batches(db, sql, names, fix=None):
    """The rows of sql as lists of dicts of columns, BATCH_ROWS at a time;
    fix(columns) may reshape each batch."""
    cur = db.execute(sql)
    while True:
        rows = cur.fetchmany(BATCH_ROWS)
        if not rows:
            return
        columns = {n: [r[i] for r in rows] for i, n in enumerate(names)}
        yield fix(columns) if fix else columns


def _samples(db):
    names = ("agent", "agent_name", "metric", "unit", "labels", "t_s", "value")

    def fix(columns):
        columns["agent"] = [agent_key(a) for a in columns["agent"]]
        return columns

    sql = (
        f"SELECT {_text('a.name')}, {_text('a.name')}, {_text('m.name')}, {_text('m.unit')},"
        f" {_text('s.labels')}, {_int('p.t_ns')} / 1e9, {_real('p.value')} FROM sample p"
        " JOIN series s ON s.id = p.series_id JOIN agent a ON a.id = s.agent_id"
        " JOIN metric m ON m.id = s.metric_id ORDER BY s.id, p.t_ns"
    )
    return _batches(db, sql, names, fix)


def _regions(db):
    names = ("agent", "pid", "tid", "rank", "name", "depth", "start_s", "end_s", "duration_s")
    sql = (
        f"SELECT {_text('a.name')}, {_int('t.pid')}, {_int('t.tid')}, {_int('t.rank')},"
        f" {_text('n.text')}, {_int('x.depth')}, {_int('x.start_ns')} / 1e9,"
        f" {_int('x.end_ns')} / 1e9, ({_int('x.end_ns')} - {_int('x.start_ns')}) / 1e9 "
        + THREADS.format(t="region")
        + " JOIN name n ON n.id = x.name_id"
        " ORDER BY x.thread_id, x.start_ns"
    )
    return _batches(db, sql, names)


# a mark's kind as a number: schema 7's, or the word files of schema 2 to 6 stored
# (store/mark_kind.h); any other reads as a step
KIND = (
    "(CASE typeof(x.kind) WHEN 'integer' THEN x.kind WHEN 'text' THEN CASE x.kind"
    " WHEN 'epoch' THEN 4 WHEN 'samples' THEN 6 WHEN 'step_end' THEN 9 ELSE 3 END"
    " ELSE 3 END)"
)
MARKS_SQL = (
    f"SELECT {_text('a.name')}, {_int('t.pid')}, {_int('t.tid')}, {_int('t.rank')},"
    f" x.thread_id, {KIND}, {_int('x.t_ns')}, {_int('x.value')} "
    + THREADS.format(t="mark")
    + " ORDER BY x.thread_id, x.t_ns"
)


def _marks(db):
    names = ("agent", "pid", "tid", "rank", "kind", "t_s", "value")

    def fix(columns):
        columns["kind"] = [MARK_KINDS.get(k, str(k)) for k in columns["kind"]]
        columns["t_s"] = [t / 1e9 if t is not None else None for t in columns.pop("t_ns")]
        columns.pop("thread")
        return {n: columns[n] for n in names}

    return _batches(
        db, MARKS_SQL, ("agent", "pid", "tid", "rank", "thread", "kind", "t_ns", "value"), fix
    )


def _spans(db, sql):
    """{thread: (sorted starts, ends)} of the spans sql selects (thread, start, end)."""
    spans = {}
    for thread, a, b in db.execute(sql):
        if isinstance(a, int) and isinstance(b, int):
            spans.setdefault(thread, []).append((a, b))
    return {t: ([a for a, _ in sorted(v)], [b for _, b in sorted(v)]) for t, v in spans.items()}


def _steps(db):
    """Each thread's steps from its marks (the report's rule), flagged; a
    rank at a time, so that its median sets its warm-up and stalls apart."""
    stall_after_s = _meta_seconds(db, "stall_after_s")
    windows = _spans(
        db,
        "SELECT thread_id, start_ns, end_ns FROM op_window WHERE skipped = 0"
        if _has_table(db, "op_window")
        else "SELECT 0, 0, 0 WHERE 0",
    )
    compiles = _spans(
        db,
        "SELECT r.thread_id, r.start_ns, r.end_ns FROM region r"
        " JOIN name n ON n.id = r.name_id WHERE n.text = 'compile'",
    )
    cur = db.execute(MARKS_SQL.replace("ORDER BY x.thread_id", "ORDER BY t.rank, x.thread_id"))
    rank, threads, thread, rows = object(), [], None, []

    def flush():
        settle_kinds(threads, stall_after_s)
        batch = [row for steps in threads for row in steps]
        return {c: [row[i] for row in batch] for i, c in enumerate(STEP_COLUMNS)}

    while True:
        chunk = cur.fetchmany(BATCH_ROWS)
        for mark in chunk:
            if mark[4] != thread:
                if rows:
                    threads.append(thread_steps(rows, windows, compiles))
                thread, rows = mark[4], []
                if mark[3] != rank and threads:
                    yield flush()
                    threads = []
                rank = mark[3]
            rows.append(mark)
        if not chunk:
            break
    if rows:
        threads.append(thread_steps(rows, windows, compiles))
    if threads:
        yield flush()


# each table's columns and their Arrow types ("s" text, "i" integer, "f"
# real, "b" boolean); the stored summaries' come from their declared types
TYPES = {
    "samples": "agent:s agent_name:s metric:s unit:s labels:s t_s:f value:f",
    "regions": "agent:s pid:i tid:i rank:i name:s depth:i start_s:f end_s:f duration_s:f",
    "marks": "agent:s pid:i tid:i rank:i kind:s t_s:f value:i",
    "steps": "agent:s pid:i tid:i rank:i epoch:i step:i start_s:f end_s:f duration_s:f"
    " samples:i batches:i warmup:b profiled:b stalled:b",
}


def _columns(spec):
    """[(name, kind)] of a TYPES entry."""
    return [tuple(c.split(":")) for c in spec.split()]


def _schema(pa, columns):
    kinds = {"s": pa.string(), "i": pa.int64(), "f": pa.float64(), "b": pa.bool_()}
    return pa.schema([(n, kinds[k]) for n, k in columns])


def _summary_columns(db, table):
    """[(name, kind)] of a stored summary, by each column's declared type."""

    def kind(declared):
        declared = (declared or "").upper()
        return "i" if "INT" in declared else "f" if declared in ("REAL", "FLOAT", "DOUBLE") else "s"

    return [
        (n, kind(t)) for n, t in db.execute("SELECT name, type FROM pragma_table_info(?)", (table,))
    ]


def _summary(db, table, columns):
    """A stored summary's rows, each column as its kind wants."""
    exprs = [
        {"i": _int, "f": _real, "s": _text}[k]('"' + n.replace('"', '""') + '"') for n, k in columns
    ]
    return _batches(db, f"SELECT {', '.join(exprs)} FROM {table}", [n for n, _ in columns])


def _write(pa, ds, batches, schema, root, partition, name):
    """Writes the table's batches (dicts of columns) under root as schema
    says, hive-partitioned by partition (None: one file); its files named
    name-N. Returns the rows written."""
    rows = 0

    def record_batches():
        nonlocal rows
        for columns in batches:
            if columns and next(iter(columns.values())):
                batch = pa.RecordBatch.from_pydict(columns, schema=schema)
                rows += batch.num_rows
                yield batch

    partitioning = (
        ds.partitioning(pa.schema([schema.field(partition)]), flavor="hive") if partition else None
    )
    ds.write_dataset(
        record_batches(),
        root,
        schema=schema,
        format="parquet",
        partitioning=partitioning,
        basename_template=name + "-{i}.parquet",
        max_partitions=MAX_PARTITIONS,
        existing_data_behavior="overwrite_or_ignore",
        use_threads=False,
    )
    if not rows:  # nothing to say: no empty folder either
        shutil.rmtree(root, ignore_errors=True)
    return rows


def _check_folders(out_dir, rel):
    """out_dir/rel's folders that exist: none may be a symbolic link (an
    export writes inside DIR only)."""
    path = out_dir
    for part in rel.split(os.sep):
        if not part or part == ".":
            continue
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise ExportError(f"{path} is a symbolic link: an export writes inside its folder only")
        if os.path.exists(path) and not os.path.isdir(path):
            raise ExportError(f"{path} is not a folder")


def _move_into_place(staging, out_dir):
    """Every file under staging to the same place under out_dir, once every
    folder on the way was checked (nothing moves where one is a link)."""
    walked = [(os.path.relpath(where, staging), files) for where, _, files in os.walk(staging)]
    for rel, files in walked:
        _check_folders(out_dir, rel)
        for f in files:
            target = os.path.join(out_dir, rel, f)
            if os.path.islink(target) or os.path.isdir(target):
                raise ExportError(f"{target} is a link or a folder: not replaced")
    for rel, files in walked:
        if rel != ".":
            os.makedirs(os.path.join(out_dir, rel), exist_ok=True)
        for f in files:
            os.replace(os.path.join(staging, rel, f), os.path.join(out_dir, rel, f))


def _export_one(pa, ds, db, path, staging, counts):
    name = run_id(db, path)
    tables = {
        "samples": (_samples(db), _columns(TYPES["samples"]), "agent"),
        "regions": (_regions(db), _columns(TYPES["regions"]), "rank"),
        "marks": (_marks(db), _columns(TYPES["marks"]), "rank"),
        "steps": (_steps(db), _columns(TYPES["steps"]), "rank"),
    }
    for summary in SUMMARIES:
        if _has_table(db, summary):
            columns = _summary_columns(db, summary)
            tables[summary] = (_summary(db, summary, columns), columns, None)
    for table, (batches, columns, partition) in tables.items():
        counts[table] = counts.get(table, 0) + _write(
            pa, ds, batches, _schema(pa, columns), os.path.join(staging, table), partition, name
        )


def _remove_run(staging, name):
    """Removes what the run named name wrote under staging (its files are
    name-N.parquet), and the folders that leaves empty: one walk, made only
    where a file is read again."""
    for where, _, files in os.walk(staging, topdown=False):
        for f in files:
            if f.startswith(name + "-") and f.endswith(".parquet"):
                os.remove(os.path.join(where, f))
        if where != staging and not os.listdir(where):
            os.rmdir(where)


def _export_file(pa, ds, db, path, staging, counts):
    """Exports one run file into staging, adding its rows to counts. SQLite's
    text is decoded by sqlite3's own (fast) decoder first; where it meets
    text that is not UTF-8 (a crafted or damaged file's), what the file
    wrote so far is removed and the file is read again with every invalid
    byte as U+FFFD: a valid file pays nothing for the check."""
    done = {}
    try:
        _export_one(pa, ds, db, path, staging, done)
    except sqlite3.OperationalError as e:
        if "decode to UTF-8" not in str(e):
            raise
        db.text_factory = _clean_text
        _remove_run(staging, run_id(db, path))
        done = {}
        _export_one(pa, ds, db, path, staging, done)
    for table, n in done.items():
        counts[table] = counts.get(table, 0) + n


def export(out_dir, paths):
    """Writes the run files' tables under out_dir; returns {table: rows}.
    Nothing lands unless every input was read and written."""
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:
        raise ExportError(
            "--format parquet needs Apache Arrow's pyarrow in the Python that runs "
            "trainprof's package (pip install pyarrow)"
        ) from None
    if os.path.islink(out_dir) and not os.path.isdir(out_dir):
        raise ExportError(f"{out_dir} is a dangling symbolic link")
    os.makedirs(out_dir, exist_ok=True)
    staging = os.path.join(out_dir, f".trainprof-export-{os.getpid()}")
    counts = {}
    try:
        os.mkdir(staging)
        for path in paths:
            db = _open(path)
            try:
                _export_file(pa, ds, db, path, staging, counts)
            except sqlite3.Error as e:
                raise ExportError(f"{path}: {e}") from None
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                raise ExportError(f"{path}: cannot write its rows: {e}") from None
            finally:
                db.close()
        _move_into_place(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
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
    print(
        "trainprof: wrote "
        + ", ".join(f"{t} ({n} row{'' if n == 1 else 's'})" for t, n in counts.items())
        + f" under {argv[0]}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
