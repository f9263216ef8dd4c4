#!/usr/bin/env bash
# The PyTorch-facing tests under other releases of PyTorch than the one in
# .venv (make test uses torch 2.13.0, CPU): each VERSION gets its own venv
# under $TORCH_VENVS (default /tmp/trainprof-torch), with trainprof's Python
# package built into it, then the tests that run PyTorch (DataLoader, optimizer,
# scheduler and DDP instrumentation, torchrun on gloo) run under it. PyPI's
# wheels for Linux are CUDA builds: several GB each to download; they run on
# the CPU. Usage: tools/test-torch-versions.sh 2.0.1 2.9.1
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 TORCH_VERSION..." >&2; exit 2; }
[ -x build/trainprof ] || { echo "$0: build first (make build)" >&2; exit 2; }
root=${TORCH_VENVS:-/tmp/trainprof-torch}
status=0
for version in "$@"; do
    venv="$root/torch-$version"
    numpy="numpy"
    case "$version" in 2.[0-2].*) numpy="numpy<2" ;; esac # built against NumPy 1
    if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
        echo "torch $version: installing into $venv (a few minutes)"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "meson-python>=0.15" \
            "meson>=1.1" ninja pytest psutil "$numpy" "torch==$version"
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps .
    echo "torch $version: running the PyTorch tests"
    TRAINPROF="$PWD/build/trainprof" FAKE_NVML_LIB="$PWD/build/tests/libfake_nvml.so" \
        EMIT_EVENTS="$PWD/build/tests/emit_events" \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/py/test_torch.py \
        tests/py/test_python_api.py tests/py/test_distributed.py tests/py/test_bottleneck.py \
        tests/py/test_record.py || status=1
done
exit $status
