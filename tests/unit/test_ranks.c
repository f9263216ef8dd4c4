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
#include "harness.h"
#include "render/export.h"
#include "render/verdict_words.h"
#include "store/reader.h"
#include "store/writer.h"

#define S 1000000000ull /* one second in ns */

static char *tmp_path(const char *name)
{
    char *root = fx_root();
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", root, name) > 0);
    free(root);
    return p;
}

/* Threads written with local rank -1 (the environment named none) when set. */
static bool no_local_rank;
/* When set, rank r's threads had CUDA_VISIBLE_DEVICES visible[r]. */
static const char *const *visible;

static uint32_t thread(tp_sink *s, int rank, int tid)
{
    tp_thread_info t = {0};
    t.pid = 100 + rank;
    t.tid = tid;
    t.rank = rank;
    t.local_rank = no_local_rank ? -1 : rank;
    t.world_size = 4;
    if (visible) {
        t.cuda_visible_set = true;
        snprintf(t.cuda_visible, sizeof t.cuda_visible, "%s", visible[rank]);
    }
    return tp_sink_thread(s, &t);
}

/* Rank r over [0, 10 s] (two step marks; idle s more in "other" at its end):
 * on its main thread input [0, 3] (plus extra_input s), compute [1, 8] with a
 * nested region, and on a second thread communication [2, 5]. */
static void rank_regions(tp_sink *s, int rank, double extra_input, double idle)
{
    uint32_t main = thread(s, rank, 1000 + rank), comm = thread(s, rank, 2000 + rank);
    uint32_t in = tp_sink_name(s, "dataloader_next"), train = tp_sink_name(s, "train_batch");
    uint32_t fwd = tp_sink_name(s, "forward"), red = tp_sink_name(s, "reduce_metrics");
    uint32_t mine = tp_sink_name(s, "my_region"); /* no category: other */
    uint64_t x = (uint64_t)(extra_input * S);
    tp_sink_mark(s, main, TP_MARK_STEP, 0, 0);
    tp_sink_interval(s, main, in, 0, 0, 3 * S + x);
    tp_sink_interval(s, main, train, 0, 1 * S + x, 8 * S + x);
    tp_sink_interval(s, main, fwd, 1, 1 * S + x, 4 * S + x);
    tp_sink_interval(s, main, mine, 0, 8 * S + x, 9 * S + x);
    tp_sink_interval(s, comm, red, 0, 2 * S + x, 5 * S + x);
    tp_sink_mark(s, main, TP_MARK_STEP, 10 * S + x + (uint64_t)(idle * S), 0);
}

/* A sink for one node's run of "train". */
static tp_sink *run_sink(void)
{
    tp_sink *s = tp_sink_new(0);
    tp_sink_meta(s, "command", "train");
    return s;
}

/* Writes what s holds into a new run file at path, through the real writer;
 * frees s. */
static void write_run(const char *path, tp_sink *s) { fx_write_sink(path, s, "node1"); }

static void write_ranks_idle(const char *path, const double *extra, int n, double idle)
{
    tp_sink *s = run_sink();
    for (int r = 0; r < n; r++)
        rank_regions(s, r, extra[r], idle);
    write_run(path, s);
}

static void write_ranks(const char *path, const double *extra, int n)
{
    write_ranks_idle(path, extra, n, 0);
}

static tp_ranks build(const char *path, bool raw)
{
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = raw;
    tp_ranks r;
    assert_true(tp_ranks_from_rows(run, &r, err, sizeof err));
    tp_run_close(run);
    return r;
}

/* The timings of a run file written here (no stored summary): from its rows,
 * finished as the summary finishes them. */
static bool row_timings(tp_run *run, double run_s, tp_timings *t, char *err, size_t cap)
{
    if (!tp_timings_from_rows(run, run_s, t, err, cap))
        return false;
    tp_timings_finish(run, run_s, t);
    return true;
}

/* A straggler's cause in the words the report says it (a single-agent run:
 * no node is named). */
