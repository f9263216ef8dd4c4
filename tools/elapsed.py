"""Runs a command and prints its output (stdout and stderr together), each
line after the seconds since the command started: a log that shows which of
several jobs running together took the time (make test's build/beside.log).

    python3 tools/elapsed.py COMMAND [ARG...]

Exits with the command's status (128 + N where signal N ended it)."""

import subprocess
import sys
import time


def main():
    if len(sys.argv) < 2:
        print("usage: python3 tools/elapsed.py COMMAND [ARG...]", file=sys.stderr)
        sys.exit(2)
    start = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = sys.stdout.buffer
    for line in child.stdout:
        out.write(b"%4d " % (time.monotonic() - start) + line)
        out.flush()
    status = child.wait()
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
