/* test_ranks.c: ranks side by side on run files written through the real
 * writer: the interval-union arithmetic on hand-made regions, a straggler
 * and its cause, and the stored summary giving the same figures. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/intervals.h"
#include "analyze/rank_gpu.h"
#include "analyze/ranks.h"
#include "analyze/summary.h"
#include "analyze/summary_save.h"
#include "analyze/timings.h"
#include "core/metric_catalog.h"
#include "harness.h"
#include "rank_runs.h"
#include "render/export.h"
#include "render/verdict_words.h"
#include "store/reader.h"
#include "store/writer.h"

/* The timings of a run file written here (no stored summary): from its rows,
 * finished as the summary finishes them. */
static bool row_timings(tp_run *run, double run_s, tp_timings *t, char *err, size_t cap)
{
    if (!tp_timings_from_rows(run, run_s, t, err, cap))
        return false;
    tp_timings_finish(run, run_s, t);
    return true;
}

static void test_parts_by_interval_union(void **state)
{
    (void)state;
    char *path = rank_runs_path("union.db");
    const double extra[] = {0};
    rank_runs_write_idle(path, extra, 1, 0);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 1);
    const tp_rank_row *row = &r.rows[0];
    assert_int_equal(row->steps, 1);
    /* comm [2,5]; input [0,3] minus comm = [0,2]; compute [1,8] minus both
     * = [5,8]; other: [8,10] (my_region is in it); overlap: [2,5] */
    assert_float_equal(row->window_s, 10, 1e-9);
    assert_float_equal(row->comm_s, 3, 1e-9);
    assert_float_equal(row->input_s, 2, 1e-9);
    assert_float_equal(row->compute_s, 3, 1e-9);
    assert_float_equal(row->other_s, 2, 1e-9);
    assert_float_equal(row->comm_overlap_s, 3, 1e-9);
    assert_false(row->straggler);
    tp_ranks_free(&r);
    free(path);
}

/* DDP on gloo: the all-reduces run on a thread of their own during
 * backward. train_batch [0, 8], backward [1, 8], collectives [2, 3] (an
 * early bucket, hidden behind compute) and [6, 9] (the last bucket,
 * launched when the gradients were done): backward's [6, 8] is waiting,
 * not compute, so only [2, 3] is overlap. */
static void test_waiting_at_the_end_of_backward_is_not_compute(void **state)
{
    (void)state;
    char *path = rank_runs_path("backward.db");
    tp_sink *s = rank_runs_sink();
    uint32_t main = rank_runs_thread(s, 0, 1000, NULL), comm = rank_runs_thread(s, 0, 2000, NULL);
    uint32_t train = tp_sink_name(s, "train_batch"), bwd = tp_sink_name(s, "backward");
    uint32_t red = tp_sink_name(s, "reduce_metrics");
    tp_sink_mark(s, main, TP_MARK_STEP, 0, 0);
    tp_sink_interval(s, main, train, 0, 0, 8 * S);
    tp_sink_interval(s, main, bwd, 1, 1 * S, 8 * S);
    tp_sink_interval(s, comm, red, 0, 2 * S, 3 * S);
    tp_sink_interval(s, comm, red, 0, 6 * S, 9 * S);
    tp_sink_mark(s, main, TP_MARK_STEP, 10 * S, 0);
    rank_runs_write(path, s);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 1);
    const tp_rank_row *row = &r.rows[0];
    assert_float_equal(row->comm_s, 4, 1e-9);
    assert_float_equal(row->comm_overlap_s, 1, 1e-9); /* was 3 with the wait as compute */
    assert_float_equal(row->compute_s, 5, 1e-9);      /* [0, 2] and [3, 6] */
    assert_float_equal(row->other_s, 1, 1e-9);        /* [9, 10] */
    tp_ranks_free(&r);
    free(path);
}

/* Collectives on CUDA (NCCL): the host sees their launch, the device their
 * time. Two steps, each a backward pass [1, 6] launching bucket all-reduces
 * at 2, 4 and 5.5 s (device 0.3, 0.4 and 0.8 s), and one all-reduce of a
 * metric after it at 7 s (0.2 s): 1.7 s on the device per step, of which the
 * last bucket's and the metric's, 1.0 s, are exposed. */
