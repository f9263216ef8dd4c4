"""The analysis's identity: a digest of the sources that turn a run file's
rows into the summary `record` stores in it (src/analyze, src/core,
src/store). A stored summary carries the identity of the build that made it
(meta summary_by); a reader of another identity makes the figures again from
the rows where the file has them (store/reader.c), so that a verdict fixed
since a file was recorded is the fixed one.

    python3 tools/analysis_id.py --list SOURCE_ROOT       the files, one a line
    python3 tools/analysis_id.py --write OUTPUT FILE...   analysis_id.h of them

Meson runs both (meson.build): --list when it configures, --write when one
of the files changed."""

import hashlib
import pathlib
import sys

DIRECTORIES = ("src/analyze", "src/core", "src/store")


def listed(root):
    root = pathlib.Path(root)
    return sorted(
        str(p.relative_to(root))
        for d in DIRECTORIES
        for p in (root / d).iterdir()
        if p.suffix in (".c", ".h")
    )


def write(output, files):
    def place(f):  # under src/: the same wherever the tree lies
        return ("/" + pathlib.Path(f).as_posix()).split("/src/")[-1]

    digest = hashlib.sha256()
    for f in sorted(files, key=place):
        digest.update(place(f).encode() + b"\0" + pathlib.Path(f).read_bytes() + b"\0")
    text = (
        "/* analysis_id.h: made by tools/analysis_id.py from the analysis's sources */\n"
        "#ifndef TP_ANALYSIS_ID_H\n#define TP_ANALYSIS_ID_H\n"
        f'#define TP_ANALYSIS_ID "{digest.hexdigest()[:16]}"\n#endif\n'
    )
    out = pathlib.Path(output)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--list":
        print("\n".join(listed(sys.argv[2])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "--write":
        write(sys.argv[2], sys.argv[3:])
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
