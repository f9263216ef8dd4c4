/* summary_tables.c: reading the summary_* tables (summary_write.c writes them). */
#include "store/summary_tables.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "store/schema.h"
#include "store/sql_util.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "core/run_keys.h"

static double col_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void col_stats(sqlite3_stmt *st, int count_col, int first, tp_stats *s)
{
    s->count = (size_t)sqlite3_column_int64(st, count_col);
    s->mean = col_real(st, first);
    s->min = col_real(st, first + 1);
    s->p5 = col_real(st, first + 2);
    s->p50 = col_real(st, first + 3);
    s->p95 = col_real(st, first + 4);
    s->max = col_real(st, first + 5);
}

static bool failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read the stored %s: %s", run->path, what,
             sqlite3_errmsg(run->db));
    return false;
}

/* fn once per row of a table of per-series statistics (summary_series or
 * summary_series_steps), in series order; `what` names it in errors. */
static bool stored_stats(tp_run *run, const char *sql, const char *what, tp_stored_series_fn fn,
                         void *ctx, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, what, err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const tp_run_series *series = tp_run_series_by_id(run, sqlite3_column_int64(st, 0));
        tp_stats s;
        col_stats(st, 1, 2, &s);
        if (series)
            fn(ctx, series, &s);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, what, err, cap);
}

bool tp_stored_series(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap)
{
    return stored_stats(run,
                        "SELECT series_id, count, mean, min, p5, p50, p95, max"
                        " FROM summary_series ORDER BY series_id",
                        "series statistics", fn, ctx, err, cap);
}

bool tp_stored_series_steps(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap)
{
    if (!tp_run_has_table(run, "summary_series_steps")) /* stored before these figures */
        return true;
    return stored_stats(run,
                        "SELECT series_id, count, mean, min, p5, p50, p95, max"
                        " FROM summary_series_steps ORDER BY series_id",
                        "series statistics over the steps", fn, ctx, err, cap);
}

bool tp_stored_steps_windows(tp_run *run, tp_steps_window **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    return !tp_run_has_table(run, "summary_steps_window") || /* stored before them */
           tp_run_read_windows(run,
                               "SELECT agent_id, t0_ns, t1_ns FROM summary_steps_window"
                               " ORDER BY agent_id",
                               out, n, err, cap);
}

