"""Writes seed blobs for fuzz_ops_blob into the directory named: capture
windows laid out as trainprof/_ops.py writes them (its HEADER and EVENT
layouts), one of CPU operators and one of a GPU's launches and kernels."""

import os
import struct
import sys

HEADER = struct.Struct("<4sIIIQiIqqIIIIqqII")
EVENT = struct.Struct("<IIIIiIqqqqqq")


def blob(strings, events, reason=1, cuda=0, note=0xFFFFFFFF):
    table = b"".join(struct.pack("<I", len(s)) + s for s in strings)
    body = b"".join(EVENT.pack(*e) for e in events)
    head = HEADER.pack(
        b"TPOP",
        1,
        reason,
        5,
        11,
        4242,
        cuda,
        1000,
        90000,
        len(strings),
        len(table),
        len(events),
        0,
        80 << 30 if cuda else 0,
        1 << 20 if cuda else -1,
        note,
        0,
    )
    return head + table + body


def main(out):
    os.makedirs(out, exist_ok=True)
    cpu = blob(
        [b"", b"aten::conv2d", b"[[4, 3, 32, 32], [8, 3, 3, 3]]", b"aten::add_"],
        [
            (8, 0, 0xFFFFFFFF, 0, -1, 0, 0, 1000, 0, 11, -1, -1),
            (1, 1, 2, 1, -1, 0, 0, 1500, 3000, 1, 0, 0),
            (1, 3, 0xFFFFFFFF, 1, -1, 0, 0, 5000, 200, 2, 0, 0),
            (8, 0, 0xFFFFFFFF, 0, -1, 0, 0, 9000, 0, 12, -1, -1),
        ],
    )
    gpu = blob(
        [b"", b"aten::mm", b"cudaLaunchKernel", b"sm90_gemm", b"[memory]", b"why"],
        [
            (1, 1, 0xFFFFFFFF, 1, -1, 0, 0, 1000, 5000, 1, 0, 0),
            (6, 2, 0xFFFFFFFF, 1, -1, 0, 0, 1200, 100, 77, 0, 0),
            (3, 3, 0xFFFFFFFF, 0, 0, 0, 7, 2000, 4000, 900, 77, 0),
            (7, 4, 0xFFFFFFFF, 1, 0, 0, 0, 1300, 0, 0, 0, 4096),
        ],
        reason=2,
        cuda=1,
        note=5,
    )
    for name, data in (("cpu", cpu), ("gpu", gpu)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
