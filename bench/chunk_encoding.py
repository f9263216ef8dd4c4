"""Bytes per sample and per region: SQLite rows against two chunked encodings.

Issue 5 asks `merge` to join 8 node-days in under 10 s. On the 2-vCPU VM,
copying the rows' bytes alone (cp, then sync) takes about 14.5 s, so only a
smaller encoding of samples and regions could get there. This measures the two
candidates on a node file written by bench/gen_run (or any run file), in chunks
of one series (or one thread) and one minute:

- JSON: what SQLite itself can still decode (json_each) in a view, so that
  sqlite3, pandas and DuckDB would read the file as they do now. Lossless:
  times in microseconds from the chunk's start, each value in the shortest
  text that reads back to the same double.
- binary: what time-series databases store (Gorilla-like): a varint of each
  time's delta of delta, each value XORed with the one before with its zero
  bytes at either end left out; regions as varints of name, depth, start
  delta and duration. No SQL reader can decode it.

Rows' bytes come from SQLite's dbstat (pages of each table, with their
b-tree overhead). The encodings count payload bytes only, so they flatter
the chunks slightly (no page overhead).

Usage: chunk_encoding.py [RUN.db]   (without one: a 3-hour gen_run node file)
"""

import os
import pathlib
import sqlite3
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
GEN = str(ROOT / "build" / "bench" / "gen_run")
CHUNK_NS = 60 * 10**9


def shortest(v):
    """The shortest text that reads back as v (repr is round-trip exact)."""
    return str(int(v)) if v == int(v) and abs(v) < 1e15 else repr(v)


def varint_len(x):
    x = (x << 1) ^ (x >> 63)  # zigzag: small negatives stay small
    n = 1
    while x >= 128:
        x >>= 7
        n += 1
    return n


def xor_len(bits, prev):
    x = bits ^ prev
    if x == 0:
        return 1
    b = x.to_bytes(8, "big")
    return 1 + len(b.strip(b"\0"))  # a byte saying which bytes follow


def sample_sizes(db):
    js = bn = n = 0
    series = chunk_t0 = None
    for s, t, v in db.execute("SELECT series_id, t_ns, value FROM sample ORDER BY series_id, t_ns"):
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        if s != series or t - chunk_t0 >= CHUNK_NS:  # a new chunk: its header
            series, chunk_t0 = s, t
            js += 2 + 16  # "[]" and the chunk's keys
            bn += 16
            prev_t, prev_d, prev_bits = t, 0, 0
        js += len("[%d,%s]," % ((t - chunk_t0) // 1000, shortest(v)))
        d = t - prev_t
        bn += varint_len(d - prev_d) + xor_len(bits, prev_bits)
        prev_t, prev_d, prev_bits = t, d, bits
        n += 1
    return n, js, bn


def region_sizes(db):
    js = bn = n = 0
    thread = chunk_t0 = None
    for th, name, depth, start, end in db.execute(
        "SELECT thread_id, name_id, depth, start_ns, end_ns FROM region"
        " ORDER BY thread_id, start_ns"
    ):
        if th != thread or start - chunk_t0 >= CHUNK_NS:
            thread, chunk_t0, prev = th, start, start
            js += 2 + 16
            bn += 16
        js += len("[%d,%d,%d,%d]," % (name, depth, start - chunk_t0, end - start))
        bn += varint_len(name) + 1 + varint_len(start - prev) + varint_len(end - start)
        prev = start
        n += 1
    return n, js, bn


def main():
    with tempfile.TemporaryDirectory() as d:
        path = sys.argv[1] if len(sys.argv) > 1 else None
        if path is None:
            path = os.path.join(d, "node.db")
            subprocess.run(
                [GEN, path, "3", "0.5", "32", "8", "8", "1", "node-0", "0"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = dict(
            db.execute(
                "SELECT name, sum(pgsize) FROM dbstat"
                " WHERE name IN ('sample', 'region') GROUP BY name"
            )
        )
        print(f"{path}: bytes per row, SQLite rows / JSON chunks / binary chunks")
        for table, sizes in (("sample", sample_sizes), ("region", region_sizes)):
            n, js, bn = sizes(db)
            if n == 0:
                print(f"  {table:6} none")
                continue
            print(
                f"  {table:6} {n:>11,}  rows {rows[table] / n:5.1f}  JSON {js / n:5.1f}"
                f"  binary {bn / n:5.1f}"
            )


if __name__ == "__main__":
    main()
