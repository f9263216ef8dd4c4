/* test_gpu_memory.c: a rank's GPU memory (analyze/gpu_memory.h) on run
 * files written here through the real writer, with the allocator's
 * readings at each step as a case needs them: headroom and the batch that
 * would fit, fragmentation, a leak and the step it runs out at, and shapes a
 * leak has not (a start-up ramp that levels off, too little growth, growth
 * that falls back, too few steps); then the words each verdict and an
 * out-of-memory get (render/gpu_memory_words.h), on facts made here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/gpu_memory.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "facts.h"
#include "harness.h"
#include "render/gpu_memory_words.h"
#include "store/reader.h"
#include "store/writer.h"

#define MS  1000000ull /* one millisecond in ns */
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* What stays allocated between steps at step k. */
typedef double (*shape_fn)(int k);

typedef struct run_case {
    shape_fn shape;
    int steps;              /* of 100 ms, each read at its start */
    double adds, reserve;   /* a step's activations; the reserve beyond the peak */
    double capacity;        /* the device's */
    const char *alloc_conf; /* fact cuda.alloc_conf, NULL none */
} run_case;

/* A run file of one process (pid 100) whose allocator is read at each of
 * its steps. The path, to free. */
static char *write_run(const run_case *c)
{
    char *root = fx_root(), *path = NULL;
    assert_true(asprintf(&path, "%s/gpu.db", root) > 0);
    free(root);
    tp_sink *s = tp_sink_new(0);
    tp_sink_meta(s, TP_META_COMMAND, "train");
    tp_sink_meta(s, TP_META_INTERVAL_S, "0.5");
    if (c->alloc_conf)
        tp_sink_fact(s, false, TP_META_FACT TP_FACT_CUDA_ALLOC_CONF, c->alloc_conf);
    tp_thread_info info = {.pid = 100, .tid = 100, .rank = -1, .local_rank = -1, .world_size = 0};
    uint32_t main = tp_sink_thread(s, &info);
    char labels[48];
    tp_labels_pid(labels, sizeof labels, 100);
    uint32_t alloc = tp_sink_series(s, TP_METRIC_CUDA_ALLOCATED_BYTES, labels);
    uint32_t res = tp_sink_series(s, TP_METRIC_CUDA_RESERVED_BYTES, labels);
    uint32_t peak = tp_sink_series(s, TP_METRIC_CUDA_PEAK_ALLOCATED_BYTES, labels);
    uint32_t peak_res = tp_sink_series(s, TP_METRIC_CUDA_PEAK_RESERVED_BYTES, labels);
    uint32_t cap = tp_sink_series(s, TP_METRIC_CUDA_CAPACITY_BYTES, labels);
    const uint64_t t0 = 10000 * MS; /* the first step, after a start-up */
    double most = 0;
    for (int k = 0; k <= c->steps; k++) {
        uint64_t t = t0 + (uint64_t)k * 100 * MS;
        tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
        double a = c->shape(k);
        most = a + c->adds > most ? a + c->adds : most;
        tp_sink_sample(s, alloc, t + 1, a);
        tp_sink_sample(s, res, t + 1, a + c->reserve);
        tp_sink_sample(s, peak, t + 1, most);
        tp_sink_sample(s, peak_res, t + 1, most + c->reserve);
        tp_sink_sample(s, cap, t + 1, c->capacity);
    }
    fx_write_sink(path, s, "node1");
    return path;
}

/* The rank's figures in the run at path, and its verdicts' kinds (bits of
 * 1 << kind). */
