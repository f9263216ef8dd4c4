#!/usr/bin/env bash
# Installs what building, demonstrating and testing trainprof needs, when it is
# missing: Debian packages (compiler, SQLite and cmocka headers, clang-format)
# (ncurses for `top`, libmicrohttpd for `serve`, tmux, headless Chromium and Prometheus
# for the tests of `top`, `html` and `serve`) and a virtual environment in .venv (meson, pytest, psutil,
# CPU PyTorch, and PyTorch Lightning, Hugging Face's transformers and accelerate, Keras 3 with
# JAX's CPU wheel, PyTorch Ignite, skorch, torchdata (torchtitan's StatefulDataLoader),
# webdataset (its WebLoader re-batches a DataLoader's batches) and PyG (torch_geometric:
# its NodeLoader wraps torch's iterator) for the
# tests that run the real frameworks, pyarrow
# (export --format parquet) and DuckDB (its tests read the files back), py-spy, the oracle of the stack sampler's tests,
# ruff and mypy, pinned: a new release judges differently (make test-python-style) and pytest-xdist (the Python tests on every core),
# and the trackers record --log-to logs into, pinned (tests/py/test_trackers.py reads back what
# they stored): MLflow (its skinny client, with SQLAlchemy and Alembic for a local SQLite store),
# Weights & Biases and TensorBoard; and the MCP SDK (trainprof mcp). uv installs them
# (pinned; pip where uv is not to be had).
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_missing=()
command -v cc >/dev/null || apt_missing+=(gcc)
command -v pkg-config >/dev/null || apt_missing+=(pkg-config)
pkg-config --exists sqlite3 2>/dev/null || apt_missing+=(libsqlite3-dev)
pkg-config --exists cmocka 2>/dev/null || apt_missing+=(libcmocka-dev)
command -v clang-format >/dev/null || apt_missing+=(clang-format)
# clang and its runtime (libFuzzer) for the fuzz targets (make test-fuzz)
command -v clang >/dev/null || apt_missing+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    apt_missing+=(libclang-rt-dev)
command -v sqlite3 >/dev/null || apt_missing+=(sqlite3)
pkg-config --exists ncursesw 2>/dev/null || apt_missing+=(libncurses-dev)
pkg-config --exists libmicrohttpd 2>/dev/null || apt_missing+=(libmicrohttpd-dev)
command -v tmux >/dev/null || apt_missing+=(tmux)
command -v prometheus >/dev/null || apt_missing+=(prometheus)
command -v chromium >/dev/null || apt_missing+=(chromium fonts-dejavu-core)
# The Debian packages install beside the Python packages below: on a new
# machine each took about half a minute, one after the other (apt-get 27 s,
# uv 30 s), and neither needs the other (the package itself is built later,
# by make, with both in place).
apt_pid=""
if [ ${#apt_missing[@]} -gt 0 ]; then
    echo "bootstrap: installing Debian packages: ${apt_missing[*]}"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    if [ -n "$sudo" ]; then # its password asked here, not in the middle of uv's lines
        sudo -v
    fi
    { $sudo apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_missing[@]}" >/dev/null; } &
    apt_pid=$!
    # should the Python packages fail, apt-get still ends before this does
    trap 'wait "$apt_pid" 2>/dev/null || true' EXIT
fi

if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv"
    python3 -m venv .venv
fi
# each make target that needs the environment runs this: the packages are
# looked for, not imported (importing them all took 8 CPU-seconds, five times
# in a `make test`)
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None \
        for m in 'mesonpy pytest psutil numpy torch lightning transformers accelerate ignite \
        skorch jax pyarrow duckdb mypy xdist mlflow sqlalchemy alembic wandb tensorboard mcp \
        keras torchdata webdataset torch_geometric'.split()))" 2>/dev/null ||
    [ ! -x .venv/bin/py-spy ] || [ ! -x .venv/bin/ruff ]; then
    echo "bootstrap: installing Python packages into .venv (PyTorch CPU build: half a minute with uv, more with pip)"
    pkgs=("meson-python>=0.15" "meson>=1.1" ninja pytest psutil numpy "torch==2.13.0" lightning
        transformers accelerate keras pytorch-ignite skorch "jax[cpu]" pyarrow duckdb py-spy torchdata webdataset torch_geometric
        "ruff==0.17.6" "mypy==2.4.1" pytest-xdist
        "mlflow-skinny==3.17.2" sqlalchemy alembic "wandb==0.31.0" "tensorboard==2.21.0" "mcp==2.3.0")
    # uv resolves as pip does and fetches and unpacks in parallel (with the
    # bytecode compiled, 26 s against pip's 77 s on the CI machine, from empty
    # caches). It compiles no bytecode unless asked (pip always does): the
    # Makefile lets Python write it at each module's first import (it
    # unexports PYTHONDONTWRITEBYTECODE, which the CI machine sets), which
    # compiles the 8,400 of the 21,000 modules that a `make test` imports:
    # 14 CPU-seconds against 39 for all of them, and the bootstrap 10 s
    # instead of 27 here. It does not read pip's configuration, so the wheels
    # and the constraints this machine's pip is told of (a CPU PyTorch on
    # disk) are passed on; pip where uv can't be had.
    pip_setting() { # pip's value of a setting, its environment's first
        .venv/bin/pip config list 2>/dev/null | sed -n "s/^[a-z:]*\.$1='\(.*\)'\$/\1/p" | head -1 || true
    }
    links=$(pip_setting find-links)
    constraint=$(pip_setting constraint)
    if ! .venv/bin/pip install -q --disable-pip-version-check "uv==0.13.9" 2>/dev/null ||
        ! .venv/bin/uv pip install -q --python .venv/bin/python \
            ${links:+--find-links "$links"} ${constraint:+--constraint "$constraint"} "${pkgs[@]}"; then
        echo "bootstrap: uv could not install them (above); pip does"
        .venv/bin/pip install -q --disable-pip-version-check "${pkgs[@]}"
    fi
fi
if [ -n "$apt_pid" ] && ! wait "$apt_pid"; then
    echo "bootstrap: apt-get could not install the Debian packages (above): ${apt_missing[*]}" >&2
    exit 1
fi