static const char *cause_words(const tp_rank_row *row)
{
    static char text[TP_CAUSE_MAX];
    static const tp_run_inventory no_agents = {0};
    tp_straggler_cause_text(text, sizeof text, &no_agents, row);
    return text;
}

static void test_parts_by_interval_union(void **state)
{
    (void)state;
    char *path = tmp_path("union.db");
    const double extra[] = {0};
    write_ranks(path, extra, 1);
    tp_ranks r = build(path, true);
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
    char *path = tmp_path("backward.db");
    tp_sink *s = run_sink();
    uint32_t main = thread(s, 0, 1000), comm = thread(s, 0, 2000);
    uint32_t train = tp_sink_name(s, "train_batch"), bwd = tp_sink_name(s, "backward");
    uint32_t red = tp_sink_name(s, "reduce_metrics");
    tp_sink_mark(s, main, TP_MARK_STEP, 0, 0);
    tp_sink_interval(s, main, train, 0, 0, 8 * S);
    tp_sink_interval(s, main, bwd, 1, 1 * S, 8 * S);
    tp_sink_interval(s, comm, red, 0, 2 * S, 3 * S);
    tp_sink_interval(s, comm, red, 0, 6 * S, 9 * S);
    tp_sink_mark(s, main, TP_MARK_STEP, 10 * S, 0);
    write_run(path, s);
    tp_ranks r = build(path, true);
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
    char *path = tmp_path("nccl.db");
    tp_sink *s = run_sink();
    uint32_t main = thread(s, 0, 1000), autograd = thread(s, 0, 3000);
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
    write_run(path, s);
    tp_ranks r = build(path, true);
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
 * are [0, 10], [10, 12] and [20, 30]; [12, 20] is no step's, and the ranks'
 * window still runs from the first mark to the last. */
static void test_a_step_end_closes_a_step_and_begins_none(void **state)
{
    (void)state;
    char *path = tmp_path("step_end.db");
    tp_sink *s = run_sink();
    uint32_t main = thread(s, 0, 1000);
    const struct {
        uint32_t kind;
        uint64_t t;
    } marks[] = {{TP_MARK_STEP, 0},          {TP_MARK_STEP, 10 * S}, {TP_MARK_STEP_END, 12 * S},
                 {TP_MARK_STEP_END, 13 * S}, {TP_MARK_STEP, 20 * S}, {TP_MARK_STEP, 30 * S}};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        tp_sink_mark(s, main, marks[i].kind, marks[i].t, 0);
    tp_sink_interval(s, main, tp_sink_name(s, "dataloader_next"), 0, 14 * S, 15 * S);
    write_run(path, s);
    tp_ranks r = build(path, true);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.rows[0].steps, 3);
    assert_float_equal(r.rows[0].window_s, 30, 1e-9);
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
    tp_sink *s = run_sink();
    uint32_t main = thread(s, 0, 1000), compile = tp_sink_name(s, "compile");
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
    write_run(path, s);
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
    char *path = tmp_path("warmup.db");
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
    char *all = tmp_path("compile_all.db");
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
    char *path = tmp_path("extreme.db");
    const double extra[] = {0, 0};
    write_ranks(path, extra, 2);
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
    tp_ranks r = build(path, true);
    assert_true(r.n == 2 && r.rows[0].window_s > 0 && isfinite(r.rows[0].window_s));
    tp_ranks_free(&r);
    assert_true(tp_summary_store_save(path, err, sizeof err));
    r = build(path, false);
    assert_true(r.n == 2 && isfinite(r.rows[0].window_s));
    tp_ranks_free(&r);
    free(path);
}