static void test_collectives_timed_on_the_device(void **state)
{
    (void)state;
    char *path = rank_runs_path("nccl.db");
    tp_sink *s = rank_runs_sink();
    uint32_t main = rank_runs_thread(s, 0, 1000, NULL),
             autograd = rank_runs_thread(s, 0, 3000, NULL);
    uint32_t train = tp_sink_name(s, "train_batch"), bwd = tp_sink_name(s, "backward");
    uint32_t red = tp_sink_name(s, "reduce_metrics");
    for (uint64_t step = 0; step < 2; step++) {
        uint64_t t = step * 10 * S;
        tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
        tp_sink_interval(s, main, train, 0, t, t + 8 * S);
        tp_sink_interval(s, main, bwd, 1, t + 1 * S, t + 6 * S);
        const uint64_t at[] = {2 * S, 4 * S, 5 * S + S / 2, 7 * S};
        const uint64_t dev[] = {3 * S / 10, 4 * S / 10, 8 * S / 10, 2 * S / 10};
        for (int k = 0; k < 4; k++) { /* launches: 1 ms on the host */
            uint32_t on = k < 3 ? autograd : main;
            tp_sink_interval(s, on, red, k < 3 ? 0 : 1, t + at[k], t + at[k] + S / 1000);
            tp_sink_device_span(s, on, red, t + at[k], dev[k]);
        }
    }
    tp_sink_mark(s, main, TP_MARK_STEP, 20 * S, 0);
    rank_runs_write(path, s);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 1);
    assert_float_equal(r.rows[0].comm_device_s, 2 * 1.7, 1e-9);
    assert_float_equal(r.rows[0].comm_device_exposed_s, 2 * 1.0, 1e-9);
    assert_true(r.rows[0].comm_s < 0.01); /* the host's: launches */
    tp_ranks_free(&r);
    free(path);
}

/* The spans of s less those of cut, whatever their order and overlaps. */
static void test_spans_subtract(void **state)
{
    (void)state;
    tp_time_spans s = {0}, cut = {0}, tmp = {0};
    tp_spans_push(&s, 10, 20);
    tp_spans_push(&s, 0, 5);
    tp_spans_push(&s, 30, 40);
    tp_spans_push(&cut, 3, 12);  /* the end of one, the start of another */
    tp_spans_push(&cut, 15, 16); /* a hole */
    tp_spans_push(&cut, 35, 50); /* past the end */
    tp_spans_push(&cut, 18, 31); /* across a gap */
    tp_spans_subtract(&s, &cut, &tmp);
    const int64_t want[][2] = {{0, 3}, {12, 15}, {16, 18}, {31, 35}};
    assert_int_equal(s.n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_true(s.v[i].a == want[i][0] && s.v[i].b == want[i][1]);
    tp_spans_free(&s);
    tp_spans_free(&cut);
    tp_spans_free(&tmp);
}

/* An evaluation mid-epoch: step marks at 0, 10, 20 and 30 s and step ends at
 * 12 s (closing the step of 10 s) and 13 s (no step open: nothing). The steps
 * are [0, 10], [10, 12] and [20, 30]; [12, 20] is no step's: the ranks
 * measure the 22 s of steps, and the fetch at 14 s is in none of them. */
static void test_a_step_end_closes_a_step_and_begins_none(void **state)
{
    (void)state;
    char *path = rank_runs_path("step_end.db");
    tp_sink *s = rank_runs_sink();
    uint32_t main = rank_runs_thread(s, 0, 1000, NULL);
    const struct {
        uint32_t kind;
        uint64_t t;
    } marks[] = {{TP_MARK_STEP, 0},          {TP_MARK_STEP, 10 * S}, {TP_MARK_STEP_END, 12 * S},
                 {TP_MARK_STEP_END, 13 * S}, {TP_MARK_STEP, 20 * S}, {TP_MARK_STEP, 30 * S}};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        tp_sink_mark(s, main, marks[i].kind, marks[i].t, 0);
    tp_sink_interval(s, main, tp_sink_name(s, "dataloader_next"), 0, 14 * S, 15 * S);
    rank_runs_write(path, s);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.rows[0].steps, 3);
    assert_float_equal(r.rows[0].window_s, 22, 1e-9);
    assert_float_equal(r.rows[0].input_s, 0, 1e-9);
    assert_float_equal(r.rows[0].other_s, 22, 1e-9);
    tp_ranks_free(&r);
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = true;
    tp_timings t;
    assert_true(row_timings(run, 40, &t, err, sizeof err));
    assert_int_equal(t.nsteps, 1);
    assert_int_equal(t.steps[0].stats.count, 3);
    assert_float_equal(t.steps[0].total_s, 22, 1e-9);
    assert_int_equal(t.nrows, 1); /* the fetch at 14 s fell in no step */
    assert_float_equal(t.rows[0].in_steps_s, 0, 1e-9);
    tp_timings_free(&t);
    tp_run_close(run);
    free(path);
}

