#!/usr/bin/env bash
# The PyTorch-facing tests under other releases of PyTorch than the one in
# .venv (make test uses torch 2.13.0, CPU): each VERSION gets its own venv
# under $TORCH_VENVS (default /tmp/trainprof-torch), with trainprof's Python
# package built into it, then the tests that run PyTorch (DataLoader, optimizer,
# scheduler and DDP instrumentation, torchrun on gloo, the profiler's capture
# windows, torch.compile, the stacks) run under it. PyPI's wheels for Linux are
# CUDA builds: several GB each to download; they run on the CPU (2.14.1, the
# newest pip takes here unless /etc/xdg/pip is removed, lies on this kind of
# machine's disk for Python 3.11). Usage: tools/test-torch-versions.sh 2.0.1 2.14.1
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
            "meson>=1.1" ninja pytest pytest-xdist psutil pyarrow "$numpy" "torch==$version"
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps .
    echo "torch $version: running the PyTorch tests"
    # as make test runs them: those that judge no load on every core, one
    # intra-op thread each, then those that judge the machine, alone
    tests=(tests/py/test_torch.py tests/py/test_python_api.py tests/py/test_distributed.py
        tests/py/test_bottleneck.py tests/py/test_record.py tests/py/test_ops.py
        tests/py/test_torch_steps.py tests/py/test_loops.py tests/py/test_training_untouched.py
        tests/py/test_stacks.py tests/py/test_loader_wrappers.py tests/py/test_own_cost.py
        tests/py/test_device_times.py)
    export TRAINPROF="$PWD/build/trainprof" FAKE_NVML_LIB="$PWD/build/tests/libfake_nvml.so" \
        EMIT_EVENTS="$PWD/build/tests/emit_events" HOSTILE_RING="$PWD/build/tests/hostile_ring" \
        NO_VM_READV="$PWD/build/tests/no_vm_readv"
    OMP_NUM_THREADS=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider -p xdist \
        -n $(($(nproc) + 1)) -m "not machine" "${tests[@]}" || status=1
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m machine "${tests[@]}" || status=1
done
exit $status