static void test_straggler_named_with_its_input(void **state)
{
    (void)state;
    char *path = tmp_path("straggler.db");
    const double extra[] = {0, 0, 2, 0}; /* rank 2 fetches 2 s longer */
    write_ranks(path, extra, 4);
    tp_ranks r = build(path, true);
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

/* Own work 5 s in a 50 s step: 0.6 s more (12 %) is under 2 % of the step,
 * noise not worth a verdict; 2 s more (40 %, 4 % of the step) is a straggler. */
static void test_an_excess_too_small_for_the_step_is_no_straggler(void **state)
{
    (void)state;
    char *path = tmp_path("small_excess.db");
    const double small[] = {0, 0, 0.6, 0};
    write_ranks_idle(path, small, 4, 40);
    tp_ranks r = build(path, true);
    assert_int_equal(r.n, 4);
    assert_float_equal(r.rows[2].excess, 0.12, 1e-9);
    assert_float_equal(r.median_step_s, 50, 1e-9);
    assert_int_equal(r.nstragglers, 0);
    assert_false(r.rows[2].straggler);
    tp_ranks_free(&r);
    free(path);
    path = tmp_path("large_excess.db");
    const double large[] = {0, 0, 2, 0};
    write_ranks_idle(path, large, 4, 40);
    r = build(path, true);
    assert_int_equal(r.nstragglers, 1);
    assert_true(r.rows[2].straggler);
    tp_ranks_free(&r);
    free(path);
}

/* GPUs 0-3 busy util[g] % through [0, 12 s]. */
static void gpu_util_series(tp_sink *s, const double *util)
{
    for (int g = 0; g < 4; g++) {
        char labels[32];
        snprintf(labels, sizeof labels, "{\"gpu\":\"%d\"}", g);
        uint32_t id = tp_sink_series(s, "gpu_util_percent", labels);
        for (int t = 0; t <= 12; t++)
            tp_sink_sample(s, id, (uint64_t)t * S, util[g]);
    }
}

/* The given ranks on one agent, none with a local rank (mp.spawn), rank 2
 * fetching 2 s longer; GPU g busy util[g] % over the whole window. */
static void write_spawned(const char *path, const int *ranks, int n, const double *util)
{
    tp_sink *s = run_sink();
    no_local_rank = true;
    for (int i = 0; i < n; i++)
        rank_regions(s, ranks[i], ranks[i] == 2 ? 2 : 0, 0);
    no_local_rank = false;
    gpu_util_series(s, util);
    write_run(path, s);
}

/* mp.spawn exports no LOCAL_RANK: an agent's contiguous ranks take their
 * place in the block as local rank, so a straggler's GPU can be named; with
 * a gap the local ranks stay unknown. */
static void test_local_ranks_inferred_from_an_agents_block_of_ranks(void **state)
{
    (void)state;
    const double util[] = {95, 95, 40, 95};
    char *path = tmp_path("spawned.db");
    const int block[] = {0, 1, 2, 3};
    write_spawned(path, block, 4, util);
    tp_ranks r = build(path, true);
    assert_int_equal(r.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r.rows[i].local_rank, i);
    assert_true(r.rows[2].straggler);
    assert_non_null(strstr(cause_words(&r.rows[2]), "its GPU 2 is 40 % busy vs 95 %"));
    tp_ranks_free(&r);
    free(path);

    path = tmp_path("gap.db");
    const int gap[] = {0, 2, 3};
    write_spawned(path, gap, 3, util);
    r = build(path, true);
    assert_int_equal(r.n, 3);
    for (size_t i = 0; i < r.n; i++)
        assert_int_equal(r.rows[i].local_rank, -1);
    assert_true(r.rows[1].straggler && r.rows[1].rank == 2);
    assert_int_equal(r.rows[1].cause.gpu_note, TP_GPU_NOTE_NONE);
    tp_ranks_free(&r);
    free(path);
}

/* CUDA_VISIBLE_DEVICES against the node's GPUs: indices, UUIDs and their
 * prefixes, one GPU or one per local rank; what CUDA would refuse names none. */
static void test_a_ranks_gpu_from_its_visible_devices(void **state)
{
    (void)state;
    char a[] = "GPU-aa11", b[] = "GPU-ab22", c[] = "GPU-cc33";
    tp_run_gpu gpus[] = {{1, 0, NULL, a, 0, NULL},
                         {1, 1, NULL, b, 0, NULL},
                         {1, 2, NULL, c, 0, NULL},
                         {2, 0, NULL, c, 0, NULL}};
    tp_run run;
    memset(&run, 0, sizeof run);
    run.gpus = gpus;
    run.ngpus = 4;
    assert_int_equal(tp_rank_gpu(&run, 1, false, "", 2), 2);   /* all visible: its local rank */
    assert_int_equal(tp_rank_gpu(&run, 1, false, "", -1), -1); /* ... unknown */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2", 0), 2);   /* one GPU: that one */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2", -1), 2);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2, 0,1", 1), 0); /* its local rank's entry */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2,0", 2), -1);   /* past the list */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-cc33", 0), 2);
    assert_int_equal(tp_rank_gpu(&run, 2, true, "GPU-cc33", 0), 0);     /* that agent's */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-c,GPU-ab", 1), 1); /* prefixes */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-a", 0), -1);       /* two GPUs' prefix */
    /* CUDA reads up to the MIG entry: the process sees GPU 0 only */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "0,MIG-1,2", 2), 0);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "1,2,MIG-1,0", 2), -1); /* 2 seen, past them */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "1,2,MIG-1,0", 1), 2);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "", 0), -1); /* no GPU visible */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "-1", 0), -1);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-ff", 0), -1); /* not on this node */
}

