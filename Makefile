# trainprof: the two commands a new user needs are `make demo` and `make test`.
# Meson does the building; this file only strings the steps together.

VENV     := .venv
PY       := $(VENV)/bin/python
# meson, and the ninja it runs, without make's jobserver: ninja 1.13 finds it in
# MAKEFLAGS but not its pipe (a recipe that does not recurse) and says so
MESON    := env -u MAKEFLAGS -u MFLAGS $(VENV)/bin/meson
BUILD    := build
PROGRAM  := $(BUILD)/trainprof
SOURCES  := $(shell find include lib src python -name '*.[ch]' -o -name '*.py' -o -name '*.in' -o -name '*.pth' -o -name '*.pyi') meson.build meson.options pyproject.toml
C_FILES  := $(shell find include lib src tests bench python -name '*.[ch]')
WERROR   := $(if $(CI),-Dwerror=true,)
# Python writes each module's bytecode at its first import, in every command
# here (the CI machine sets PYTHONDONTWRITEBYTECODE: each import would compile
# it again). The bootstrap compiles none (tools/bootstrap.sh says why).
unexport PYTHONDONTWRITEBYTECODE

PHONY_TESTS := test-beside test-py-spread test-py-machine test-wheel-built
.PHONY: all build deps demo check test $(PHONY_TESTS) test-c test-sanitizers test-asan test-tsan test-format test-python-style test-layers test-py test-fuzz fuzz bench format clean wheel sdist test-wheel test-bare

all: build

deps:
	@tools/bootstrap.sh

$(BUILD)/build.ninja: | deps
	$(MESON) setup $(BUILD) $(WERROR)

# The program (build/trainprof) and the package installed into .venv, built in
# $(BUILD)-py: kept, so that installing again after an edit compiles what changed,
# and `make wheel` starts from it (only the extension is compiled per interpreter:
# the first wheel's whole compile, 74 s beside the tests in CI, is saved)
build: deps $(BUILD)/build.ninja
	$(MESON) compile -C $(BUILD)
	@$(MAKE) --no-print-directory $(VENV)/.trainprof-installed

$(VENV)/.trainprof-installed: $(SOURCES)
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
	    -Cbuild-dir=$(abspath $(BUILD))-py .
	@touch $@

demo: build
	$(PROGRAM) record --force -o $(BUILD)/demo.db -- $(PY) examples/train.py --epochs 2
	$(PROGRAM) report $(BUILD)/demo.db
	$(PROGRAM) html --force $(BUILD)/demo.db

# The whole suite (.ci/run), in three stages: the quick checks, two at a time; then the Python
# tests that judge no load, on PYTEST_WORKERS processes, and beside them
# (test-beside, its output in build/beside.log): at the lowest CPU priority,
# in the CPU those tests leave idle (about one core of two, measured), what judges
# no time at all (the C unit tests, under the sanitizers too, the fuzzers'
# builds and runs, three at a time: the fuzzers' build first, on which the
# ASan tests and the fuzzers wait, beside the C tests and then TSan's build;
# beside them the wheels' builds, then the wheels installed and run);
# last, alone, the Python tests that judge the machine.
test: build
	@$(MAKE) --no-print-directory -j2 test-format test-python-style test-layers
	@$(MAKE) --no-print-directory -j2 test-py-spread test-beside
	@$(MAKE) --no-print-directory test-py-machine

# The wheels are tested as soon as they are built, beside the fuzzers (not
# after them: 30 s of the suite's tail), at the normal priority (top in a
# terminal has 3 s to draw); each line of the log starts with the seconds
# since the stage began.
BESIDE_MAKE = env -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory
test-beside: build
	@echo "test-beside: the C tests, the sanitizers, the fuzzers and the wheels, beside the Python tests (log: $(BUILD)/beside.log)"
	@$(PY) tools/elapsed.py sh -c 'nice -n 19 $(BESIDE_MAKE) -j3 test-asan test-fuzz test-c test-tsan & \
	    { nice -n 19 $(BESIDE_MAKE) wheel && $(BESIDE_MAKE) test-wheel-built; } || { wait; exit 1; }; \
	    wait $$!' >$(BUILD)/beside.log 2>&1 || \
	    { tail -80 $(BUILD)/beside.log; echo "test-beside: failed (the whole log: $(BUILD)/beside.log)"; exit 1; }
	@echo "test-beside: the C tests, the sanitizers, the fuzzers and the wheels passed"

# The quick tier, for every change (about a minute once built): the format and
# layer checks, ruff and mypy, the C unit tests, the golden outputs and the
# Python tests that run no training. `make test` is the whole suite.
CHECK_PY := test_cli test_golden test_gpu_runs test_hostile_files test_layers \
	test_python_api test_export test_ops_events test_verdicts
