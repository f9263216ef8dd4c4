#!/usr/bin/env bash
# The GPU paths (NVML against nvidia-smi, energy, CUDA-event device times, DDP
# on NCCL, torch.compile) on a machine with an NVIDIA GPU and a CUDA PyTorch,
# which has neither this project's build tools nor its libraries.
#
#   tools/gpu-check.sh pack       here, after `make build`: puts build/trainprof
#                                 and the shared libraries it needs that are not
#                                 part of glibc into .gpu/ (ignored by git)
#   tools/gpu-check.sh package DIR
#                                 the Python package alone into DIR, for
#                                 $PYTHON (python3): what run installs
#   tools/gpu-check.sh run [ARGS] there, in a copy of the tree with .gpu/:
#                                 builds the Python extension for that machine's
#                                 python3, installs the package into its
#                                 site-packages, then runs pytest ARGS
#                                 (default: the test_gpu*.py files), after
#                                 tools/gpu_probe.py (probe.json) and the
#                                 allocator reading's cost
#                                 (device_memory_cost.json)
#   tools/gpu-check.sh lease       there: what one call of a lease can hold
#                                 (below), the first thing to run on a new one
#   tools/gpu-check.sh bench [MODEL...]
#                                 there: installs as run does, then
#                                 bench/cupti_linger.py, then
#                                 bench/gpu_step_cost.py's arms, 3 rounds, for
#                                 each MODEL (default: mlp resnet transformer;
#                                 a few minutes each) into step_cost_MODEL.json,
#                                 the last record arm's run file into
#                                 record_MODEL.db; ROUNDS, ARMS and STEPS
#                                 (environment) narrow it to a lease's minutes
#
# Results (pytest's log, the run files of the GPU tests) go to $OUT when set.
set -euo pipefail
cd "$(dirname "$0")/.."

pack() {
    [ -x build/trainprof ] || { echo "$0: build first (make build)" >&2; exit 2; }
    rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
    cp build/trainprof .gpu/bin/
    ldd build/trainprof | awk '/=> \//{print $3}' | while read -r lib; do
        case "$(basename "$lib")" in
        libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | ld-linux*) ;;
        *) cp -L "$lib" .gpu/lib/ ;;
        esac
    done
    du -sh .gpu
}

# The Python package into site-packages dir $1 for $PYTHON (python3): its
# modules as meson installs them, the autoload .pth, and the extension built
# from every C file of python/trainprof and lib/ (CI builds it this way too,
# tests/py/test_gpu_check.py, so that a new source can't be left out here).
package() {
    local py=${PYTHON:-python3} site=$1
    inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    version=$(sed -n "s/^ *version : '\(.*\)',/\1/p" meson.build)
    rm -rf "$site/trainprof" && mkdir -p "$site/trainprof"
    # the package by role: its face and its subpackages, as meson installs them
    (cd python/trainprof && find . -name '*.py' -exec cp --parents {} "$site/trainprof/" \;)
    cp python/trainprof-autoload.pth "$site/"
    sed "s/@VERSION@/$version/" python/trainprof/_version.py.in >"$site/trainprof/_version.py"
    cc -std=c11 -O2 -D_GNU_SOURCE -shared -fPIC -Iinclude -Ilib -Isrc -I"$inc" \
        python/trainprof/*.c \
        lib/*.c \
        -o "$site/trainprof/_native$suffix" -lpthread
}

install() {
    export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export TRAINPROF="$PWD/.gpu/bin/trainprof"
    "$TRAINPROF" --version
    package "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv
    # whether the training threads stamp their regions with the TSC here (lib/clock.h)
    echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0))'
    mkdir -p "${OUT:-/tmp/gpu-out}"
}

bench() {
    install
    [ $# -gt 0 ] || set -- mlp resnet transformer
    # what a finished window leaves on each CUDA launch, CUPTI kept and let go (a minute)
    python3 bench/cupti_linger.py "${ROUNDS:-3}" >"${OUT:-/tmp/gpu-out}/cupti_linger.json" ||
        echo "$0: cupti_linger.py failed" >&2
    for model in "$@"; do
        python3 bench/gpu_step_cost.py "${ROUNDS:-3}" --model "$model" --trainprof "$TRAINPROF" \
            --arms "${ARMS:-bare,record,stacks0,ops_off,devtimes_off,devtimes_8,profiler}" \
            --steps "${STEPS:-1100}" --keep-run "${OUT:-/tmp/gpu-out}/record_$model.db" \
            >"${OUT:-/tmp/gpu-out}/step_cost_$model.json" ||
            echo "$0: gpu_step_cost.py --model $model failed" >&2
    done
}

run() {
    install
    # the hardware's own answers (NVML, torch, NCCL), for docs/gpu.md
    python3 tools/gpu_probe.py >"${OUT:-/tmp/gpu-out}/probe.json" ||
        echo "$0: the probe failed (see above)" >&2
    # what one reading of the GPU allocator costs the training's thread (issue 59)
    python3 bench/device_memory_cost.py 5 --cuda >"${OUT:-/tmp/gpu-out}/device_memory_cost.json" ||
        echo "$0: device_memory_cost.py --cuda failed" >&2
    [ $# -gt 0 ] || set -- tests/py/test_gpu.py tests/py/test_gpu_distributed.py tests/py/test_gpu_ops.py \
        tests/py/test_gpu_trainings.py tests/py/test_gpu_memory_cuda.py
    TRAINPROF_GPU_OUT="${OUT:-/tmp/gpu-out}" python3 -m pytest -q -p no:cacheprovider -rs \
        "$@" 2>&1 | tee "${OUT:-/tmp/gpu-out}/pytest.log"
}

# One call's worth of a lease (about 9 minutes: a call may run 10, a lease
# holds 15 in all), what issue 56 waits for first: a launch before and after
# a window (CUPTI kept, let go), the mlp's cost with and without windows and
# device times against torch.profiler, then the capture windows' and whole
# trainings' tests. Each part under its own time limit, so that what ran
# comes back; at most 8 files, as a call brings back (no run files kept).
lease() {
    install
    local out=${OUT:-/tmp/gpu-out}
    local cupti=tests/py/test_gpu_ops.py::test_cupti_is_let_go_after_each_window_and_comes_back_for_the_next
    timeout 90 python3 bench/cupti_linger.py 3 >"$out/cupti_linger.json" ||
        echo "$0: cupti_linger.py failed or ran out of time" >&2
    timeout 270 python3 bench/gpu_step_cost.py 4 --model mlp --trainprof "$TRAINPROF" \
        --arms bare,record,ops_off,devtimes_off,profiler --steps 700 \
        --keep-run "$out/record_mlp.db" >"$out/step_cost_mlp.json" 2>"$out/step_cost_mlp.log" ||
        echo "$0: gpu_step_cost.py --model mlp failed or ran out of time" >&2
    timeout 60 python3 -m pytest -q -p no:cacheprovider -rs "$cupti" 2>&1 | tee "$out/pytest.log"
    timeout 110 python3 -m pytest -q -p no:cacheprovider -rs --deselect "$cupti" \
        tests/py/test_gpu_ops.py tests/py/test_gpu_trainings.py 2>&1 | tee -a "$out/pytest.log"
}

case "${1:-}" in
pack) pack ;;
package) shift && [ $# -eq 1 ] && package "$1" ;;
run) shift && run "$@" ;;
bench) shift && bench "$@" ;;
lease) lease ;;
*) echo "usage: $0 pack | package SITE_DIR | run [PYTEST_ARGS...] | bench [MODEL...] | lease" >&2 && exit 2 ;;
esac
