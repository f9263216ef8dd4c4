#!/usr/bin/env bash
# The proof of "nothing but Python": a minimal Debian root (debootstrap,
# bookworm, variant minbase) with python3 and python3-venv and nothing else
# (no compiler, no -dev package); a trainprof wheel installed there into a
# venv, then `trainprof record -- python -c ...` and `trainprof report`, in
# the chroot. Needs root and the Debian mirror; takes a few minutes.
#
#   tools/test-bare.sh [DIST]        (default dist/; `make test-bare`)
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
[ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
root=$(mktemp -d /tmp/trainprof-bare.XXXXXX)
cleanup() {
    for m in proc dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
    rm -rf "$root"
}
trap cleanup EXIT
echo "== debootstrap (minbase, bookworm, python3 python3-venv) into $root"
debootstrap --variant=minbase --include=python3,python3-venv bookworm "$root" \
    http://deb.debian.org/debian >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
# the root's own Python picks the wheel
tag=$(chroot "$root" python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
wheel=$(ls "$dist"/trainprof-*-"$tag"-*manylinux*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "$0: no $tag wheel in $dist (the root's python3)" >&2; exit 1; }
cp "$wheel" "$root/tmp/"
for tool in cc gcc clang; do
    if chroot "$root" sh -c "command -v $tool" >/dev/null; then
        echo "$0: the root has a compiler ($tool): not bare" >&2; exit 1
    fi
done
if chroot "$root" sh -c 'ls /usr/include/sqlite3.h /usr/include/microhttpd.h' 2>/dev/null; then
    echo "$0: the root has library headers: not bare" >&2; exit 1
fi
echo "== install $(basename "$wheel") and record in the chroot"
chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root sh -ec '
    python3 -m venv /opt/tp
    /opt/tp/bin/pip install -q --no-index --no-cache-dir /tmp/'"$(basename "$wheel")"'
    cd /tmp
    /opt/tp/bin/trainprof --version
    /opt/tp/bin/trainprof record -q -o run.db -- /opt/tp/bin/python -c "
import time, trainprof
with trainprof.region(\"work\"):
    time.sleep(1)
print(\"trained\")"
    /opt/tp/bin/trainprof report run.db | head -12
    /opt/tp/bin/trainprof report --json run.db | /opt/tp/bin/python -c "
import json, sys
names = [t[\"name\"] for t in json.load(sys.stdin)[\"timings\"]]
assert \"work\" in names, names"
'
echo "== ok: the wheel ran in a root with python3 and no compiler or -dev package"