/* One thread's steps at 0, 10, 11, 12 and 13 s, each fetching 2 batches of
 * 8 samples; compile regions in the first two steps (in every step when
 * compile_all); a train_batch over the whole run. */
static void write_compiling_run(const char *path, bool compile_all)
{
    tp_sink *s = rank_runs_sink();
    uint32_t main = rank_runs_thread(s, 0, 1000, NULL), compile = tp_sink_name(s, "compile");
    const uint64_t steps[] = {0, 10 * S, 11 * S, 12 * S, 13 * S};
    for (size_t i = 0; i < 5; i++) {
        tp_sink_mark(s, main, TP_MARK_STEP, steps[i], 0);
        if (i == 4)
            break;
        tp_sink_mark(s, main, TP_MARK_SAMPLES, steps[i] + 1, 8);
        tp_sink_mark(s, main, TP_MARK_SAMPLES, steps[i] + 2, 8);
        if (i < 2 || compile_all)
            tp_sink_interval(s, main, compile, 1, steps[i] + S / 10, steps[i] + S / 5);
    }
    tp_sink_interval(s, main, tp_sink_name(s, "train_batch"), 0, 0, 13 * S);
    rank_runs_write(path, s);
}

static tp_timings timings_of(const char *path, bool raw)
{
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = raw;
    tp_summary s;
    assert_true(tp_summary_build(run, &s, err, sizeof err)); /* stored, or the rows when raw */
    tp_timings t = s.timings;
    s.timings = (tp_timings){0};
    tp_summary_free(&s);
    tp_run_close(run);
    return t;
}

static void test_compiling_first_steps_are_warm_up_and_batches_counted(void **state)
{
    (void)state;
    char *path = rank_runs_path("warmup.db");
    write_compiling_run(path, false);
    char err[256];
    tp_timings raw = timings_of(path, true);
    assert_true(tp_summary_store_save(path, err, sizeof err));
    tp_timings stored = timings_of(path, false);
    for (int k = 0; k < 2; k++) {
        const tp_timings *t = k ? &stored : &raw;
        assert_int_equal(t->nsteps, 1);
        const tp_step_row *st = &t->steps[0];
        assert_int_equal(st->warmup, 2);
        assert_float_equal(st->warmup_s, 11, 1e-9);
        assert_int_equal(st->stats.count, 2);
        assert_float_equal(st->total_s, 2, 1e-9);
        assert_int_equal(st->samples, 32);
        assert_int_equal(st->batches, 4);
        assert_int_equal(t->nrows, 2); /* compile, train_batch */
        assert_true(t->rows[0].pause && !t->rows[1].pause);
        assert_float_equal(t->rows[0].in_steps_s, 0, 1e-9);
        assert_float_equal(t->rows[1].in_steps_s, 2, 1e-9); /* the steady steps' part */
    }
    tp_timings_free(&raw);
    tp_timings_free(&stored);
    char *all = rank_runs_path("compile_all.db");
    write_compiling_run(all, true); /* every step compiles: none is warm-up */
    raw = timings_of(all, true);
    assert_int_equal(raw.steps[0].warmup, 0);
    assert_int_equal(raw.steps[0].stats.count, 4);
    assert_int_equal(raw.steps[0].batches, 8);
    tp_timings_free(&raw);
    free(all);
    free(path);
}