static tp_gpu_memory_rank figures_of(const run_case *c, unsigned *kinds)
{
    char *path = write_run(c), err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    tp_summary s;
    assert_true(tp_summary_build(run, &s, err, sizeof err));
    assert_true(tp_summary_add(&s, TP_PARTS_ALL, err, sizeof err));
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    assert_int_equal(v.gpu_memory.n, 1);
    tp_gpu_memory_rank g = v.gpu_memory.v[0];
    *kinds = 0;
    for (size_t i = 0; i < v.n; i++)
        *kinds |= 1u << v.items[i].kind;
    tp_verdicts_free(&v);
    tp_summary_free(&s);
    tp_run_close(run);
    remove(path);
    free(path);
    return g;
}

static double flat(int k) { return (void)k, 20 * GIB; }
static double leak(int k) { return 2 * GIB + 50 * MIB * k; }
static double ramp(int k) { return 2 * GIB + 3 * GIB * (1 - exp(-k / 8.0)); } /* levels off */
static double little(int k) { return 2 * GIB + 0.2 * MIB * k; }               /* 40 MiB in all */
/* grows by 10 GiB, but a fifth of its steps fall back by 3 GiB */
static double dips(int k) { return 2 * GIB + 50 * MIB * k - ((k / 20) % 2 ? 3 * GIB : 0); }

static void test_headroom_and_the_batch_that_would_fit(void **state)
{
    (void)state;
    unsigned kinds;
    run_case c = {flat, 60, 30 * GIB, 1 * GIB, 65 * GIB, NULL};
    tp_gpu_memory_rank g = figures_of(&c, &kinds);
    assert_true(g.capacity_bytes == 65 * GIB && g.limit_bytes == 65 * GIB);
    assert_true(g.start_bytes == 20 * GIB && g.adds_bytes == 30 * GIB);
    assert_true(fabs(g.batch_factor - 1.5) < 1e-9);
    assert_false(g.fragmented || g.growing);
    assert_true(isnan(g.out_of_room_step));
    assert_int_equal(kinds, 0); /* 77 %: no pressure */
}

static void test_a_full_device_and_a_fragmented_cache(void **state)
{
    (void)state;
    unsigned kinds;
    run_case c = {flat, 60, 9 * GIB, 8 * GIB, 32 * GIB, NULL};
    tp_gpu_memory_rank g = figures_of(&c, &kinds);
    assert_true(g.fragmented && g.fragment_bytes == 8 * GIB && !g.expandable);
    assert_true(kinds & (1u << TP_VERDICT_GPU_MEMORY)); /* 29 of 32 GiB */
    c.alloc_conf = "expandable_segments:True,max_split_size_mb:128";
    g = figures_of(&c, &kinds);
    assert_true(g.fragmented && g.expandable);
    c.reserve = 256 * MIB; /* under TP_GPU_FRAGMENT_MIN_BYTES */
    g = figures_of(&c, &kinds);
    assert_false(g.fragmented);
}

static void test_a_leak_and_the_step_it_runs_out_at(void **state)
{
    (void)state;
    unsigned kinds;
    /* the peak, 2 GiB + 50 MiB a step + 4 GiB, meets 16 GiB at step 205 */
    run_case c = {leak, 150, 4 * GIB, 1 * GIB, 16 * GIB, NULL};
    tp_gpu_memory_rank g = figures_of(&c, &kinds);
    assert_true(g.growing);
    assert_true(fabs(g.growth_bytes_per_step - 50 * MIB) < 1 * MIB);
    assert_true(fabs(g.out_of_room_step - 205) <= 2);
    assert_true(kinds & (1u << TP_VERDICT_GPU_MEMORY_GROWTH));
}

static void test_no_leak_for_shapes_a_leak_has_not(void **state)
{
    (void)state;
    const run_case cases[] = {
        {ramp, 150, 4 * GIB, 1 * GIB, 80 * GIB, NULL},   /* levels off */
        {little, 150, 4 * GIB, 1 * GIB, 80 * GIB, NULL}, /* under 64 MiB */
        {dips, 150, 4 * GIB, 1 * GIB, 80 * GIB, NULL},   /* falls back */
        {leak, 20, 4 * GIB, 1 * GIB, 80 * GIB, NULL},    /* 16 steps past the start */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned kinds;
        tp_gpu_memory_rank g = figures_of(&cases[i], &kinds);
        if (g.growing || (kinds & (1u << TP_VERDICT_GPU_MEMORY_GROWTH)))
            fail_msg("case %zu: a leak found, %.0f a step", i, g.growth_bytes_per_step);
    }
}