/* summary_timing's rows into out (ordered by rank and name). */
static int stored_rows(tp_run *run, tp_timings *out)
{
    sqlite3_stmt *st;
    size_t rcap = 0;
    bool device = run->schema_version >= TP_SCHEMA_DEVICE;
    bool in_profiled = tp_run_has_column(run, "summary_timing", "in_profiled_s");
    bool in_warmup = tp_run_has_column(run, "summary_timing", "in_warmup_s");
    char *sql = sqlite3_mprintf(
        device ? "SELECT rank, name, count, total_s, mean, min, p5, p50, p95, max,"
                 " in_steps_s, device_count, device_total_s, device_mean, device_min,"
                 " device_p5, device_p50, device_p95, device_max, %s, %s"
                 " FROM summary_timing ORDER BY rank, name"
               : "SELECT rank, name, count, total_s, mean, min, p5, p50, p95,"
                 " max, in_steps_s FROM summary_timing ORDER BY rank, name",
        in_profiled ? "in_profiled_s" : "0", in_warmup ? "in_warmup_s" : "0");
    int rc = sql ? sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        out->rows = tp_grow(out->rows, out->nrows, &rcap, sizeof *out->rows);
        tp_timing_row *r = &out->rows[out->nrows++];
        memset(r, 0, sizeof *r);
        r->rank = sqlite3_column_int(st, 0);
        const unsigned char *name = sqlite3_column_text(st, 1);
        r->name = strdup(name ? (const char *)name : "");
        r->total_s = sqlite3_column_double(st, 3);
        r->in_steps_s = sqlite3_column_double(st, 10);
        col_stats(st, 2, 4, &r->stats);
        if (device) {
            r->in_profiled_s = sqlite3_column_double(st, 19);
            r->in_warmup_s = sqlite3_column_double(st, 20);
            r->device_total_s = sqlite3_column_double(st, 12);
            col_stats(st, 11, 13, &r->device);
        } else {
            tp_stats_compute(NULL, 0, &r->device);
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* summary_step's rows into out, by rank; files summarized before its later
 * columns give 0 for them. */
static int stored_steps(tp_run *run, tp_timings *out)
{
    sqlite3_stmt *st;
    size_t scap = 0;
    /* files summarized before summary_step.batches: batches unknown, no warm-up */
    bool batches = tp_run_has_column(run, "summary_step", "batches");
    bool profiled = tp_run_has_column(run, "summary_step", "profiled");
    bool warm = tp_run_has_column(run, "summary_step", "warmup_samples");
    char *sql = sqlite3_mprintf(
        "SELECT rank, count, total_s, samples, mean, min, p5, p50, p95, max, %s, %s, %s"
        " FROM summary_step ORDER BY rank",
        batches ? "batches, warmup, warmup_s" : "0, 0, 0",
        profiled ? "profiled, profiled_samples, profiled_batches, profiled_s" : "0, 0, 0, 0",
        warm ? "warmup_samples, warmup_batches" : "0, 0");
    int rc = sql ? sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        out->steps = tp_grow(out->steps, out->nsteps, &scap, sizeof *out->steps);
        tp_step_row *r = &out->steps[out->nsteps++];
        r->rank = sqlite3_column_int(st, 0);
        r->total_s = sqlite3_column_double(st, 2);
        r->samples = sqlite3_column_int64(st, 3);
        col_stats(st, 1, 4, &r->stats);
        r->batches = sqlite3_column_int64(st, 10);
        r->warmup = (size_t)sqlite3_column_int64(st, 11);
        r->warmup_s = sqlite3_column_double(st, 12);
        r->profiled = (size_t)sqlite3_column_int64(st, 13);
        r->profiled_samples = sqlite3_column_int64(st, 14);
        r->profiled_batches = sqlite3_column_int64(st, 15);
        r->profiled_s = sqlite3_column_double(st, 16);
        r->warmup_samples = sqlite3_column_int64(st, 17);
        r->warmup_batches = sqlite3_column_int64(st, 18);
    }
    sqlite3_finalize(st);
    return rc;
}

/* summary_epoch's rows into out, by rank and epoch. */
static int stored_epochs(tp_run *run, tp_timings *out)
{
    sqlite3_stmt *st;
    size_t ecap = 0;
    bool batches = tp_run_has_column(run, "summary_step", "batches");
    int rc =
        sqlite3_prepare_v2(run->db,
                           batches ? "SELECT rank, epoch, start_ns, duration_s, steps,"
                                     " samples, batches FROM summary_epoch ORDER BY rank, rowid"
                                   : "SELECT rank, epoch, start_ns, duration_s, steps,"
                                     " samples, 0 FROM summary_epoch ORDER BY rank, rowid",
                           -1, &st, NULL);
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        out->epochs = tp_grow(out->epochs, out->nepochs, &ecap, sizeof *out->epochs);
        out->epochs[out->nepochs++] = (tp_epoch_row){
            .rank = sqlite3_column_int(st, 0),
            .epoch = sqlite3_column_int64(st, 1),
            .start_s = (double)sqlite3_column_int64(st, 2) / 1e9,
            .duration_s = sqlite3_column_double(st, 3),
            .steps = (size_t)sqlite3_column_int64(st, 4),
            .samples = sqlite3_column_int64(st, 5),
            .batches = sqlite3_column_int64(st, 6),
            .energy_j = NAN,
        };
    }
    sqlite3_finalize(st);
    return rc;
}

bool tp_stored_timings(tp_run *run, tp_timings *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    int rc = stored_rows(run, out);
    if (rc == SQLITE_OK)
        rc = stored_steps(run, out);
    if (rc == SQLITE_OK)
        rc = stored_epochs(run, out);
    if (rc != SQLITE_OK) {
        tp_timings_free(out);
        return failed(run, "timings", err, cap);
    }
    return true;
}

/* The rows of a prepared query of summary_rank's 20 columns into out
 * (straggler fields left unset); st finalized. A row without a step is
 * left out, as the analysis leaves such ranks out (a file's rows are not
 * trusted: its figures are divided by the steps). */
