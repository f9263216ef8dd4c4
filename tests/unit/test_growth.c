/* test_growth.c: the memory-growth rule (analyze/memory_growth.h) on run
 * files written here through the real writer: the training's RSS over its
 * steps in shapes a leak has and shapes it has not (a start-up ramp that
 * levels off, too little growth, growth that falls back, a run too short to
 * forecast from once its start-up is left out), the rate and
 * the time left under a cgroup's limit or the host's available memory, and
 * the verdict that carries them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/memory_growth.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "harness.h"
#include "store/reader.h"
#include "store/writer.h"

#define S   1000000000ull /* one second in ns */
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* The RSS (bytes) at t seconds into the steps. */
typedef double (*shape_fn)(double t);

/* A run file of one process that steps once a second for steps_s seconds
 * (its RSS sampled every 0.5 s from 1 s before the first step to 1 s after
 * the last, as shape says; the host's available memory 16 GiB less it),
 * under a cgroup memory limit of limit bytes (0: none). The path, to free. */
static char *write_run(shape_fn shape, int steps_s, double limit)
{
    char *root = fx_root(), *path = NULL;
    assert_true(asprintf(&path, "%s/growth.db", root) > 0);
    free(root);
    tp_sink *s = tp_sink_new(0);
    tp_sink_meta(s, TP_META_COMMAND, "train");
    tp_sink_meta(s, TP_META_INTERVAL_S, "0.5");
    char value[32];
    snprintf(value, sizeof value, "%.0f", limit);
    tp_sink_meta(s, TP_META_CGROUP_MEMORY_LIMIT_BYTES, limit > 0 ? value : "none");
    tp_thread_info info = {.pid = 100, .tid = 100, .rank = -1, .local_rank = -1, .world_size = 0};
    uint32_t main = tp_sink_thread(s, &info);
    uint32_t rss = tp_sink_series(s, TP_METRIC_PROC_RSS_BYTES, TP_LABELS_NONE);
    uint32_t avail = tp_sink_series(s, TP_METRIC_HOST_MEM_AVAILABLE_BYTES, TP_LABELS_NONE);
    const uint64_t t0 = 10 * S; /* the first step, after a start-up */
    for (int i = 0; i <= steps_s; i++)
        tp_sink_mark(s, main, TP_MARK_STEP, t0 + (uint64_t)i * S, 0);
    for (int k = -2; k <= 2 * steps_s + 2; k++) {
        uint64_t t = t0 + (uint64_t)((int64_t)k * (int64_t)(S / 2));
        double r = shape(k / 2.0);
        tp_sink_sample(s, rss, t, r);
        tp_sink_sample(s, avail, t, 16 * GIB - r);
    }
    fx_write_sink(path, s, "node1");
    return path;
}

/* Whether the rule finds growth in the run at path (figures in *out), and
 * whether the verdicts say so (once). */
static bool growth_in(const char *path, tp_memory_growth *out)
{
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    tp_summary s;
    assert_true(tp_summary_build(run, &s, err, sizeof err));
    assert_true(tp_summary_add(&s, TP_PARTS_ALL, err, sizeof err));
    bool found = tp_memory_growth_of(&s, run->agents[0].id, out);
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    size_t said = 0;
    for (size_t i = 0; i < v.n; i++)
        if (v.items[i].kind == TP_VERDICT_MEMORY_GROWTH) {
            said++;
            assert_true(v.items[i].f.memory_growth.end_bytes == out->end_bytes);
        }
    assert_int_equal(said, found ? 1 : 0);
    tp_verdicts_free(&v);
    tp_summary_free(&s);
    tp_run_close(run);
    return found;
}

static double leak(double t) { return 1 * GIB + 50 * MIB * t; }                /* 50 MiB/s */
static double ramp(double t) { return 1 * GIB + 2 * GIB * (1 - exp(-t / 3)); } /* levels off */
static double little(double t) { return 256 * MIB + 2.5 * MIB * t; }           /* +60 %, 180 MiB */
/* grows by 4 GiB, but three of the ten slices fall back (an 80 s run is
 * judged from 8 s, the first tenth left out, to 79 s: slices of 7.1 s) */
static double dips(double t)
{
    int slice = (int)floor((t - 8) / 7.1);
    return 1 * GIB + 60 * MIB * t - (slice == 2 || slice == 5 || slice == 7 ? 900 * MIB : 0);
}

static void test_a_steady_leak_with_its_rate_and_time_to_the_cgroup_limit(void **state)
{
    (void)state;
    char *path = write_run(leak, 80, 8 * GIB);
    tp_memory_growth g;
    assert_true(growth_in(path, &g));
    assert_true(fabs(g.rate_bytes_per_s / (50 * MIB) - 1) < 0.05);
    assert_true(g.cgroup);
    assert_true(g.end_bytes > g.start_bytes + 2.5 * GIB);
    assert_true(fabs(g.headroom_bytes - (8 * GIB - g.end_bytes)) < 1);
    assert_true(fabs(g.seconds_to_limit - g.headroom_bytes / g.rate_bytes_per_s) < 1e-6);
    free(path);
}

static void test_without_a_cgroup_the_hosts_available_memory_is_the_headroom(void **state)
{
    (void)state;
    char *path = write_run(leak, 80, 0);
    tp_memory_growth g;
    assert_true(growth_in(path, &g));
    assert_false(g.cgroup);
    /* the host's available memory two intervals before the last step */
    assert_true(g.headroom_bytes > 16 * GIB - leak(80) && g.headroom_bytes < 16 * GIB - leak(76));
    free(path);
}

static void test_no_growth_verdict_for_shapes_a_leak_has_not(void **state)
{
    (void)state;
    struct {
        shape_fn shape;
        int steps_s;
    } cases[] = {
        {ramp, 80},   /* a start-up ramp: the second half grows by little */
        {little, 80}, /* under 256 MiB */
        {dips, 80},   /* not steady: 3 of the 9 steps between slices go down */
        {leak, 15},   /* steps shorter than TP_GROWTH_MIN_S */
        /* 50 s of steps (as the H200's CUDA start-up that grew 1.7 GiB in a
         * 33 s run): 45 s once the start-up is left out, too short to
         * forecast from */
        {leak, 50},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = write_run(cases[i].shape, cases[i].steps_s, 8 * GIB);
        tp_memory_growth g;
        if (growth_in(path, &g))
            fail_msg("case %zu: growth found, %.0f to %.0f bytes", i, g.start_bytes, g.end_bytes);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_steady_leak_with_its_rate_and_time_to_the_cgroup_limit),
        cmocka_unit_test(test_without_a_cgroup_the_hosts_available_memory_is_the_headroom),
        cmocka_unit_test(test_no_growth_verdict_for_shapes_a_leak_has_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
