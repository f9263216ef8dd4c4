/* test_store.c: the run file: writing, reading back, refusing what is not a
 * trainprof run file, reading a file whose recorder was killed. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyze/summary.h"
#include "core/metric_catalog.h"
#include "store/reader_live.h"
#include "core/run_keys.h"
#include "harness.h"
#include "store/reader.h"
#include "store/schema.h"
#include "store/writer.h"

static char *tmp_path(const char *name)
{
    char *root = fx_root();
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", root, name) > 0);
    free(root);
    return p;
}

/* Fills a sink with two series, metadata, an unavailable note and a GPU. */
static void fill(tp_sink *s)
{
    uint32_t cpu = tp_sink_series(s, "cpu_util_percent", "{}");
    uint32_t gpu = tp_sink_series(s, "gpu_util_percent", "{\"gpu\":\"0\"}");
    assert_int_equal(tp_sink_series(s, "cpu_util_percent", "{}"), cpu); /* same id again */
    for (int i = 0; i < 100; i++) {
        tp_sink_sample(s, cpu, (uint64_t)i * 1000, i);
        tp_sink_sample(s, gpu, (uint64_t)i * 1000, 100 - i);
    }
    tp_sink_sample(s, cpu, 999999, -1.0); /* never negative: dropped */
    tp_sink_sample(s, cpu, 999998, NAN);  /* never NaN: dropped */
    tp_sink_meta(s, "command", "python train.py");
    tp_sink_meta(s, "status", "finished");
    tp_sink_unavailable(s, "rapl", "no /sys/class/powercap");
    tp_gpu_info g = {0, "Fake GPU", "GPU-1", 1 << 30, "counter"};
    tp_sink_gpu(s, &g);
}

static void write_run(const char *path, bool finish)
{
    char err[256];
    tp_writer *w = tp_writer_create(path, false, "node7", err, sizeof err);
    assert_non_null(w);
    tp_sink *s = tp_sink_new(0);
    fill(s);
    tp_batch b = {0};
    tp_sink_take(s, &b);
    assert_true(tp_writer_apply(w, &b, err, sizeof err));
    tp_batch_free(&b);
    tp_sink_free(s);
    if (finish)
        tp_writer_finish(w);
}

/* Writes a run in a child that then dies without closing the file, as a
 * recorder killed with SIGKILL would. */