static bool stored_rank_rows(tp_run *run, sqlite3_stmt *st, tp_ranks *out, char *err, size_t cap)
{
    size_t rcap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, 3) <= 0)
            continue;
        out->rows = tp_grow(out->rows, out->n, &rcap, sizeof *out->rows);
        tp_rank_row *r = &out->rows[out->n++];
        memset(r, 0, sizeof *r);
        r->rank = sqlite3_column_int(st, 0);
        r->agent_id = sqlite3_column_int64(st, 1);
        r->local_rank = sqlite3_column_int(st, 2);
        r->steps = (size_t)sqlite3_column_int64(st, 3);
        r->t0_ns = sqlite3_column_int64(st, 4);
        r->t1_ns = sqlite3_column_int64(st, 5);
        r->input_s = sqlite3_column_double(st, 6);
        r->compute_s = sqlite3_column_double(st, 7);
        r->comm_s = sqlite3_column_double(st, 8);
        r->comm_overlap_s = sqlite3_column_double(st, 9);
        r->other_s = sqlite3_column_double(st, 10);
        /* the four parts make its steps' time (a file stored before: its window) */
        r->window_s = r->input_s + r->compute_s + r->comm_s + r->other_s;
        r->gpu_util_percent = col_real(st, 11);
        r->gpu_sm_clock_mhz = col_real(st, 12);
        r->gpu = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 13);
        r->gpu_slowdown_reasons = (uint32_t)sqlite3_column_int64(st, 14);
        r->gpu_slowdown_share = col_real(st, 15);
        r->comm_device_s = sqlite3_column_double(st, 16);
        r->comm_device_exposed_s = sqlite3_column_double(st, 17);
        r->cpu_wait_percent = col_real(st, 18);
        /* the steps its parts are over: a file summarized before measured
         * them all (NULL), and a count outside 1..steps is none of ours */
        int64_t measured = sqlite3_column_int64(st, 19);
        r->measured_steps =
            measured >= 1 && (uint64_t)measured <= r->steps ? (size_t)measured : r->steps;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tp_ranks_free(out);
        return failed(run, "ranks", err, cap);
    }
    return true;
}

/* run's GPU of agent and index (run->gpus is in that order), or NULL. */
static const tp_run_gpu *gpu_of(const tp_run *run, int64_t agent, int64_t index)
{
    size_t lo = 0, hi = run->ngpus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tp_run_gpu *g = &run->gpus[mid];
        if (g->agent_id < agent || (g->agent_id == agent && g->index < index))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < run->ngpus && run->gpus[lo].agent_id == agent && run->gpus[lo].index == index
               ? &run->gpus[lo]
               : NULL;
}

bool tp_stored_gpu_slowdowns(tp_run *run, tp_gpu_slowdown *out, bool *found, char *err, size_t cap)
{
    *found = tp_run_has_table(run, "summary_gpu");
    sqlite3_stmt *st;
    if (!*found)
        return true;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT agent_id, gpu_index, reasons, share, trouble_share"
                           " FROM summary_gpu",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "GPU clock event reasons", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const tp_run_gpu *gpu =
            gpu_of(run, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
        if (!gpu)
            continue; /* a row of no GPU the file names */
        double share = col_real(st, 3), trouble = col_real(st, 4);
        out[gpu - run->gpus] = (tp_gpu_slowdown){
            (uint32_t)sqlite3_column_int64(st, 2) & TP_GPU_REASONS_SLOWDOWN,
            share >= 0 && share <= 1 ? share : NAN, trouble >= 0 && trouble <= 1 ? trouble : NAN};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? true : failed(run, "GPU clock event reasons", err, cap);
}

bool tp_stored_ranks(tp_run *run, tp_ranks *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    /* before summary_rank.gpu, a rank's GPU was its local rank's; before
     * its clock event reasons and device communication, none are known */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT rank, agent_id, local_rank, steps, t0_ns, t1_ns, input_s, compute_s, comm_s,"
             " comm_overlap_s, other_s, gpu_util_percent, gpu_sm_clock_mhz, %s, %s, %s, %s"
             " FROM summary_rank ORDER BY rank",
             tp_run_has_column(run, "summary_rank", "gpu") ? "gpu" : "local_rank",
             tp_run_has_column(run, "summary_rank", "comm_device_s")
                 ? "gpu_reasons, gpu_reasons_share, comm_device_s, comm_device_exposed_s"
                 : "NULL, NULL, 0, 0",
             tp_run_has_column(run, "summary_rank", "cpu_wait_percent") ? "cpu_wait_percent"
                                                                        : "NULL",
             tp_run_has_column(run, "summary_rank", "measured_steps") ? "measured_steps" : "NULL");
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "ranks", err, cap);
    return stored_rank_rows(run, st, out, err, cap);
}

