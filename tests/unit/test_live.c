/* test_live.c: the one live state, fed by a real sink as the writer thread
 * feeds it, read as the status line, top and /metrics read it. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "core/sink.h"
#include "live/live_state.h"
#include "record/stall_where.h"
#include "record/status_line.h"
#include "serve/prom_exposition.h"
#include "stacks.h"

#define SEC 1000000000ull

/* Everything pending in the sink, applied to the live state. */
static void feed(tp_sink *sink, tp_live *live)
{
    tp_batch b = {0};
    cap_take(sink, &b);
    tp_live_apply(live, &b);
    tp_batch_free(&b);
}

static void count_labels(void *ctx, const char *labels, double value)
{
    (void)labels;
    (void)value;
    (*(int *)ctx)++;
}

static void test_latest_values(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    double v = -1;
    assert_false(tp_live_latest(live, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v));
    uint32_t cpu = tp_sink_series(sink, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    uint32_t gpu0 = tp_sink_series(sink, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}");
    uint32_t gpu1 = tp_sink_series(sink, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"1\"}");
    feed(sink, live);
    assert_false(tp_live_latest(live, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v)); /* no sample yet */
    tp_sink_sample(sink, cpu, 1 * SEC, 40);
    tp_sink_sample(sink, cpu, 2 * SEC, 45);
    tp_sink_sample(sink, gpu0, 2 * SEC, 90);
    feed(sink, live);
    assert_true(tp_live_latest(live, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v));
    assert_float_equal(v, 45, 1e-12);
    assert_true(tp_live_latest(live, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", &v));
    assert_float_equal(v, 90, 1e-12);
    int n = 0;
    tp_live_latest_each(live, TP_METRIC_GPU_UTIL_PERCENT, count_labels, &n);
    assert_int_equal(n, 1); /* gpu1 has no value yet */
    tp_sink_sample(sink, gpu1, 3 * SEC, 10);
    feed(sink, live);
    n = 0;
    tp_live_latest_each(live, TP_METRIC_GPU_UTIL_PERCENT, count_labels, &n);
    assert_int_equal(n, 2);
    tp_live_free(live);
    tp_sink_free(sink);
}

/* A thread of rank 3 in the sink: its id. */
static uint32_t rank_thread(tp_sink *sink, int32_t rank)
{
    tp_thread_info info = {.pid = 100 + rank, .tid = 100 + rank, .rank = rank};
    return tp_sink_thread(sink, &info);
}

static void sum_phases(void *ctx, const tp_live_view *v)
{
    double *out = ctx; /* [0] seconds of "load" on rank 3, [1] its count, [2] steps of rank 3 */
    for (size_t i = 0; i < v->nphases; i++)
        if (v->phases[i].rank == 3 && strcmp(tp_live_view_name(v, v->phases[i].name), "load") == 0)
            out[0] = v->phases[i].seconds, out[1] = (double)v->phases[i].count;
    for (size_t i = 0; i < v->nranks; i++)
        if (v->ranks[i].rank == 3)
            out[2] = (double)v->ranks[i].steps;
}

static void test_totals_and_window(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    uint32_t th = rank_thread(sink, 3);
    uint32_t load = tp_sink_name(sink, "load"), compute = tp_sink_name(sink, "compute");
    /* 20 s of steps, one a second: 0.25 s of load, 0.5 s of compute, 4 batches of 8 */
    for (uint64_t s = 0; s < 20; s++) {
        uint64_t t = s * SEC;
        tp_sink_mark(sink, th, TP_MARK_STEP, t, (int64_t)s);
        for (int k = 0; k < 4; k++)
            tp_sink_mark(sink, th, TP_MARK_SAMPLES, t + 1000, 8);
        tp_sink_interval(sink, th, load, 0, t + 1000, t + 1000 + SEC / 4);
        tp_sink_interval(sink, th, compute, 0, t + SEC / 4, t + 3 * SEC / 4);
        tp_sink_device_span(sink, th, compute, t + SEC / 4, SEC / 10);
        feed(sink, live);
    }
    double got[3] = {0};
    tp_live_read(live, sum_phases, got);
    assert_float_equal(got[0], 5.0, 1e-6); /* 20 x 0.25 s, all of the run */
    assert_float_equal(got[1], 20, 0);
    assert_float_equal(got[2], 20, 0);

    tp_live_window w;
    tp_live_window_at(live, 20 * SEC + SEC / 2, &w); /* seconds 10..19 */
    assert_float_equal(w.steps_per_s, 1.0, 1e-9);
    assert_float_equal(w.samples_per_s, 32.0, 1e-9);
    assert_float_equal(w.batches_per_step, 4.0, 1e-9);
    assert_int_equal(w.nphases, 2);
    assert_string_equal(w.phases[0].name, "compute"); /* busiest first */
    assert_float_equal(w.phases[0].share, 0.5, 1e-6);
    assert_true(w.phases[0].has_device);
    assert_float_equal(w.phases[0].device_share, 0.1, 1e-6);
    assert_string_equal(w.phases[1].name, "load");
    assert_float_equal(w.phases[1].share, 0.25, 1e-6);
    assert_false(w.phases[1].has_device);

    /* a late event of an old second never clears the newer second sharing
     * its bucket, and one older than the window is left out of it */
    tp_sink_interval(sink, th, load, 0, 8 * SEC, 8 * SEC + SEC / 2); /* second 8: bucket of 19 */
    feed(sink, live);
    tp_live_window_at(live, 20 * SEC + SEC / 2, &w);
    assert_float_equal(w.steps_per_s, 1.0, 1e-9);
    assert_float_equal(w.phases[1].share, 0.25, 1e-6);
    tp_live_read(live, sum_phases, got);
    assert_float_equal(got[0], 5.5, 1e-6); /* the totals take it */

    /* later, quiet seconds: the window empties */
    tp_live_window_at(live, 40 * SEC, &w);
    assert_float_equal(w.steps_per_s, 0, 0);
    assert_int_equal(w.nphases, 0);
    tp_live_free(live);
    tp_sink_free(sink);
}

static void rank_dropped(void *ctx, const tp_live_view *v)
{
    for (size_t i = 0; i < v->nranks; i++)
        if (v->ranks[i].rank == 3)
            *(uint64_t *)ctx = v->ranks[i].dropped;
}

/* A rank's dropped events are its timing threads': its stack sampler's
 * ring drops samples, which the report and /metrics keep apart. */
static void test_a_sampler_s_drops_are_no_timing_events(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    uint32_t th = rank_thread(sink, 3);
    tp_thread_info info = {.pid = 103, .tid = 999, .rank = 3};
    snprintf(info.name, sizeof info.name, "%s", TP_SAMPLER_THREAD_NAME);
    uint32_t sampler = tp_sink_thread(sink, &info);
    tp_sink_thread_dropped(sink, th, 5);
    tp_sink_thread_dropped(sink, sampler, 700);
    feed(sink, live);
    tp_sink_thread_dropped(sink, th, 8); /* counts as they grow */
    tp_sink_thread_dropped(sink, sampler, 900);
    feed(sink, live);
    uint64_t dropped = 0;
    tp_live_read(live, rank_dropped, &dropped);
    assert_int_equal(dropped, 8);
    tp_live_free(live);
    tp_sink_free(sink);
}

/* The exposition of a state, as /metrics answers it. */
static char *expose(tp_live *live)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    tp_prom_expose(f, live, "node\"a", "host-1");
    fclose(f);
    return text;
}

/* A rank that stops stepping: stalled past its threshold (10 median steps,
 * at least 30 s; or the run's own), on the status line's, /metrics' and top's
 * reading; and top's seed of a recording it joined late. */
static void test_stalls(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    uint32_t th = rank_thread(sink, 2);
    uint32_t compute = tp_sink_name(sink, "compute");
    uint32_t cpu = tp_sink_series(sink, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    for (uint64_t s = 0; s < 40; s++) { /* a step a second */
        tp_sink_mark(sink, th, TP_MARK_STEP, s * SEC, 0);
        tp_sink_interval(sink, th, compute, 0, s * SEC, s * SEC + SEC / 2);
    }
    tp_sink_mark(sink, th, TP_MARK_STEP, 40 * SEC, 0); /* step 41 opens, and hangs */
    tp_sink_sample(sink, cpu, 45 * SEC, 5);
    feed(sink, live);
    int32_t rank;
    double seconds;
    assert_false(tp_live_worst_stall(live, 0, &rank, &seconds)); /* 5 s: under 30 s */
    tp_sink_sample(sink, cpu, 71 * SEC, 5);
    feed(sink, live);
    assert_true(tp_live_worst_stall(live, 0, &rank, &seconds)); /* 31 s without progress */
    assert_int_equal(rank, 2);
    assert_float_equal(seconds, 31, 1e-9);
    int32_t stalled[1];
    assert_int_equal(tp_live_stalled_ranks(live, 0, stalled, 1), 1);
    assert_int_equal(stalled[0], 2);
    /* where it was last seen, as /metrics says it: the script's text escaped */
    tp_live_set_where(live, 2, "load (\"x\\y.py\":3)", "waiting");
    tp_live_set_where(live, 7, "no such rank", "waiting"); /* left unknown */
    char *text = expose(live);
    assert_non_null(strstr(text, "trainprof_stall_where{agent=\"node\\\"a\",rank=\"2\","
                                 "where=\"load (\\\"x\\\\y.py\\\":3)\",doing=\"waiting\"} 1\n"));
    assert_null(strstr(text, "no such rank"));
    free(text);
    tp_live_set_stall_after(live, 40);
    assert_false(tp_live_worst_stall(live, 0, &rank, &seconds));
    assert_int_equal(tp_live_stalled_ranks(live, 0, stalled, 1), 0);
    text = expose(live); /* no longer stalled: not said, though not yet forgotten */
    assert_null(strstr(text, "trainprof_stall_where{"));
    free(text);
    tp_live_set_where(live, 2, NULL, NULL);

    /* top joins late: the last steps seeded, then the tail's samples */
    tp_live *top = tp_live_new(1.0);
    tp_live_set_stall_after(top, 2);
    uint64_t t[3] = {38 * SEC, 39 * SEC, 40 * SEC};
    uint32_t kinds[3] = {TP_MARK_STEP, TP_MARK_STEP, TP_MARK_STEP};
    tp_live_seed_steps(top, 2, t, kinds, 3);
    tp_sink_sample(sink, cpu, 45 * SEC, 5);
    feed(sink, top);
    assert_true(tp_live_worst_stall(top, 0, &rank, &seconds));
    assert_float_equal(seconds, 5, 1e-9);
    /* a loop that ended with a step-end mark is no stall */
    uint32_t end = TP_MARK_STEP_END;
    uint64_t at = 41 * SEC;
    tp_live_seed_steps(top, 2, &at, &end, 1);
    assert_false(tp_live_worst_stall(top, 0, &rank, &seconds));
    tp_live_free(top);
    tp_live_free(live);
    tp_sink_free(sink);
}

/* Several ranks stalled: the status line counts them beside the one stalled
 * longest, and top's lines group the others by where they were last seen. */
static void test_stalled_ranks_are_counted_and_grouped_by_place(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    tp_live_set_stall_after(live, 3);
    uint32_t kinds[1] = {TP_MARK_STEP};
    const int32_t ranks[] = {0, 1, 2, 3, 4, 5, 6};
    for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++) { /* rank 1 stopped first */
        uint64_t at = (ranks[i] == 1 ? 30 : 35 + ranks[i]) * SEC;
        tp_live_seed_steps(live, ranks[i], &at, kinds, 1);
    }
    uint64_t late = 44 * SEC; /* rank 6 moved on since: not stalled */
    tp_live_seed_steps(live, 6, &late, kinds, 1);
    tp_sink_sample(sink, tp_sink_series(sink, TP_METRIC_CPU_UTIL_PERCENT, "{}"), 45 * SEC, 5);
    feed(sink, live);
    assert_int_equal(tp_live_stalled_ranks(live, 0, NULL, 0), 6);
    char *line = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&line, &len);
    tp_status_line_draw(out, live, 45, 1 << 30, ", last seen in load (a.py:3), waiting");
    fclose(out);
    /* the one stalled longest, with how many are; cut to 80 columns (no terminal) */
    assert_non_null(strstr(line, "trainprof 00:00:45  STALLED (6 ranks): rank 1 no progress for "
                                 "15 s, last seen"));
    assert_int_equal(strlen(strstr(line, "trainprof")), 79);
    free(line);

    tp_stall_places p = {.n = 6};
    const char *places[] = {"allreduce (b.py:9)", "load (a.py:3)",     "allreduce (b.py:9)", "",
                            "allreduce (b.py:9)", "allreduce (b.py:9)"};
    const int32_t followed[] = {5, 1, 3, 4, 0, 2}; /* in the order they were found */
    for (size_t i = 0; i < p.n; i++) {
        p.at[i].rank = followed[i];
        snprintf(p.at[i].where.place, sizeof p.at[i].where.place, "%s", places[i]);
        p.at[i].where.doing = places[i][0] ? TP_DOING_WAITING : TP_DOING_UNKNOWN;
    }
    p.at[2].where.doing = TP_DOING_ON_CPU; /* the same line, doing another thing */
    char group[1200];
    size_t from = 0;
    assert_true(tp_stall_places_group(&p, 1, &from, group, sizeof group));
    assert_string_equal(group, "ranks 0, 2, 5, last seen in allreduce (b.py:9), waiting");
    assert_true(tp_stall_places_group(&p, 1, &from, group, sizeof group));
    assert_string_equal(group, "rank 3, last seen in allreduce (b.py:9), on a CPU");
    assert_true(tp_stall_places_group(&p, 1, &from, group, sizeof group));
    assert_string_equal(group, "rank 4"); /* no place yet */
    assert_false(tp_stall_places_group(&p, 1, &from, group, sizeof group));
    for (size_t i = 0; i < p.n; i++) /* all in one place: runs of ranks as ranges */
        p.at[i].where = p.at[0].where;
    from = 0;
    assert_true(tp_stall_places_group(&p, 4, &from, group, sizeof group));
    assert_string_equal(group, "ranks 0-3, 5, last seen in allreduce (b.py:9), waiting");
    assert_false(tp_stall_places_group(&p, 4, &from, group, sizeof group));
    tp_live_free(live);
    tp_sink_free(sink);
}

static void test_exposition(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_live *live = tp_live_new(1.0);
    uint32_t read_all = tp_sink_series(sink, TP_METRIC_DISK_READ_BYTES_PER_S, "{}");
    uint32_t read_sda = tp_sink_series(sink, TP_METRIC_DISK_READ_BYTES_PER_S, "{\"disk\":\"sda\"}");
    uint32_t cpu = tp_sink_series(sink, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    tp_sink_sample(sink, read_all, 1 * SEC, 100);
    tp_sink_sample(sink, read_sda, 1 * SEC, 100);
    tp_sink_sample(sink, read_sda, 3 * SEC, 50); /* 100 B over the first second, 50 x 2 s */
    tp_sink_sample(sink, cpu, 3 * SEC, 25);
    uint32_t th = rank_thread(sink, 3);
    tp_sink_interval(sink, th, tp_sink_name(sink, "load"), 0, SEC, 2 * SEC);
    tp_sink_mark(sink, th, TP_MARK_EPOCH, SEC, 2);
    feed(sink, live);
    char *text = expose(live);
    assert_non_null(strstr(text, "trainprof_info{agent=\"node\\\"a\",host=\"host-1\",version="));
    /* a rate as its integral, per device only */
    assert_non_null(strstr(text, "# TYPE trainprof_disk_read_bytes_total counter\n"
                                 "trainprof_disk_read_bytes_total{agent=\"node\\\"a\",disk=\"sda\"}"
                                 " 200\n"));
    /* a percentage as a ratio */
    assert_non_null(strstr(text, "trainprof_cpu_util_ratio{agent=\"node\\\"a\"} 0.25\n"));
    assert_non_null(strstr(text, "trainprof_phase_seconds_sum{agent=\"node\\\"a\",rank=\"3\","
                                 "phase=\"load\"} 1\n"));
    assert_non_null(strstr(text, "trainprof_epoch{agent=\"node\\\"a\",rank=\"3\"} 2\n"));
    assert_null(strstr(text, "trainprof_phase_device_seconds")); /* none were measured */
    assert_non_null(strstr(text, "trainprof_events_not_recorded_total{agent=\"node\\\"a\"} 0\n"));
    free(text);
    tp_live_set_events_not_recorded(live, 12);
    text = expose(live);
    assert_non_null(strstr(text, "# TYPE trainprof_events_not_recorded_total counter\n"
                                 "trainprof_events_not_recorded_total{agent=\"node\\\"a\"} 12\n"));
    free(text);
    tp_live_free(live);
    tp_sink_free(sink);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latest_values),
        cmocka_unit_test(test_totals_and_window),
        cmocka_unit_test(test_a_sampler_s_drops_are_no_timing_events),
        cmocka_unit_test(test_stalls),
        cmocka_unit_test(test_stalled_ranks_are_counted_and_grouped_by_place),
        cmocka_unit_test(test_exposition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
