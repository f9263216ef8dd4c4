"""Whether a capture window lets go of CUPTI (runtime/ops.py release_cupti).
Kineto keeps CUPTI attached after a trace unless TEARDOWN_CUPTI=1, and every
CUDA call of the rest of the run then pays for it: on a launch-bound H200
loop the defaults (one window) cost +35 % a step (2026-11-30, before this),
of which the stack samples of trainprof's own work counted 8 %. This machine has no CUDA, so the decision is checked as a function here,
and on a GPU by test_gpu_ops.py (a window after the teardown still sees its
kernels)."""

import pytest
from trainprof.runtime.ops import CUPTI_KEPT_BY_ENVIRONMENT, CUPTI_KEPT_OLD_CUDA, release_cupti


@pytest.mark.parametrize("version", ["12.6", "12.8", "13.0", "13.2.1"])
def test_a_cuda_of_12_6_or_later_lets_cupti_go(version):
    env = {}
    assert release_cupti(version, env) == 0
    assert env == {"TEARDOWN_CUPTI": "1"}


@pytest.mark.parametrize("version", ["11.8", "12.1", "12.4", "12.5"])
def test_an_older_cuda_keeps_it_where_cuda_graphs_would_crash(version):
    env = {}
    assert release_cupti(version, env) == CUPTI_KEPT_OLD_CUDA
    assert env == {}


def test_the_environment_s_choice_stands():
    env = {"TEARDOWN_CUPTI": "0"}  # the script's, or torch's own for CUDA graphs
    assert release_cupti("13.0", env) == CUPTI_KEPT_BY_ENVIRONMENT
    assert env == {"TEARDOWN_CUPTI": "0"}
    env = {"TEARDOWN_CUPTI": "1"}
    assert release_cupti("12.1", env) == 0  # asked for: let go, whatever the version
    assert env == {"TEARDOWN_CUPTI": "1"}


def test_no_cuda_version_nothing_to_do_and_an_unreadable_one_is_left_alone():
    env = {}
    assert release_cupti(None, env) == 0  # a ROCm build: Kineto has no CUPTI
    assert release_cupti("", env) == 0
    assert env == {}
    assert release_cupti("twelve", env) == CUPTI_KEPT_OLD_CUDA
    assert env == {}