/* A crafted file's times at int64's ends: marks, regions and a rank's window
 * from INT64_MIN to INT64_MAX. Timings, ranks, the stored summary and the
 * trace read it without a signed overflow (UBSan halts the test on one). */
static void test_times_at_the_ends_of_int64(void **state)
{
    (void)state;
    char *path = rank_runs_path("extreme.db");
    const double extra[] = {0, 0};
    rank_runs_write_idle(path, extra, 2, 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO mark SELECT id, 'step', -9223372036854775807 - 1, 0 FROM thread;"
                     "INSERT INTO mark SELECT id, 'step', 5, 0 FROM thread;"
                     "INSERT INTO mark SELECT id, 'samples', 6, 9223372036854775807 FROM thread;"
                     "INSERT INTO mark SELECT id, 'samples', 7, 9223372036854775807 FROM thread;"
                     "INSERT INTO mark SELECT id, 'step', 9223372036854775807, 0 FROM thread;"
                     "INSERT INTO region SELECT id, 1, 0, -9223372036854775807 - 1,"
                     " 9223372036854775807 FROM thread;"
                     "INSERT INTO region SELECT id, 1, 0, 6, 9223372036854775807 FROM thread;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = true;
    tp_timings t;
    assert_true(row_timings(run, 20, &t, err, sizeof err));
    assert_true(t.nsteps >= 1 && t.steps[0].total_s > 0 && isfinite(t.steps[0].total_s));
    tp_timings_free(&t);
    FILE *null = fopen("/dev/null", "w");
    assert_true(tp_export_chrome(null, run, NULL, err, sizeof err));
    fclose(null);
    tp_run_close(run);
    tp_ranks r = rank_runs_build(path, true);
    assert_true(r.n == 2 && r.rows[0].window_s > 0 && isfinite(r.rows[0].window_s));
    tp_ranks_free(&r);
    assert_true(tp_summary_store_save(path, err, sizeof err));
    r = rank_runs_build(path, false);
    assert_true(r.n == 2 && isfinite(r.rows[0].window_s));
    tp_ranks_free(&r);
    free(path);
}

static void test_straggler_named_with_its_input(void **state)
{
    (void)state;
    char *path = rank_runs_path("straggler.db");
    const double extra[] = {0, 0, 2, 0}; /* rank 2 fetches 2 s longer */
    rank_runs_write_idle(path, extra, 4, 0);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.nstragglers, 1);
    assert_true(r.rows[2].straggler);
    assert_true(r.rows[2].cause.input); /* its input, not its compute */
    assert_float_equal(r.rows[2].cause.part_s - r.rows[2].cause.median_part_s, 2, 1e-6);
    assert_float_equal(r.median_own_s, 5, 1e-9);
    assert_float_equal(r.rows[2].excess, 0.4, 1e-9); /* 7 s of own work vs 5 s */
    tp_ranks_free(&r);
    free(path);
}

/* Two ranks, two epochs of three 10 s steps (1 s fetching, 6 s training),
 * between them 20 s in which rank 0 evaluates alone (fetching its
 * validation's batches: dataloader_next) and rank 1 waits for it in a
 * barrier (reduce_metrics): no step's. Neither rank is a straggler, and
 * each one's parts are its steps': 6 steps of 10 s, 6 s of input. */
static void test_an_evaluation_one_rank_runs_alone_between_epochs_is_no_step_s(void **state)
{
    (void)state;
    char *path = rank_runs_path("evaluation.db");
    tp_sink *s = rank_runs_sink();
    uint32_t in = tp_sink_name(s, "dataloader_next"), train = tp_sink_name(s, "train_batch");
    uint32_t comm = tp_sink_name(s, "reduce_metrics");
    for (int rank = 0; rank < 2; rank++) {
        uint32_t main = rank_runs_thread(s, rank, 1000 + rank, NULL);
        for (uint64_t epoch = 0; epoch < 2; epoch++) {
            uint64_t t0 = epoch * 50 * S;
            tp_sink_mark(s, main, TP_MARK_EPOCH, t0, (int64_t)epoch);
            for (uint64_t k = 0; k < 3; k++) {
                uint64_t t = t0 + 10 * k * S;
                tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
                tp_sink_interval(s, main, in, 0, t, t + S);
                tp_sink_interval(s, main, train, 0, t + S, t + 7 * S);
            }
            tp_sink_mark(s, main, TP_MARK_STEP, t0 + 30 * S, 0); /* the pass's end */
            if (epoch == 0)                                      /* the evaluation, [30 s, 50 s] */
                tp_sink_interval(s, main, rank == 0 ? in : comm, 0, 30 * S, 50 * S);
        }
    }
    rank_runs_write(path, s);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.nstragglers, 0);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(r.rows[i].steps, 6);
        assert_float_equal(r.rows[i].window_s, 60, 1e-9);
        assert_float_equal(r.rows[i].input_s, 6, 1e-9);
        assert_float_equal(r.rows[i].compute_s, 36, 1e-9);
        assert_float_equal(r.rows[i].comm_s, 0, 1e-9);
    }
    tp_ranks_free(&r);
    free(path);
}