static void write_run_and_die(const char *path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        write_run(path, false);
        raise(SIGKILL);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void check_contents(const char *path)
{
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    assert_string_equal(tp_run_meta_get(run, "command"), "python train.py");
    assert_int_equal(run->nagents, 1);
    assert_string_equal(run->agents[0].name, "node7");
    assert_int_equal(run->nunavailable, 1);
    assert_string_equal(run->unavailable[0].source, "rapl");
    assert_int_equal(run->ngpus, 1);
    assert_string_equal(run->gpus[0].energy_source, "counter");
    assert_int_equal(run->last_t_ns, 99000);
    tp_summary s;
    assert_true(tp_summary_build(run, &s, err, sizeof err));
    assert_int_equal(s.n, 2);
    const tp_series_summary *cpu = tp_summary_find(&s, 1, "cpu_util_percent", "{}");
    assert_non_null(cpu);
    assert_int_equal(cpu->stats.count, 100);
    assert_true(fabs(cpu->stats.mean - 49.5) < 1e-9);
    assert_true(cpu->stats.max == 99);
    assert_string_equal(cpu->series->unit, "percent");
    tp_summary_free(&s);
    tp_run_close(run);
}

static void test_roundtrip(void **state)
{
    (void)state;
    char *path = tmp_path("run.db");
    write_run(path, true);
    check_contents(path);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_true(access(wal, F_OK) != 0); /* one self-contained file */
    free(path);
}

static void test_killed_writer_is_readable(void **state)
{
    (void)state;
    char *path = tmp_path("killed.db");
    write_run_and_die(path);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_true(access(wal, F_OK) == 0); /* the data is still in the WAL */
    check_contents(path);
    free(path);
}

static void test_refuses_overwrite(void **state)
{
    (void)state;
    char *path = tmp_path("exists.db");
    write_run(path, true);
    char err[256];
    assert_null(tp_writer_create(path, false, NULL, err, sizeof err));
    assert_non_null(strstr(err, "already exists (use --force"));
    tp_writer *w = tp_writer_create(path, true, NULL, err, sizeof err);
    assert_non_null(w);
    tp_writer_finish(w);
    assert_null(tp_writer_create("/nonexistent-dir/run.db", false, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cannot create /nonexistent-dir/run.db"));
    free(path);
}

#define TP_STR_(x) #x
#define TP_STR(x)  TP_STR_(x)

static void expect_refused(const char *path, const char *text)
{
    char err[512];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_null(run);
    if (!strstr(err, text))
        fail_msg("expected '%s' in '%s'", text, err);
    assert_null(strchr(err, '\n')); /* one line */
}

static void test_refuses_foreign_files(void **state)
{
    (void)state;
    char *path = tmp_path("text.db");
    FILE *f = fopen(path, "w");
    fputs("epoch,loss\n1,0.5\n", f);
    fclose(f);
    expect_refused(path, "not a trainprof run file (not an SQLite database)");
    free(path);

    path = tmp_path("other.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    tp_exec(db, "CREATE TABLE t (x); PRAGMA user_version=3;");
    sqlite3_close(db);
    expect_refused(path, "not a trainprof run file (an SQLite database of another kind)");
    free(path);

    path = tmp_path("empty.db"); /* a recorder killed as it started */
    fclose(fopen(path, "w"));
    expect_refused(path, "an empty file: a run that ended before it began");
    free(path);

    path = tmp_path("newer.db");
    write_run(path, true);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    tp_exec(db, "PRAGMA user_version=99");
    sqlite3_close(db);
    expect_refused(path, "schema version 99 is newer than this trainprof reads (" TP_STR(
                             TP_SCHEMA_VERSION) ")");
    free(path);

    expect_refused("/nonexistent/run.db", "no such file");
    expect_refused("/tmp", "not a regular file");
}

typedef struct producer_arg {
    tp_sink *sink;
    int index;
} producer_arg;

static void *producer(void *p)
{
    producer_arg *a = p;
    char labels[32];
    snprintf(labels, sizeof labels, "{\"cpu\":\"%d\"}", a->index);
    uint32_t id = tp_sink_series(a->sink, "cpu_util_percent", labels);
    for (int i = 0; i < 20000; i++)
        tp_sink_sample(a->sink, id, (uint64_t)i, i % 100);
    return NULL;
}

/* Four producers and one consumer on one sink: nothing lost, nothing twice
 * (and, under TSan, no race). */
static void test_sink_many_producers(void **state)
{
    (void)state;
    tp_sink *s = tp_sink_new(0);
    pthread_t t[4];
    producer_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (producer_arg){s, i};
        pthread_create(&t[i], NULL, producer, &args[i]);
    }
    size_t taken = 0, series = 0;
    tp_batch b = {0};
    for (int joined = 0; joined < 2; joined++) {
        if (joined)
            for (int i = 0; i < 4; i++)
                pthread_join(t[i], NULL);
        for (int k = 0; k < 200; k++) {
            tp_sink_take(s, &b);
            taken += b.samples.len;
            series += b.series.len;
            tp_batch_clear(&b);
        }
    }
    assert_int_equal(taken, 4 * 20000);
    assert_int_equal(series, 4);
    uint64_t total;
    tp_sink_counts(s, &total, NULL, NULL);
    assert_int_equal(total, 4 * 20000);
    tp_batch_free(&b);
    tp_sink_free(s);
}

/* A writer that falls behind costs events, not memory without end: the
 * sink keeps at most its bound of regions and device times pending, and
 * of marks apart (a flood of regions costs no step's boundary), counts the
 * rest, and takes events again once the writer has taken the batch. */
static void test_sink_bounds_the_events_pending(void **state)
{
    (void)state;
    tp_sink *s = tp_sink_new(0);
    tp_sink_set_pending_events_max(s, 100);
    tp_thread_info info = {.pid = 1, .tid = 1, .rank = -1, .local_rank = -1};
    uint32_t thread = tp_sink_thread(s, &info), name = tp_sink_name(s, "region");
    for (uint64_t i = 0; i < 99; i++)
        tp_sink_interval(s, thread, name, 0, i, i + 1);
    tp_sink_device_span(s, thread, name, 5, 1);
    tp_sink_interval(s, thread, name, 0, 200, 201);
    tp_sink_device_span(s, thread, name, 6, 1);
    for (uint64_t i = 0; i < 110; i++)
        tp_sink_mark(s, thread, TP_MARK_STEP, i, 0);
    assert_int_equal(tp_sink_behind(s), 12);
    tp_batch b = {0};
    tp_sink_take(s, &b);
    assert_int_equal(b.intervals.len, 99);
    assert_int_equal(b.device_spans.len, 1);
    assert_int_equal(b.marks.len, 100);
    tp_sink_device_span(s, thread, name, 7, 1);
    tp_sink_mark(s, thread, TP_MARK_STEP, 300, 0);
    tp_batch_clear(&b);
    tp_sink_take(s, &b);
    assert_int_equal(b.device_spans.len, 1);
    assert_int_equal(b.marks.len, 1);
    assert_int_equal(tp_sink_behind(s), 12);
    uint64_t lost[TP_LOST_KINDS];
    tp_sink_losses(s, lost);
    assert_int_equal(lost[TP_LOST_EVENTS], 0); /* not memory's: counted apart */
    tp_batch_free(&b);
    tp_sink_free(s);
}

/* A run file's metadata as run->settings: the recorder's values typed, and
 * a crafted file's that are not what their key holds taken as absent. */
static void write_meta(const char *path, const char *const *kv, size_t n)
{
    char err[256];
    tp_writer *w = tp_writer_create(path, false, "node7", err, sizeof err);
    assert_non_null(w);
    tp_sink *s = tp_sink_new(0);
    for (size_t i = 0; i < n; i += 2)
        tp_sink_meta(s, kv[i], kv[i + 1]);
    tp_batch b = {0};
    tp_sink_take(s, &b);
    assert_true(tp_writer_apply(w, &b, err, sizeof err));
    tp_batch_free(&b);
    tp_sink_free(s);
    tp_writer_finish(w);
}

static void test_settings_are_typed_and_hostile_values_absent(void **state)
{
    (void)state;
    char *path = tmp_path("settings.db"), err[256];
    const char *good[] = {
        TP_META_STALL_AFTER_S,        "30",         TP_META_INTERVAL_S,  "0.5",
        TP_META_DURATION_NS,          "1500000000", TP_META_EXIT_STATUS, "3",
        TP_META_CLOCK_UNCERTAINTY_NS, "2500",       TP_META_COMMAND,     "python t.py"};
    write_meta(path, good, sizeof good / sizeof *good);
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    const tp_run_settings *st = &run->settings;
    assert_true(st->stall_after_s == 30 && st->interval_s == 0.5);
    assert_int_equal(st->duration_ns, 1500000000);
    assert_int_equal(st->exit_status, 3);
    assert_int_equal(st->clock_uncertainty_ns, 2500);
    assert_string_equal(st->command, "python t.py");
    assert_string_equal(st->argv, "");
    assert_false(st->merged || st->summary_only);
    tp_run_close(run);
    unlink(path);
    const char *bad[] = {TP_META_STALL_AFTER_S,        "nan",
                         TP_META_INTERVAL_S,           "-0.5",
                         TP_META_DURATION_NS,          "-7",
                         TP_META_EXIT_STATUS,          "3 or so",
                         TP_META_CLOCK_UNCERTAINTY_NS, "99999999999999999999",
                         TP_META_SUMMARY_ONLY,         "yes"};
    write_meta(path, bad, sizeof bad / sizeof *bad);
    run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    st = &run->settings;
    assert_true(st->stall_after_s == 0 && st->interval_s == 0);
    assert_int_equal(st->duration_ns, -1);
    assert_int_equal(st->exit_status, -1);
    assert_int_equal(st->clock_uncertainty_ns, 0);
    assert_false(st->summary_only);
    tp_run_close(run);
    unlink(path);
    free(path);
}

/* What top reads of a live file: a series' mean over a window, and of a
 * metric with one series per process, the largest mean and how many had
 * samples there. */
static void test_live_means_over_a_window(void **state)
{
    (void)state;
    char *path = tmp_path("live.db"), err[256];
    tp_sink *s = tp_sink_new(0);
    uint32_t tree = tp_sink_series(s, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}");
    uint32_t a = tp_sink_series(s, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, "{\"pid\":\"11\"}");
    uint32_t b = tp_sink_series(s, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, "{\"pid\":\"12\"}");
    for (int i = 1; i <= 10; i++) {
        tp_sink_sample(s, tree, (uint64_t)i * 1000, i);
        tp_sink_sample(s, a, (uint64_t)i * 1000, 5);
        if (i > 5) /* pid 12 from t = 6000 on */
            tp_sink_sample(s, b, (uint64_t)i * 1000, 40 + i);
    }
    fx_write_sink(path, s, "node7");
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    double mean, max;
    int n = 0;
    assert_true(tp_run_live_mean(run, TP_METRIC_PROC_CPU_WAIT_PERCENT, 7000, 10000, &mean));
    assert_float_equal(mean, 9, 1e-9); /* (7000, 10000]: 8, 9, 10 */
    assert_true(
        tp_run_live_max_mean(run, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, 7000, 10000, &max, &n));
    assert_float_equal(max, 49, 1e-9);
    assert_int_equal(n, 2);
    assert_true(
        tp_run_live_max_mean(run, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, 0, 5000, &max, &n));
    assert_float_equal(max, 5, 1e-9); /* pid 12 had none yet */
    assert_int_equal(n, 1);
    assert_false(
        tp_run_live_max_mean(run, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, 20000, 30000, &max, &n));
    assert_false(tp_run_live_mean(run, TP_METRIC_CPU_UTIL_PERCENT, 0, 10000, &mean));
    tp_run_close(run);
    free(path);
}

/* A counter's value at a time: interpolated between the samples on either
 * side (an epoch's edge between two ticks), the sample's own at its time,
 * at the rate of its two nearest within the slack outside them, and not
 * known further out (the nearest sample's value there gave an epoch part
 * of its energy). */
static void test_a_counter_is_known_only_between_its_samples(void **state)
{
    (void)state;
    char *path = tmp_path("counter.db"), err[256];
    tp_sink *s = tp_sink_new(0);
    uint32_t joules = tp_sink_series(s, TP_METRIC_GPU_ENERGY_JOULES, "{\"gpu\":\"0\"}");
    tp_sink_sample(s, joules, 1000, 100);
    tp_sink_sample(s, joules, 2000, 400);
    tp_sink_sample(s, joules, 3000, 700);
    fx_write_sink(path, s, "node7");
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    const tp_run_series *x =
        tp_run_series_find(run, 1, TP_METRIC_GPU_ENERGY_JOULES, "{\"gpu\":\"0\"}");
    assert_non_null(x);
    double v;
    assert_true(tp_run_series_counter_at(run, x->id, 1500, 0, &v));
    assert_float_equal(v, 250, 1e-9);
    assert_true(tp_run_series_counter_at(run, x->id, 3000, 0, &v)); /* the last sample's time */
    assert_float_equal(v, 700, 1e-9);
    assert_true(tp_run_series_counter_at(run, x->id, 1000, 0, &v));
    assert_float_equal(v, 100, 1e-9);
    assert_false(tp_run_series_counter_at(run, x->id, 999, 0, &v));  /* before the first */
    assert_false(tp_run_series_counter_at(run, x->id, 3001, 0, &v)); /* after the last */
    /* within the slack (a sampling interval), on the line of its last (or
     * first) two samples: 0.3 a nanosecond */
    assert_true(tp_run_series_counter_at(run, x->id, 3500, 500, &v));
    assert_float_equal(v, 850, 1e-9);
    assert_true(tp_run_series_counter_at(run, x->id, 600, 400, &v));
    assert_float_equal(v, -20, 1e-9);
    assert_false(tp_run_series_counter_at(run, x->id, 3501, 500, &v));
    assert_false(tp_run_series_counter_at(run, x->id, 599, 400, &v));
    tp_run_close(run);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_killed_writer_is_readable),
        cmocka_unit_test(test_refuses_overwrite),
        cmocka_unit_test(test_refuses_foreign_files),
        cmocka_unit_test(test_sink_many_producers),
        cmocka_unit_test(test_sink_bounds_the_events_pending),
        cmocka_unit_test(test_settings_are_typed_and_hostile_values_absent),
        cmocka_unit_test(test_live_means_over_a_window),
        cmocka_unit_test(test_a_counter_is_known_only_between_its_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
