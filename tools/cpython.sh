#!/usr/bin/env bash
# A CPython this machine's pyenv has not (3.14, 3.15 here), built from the source
# Debian's archive keeps (python.org, where pyenv fetches from, can't be
# reached from these machines; deb.debian.org can), into pyenv's folder:
# tests/py/test_stacks_cpython.py then builds the stack walker for it and
# records under it, and `make wheel` makes its wheel.
#
#   tools/cpython.sh 3.14.7        (5 minutes on 2 cores; nothing if there)
#   tools/cpython.sh 3.15.0rc1     (a release candidate: Debian's 3.15.0~rc1)
#
# The mirror keeps some of a branch's releases and not others (3.14.4 to
# 3.14.7 and 3.15.0~rc1, not 3.15.0, on 2026-12-03): a version it has not is
# said, with exit status 1.
set -euo pipefail
version=${1:-}
[[ "$version" =~ ^3\.[0-9]+\.[0-9]+((a|b|rc)[0-9]+)?$ ]] || { echo "usage: $0 3.N.M[rcK]" >&2; exit 2; }
branch=$(echo "$version" | cut -d. -f1-2)
debian=$(echo "$version" | sed -E 's/(a|b|rc)([0-9]+)$/~\1\2/') # 3.15.0rc1 -> 3.15.0~rc1
prefix="$HOME/.pyenv/versions/$version"
if [ -x "$prefix/bin/python$branch" ]; then
    echo "$0: $prefix/bin/python$branch is there"
    exit 0
fi
url="http://deb.debian.org/debian/pool/main/p/python$branch/python${branch}_$debian.orig.tar.xz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! curl -fsS -o "$work/src.tar.xz" "$url"; then
    echo "$0: Debian's archive has no $version ($url)" >&2
    exit 1
fi
tar -C "$work" -xf "$work/src.tar.xz"
cd "$work/Python-$version"
echo "$0: building CPython $version into $prefix (log: $work is removed at the end)"
./configure -q --prefix="$prefix" --with-ensurepip=install >configure.log 2>&1 ||
    { tail -20 configure.log >&2; exit 1; }
make -s -j"$(nproc)" >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make -s install >install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
"$prefix/bin/python$branch" -c 'import sys; print(sys.version)'