bool tp_stored_ranks_latest(tp_run *run, size_t first_step, size_t last_step, size_t slack,
                            tp_ranks *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (!tp_run_has_table(run, "summary_rank_latest"))
        return true;
    sqlite3_stmt *st;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT rank, agent_id, local_rank, steps, t0_ns, t1_ns, input_s, compute_s, comm_s,"
             " comm_overlap_s, other_s, gpu_util_percent, gpu_sm_clock_mhz, gpu, gpu_reasons,"
             " gpu_reasons_share, comm_device_s, comm_device_exposed_s, cpu_wait_percent, %s"
             " FROM summary_rank_latest WHERE first_step BETWEEN ?1 - ?3 AND ?1 + ?3"
             " AND last_step BETWEEN ?2 - ?3 AND ?2 + ?3 ORDER BY rank",
             tp_run_has_column(run, "summary_rank_latest", "measured_steps") ? "measured_steps"
                                                                             : "NULL");
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "ranks", err, cap);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)first_step);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)last_step);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)slack);
    return stored_rank_rows(run, st, out, err, cap);
}

void tp_stored_stalls_free(tp_stall *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < v[i].nthreads; k++)
            free(v[i].threads[k].phase);
        free(v[i].threads);
    }
    free(v);
}

/* A stored GPU index: -1 where NULL or out of range (a crafted file's). */
static int stored_gpu(sqlite3_stmt *st, int i)
{
    int64_t gpu = sqlite3_column_int64(st, i);
    return sqlite3_column_type(st, i) == SQLITE_INTEGER && gpu >= 0 && gpu < 1 << 20 ? (int)gpu
                                                                                     : -1;
}

bool tp_stored_stalls(tp_run *run, tp_stall **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    err[0] = '\0';
    if (run->raw_only || !run->settings.stalls_stored ||
        !tp_run_has_table(run, "summary_stall_thread"))
        return false;
    sqlite3_stmt *st = NULL, *th = NULL;
    char sql[240], thread_sql[200];
    snprintf(sql, sizeof sql,
             "SELECT id, rank, ended, start_ns, end_ns, threshold_s, step, %s, %s, %s"
             " FROM summary_stall ORDER BY id",
             tp_run_has_column(run, "summary_stall", "between_steps") ? "between_steps" : "0",
             tp_run_has_column(run, "summary_stall", "gpu") ? "gpu, gpu_util_percent"
                                                            : "NULL, NULL",
             tp_run_has_column(run, "summary_stall", "blocked") ? "blocked" : "NULL");
    snprintf(thread_sql, sizeof thread_sql,
             "SELECT pid, tid, worker, phase, node_id, samples, known, on_cpu, %s"
             " FROM summary_stall_thread WHERE stall_id = ? ORDER BY rowid",
             tp_run_has_column(run, "summary_stall_thread", "blocked") ? "blocked" : "0");
    bool ok = sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(run->db, thread_sql, -1, &th, NULL) == SQLITE_OK;
    size_t vcap = 0;
    int rc = SQLITE_DONE;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = tp_grow(*out, *n, &vcap, sizeof **out);
        tp_stall *v = &(*out)[(*n)++];
        double start = (double)sqlite3_column_int64(st, 3) / 1e9;
        double end = (double)sqlite3_column_int64(st, 4) / 1e9;
        int64_t step = sqlite3_column_int64(st, 6);
        *v = (tp_stall){.rank = sqlite3_column_int(st, 1),
                        .ended = sqlite3_column_int(st, 2) != 0,
                        .start_s = start,
                        .end_s = end,
                        .seconds = end - start,
                        .threshold_s = sqlite3_column_double(st, 5),
                        .step = step > 0 ? (size_t)step : 0,
                        .between = sqlite3_column_int(st, 7) != 0,
                        .gpu = stored_gpu(st, 8),
                        .gpu_util_percent = col_real(st, 9),
                        .blocked = col_real(st, 10)};
        if (!(v->gpu_util_percent >= 0 && v->gpu_util_percent <= 100)) /* a crafted file's */
            v->gpu_util_percent = NAN;
        if (!(v->blocked >= 0 && v->blocked <= 1e7)) /* threads: a crafted file's otherwise */
            v->blocked = NAN;
        sqlite3_bind_int64(th, 1, sqlite3_column_int64(st, 0));
        size_t tcap = 0;
        int trc;
        while ((trc = sqlite3_step(th)) == SQLITE_ROW) {
            v->threads = tp_grow(v->threads, v->nthreads, &tcap, sizeof *v->threads);
            int64_t node = sqlite3_column_int64(th, 4);
            v->threads[v->nthreads++] = (tp_stall_thread){
                .pid = sqlite3_column_int64(th, 0),
                .tid = sqlite3_column_int(th, 1),
                .worker = sqlite3_column_int(th, 2) != 0,
                .phase = sqlite3_column_type(th, 3) == SQLITE_NULL ? NULL : tp_sql_dup_text(th, 3),
                .node = node > 0 && node <= (int64_t)UINT32_MAX ? (uint32_t)node : 0,
                .samples = sqlite3_column_double(th, 5),
                .known = sqlite3_column_double(th, 6),
                .on_cpu = sqlite3_column_double(th, 7),
                .blocked = sqlite3_column_double(th, 8)};
        }
        sqlite3_reset(th);
        ok = trc == SQLITE_DONE;
        /* the rank's phase: its busiest thread's that had one, workers aside */
        for (size_t k = 0; k < v->nthreads && !v->phase; k++)
            if (!v->threads[k].worker && v->threads[k].phase)
                v->phase = v->threads[k].phase;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(th);
    if (!ok || rc != SQLITE_DONE) {
        snprintf(err, cap, "%s: cannot read the stored stalls: %s", run->path,
                 sqlite3_errmsg(run->db));
        tp_stored_stalls_free(*out, *n);
        *out = NULL;
        *n = 0;
        return false;
    }
    return true;
}