/* Two ranks of ten steps: the first compiles (40 s), the others take 10 s
 * (1 s of input, 6 s of compute), but rank 0's sixth, which a capture window
 * took (50 s, 46 s of compute under the profiler). The ranks measure the
 * steady steps only, as the timings time them: 8 on rank 0, 9 on rank 1, the
 * same 1 s of input and 6 s of compute a step, no straggler (rank 0 was one,
 * 17 % over the median, when every step counted); each still counts its 10
 * steps, and its GPU is 90 % busy over its measured steps, 0 % while it
 * compiled. Stored, the same. */
static void test_warm_up_and_capture_windows_steps_are_not_measured(void **state)
{
    (void)state;
    char *path = rank_runs_path("measured.db");
    tp_sink *s = rank_runs_sink();
    uint32_t in = tp_sink_name(s, "dataloader_next"), train = tp_sink_name(s, "train_batch");
    uint32_t compile = tp_sink_name(s, "compile");
    for (int rank = 0; rank < 2; rank++) {
        uint32_t main = rank_runs_thread(s, rank, 1000 + rank, NULL);
        uint64_t t = 0;
        for (int k = 0; k < 10; k++) {
            bool window = rank == 0 && k == 5;
            uint64_t len = k == 0 ? 40 * S : window ? 50 * S : 10 * S;
            tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
            tp_sink_interval(s, main, in, 0, t, t + S);
            tp_sink_interval(s, main, train, 0, t + S, t + len - 3 * S);
            if (k == 0)
                tp_sink_interval(s, main, compile, 1, t + S, t + 30 * S);
            if (window)
                rank_runs_window(s, main, rank, t, t + len);
            t += len;
        }
        tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
    }
    for (int g = 0; g < 2; g++) { /* rank g's GPU (its local rank) */
        uint32_t util =
            tp_sink_series(s, "gpu_util_percent", g ? "{\"gpu\":\"1\"}" : "{\"gpu\":\"0\"}");
        for (uint64_t t = 0; t <= 170; t += 5)
            tp_sink_sample(s, util, t * S, t < 40 ? 0 : 90);
    }
    rank_runs_write(path, s);
    char err[256];
    tp_ranks raw = rank_runs_build(path, true);
    assert_true(tp_summary_store_save(path, err, sizeof err));
    tp_ranks stored = rank_runs_build(path, false);
    for (int k = 0; k < 2; k++) {
        const tp_ranks *r = k ? &stored : &raw;
        assert_int_equal(r->n, 2);
        assert_int_equal(r->nstragglers, 0);
        for (size_t i = 0; i < 2; i++) {
            double n = i == 0 ? 8 : 9;
            assert_float_equal(r->rows[i].gpu_util_percent, 90, 1e-9);
            assert_int_equal(r->rows[i].steps, 10);
            assert_int_equal(r->rows[i].measured_steps, (size_t)n);
            assert_float_equal(r->rows[i].window_s, 10 * n, 1e-9);
            assert_float_equal(r->rows[i].input_s, n, 1e-9);
            assert_float_equal(r->rows[i].compute_s, 6 * n, 1e-9);
        }
    }
    tp_ranks_free(&raw);
    tp_ranks_free(&stored);
    free(path);
}