check: build test-format test-python-style test-layers test-c
	$(PYTEST_ENV) $(PY) -m pytest -q -p xdist -n $(PYTEST_WORKERS) --dist loadfile -m "not machine" \
	    $(CHECK_PY:%=tests/py/%.py)

# Binary wheels for every CPython 3.9-3.15 here, repaired by auditwheel to carry
# SQLite, ncurses and libmicrohttpd (manylinux); the source package
wheel: deps
	tools/wheel.sh dist

sdist: deps
	$(PY) -m pip install -q build
	$(PY) -m build --sdist -o dist .

# each wheel in a fresh venv of its CPython: record, report, /metrics, top
test-wheel: wheel
	$(PY) tools/test_wheel.py dist

# the wheels `make wheel` left in dist/, installed and run (test's last stage)
test-wheel-built:
	$(PY) tools/test_wheel.py dist

# a wheel in a Debian root with python3 and nothing else (debootstrap; root)
test-bare: wheel
	tools/test-bare.sh dist

test-c:
	$(MESON) test -C $(BUILD) --print-errorlogs

# libFuzzer (clang), two targets: every reader of a run file, from a real
# recording's rows edited as a crafted file would hold them
# (tests/fuzz/fuzz_run_file.c), and the drain's reading of a training
# process's ring, from real rings (tests/fuzz/fuzz_ring_events.c, seeds by
# tests/fuzz/ring_seed.c). Three quarters of a minute in all in `make test`,
# FUZZ_SECONDS (default 600) each by `make fuzz`; findings are written to
# build-fuzz/ as crash-*, leak-* or timeout-* files.
FUZZ_SECONDS ?= 600
FUZZ := $(BUILD)-fuzz/tests/fuzz_run_file
FUZZ_RING := $(BUILD)-fuzz/tests/fuzz_ring_events
FUZZ_OPS := $(BUILD)-fuzz/tests/fuzz_ops_blob
RING_SEEDS := nested spans device late_rank stacks facts
$(FUZZ) $(FUZZ_RING) $(FUZZ_OPS) &: $(SOURCES) tests/fuzz/fuzz_run_file.c tests/fuzz/fuzz_ring_events.c tests/fuzz/fuzz_ops_blob.c tests/fuzz/ring_seed.c | deps
	@[ -f $(BUILD)-fuzz/build.ninja ] || CC=clang $(MESON) setup $(BUILD)-fuzz -Dfuzz=true \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link $(WERROR) >/dev/null
	env -u MAKEFLAGS -u MFLAGS $(VENV)/bin/ninja -C $(BUILD)-fuzz build.ninja >/dev/null # meson.build changed: regenerate first
	@# emit_events too: the public header's TP_SCOPE under clang's warnings
	$(MESON) compile -C $(BUILD)-fuzz tests/fuzz_run_file tests/fuzz_ring_events tests/fuzz_ops_blob \
	    tests/ring_seed tests/emit_events >$(BUILD)-fuzz/compile.log || { tail -40 $(BUILD)-fuzz/compile.log; exit 1; }

$(BUILD)-fuzz/base.db: $(FUZZ) build
	$(PROGRAM) record -q --force -i 0.1 -o $@ -- $(BUILD)/tests/emit_events nested

# the second base: a PyTorch training with a capture window (the op readers' rows)
$(BUILD)-fuzz/base-ops.db: $(FUZZ) build tests/fuzz/ops_train.py
	$(PROGRAM) record -q --force -i 0.1 --ops-steps 2 -o $@ -- \
	    $(PY) tests/fuzz/ops_train.py

$(BUILD)-fuzz/ring-corpus/nested: $(FUZZ_RING) build
	@mkdir -p $(BUILD)-fuzz/ring-corpus
	for s in $(RING_SEEDS); do \
	    $(BUILD)-fuzz/tests/ring_seed $(BUILD)-fuzz/ring-corpus/$$s $(BUILD)/tests/emit_events $$s || exit 1; done

# runs the targets: $(1) seconds for the run file's, $(2) for the ring's and the window's,
# in two lanes: the first alone, the three others one after another beside it (each
# fuzzer is one process, and their time is wall time: at the end of CI's second stage,
# with both CPUs free, the lanes take 15 s where one after another took 30)
fuzz_both = cd $(BUILD)-fuzz && mkdir -p corpus ops-run-corpus ops-corpus && \
	python3 ../tests/fuzz/ops_seed.py ops-corpus && \
	{ FUZZ_BASE_RUN=base.db UBSAN_OPTIONS=halt_on_error=1 \
	    tests/fuzz_run_file -max_total_time=$(1) -max_len=512 -len_control=10 corpus & lane=$$!; \
	FUZZ_BASE_RUN=base-ops.db UBSAN_OPTIONS=halt_on_error=1 \
	    tests/fuzz_run_file -max_total_time=$(2) -max_len=512 -len_control=10 ops-run-corpus && \
	UBSAN_OPTIONS=halt_on_error=1 tests/fuzz_ring_events -max_total_time=$(2) -max_len=40000 ring-corpus && \
	UBSAN_OPTIONS=halt_on_error=1 tests/fuzz_ops_blob -max_total_time=$(2) -max_len=4096 ops-corpus; \
	rest=$$?; wait $$lane && [ $$rest = 0 ]; }