/* A stored weight: a crafted file's text, negative or not finite, reads as 0. */
static double stored_weight(sqlite3_stmt *st, int i)
{
    double v = sqlite3_column_double(st, i);
    return sqlite3_column_type(st, i) != SQLITE_NULL && isfinite(v) && v > 0 ? v : 0;
}

bool tp_stored_own_samples(tp_run *run, tp_own_samples **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!tp_run_has_table(run, "summary_own"))
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT rank, agent_id, samples, users, wrappers, device_times, windows"
                           " FROM summary_own ORDER BY rank, agent_id",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "own work", err, cap);
    size_t room = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = tp_grow(*out, *n, &room, sizeof **out);
        tp_own_samples *o = &(*out)[(*n)++];
        int64_t rank = sqlite3_column_int64(st, 0);
        o->rank = rank >= -1 && rank < INT32_MAX ? (int)rank : -1;
        o->agent_id = sqlite3_column_int64(st, 1);
        o->samples = stored_weight(st, 2);
        for (int w = 0; w < TP_WORK_KINDS; w++)
            o->own[w] = stored_weight(st, 3 + w);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return failed(run, "own work", err, cap);
    }
    return true;
}

bool tp_stored_pace_functions(tp_run *run, tp_pace_function **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!tp_summary_stored(run) || !tp_run_has_table(run, "summary_pace_function"))
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT first_step, last_step, phase, workers, function, file, line,"
                           " before, after FROM summary_pace_function ORDER BY first_step",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "changes of pace", err, cap);
    size_t room = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t first = sqlite3_column_int64(st, 0), last = sqlite3_column_int64(st, 1),
                phase = sqlite3_column_int64(st, 2), line = sqlite3_column_int64(st, 6);
        if (first < 1 || last < first)
            continue; /* a crafted file's: no regime has such steps */
        *out = tp_grow(*out, *n, &room, sizeof **out);
        tp_pace_function *f = &(*out)[(*n)++];
        *f = (tp_pace_function){.first_step = (size_t)first, .last_step = (size_t)last};
        f->found = sqlite3_column_type(st, 4) != SQLITE_NULL && phase >= 0 && phase < 1 << 16;
        if (!f->found)
            continue;
        f->phase = (size_t)phase;
        f->workers = sqlite3_column_int(st, 3) != 0;
        f->line = line >= 0 && line <= INT32_MAX ? (int32_t)line : 0;
        f->before = sqlite3_column_double(st, 7);
        f->after = sqlite3_column_double(st, 8);
        const unsigned char *function = sqlite3_column_text(st, 4),
                            *file = sqlite3_column_text(st, 5);
        snprintf(f->function, sizeof f->function, "%s", function ? (const char *)function : "?");
        snprintf(f->file, sizeof f->file, "%s", file ? (const char *)file : "?");
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return failed(run, "changes of pace", err, cap);
    }
    return true;
}

bool tp_stored_region_withins(tp_run *run, tp_stored_within_fn fn, void *ctx, bool *stored,
                              char *err, size_t cap)
{
    *stored = tp_summary_stored(run) && tp_run_has_table(run, "summary_region_within");
    if (!*stored)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, "SELECT name, within, seconds FROM summary_region_within", -1,
                           &st, NULL) != SQLITE_OK)
        return failed(run, "regions' phases", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0),
                            *within = sqlite3_column_text(st, 1);
        if (name)
            fn(ctx, (const char *)name, (const char *)within, sqlite3_column_double(st, 2));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "regions' phases", err, cap);
}