/* Two ranks, six steps of 10 s: rank 1's train_batch takes 3 s longer from
 * its fourth step on. Over the whole run its own work is 3.5 s a step
 * against rank 0's 2 s (27 % above the median of the two); over the steps
 * since (30 s to 60 s), 5 s against 2 s (43 %): the straggler the later
 * steps have, not the average of steps that were even and then apart. */
static void test_ranks_over_the_latest_steps_only(void **state)
{
    (void)state;
    char *path = rank_runs_path("latest.db");
    tp_sink *s = rank_runs_sink();
    uint32_t in = tp_sink_name(s, "dataloader_next"), train = tp_sink_name(s, "train_batch");
    for (int rank = 0; rank < 2; rank++) {
        uint32_t main = rank_runs_thread(s, rank, 1000 + rank, NULL);
        for (uint64_t k = 0; k < 6; k++) {
            uint64_t t = 10 * k * S, extra = rank == 1 && k >= 3 ? 3 * S : 0;
            tp_sink_mark(s, main, TP_MARK_STEP, t, 0);
            tp_sink_interval(s, main, in, 0, t, t + S);
            tp_sink_interval(s, main, train, 0, t + S, t + 2 * S + extra);
        }
        tp_sink_mark(s, main, TP_MARK_STEP, 60 * S, 0);
    }
    rank_runs_write(path, s);
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = true;
    tp_ranks whole, latest, none;
    assert_true(tp_ranks_from_rows(run, &whole, err, sizeof err));
    assert_true(tp_ranks_from_rows_between(run, 30 * S, 60 * S, &latest, err, sizeof err));
    /* a window that holds no whole step: no rank has steps in it */
    assert_true(tp_ranks_from_rows_between(run, 31 * S, 39 * S, &none, err, sizeof err));
    tp_run_close(run);
    assert_int_equal(whole.n, 2);
    assert_int_equal(whole.rows[1].steps, 6);
    assert_float_equal(whole.rows[1].excess, 3.5 / 2.75 - 1, 1e-9);
    assert_int_equal(latest.n, 2);
    assert_int_equal(latest.rows[0].steps, 3);
    assert_int_equal(latest.rows[1].steps, 3);
    assert_int_equal(latest.rows[1].t0_ns, 30 * S);
    assert_int_equal(latest.rows[1].t1_ns, 60 * S);
    assert_float_equal(latest.rows[1].compute_s, 12, 1e-9); /* 4 s a step, three steps */
    assert_float_equal(latest.rows[1].excess, 5 / 3.5 - 1, 1e-9);
    assert_true(latest.rows[1].straggler && !latest.rows[0].straggler);
    assert_int_equal(none.n, 0);
    tp_ranks_free(&whole);
    tp_ranks_free(&latest);
    tp_ranks_free(&none);
    free(path);
}

/* Own work 5 s in a 50 s step: 0.6 s more (12 %) is under 2 % of the step,
 * noise not worth a verdict; 2 s more (40 %, 4 % of the step) is a straggler. */
static void test_an_excess_too_small_for_the_step_is_no_straggler(void **state)
{
    (void)state;
    char *path = rank_runs_path("small_excess.db");
    const double small[] = {0, 0, 0.6, 0};
    rank_runs_write_idle(path, small, 4, 40);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 4);
    assert_float_equal(r.rows[2].excess, 0.12, 1e-9);
    assert_float_equal(r.median_step_s, 50, 1e-9);
    assert_int_equal(r.nstragglers, 0);
    assert_false(r.rows[2].straggler);
    tp_ranks_free(&r);
    free(path);
    path = rank_runs_path("large_excess.db");
    const double large[] = {0, 0, 2, 0};
    rank_runs_write_idle(path, large, 4, 40);
    r = rank_runs_build(path, true);
    assert_int_equal(r.nstragglers, 1);
    assert_true(r.rows[2].straggler);
    tp_ranks_free(&r);
    free(path);
}

/* A straggler whose step thread waited for a CPU (the recorder's
 * step_thread_cpu_wait_percent of its process) far more than the median
 * rank's is told so, from the rows and from the stored summary alike; the
 * others' waits alike tell nothing. */
