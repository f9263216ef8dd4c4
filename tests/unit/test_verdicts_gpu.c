/* test_verdicts_gpu.c: the verdicts of a training on a GPU, on facts made
 * here (verdict_facts.h): the GPU under-used by NVML's utilization or its
 * SMs, its memory near full and its clocks held back, the allocator near
 * the device's memory, compute-bound where the GPU is busy and host-bound
 * where it waits, the capture windows as a witness without NVML, a CPU
 * training beside an idle GPU, and precision advice that fits what the
 * model runs in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "verdict_facts.h"

#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "render/verdict_words.h"
#include "trainprof.h"

static void test_gpu_underused_by_utilization_or_by_its_sms(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 95, 95, 100);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    f->items[0].steps.mean = 89; /* below the 90 % target */
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 1);
    /* "busy" by NVML's measure, but kernels on a few SMs (GPM) */
    f->items[0].steps.mean = 99;
    series(f, TP_METRIC_GPU_SM_ACTIVE_PERCENT, "{\"gpu\":\"0\"}", 20, 20, 30);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, &v), 1);
    assert_non_null(v.f.gpu_util.sm_active);
    facts_free(f);
}

static void test_gpu_memory_near_full_and_gpu_slowed(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    double total = (double)f->gpu.mem_total_bytes;
    series(f, TP_METRIC_GPU_MEM_USED_BYTES, "{\"gpu\":\"0\"}", 0.5 * total, 0.5 * total,
           0.89 * total);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    f->items[0].stats.max = 0.9 * total;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 1);
    /* slowed by heat or a fault 10 % of the samples or more */
    struct tp_gpu_slowdown slow = {.bits = 0, .share = 0.2, .trouble_share = 0.09};
    f->s.gpu_slowdown = &slow;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_THROTTLED, NULL), 0);
    slow.trouble_share = 0.1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_THROTTLED, NULL), 1);
    facts_free(f);
}

static void test_an_allocator_near_its_devices_memory_once_per_rank(void **state)
{
    (void)state;
    facts *f = facts_new();
    double total = 80.0 * (1 << 30);
    tp_ops_window_fact windows[3] = {
        {.rank = 0, .peak_allocated_bytes = 0.89 * total, .device_memory_bytes = total},
        {.rank = 0, .peak_allocated_bytes = 0.95 * total, .device_memory_bytes = total},
        {.rank = 0, .peak_allocated_bytes = 0.97 * total, .device_memory_bytes = total},
    };
    f->s.ops.windows = windows;
    f->s.ops.nwindows = 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    f->s.ops.nwindows = 3; /* two windows near full: one verdict for the rank */
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, &v), 1);
    assert_null(v.gpu);
    assert_true(v.f.gpu_memory.used_max_bytes == 0.95 * total);
    windows[0].device_memory_bytes = NAN; /* no GPU: never near full */
    f->s.ops.nwindows = 1;
    windows[0].peak_allocated_bytes = 1e12;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    facts_free(f);
}

/* A computing step on a GPU is the GPU's limit only where the GPU was busy
 * TP_HOST_BOUND_GPU_BUSY of the steps; below, the host can't feed it (the
 * H200's ResNet-18 at batch 64: train_batch 100 %, the GPU busy 40 %). The
 * GPU's under-use is then that verdict's evidence, not a second verdict. */
static void test_on_a_gpu_compute_bound_where_busy_else_host_bound(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.98, 0);
    double at = 100 * TP_HOST_BOUND_GPU_BUSY;
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", at, at, 100);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_NVML);
    assert_true(fabs(v.f.compute.gpu_busy - TP_HOST_BOUND_GPU_BUSY) < 1e-12);
    assert_ptr_equal(v.gpu, &f->gpu);
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, NULL), 0);
    /* under 90 %, but the compute verdict says why: no gpu_underused beside */
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    f->items[0].steps.mean = at - 1; /* just below: the host can't keep it busy */
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, &v), 1);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_HOST_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "host-bound"));
    assert_non_null(strstr(words, "busy only 69% of the training steps"));
    assert_non_null(strstr(words, "reduce-overhead"));
    assert_non_null(strstr(words, "fused=True"));
    assert_non_null(strstr(words, "mixed precision or a faster GPU won't help"));
    assert_null(strstr(words, "faster or more GPUs"));
    /* it leads: it explains the most step time */
    tp_verdicts all;
    tp_verdicts_build(&f->s, &all);
    assert_int_equal(all.items[tp_verdicts_main(&all)].kind, TP_VERDICT_HOST_BOUND);
    tp_verdicts_free(&all);
    facts_free(f);
}

/* Without NVML's utilization, the capture windows' kernels say how busy
 * the GPU was; with neither, nothing says the host was the limit. */
static void test_the_capture_windows_witness_a_gpu_without_nvml(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.9, 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 1);
    struct tp_ops_gpu_busy busy = {.rank = 0, .span_s = 1.0, .busy_s = 0.27};
    f->s.ops.busy = &busy;
    f->s.ops.nbusy = 1;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_WINDOW);
    assert_true(fabs(v.f.compute.window_idle - 0.73) < 1e-12);
    facts_free(f);
}

/* A model on the CPU of a machine with an idle GPU is not host-bound. */
static void test_a_training_on_the_cpu_beside_an_idle_gpu_computes(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cpu");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.9, 0);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 0, 0, 0);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_UNKNOWN);
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, NULL), 0);
    facts_free(f);
}

/* What the script already does is never the advice: a model under bf16
 * autocast is said to run so, and its tensor cores' low use is put down to
 * the GPU's idle time and the work they don't run, not to FP32. */
static void test_precision_words_fit_what_the_model_runs_in(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    meta(f, "fact.model.autocast", "1");
    meta(f, "fact.model.autocast_dtype", "bfloat16");
    meta(f, "fact.model.dtype", "float32");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.95, 0);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 80, 80, 100);
    series(f, TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT, "{\"gpu\":\"0\"}", 6, 6, 9);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_COMPUTE_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "already runs under bf16 autocast"));
    assert_non_null(strstr(words, "the GPU itself idle 20% of the steps"));
    assert_non_null(strstr(words, "under bf16 autocast: most of its GPU time"));
    assert_null(strstr(words, "bf16 autocast, torch.backends"));
    assert_null(strstr(words, "float32 under autocast"));
    facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_underused_by_utilization_or_by_its_sms),
        cmocka_unit_test(test_gpu_memory_near_full_and_gpu_slowed),
        cmocka_unit_test(test_an_allocator_near_its_devices_memory_once_per_rank),
        cmocka_unit_test(test_on_a_gpu_compute_bound_where_busy_else_host_bound),
        cmocka_unit_test(test_the_capture_windows_witness_a_gpu_without_nvml),
        cmocka_unit_test(test_a_training_on_the_cpu_beside_an_idle_gpu_computes),
        cmocka_unit_test(test_precision_words_fit_what_the_model_runs_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