/* ---- the words, on facts made here ---- */

static tp_gpu_memory_rank made(void)
{
    return (tp_gpu_memory_rank){.rank = 3,
                                .capacity_bytes = 80 * GIB,
                                .other_bytes = NAN,
                                .limit_bytes = 80 * GIB,
                                .peak_allocated_bytes = 76 * GIB,
                                .usual_peak_bytes = 70 * GIB,
                                .peak_reserved_bytes = 79 * GIB,
                                .start_bytes = 20 * GIB,
                                .adds_bytes = 56 * GIB,
                                .batch_factor = 60.0 / 56,
                                .fragment_bytes = 3 * GIB,
                                .retries = 0,
                                .growth_bytes_per_step = NAN,
                                .out_of_room_step = NAN,
                                .oom_allocated_bytes = NAN,
                                .oom_reserved_bytes = NAN};
}

static void test_the_words_of_each_verdict(void **state)
{
    (void)state;
    char out[2000];
    tp_gpu_memory_rank g = made();
    g.fragmented = true;
    tp_verdict v = {.kind = TP_VERDICT_GPU_MEMORY, .rank = 3};
    v.f.gpu_memory.allocator = &g;
    tp_gpu_pressure_words(out, sizeof out, &v);
    assert_non_null(strstr(out, "Rank 3's CUDA caching allocator peaked at 76.00 GiB of the "
                                "80.00 GiB it can use (5% headroom"));
    assert_non_null(strstr(out, "expandable_segments:True"));
    g.expandable = true;
    tp_gpu_pressure_words(out, sizeof out, &v);
    assert_non_null(strstr(out, "It runs with expandable segments already."));

    g.rank = -1, g.growing = true;
    g.growth_first_bytes = 3 * GIB, g.growth_last_bytes = 9 * GIB;
    g.growth_bytes_per_step = 50 * MIB, g.out_of_room_step = 205, g.steps_seen = 150;
    tp_verdict grow = {.kind = TP_VERDICT_GPU_MEMORY_GROWTH, .rank = -1};
    grow.f.gpu_growth = &g;
    tp_gpu_growth_words(out, sizeof out, &grow);
    assert_non_null(strstr(out, "The training's GPU memory between steps grows by 50.00 MiB a "
                                "step (from 3.00 GiB to 9.00 GiB"));
    assert_non_null(strstr(out, "at about step 205 (it had begun 150)."));
    tp_death died = {.step = 180, .oom_tried_bytes = NAN, .oom_free_bytes = NAN};
    g.oom = &died;
    tp_gpu_growth_words(out, sizeof out, &grow);
    assert_non_null(strstr(out, "It ran out of memory at step 180."));
}

