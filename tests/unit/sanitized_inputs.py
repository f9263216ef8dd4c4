"""sanitized_inputs.py: run files damaged where the sanitizers once found
undefined behaviour, through the program of the build under test (meson runs
it in every build: the ASan+UBSan build's program stops on any finding).

A region that ends at INT64_MIN (`summarize --force`: its length
overflowed), a node file whose start time is near INT64_MIN (`merge`: the
shift overflowed; now refused with exit status 2), and stack samples whose
sampler thread is gone (`report`: a null array sorted). Each must end with
status 0 or 2, never a signal or a sanitizer's report.

And one recording whose command is killed by a signal: the end's metadata
once pointed at a key on a stack frame that had returned (the run file got
a key of garbage for proc.PID.status, and the OOM killer's death was lost).

    python3 sanitized_inputs.py PROGRAM GOLDEN_RUNS_DIR
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

INT64_MIN = -(2**63)


def run(program, *args, expect=(0,)):
    env = dict(
        os.environ,
        UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1",
        ASAN_OPTIONS="abort_on_error=1",
    )
    r = subprocess.run(
        [program, *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )
    bad = "runtime error" in r.stderr or "Sanitizer" in r.stderr
    if r.returncode not in expect or bad:
        sys.exit(f"{' '.join(map(str, args))}: status {r.returncode}\n{r.stderr[-3000:]}")
    return r


def edited(golden, name, tmp, *sql):
    path = os.path.join(tmp, name)
    shutil.copy(os.path.join(golden, name), path)
    with sqlite3.connect(path) as db:
        for statement in sql:
            db.execute(statement)
    return path


def main():
    program, golden = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        f = edited(
            golden,
            "example.db",
            tmp,
            f"UPDATE region SET end_ns = {INT64_MIN} WHERE rowid IN"
            " (SELECT rowid FROM region LIMIT 50)",
        )
        run(program, "summarize", "--force", f)
        run(program, "report", "--json", f)
        a = edited(
            golden,
            "node_a.db",
            tmp,
            f"UPDATE meta SET value = '{INT64_MIN + 8}' WHERE key = 'start_wall_ns'",
        )
        b = os.path.join(tmp, "node_b.db")
        shutil.copy(os.path.join(golden, "node_b.db"), b)
        r = run(program, "merge", "-o", os.path.join(tmp, "m.db"), a, b, expect=(2,))
        if "start time that is no time" not in r.stderr:
            sys.exit(f"merge: {r.stderr}")
        s = edited(golden, "stacks.db", tmp, "DELETE FROM thread WHERE name = 'trainprof-stack'")
        run(program, "report", s)
        run(program, "report", "--json", s)
        run(program, "html", "-o", os.path.join(tmp, "s.html"), s)
        killed_command(program, tmp)


def killed_command(program, tmp):
    """record of a command that SIGKILLs itself: status 137 passed on, and
    the command's end in the run file under its own pid."""
    f = os.path.join(tmp, "killed.db")
    run(program, "record", "-q", "-o", f, "--", "sh", "-c", "kill -9 $$", expect=(137,))
    with sqlite3.connect(f) as db:
        db.text_factory = lambda b: b.decode("utf-8", "replace")
        meta = dict(db.execute("SELECT key, value FROM meta"))
    key = f"proc.{meta.get('child_pid')}.status"
    if meta.get(key) != "signal 9":
        sys.exit(
            f"record: {key} is {meta.get(key)!r}; proc keys: "
            f"{ {k: v for k, v in meta.items() if k.startswith('proc.') or not k.isprintable()} }"
        )


if __name__ == "__main__":
    main()