/* Each rank bound to one GPU in reverse order (as Slurm's --gpu-bind may),
 * rank 2 the straggler on GPU 1, which is the idle one: the cause names GPU
 * 1, from rows and from the stored summary alike. */
static void test_a_straggler_named_with_the_gpu_it_was_bound_to(void **state)
{
    (void)state;
    const double util[] = {95, 40, 95, 95};
    const char *const bound[] = {"3", "2", "1", "GPU-synthetic-0"};
    char *path = tmp_path("bound.db");
    tp_sink *s = run_sink();
    tp_gpu_info g = {0};
    snprintf(g.uuid, sizeof g.uuid, "GPU-synthetic-0");
    tp_sink_gpu(s, &g);
    visible = bound;
    for (int r = 0; r < 4; r++)
        rank_regions(s, r, r == 2 ? 2 : 0, 0);
    visible = NULL;
    gpu_util_series(s, util);
    write_run(path, s);
    for (int stored = 0; stored < 2; stored++) {
        char err[256];
        if (stored)
            assert_true(tp_summary_store_save(path, err, sizeof err));
        tp_ranks r = build(path, !stored);
        assert_int_equal(r.n, 4);
        const int expect[] = {3, 2, 1, 0};
        for (int i = 0; i < 4; i++)
            assert_int_equal(r.rows[i].gpu, expect[i]);
        assert_true(r.rows[2].straggler);
        assert_non_null(strstr(cause_words(&r.rows[2]), "its GPU 1 is 40 % busy vs 95 %"));
        tp_ranks_free(&r);
    }
    free(path);
}

static void test_stored_summary_gives_the_same_rows(void **state)
{
    (void)state;
    char *path = tmp_path("stored.db");
    const double extra[] = {0.5, 0, 2, 0.25};
    write_ranks(path, extra, 4);
    char err[256];
    assert_true(tp_summary_store_save(path, err, sizeof err));
    tp_ranks raw = build(path, true), stored = build(path, false);
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
        cmocka_unit_test(test_compiling_first_steps_are_warm_up_and_batches_counted),
        cmocka_unit_test(test_times_at_the_ends_of_int64),
        cmocka_unit_test(test_straggler_named_with_its_input),
        cmocka_unit_test(test_an_excess_too_small_for_the_step_is_no_straggler),
        cmocka_unit_test(test_local_ranks_inferred_from_an_agents_block_of_ranks),
        cmocka_unit_test(test_a_ranks_gpu_from_its_visible_devices),
        cmocka_unit_test(test_a_straggler_named_with_the_gpu_it_was_bound_to),
        cmocka_unit_test(test_stored_summary_gives_the_same_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