static void test_the_headroom_section_names_the_tightest_ranks(void **state)
{
    (void)state;
    tp_gpu_memory_rank r[6];
    for (int i = 0; i < 6; i++) {
        r[i] = made();
        r[i].rank = i;
        r[i].peak_allocated_bytes = (40 + i) * GIB; /* rank 5 the tightest */
        r[i].adds_bytes = r[i].peak_allocated_bytes - r[i].start_bytes;
        r[i].batch_factor = (80 - 20) / (r[i].adds_bytes / GIB);
        r[i].fragment_bytes = 0;
    }
    tp_verdicts v = {.gpu_memory = {.v = r, .n = 6}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tp_gpu_memory_text(f, &v);
    fclose(f);
    char *five = strstr(text, "rank 5: peak 45.00 GiB of 80.00 GiB (56%)");
    char *two = strstr(text, "rank 2:");
    assert_non_null(five);
    assert_true(two && five < two);
    assert_null(strstr(text, "rank 1:"));
    assert_non_null(strstr(text, "and 2 more ranks, each at most 51% of its capacity"));
    assert_non_null(strstr(text, "a batch about 2.4x larger would fit"));
    free(text);
}

static void test_an_out_of_memory_explained(void **state)
{
    (void)state;
    char out[2000];
    tp_gpu_memory_rank g = made();
    tp_death d = {.pid = 100,
                  .exception_type = "torch.OutOfMemoryError",
                  .oom_tried_bytes = 2 * GIB,
                  .oom_free_bytes = 1.5 * GIB};
    g.oom = &d, g.oom_allocated_bytes = 75 * GIB, g.oom_reserved_bytes = 78 * GIB;
    g.fragmented = true;
    tp_verdicts v = {.gpu_memory = {.v = &g, .n = 1}};
    tp_summary s = {0};
    tp_gpu_oom_words(out, sizeof out, &s, &v, &d);
    assert_string_equal(out, " It ran out of GPU memory asking for 2.00 GiB with 75.00 GiB "
                             "allocated and 78.00 GiB reserved by PyTorch, 1.50 GiB free on the "
                             "device; its steps had peaked at 70.00 GiB. Try a smaller batch "
                             "(with gradient accumulation), activation checkpointing, bf16 "
                             "autocast, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                             "(its reserve far exceeded what it allocated).");
    /* its rank's capture window of 2 steps: the outermost operators that
     * allocated most, a step (a callee's allocation is its caller's) */
    tp_ops_window_fact win = {.rank = 3, .steps = 2};
    tp_op_fact ops[] = {
        {.rank = 3,
         .phase = "forward",
         .name = "aten::linear",
         .outer_s = 1,
         .alloc_bytes = 2 * GIB},
        {.rank = 3,
         .phase = "forward",
         .name = "aten::addmm",
         .outer_s = 0,
         .alloc_bytes = 2 * GIB},
        {.rank = 3, .phase = "backward", .name = "aten::mm", .outer_s = 1, .alloc_bytes = 6 * GIB},
        {.rank = 1,
         .phase = "forward",
         .name = "aten::conv2d",
         .outer_s = 1,
         .alloc_bytes = 9 * GIB},
    };
    s.ops = (tp_ops_facts){.windows = &win, .nwindows = 1, .ops = ops, .nops = 4};
    d.rank = 3;
    tp_gpu_oom_words(out, sizeof out, &s, &v, &d);
    assert_non_null(strstr(out, "; its steps had peaked at 70.00 GiB; in its capture windows the "
                                "operators that allocated most a step were aten::mm (3.00 GiB, "
                                "backward), aten::linear (1.00 GiB, forward). Try"));
    tp_death other = {.exception_type = "ValueError",
                      .exception_message = "bad batch",
                      .oom_tried_bytes = NAN,
                      .oom_free_bytes = NAN};
    assert_false(tp_death_is_gpu_oom(&other));
    tp_gpu_oom_words(out, sizeof out, &s, &v, &other);
    assert_string_equal(out, "");
    other.exception_type = "RuntimeError";
    other.exception_message = "CUDA out of memory. Tried to allocate 20.00 MiB";
    assert_true(tp_death_is_gpu_oom(&other));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headroom_and_the_batch_that_would_fit),
        cmocka_unit_test(test_a_full_device_and_a_fragmented_cache),
        cmocka_unit_test(test_a_leak_and_the_step_it_runs_out_at),
        cmocka_unit_test(test_no_leak_for_shapes_a_leak_has_not),
        cmocka_unit_test(test_the_words_of_each_verdict),
        cmocka_unit_test(test_the_headroom_section_names_the_tightest_ranks),
        cmocka_unit_test(test_an_out_of_memory_explained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