static void test_straggler_held_back_by_others_on_its_cpus(void **state)
{
    (void)state;
    char *path = rank_runs_path("held.db");
    tp_sink *s = rank_runs_sink();
    const double extra[] = {0, 0, 2, 0}, waited[] = {3, 4, 40, 2};
    for (int r = 0; r < 4; r++) {
        rank_runs_regions(s, r, extra[r], 0, NULL);
        char labels[48];
        snprintf(labels, sizeof labels, "{\"pid\":\"%d\"}", 100 + r);
        uint32_t series = tp_sink_series(s, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, labels);
        for (uint64_t t = 1; t <= 9; t++)
            tp_sink_sample(s, series, t * S, waited[r]);
    }
    rank_runs_write(path, s);
    char err[256];
    for (int stored = 0; stored < 2; stored++) {
        if (stored)
            assert_true(tp_summary_store_save(path, err, sizeof err));
        tp_ranks r = rank_runs_build(path, !stored);
        assert_int_equal(r.nstragglers, 1);
        assert_true(r.rows[2].straggler && r.rows[2].cause.cpu_held);
        assert_float_equal(r.rows[2].cpu_wait_percent, 40, 1e-9);
        assert_float_equal(r.rows[2].cause.median_cpu_wait, 3.5, 1e-9);
        assert_float_equal(r.rows[0].cpu_wait_percent, 3, 1e-9);
        assert_non_null(strstr(rank_runs_cause_words(&r.rows[2]),
                               "its step thread waited for a CPU 40 % of the time vs 4 % on the "
                               "median rank"));
        tp_ranks_free(&r);
    }
    free(path);
    /* a run recorded without it: unknown, and no such cause */
    path = rank_runs_path("unheld.db");
    rank_runs_write_idle(path, extra, 4, 0);
    tp_ranks r = rank_runs_build(path, true);
    assert_true(isnan(r.rows[2].cpu_wait_percent) && !r.rows[2].cause.cpu_held);
    assert_null(strstr(rank_runs_cause_words(&r.rows[2]), "waited for a CPU"));
    tp_ranks_free(&r);
    free(path);
}

static void test_stored_summary_gives_the_same_rows(void **state)
{
    (void)state;
    char *path = rank_runs_path("stored.db");
    const double extra[] = {0.5, 0, 2, 0.25};
    rank_runs_write_idle(path, extra, 4, 0);
    char err[256];
    assert_true(tp_summary_store_save(path, err, sizeof err));
    tp_ranks raw = rank_runs_build(path, true), stored = rank_runs_build(path, false);
    assert_int_equal(raw.n, stored.n);
    for (size_t i = 0; i < raw.n; i++) {
        const tp_rank_row *a = &raw.rows[i], *b = &stored.rows[i];
        assert_int_equal(a->rank, b->rank);
        assert_int_equal(a->steps, b->steps);
        assert_true(a->window_s == b->window_s && a->input_s == b->input_s &&
                    a->compute_s == b->compute_s && a->comm_s == b->comm_s &&
                    a->other_s == b->other_s && a->comm_overlap_s == b->comm_overlap_s);
        assert_true(a->straggler == b->straggler && a->excess == b->excess);
        assert_memory_equal(&a->cause, &b->cause, sizeof a->cause);
    }
    tp_ranks_free(&raw);
    tp_ranks_free(&stored);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_by_interval_union),
        cmocka_unit_test(test_waiting_at_the_end_of_backward_is_not_compute),
        cmocka_unit_test(test_collectives_timed_on_the_device),
        cmocka_unit_test(test_spans_subtract),
        cmocka_unit_test(test_a_step_end_closes_a_step_and_begins_none),
        cmocka_unit_test(test_an_evaluation_one_rank_runs_alone_between_epochs_is_no_step_s),
        cmocka_unit_test(test_warm_up_and_capture_windows_steps_are_not_measured),
        cmocka_unit_test(test_compiling_first_steps_are_warm_up_and_batches_counted),
        cmocka_unit_test(test_times_at_the_ends_of_int64),
        cmocka_unit_test(test_straggler_named_with_its_input),
        cmocka_unit_test(test_ranks_over_the_latest_steps_only),
        cmocka_unit_test(test_an_excess_too_small_for_the_step_is_no_straggler),
        cmocka_unit_test(test_straggler_held_back_by_others_on_its_cpus),
        cmocka_unit_test(test_stored_summary_gives_the_same_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