# ASan+UBSan over every C test, in the fuzzers' build (clang's UBSan checks
# more than GCC's: null plus an offset, for one; and one build serves both),
# and TSan (GCC) over every C test: the sink, the NVML threads, the summary's
# passes over the rows. Two targets, so that `make -j3` builds the TSan tests
# beside the fuzzers' build, and their runs' waits (NVML's ticks: 14 s of
# sleeps) overlap other work instead of ending the suite.
test-sanitizers: test-asan test-tsan

test-asan: $(FUZZ)
	$(MESON) test -C $(BUILD)-fuzz --print-errorlogs

test-tsan: deps
	@[ -f $(BUILD)-tsan/build.ninja ] || $(MESON) setup $(BUILD)-tsan -Db_sanitize=thread -Db_lundef=false $(WERROR) >/dev/null
	$(MESON) test -C $(BUILD)-tsan --print-errorlogs

test-fuzz: $(FUZZ) $(BUILD)-fuzz/base.db $(BUILD)-fuzz/base-ops.db $(BUILD)-fuzz/ring-corpus/nested
	$(call fuzz_both,15,5)

fuzz: $(FUZZ) $(BUILD)-fuzz/base.db $(BUILD)-fuzz/base-ops.db $(BUILD)-fuzz/ring-corpus/nested
	$(call fuzz_both,$(FUZZ_SECONDS),$(FUZZ_SECONDS))

# the include graph against the layer order of docs/contributing.md, no cycles
test-layers:
	python3 tools/check_layers.py

test-format: deps
	clang-format --dry-run --Werror $(C_FILES)

# ruff's lint and formatter over every Python file (pyproject.toml says which
# rules), and mypy --strict over the public API as a typed script uses it
# (tests/typecheck/), against the package installed in .venv
PY_DIRS := python tests bench tools examples
test-python-style: build
	$(VENV)/bin/ruff check -q $(PY_DIRS)
	$(VENV)/bin/ruff format --check -q $(PY_DIRS)
	cd tests/typecheck && ../../$(VENV)/bin/mypy --strict --python-version 3.10 \
	    --cache-dir ../../$(BUILD)/mypy-cache public_api.py
	cd $(BUILD) && ../$(VENV)/bin/mypy --strict --python-version 3.10 --follow-imports=silent \
	    --cache-dir mypy-cache -m trainprof -m trainprof._native -m trainprof.steps.state

# The Python tests: those that judge the machine's load (marked machine:
# tests/py/conftest.py) alone, after the rest on PYTEST_WORKERS processes
# (pytest-xdist; a file's tests on one worker, for its fixtures), one more
# than the cores: many tests wait (stalls, timeouts, a leak that needs a minute
# to be told), and with a worker a core the cores stood half idle for a minute
# at a time once the builds beside were done. Two more ended the stage 27 to
# 49 s sooner on the 2-core VM of 2026-11-29, but three of its four runs failed
# a test that contention decides (a change point, a death's order, a sampled
# line): not until those hold beside more load. Each stage ends with its
# slowest tests, for whoever makes the suite faster.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST_ENV = TRAINPROF=$(abspath $(PROGRAM)) FAKE_NVML_LIB=$(abspath $(BUILD)/tests/libfake_nvml.so) \
	EMIT_EVENTS=$(abspath $(BUILD)/tests/emit_events) \
	HOSTILE_RING=$(abspath $(BUILD)/tests/hostile_ring) \
	NO_VM_READV=$(abspath $(BUILD)/tests/no_vm_readv)
test-py: test-py-spread test-py-machine

# Trainings side by side: each on one intra-op thread, not a pool of two
# spinning between operations on the core another one needs (a leaking
# DataLoader loop: 7.9 CPU-seconds in 30 s on two, 3.4 on one). The machine
# tests keep torch's default. The files whose tests mostly wait go early,
# each beside one that computes (conftest.py), in the order given.
test-py-spread: build
	OMP_NUM_THREADS=1 $(PYTEST_ENV) $(PY) -m pytest -q -p xdist -n $(PYTEST_WORKERS) --dist loadfile \
	    --no-loadscope-reorder -m "not machine" --durations=15 tests/py

test-py-machine: build
	$(PYTEST_ENV) $(PY) -m pytest -q -m machine --durations=15 tests/py

bench: build
	$(PY) bench/run_all.py

format:
	clang-format -i $(C_FILES)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz $(BUILD)-py dist
