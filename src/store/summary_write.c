/* summary_write.c: writing the summary_* tables, in one transaction. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store/schema.h"
#include "store/summary_tables.h"
#include "util/ns_math.h"
#include "core/run_keys.h"
#include "analysis_id.h"

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

/* Binds mean, min, p5, p50, p95, max from index i on. */
static void bind_stats(sqlite3_stmt *st, int i, const tp_stats *s)
{
    const double v[] = {s->mean, s->min, s->p5, s->p50, s->p95, s->max};
    for (int k = 0; k < 6; k++)
        bind_real(st, i + k, v[k]);
}

/* Runs one prepared INSERT per row through fill(); an SQLite code. */
typedef void (*fill_fn)(sqlite3_stmt *st, const tp_summary_rows *s, size_t row);
static int insert_rows(sqlite3 *db, const char *sql, const tp_summary_rows *s, size_t n,
                       fill_fn fill)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        fill(st, s, i);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static void fill_series(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    sqlite3_bind_int64(st, 1, s->series[i].series_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)s->series[i].stats.count);
    bind_stats(st, 3, &s->series[i].stats);
}

static void fill_series_steps(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    sqlite3_bind_int64(st, 1, s->series[i].series_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)s->series[i].steps.count);
    bind_stats(st, 3, &s->series[i].steps);
}

static void fill_window(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    sqlite3_bind_int64(st, 1, s->windows[i].agent_id);
    sqlite3_bind_int64(st, 2, s->windows[i].t0_ns);
    sqlite3_bind_int64(st, 3, s->windows[i].t1_ns);
}

static void fill_gpu(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    sqlite3_bind_int64(st, 1, s->gpus[i].agent_id);
    sqlite3_bind_int(st, 2, s->gpus[i].index);
    sqlite3_bind_int64(st, 3, s->gpu_slowdowns[i].bits);
    bind_real(st, 4, s->gpu_slowdowns[i].share);
    bind_real(st, 5, s->gpu_slowdowns[i].trouble_share);
}

static void fill_timing(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_timing_row *r = &s->timings->rows[i];
    sqlite3_bind_int(st, 1, r->rank);
    sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)r->stats.count);
    sqlite3_bind_double(st, 4, r->total_s);
    bind_stats(st, 5, &r->stats);
    sqlite3_bind_double(st, 11, r->in_steps_s);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)r->device.count);
    sqlite3_bind_double(st, 13, r->device_total_s);
    bind_stats(st, 14, &r->device);
    sqlite3_bind_double(st, 20, r->in_profiled_s);
    sqlite3_bind_double(st, 21, r->in_warmup_s);
}

static void fill_step(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_step_row *r = &s->timings->steps[i];
    sqlite3_bind_int(st, 1, r->rank);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)r->stats.count);
    sqlite3_bind_double(st, 3, r->total_s);
    sqlite3_bind_int64(st, 4, r->samples);
    bind_stats(st, 5, &r->stats);
    sqlite3_bind_int64(st, 11, r->batches);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)r->warmup);
    sqlite3_bind_double(st, 13, r->warmup_s);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)r->profiled);
    sqlite3_bind_int64(st, 15, r->profiled_samples);
    sqlite3_bind_int64(st, 16, r->profiled_batches);
    sqlite3_bind_double(st, 17, r->profiled_s);
    sqlite3_bind_int64(st, 18, r->warmup_samples);
    sqlite3_bind_int64(st, 19, r->warmup_batches);
}

static void fill_epoch(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_epoch_row *e = &s->timings->epochs[i];
    sqlite3_bind_int(st, 1, e->rank);
    sqlite3_bind_int64(st, 2, e->epoch);
    sqlite3_bind_int64(st, 3, tp_ns_round_s(e->start_s)); /* exact: start_s was t_ns / 1e9 */
    sqlite3_bind_double(st, 4, e->duration_s);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)e->steps);
    sqlite3_bind_int64(st, 6, e->samples);
    sqlite3_bind_int64(st, 7, e->batches);
}

/* A rank's row into summary_rank's 19 columns (summary_rank_latest's first 19). */
static void bind_rank(sqlite3_stmt *st, const tp_rank_row *r)
{
    sqlite3_bind_int(st, 1, r->rank);
    sqlite3_bind_int64(st, 2, r->agent_id);
    sqlite3_bind_int(st, 3, r->local_rank);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)r->steps);
    sqlite3_bind_int64(st, 5, r->t0_ns);
    sqlite3_bind_int64(st, 6, r->t1_ns);
    const double v[] = {r->input_s, r->compute_s,        r->comm_s,          r->comm_overlap_s,
                        r->other_s, r->gpu_util_percent, r->gpu_sm_clock_mhz};
    for (int k = 0; k < 7; k++)
        bind_real(st, 7 + k, v[k]);
    if (r->gpu >= 0)
        sqlite3_bind_int(st, 14, r->gpu);
    else
        sqlite3_bind_null(st, 14);
    if (!isnan(r->gpu_slowdown_share)) {
        sqlite3_bind_int64(st, 15, r->gpu_slowdown_reasons);
        sqlite3_bind_double(st, 16, r->gpu_slowdown_share);
    } else {
        sqlite3_bind_null(st, 15);
        sqlite3_bind_null(st, 16);
    }
    sqlite3_bind_double(st, 17, r->comm_device_s);
    sqlite3_bind_double(st, 18, r->comm_device_exposed_s);
    bind_real(st, 19, r->cpu_wait_percent);
}

static void fill_rank(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    bind_rank(st, &s->ranks->rows[i]);
    sqlite3_bind_int64(st, 20, (sqlite3_int64)s->ranks->rows[i].measured_steps);
}

/* The ranks over the first rank's latest pace (summary_rank_latest, keyed
 * by its steps); the table emptied where there are none. */
static int write_latest_ranks(sqlite3 *db, const tp_summary_rows *p)
{
    const tp_ranks *r = p->ranks_latest;
    sqlite3_stmt *st = NULL;
    int rc = tp_exec(db, TP_SCHEMA_SUMMARY_RANK_LATEST "DELETE FROM summary_rank_latest;");
    if (rc == SQLITE_OK && r && r->n)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO summary_rank_latest VALUES "
                                "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && r && i < r->n; i++) {
        bind_rank(st, &r->rows[i]);
        sqlite3_bind_int64(st, 20, (sqlite3_int64)p->latest_first_step);
        sqlite3_bind_int64(st, 21, (sqlite3_int64)p->latest_last_step);
        sqlite3_bind_int64(st, 22, (sqlite3_int64)r->rows[i].measured_steps);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

_Static_assert(TP_WORK_KINDS == 4, "summary_own has a column for each kind of work");

static void fill_own(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_own_samples *o = &s->own[i];
    sqlite3_bind_int(st, 1, o->rank);
    sqlite3_bind_int64(st, 2, o->agent_id);
    sqlite3_bind_double(st, 3, o->samples);
    for (int w = 0; w < TP_WORK_KINDS; w++)
        sqlite3_bind_double(st, 4 + w, o->own[w]);
}

/* A stack count's first six columns (summary_stack's, summary_stack_latest's). */
static void bind_stack(sqlite3_stmt *st, const tp_stack_count *c)
{
    sqlite3_bind_int(st, 1, c->rank);
    if (c->phase)
        sqlite3_bind_text(st, 2, c->phase, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int(st, 3, c->worker);
    sqlite3_bind_int64(st, 4, c->node);
    sqlite3_bind_int(st, 5,
                     (c->on_cpu ? 1 : 0) | (c->cpu_known ? 2 : 0) |
                         (c->blocked ? TP_STACK_STATE_BLOCKED : 0) |
                         (c->waited ? TP_STACK_STATE_WAITED : 0));
    sqlite3_bind_int64(st, 6, (sqlite3_int64)c->samples);
}

static void fill_stack(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    bind_stack(st, &s->stacks[i]);
}

static void fill_stack_latest(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    bind_stack(st, &s->stacks_latest[i]);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)s->latest_first_step);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)s->latest_last_step);
}

static void fill_pace_function(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_pace_function *f = &s->pace_functions[i];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)f->first_step);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)f->last_step);
    sqlite3_bind_int64(st, 3, f->found ? (sqlite3_int64)f->phase : 0);
    sqlite3_bind_int(st, 4, f->found && f->workers);
    if (f->found) {
        sqlite3_bind_text(st, 5, f->function, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, f->file, -1, SQLITE_STATIC);
    }
    sqlite3_bind_int(st, 7, f->found ? f->line : 0);
    sqlite3_bind_double(st, 8, f->found ? f->before : 0);
    sqlite3_bind_double(st, 9, f->found ? f->after : 0);
}

static void fill_within(sqlite3_stmt *st, const tp_summary_rows *s, size_t i)
{
    const tp_region_within *w = &s->withins[i];
    sqlite3_bind_text(st, 1, w->name, -1, SQLITE_STATIC);
    if (w->within)
        sqlite3_bind_text(st, 2, w->within, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_double(st, 3, w->seconds);
}

/* Whether db's table has column (false when it has no such table). */
static bool has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    bool has = sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st,
                                  NULL) == SQLITE_OK &&
               sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
               sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* The stalls and their threads (ids 1, 2, ... in the file's order). */
static int write_stalls(sqlite3 *db, const tp_summary_rows *p)
{
    sqlite3_stmt *stall = NULL, *thread = NULL;
    int rc = tp_exec(db, TP_SCHEMA_SUMMARY_STALLS "DELETE FROM summary_stall;"
                                                  "DELETE FROM summary_stall_thread;");
    if (rc == SQLITE_OK && !has_column(db, "summary_stall", "between_steps")) /* stored before */
        rc = tp_exec(db, TP_SCHEMA_ADD_STALL_BETWEEN);
    if (rc == SQLITE_OK && !has_column(db, "summary_stall", "gpu"))
        rc = tp_exec(db, TP_SCHEMA_ADD_STALL_GPU);
    if (rc == SQLITE_OK && !has_column(db, "summary_stall", "blocked"))
        rc = tp_exec(db, TP_SCHEMA_ADD_STALL_BLOCKED);
    if (rc == SQLITE_OK && !has_column(db, "summary_stall_thread", "blocked"))
        rc = tp_exec(db, TP_SCHEMA_ADD_STALL_THREAD_BLOCKED);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO summary_stall (id, rank, ended, start_ns, end_ns,"
                                " threshold_s, step, between_steps, gpu, gpu_util_percent,"
                                " blocked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                -1, &stall, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            db,
            "INSERT INTO summary_stall_thread (stall_id, pid, tid, worker, phase, node_id,"
            " samples, known, on_cpu, blocked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            -1, &thread, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < p->nstalls; i++) {
        const tp_stall *v = &p->stalls[i];
        sqlite3_bind_int64(stall, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_int(stall, 2, v->rank);
        sqlite3_bind_int(stall, 3, v->ended);
        sqlite3_bind_int64(stall, 4, tp_ns_round_s(v->start_s));
        sqlite3_bind_int64(stall, 5, tp_ns_round_s(v->end_s));
        sqlite3_bind_double(stall, 6, v->threshold_s);
        sqlite3_bind_int64(stall, 7, (sqlite3_int64)v->step);
        sqlite3_bind_int(stall, 8, v->between);
        if (v->gpu >= 0)
            sqlite3_bind_int(stall, 9, v->gpu);
        else
            sqlite3_bind_null(stall, 9);
        bind_real(stall, 10, v->gpu_util_percent);
        bind_real(stall, 11, v->blocked);
        rc = sqlite3_step(stall) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(stall);
        for (size_t k = 0; rc == SQLITE_OK && k < v->nthreads; k++) {
            const tp_stall_thread *t = &v->threads[k];
            sqlite3_bind_int64(thread, 1, (sqlite3_int64)i + 1);
            sqlite3_bind_int64(thread, 2, t->pid);
            sqlite3_bind_int(thread, 3, t->tid);
            sqlite3_bind_int(thread, 4, t->worker);
            if (t->phase)
                sqlite3_bind_text(thread, 5, t->phase, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(thread, 5);
            sqlite3_bind_int64(thread, 6, t->node);
            sqlite3_bind_double(thread, 7, t->samples);
            sqlite3_bind_double(thread, 8, t->known);
            sqlite3_bind_double(thread, 9, t->on_cpu);
            sqlite3_bind_double(thread, 10, t->blocked);
            rc = sqlite3_step(thread) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            sqlite3_reset(thread);
        }
    }
    sqlite3_finalize(stall);
    sqlite3_finalize(thread);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, "INSERT OR REPLACE INTO meta VALUES ('" TP_META_STALLS_STORED "', '1');");
    return rc;
}

/* The points html plots and each rank's step phases. */
static int write_plots(sqlite3 *db, const tp_summary_rows *p)
{
    int rc = tp_exec(db, TP_SCHEMA_SUMMARY_PLOTS "DELETE FROM summary_plot;"
                                                 "DELETE FROM summary_step_phase;");
    if (rc == SQLITE_OK && !has_column(db, "summary_step_phase", "pauses")) /* stored before */
        rc = tp_exec(db, TP_SCHEMA_ADD_STEP_PAUSES);
    if (rc == SQLITE_OK && !has_column(db, "summary_step_phase", "start_ns"))
        rc = tp_exec(db, TP_SCHEMA_ADD_STEP_TIMES);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO summary_plot VALUES (?, ?, ?)", -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < p->npoints; i++) {
        sqlite3_bind_int64(st, 1, p->points[i].series_id);
        sqlite3_bind_int64(st, 2, p->points[i].t_ns);
        sqlite3_bind_double(st, 3, p->points[i].value);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            db,
            "INSERT INTO summary_step_phase (rank, steps, first_step, dataloader_next, to_device,"
            " train_batch, step_lr_schedulers, from_device, reduce_metrics, other, pauses,"
            " start_ns, end_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            -1, &st, NULL);
    for (size_t k = 0; rc == SQLITE_OK && k < p->nphases; k++) {
        const tp_step_phases *ph = &p->phases[k];
        for (size_t g = 0; rc == SQLITE_OK && g < ph->ngroups; g++) {
            sqlite3_bind_int(st, 1, p->phase_ranks[k]);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)ph->nsteps);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)ph->first_step[g]);
            for (int q = 0; q < TP_STEP_PHASES; q++)
                sqlite3_bind_double(st, 4 + q, ph->values[g * TP_STEP_PHASES + (size_t)q]);
            sqlite3_bind_int64(st, 4 + TP_STEP_PHASES, ph->pauses ? ph->pauses[g] : 0);
            sqlite3_bind_int64(st, 5 + TP_STEP_PHASES,
                               ph->start_s ? tp_ns_round_s(ph->start_s[g]) : 0);
            sqlite3_bind_int64(st, 6 + TP_STEP_PHASES, ph->end_s ? tp_ns_round_s(ph->end_s[g]) : 0);
            rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, "INSERT OR REPLACE INTO meta VALUES ('" TP_META_PLOTS "', '1');");
    return rc;
}

/* Brings an older file's tables to this schema inside the open transaction
 * (upgrade: its summary_timing from before device times; rank_gpu,
 * batches: whether summary_rank.gpu and summary_step.batches exist). */
static int upgrade_tables(sqlite3 *db, bool upgrade, bool rank_gpu, bool batches)
{
    int rc = SQLITE_OK;
    if (rc == SQLITE_OK && upgrade)
        rc = tp_exec(db, "DROP TABLE summary_timing;" TP_SCHEMA_SUMMARY_TIMING TP_SCHEMA_DEVICE_TIME
                             TP_SCHEMA_DEVICE_VIEW TP_SCHEMA_MARKS_VIEW TP_SCHEMA_STACKS);
    if (rc == SQLITE_OK && upgrade && !has_column(db, "stack_sample", "count")) /* schema 8 */
        rc = tp_exec(db, TP_SCHEMA_ADD_STACK_RUNS);
    if (rc == SQLITE_OK && upgrade) {
        char version[64];
        snprintf(version, sizeof version, "PRAGMA user_version = %d;", TP_SCHEMA_VERSION);
        rc = tp_exec(db, version);
    }
    if (rc == SQLITE_OK && !rank_gpu) /* a file from before summary_rank.gpu */
        rc = tp_exec(db, "ALTER TABLE summary_rank ADD COLUMN gpu INTEGER;");
    if (rc == SQLITE_OK && !has_column(db, "summary_rank", "comm_device_s"))
        rc = tp_exec(db, TP_SCHEMA_ADD_RANK_GPU_TRUTH);
    if (rc == SQLITE_OK && !has_column(db, "summary_rank", "cpu_wait_percent"))
        rc = tp_exec(db, TP_SCHEMA_ADD_RANK_CPU_WAIT);
    if (rc == SQLITE_OK && !has_column(db, "summary_rank", "measured_steps"))
        rc = tp_exec(db, TP_SCHEMA_ADD_RANK_MEASURED("summary_rank"));
    if (rc == SQLITE_OK && has_column(db, "summary_rank_latest", "rank") &&
        !has_column(db, "summary_rank_latest", "measured_steps"))
        rc = tp_exec(db, TP_SCHEMA_ADD_RANK_MEASURED("summary_rank_latest"));
    if (rc == SQLITE_OK && !batches) /* a file from before summary_step.batches */
        rc = tp_exec(db, TP_SCHEMA_ADD_BATCHES);
    if (rc == SQLITE_OK && !has_column(db, "summary_step", "profiled")) /* before schema 10 */
        rc = tp_exec(db, TP_SCHEMA_ADD_STEP_PROFILED);
    if (rc == SQLITE_OK && !has_column(db, "summary_step", "warmup_samples"))
        rc = tp_exec(db, TP_SCHEMA_ADD_STEP_WARMUP);
    if (rc == SQLITE_OK && !has_column(db, "summary_timing", "in_profiled_s"))
        rc = tp_exec(db, TP_SCHEMA_ADD_TIMING_PROFILED);
    if (rc == SQLITE_OK && !has_column(db, "summary_timing", "in_warmup_s"))
        rc = tp_exec(db, TP_SCHEMA_ADD_TIMING_WARMUP);
    if (rc == SQLITE_OK) /* a file brought to schema 10 has its (empty) capture windows' tables */
        rc = tp_exec(db, TP_SCHEMA_OPS TP_SCHEMA_OPS_VIEW);
    return rc;
}

/* The tables of what the sampled stacks and trainprof's own work said. */
static int write_stack_tables(sqlite3 *db, const tp_summary_rows *s)
{
    int rc = insert_rows(db, "INSERT INTO summary_stack VALUES (?,?,?,?,?,?)", s, s->nstacks,
                         fill_stack);
    if (rc == SQLITE_OK)
        rc =
            insert_rows(db, "INSERT INTO summary_own VALUES (?,?,?,?,?,?,?)", s, s->nown, fill_own);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_stack_latest VALUES (?,?,?,?,?,?,?,?)", s,
                         s->nstacks_latest, fill_stack_latest);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_pace_function VALUES (?,?,?,?,?,?,?,?,?)", s,
                         s->npace_functions, fill_pace_function);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_region_within VALUES (?,?,?)", s, s->nwithins,
                         fill_within);
    return rc;
}

/* Writes s into db's summary tables in one transaction. upgrade: db has an
 * older schema, brought up to date in the same transaction: summary_timing
 * made anew (3 and 4's lack in_steps_s and the device columns), the tables
 * and views of later schemas added (empty: such a file recorded none of
 * them), and a schema 8 file's stack_sample given its run columns (each of
 * its rows one sample). */
static int write_summary(sqlite3 *db, const tp_summary_rows *s, bool upgrade, bool rank_gpu,
                         bool batches, char *why, size_t cap)
{
    int rc = tp_exec(db, "BEGIN;");
    if (rc == SQLITE_OK)
        rc = upgrade_tables(db, upgrade, rank_gpu, batches);
    if (rc == SQLITE_OK)
        rc = tp_exec(
            db,
            TP_SCHEMA_SUMMARY_SERIES_STEPS TP_SCHEMA_SUMMARY_STEPS_WINDOW TP_SCHEMA_SUMMARY_STACKS
                TP_SCHEMA_SUMMARY_GPU TP_SCHEMA_SUMMARY_OWN TP_SCHEMA_SUMMARY_STACK_LATEST
                    TP_SCHEMA_SUMMARY_PACE_FUNCTION TP_SCHEMA_SUMMARY_REGION_WITHIN
            "DELETE FROM summary_stack; DELETE FROM summary_gpu; DELETE FROM summary_own;"
            "DELETE FROM summary_region_within;"
            "DELETE FROM summary_stack_latest; DELETE FROM summary_pace_function;"
            "DELETE FROM summary_series; DELETE FROM summary_series_steps;"
            "DELETE FROM summary_steps_window;"
            "DELETE FROM summary_timing; DELETE FROM summary_step;"
            "DELETE FROM summary_epoch; DELETE FROM summary_rank;");
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_series VALUES (?,?,?,?,?,?,?,?)", s, s->nseries,
                         fill_series);
    sqlite3_stmt *steps = NULL; /* only the series with figures over the steps */
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO summary_series_steps VALUES (?,?,?,?,?,?,?,?)", -1,
                                &steps, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < s->nseries; i++) {
        if (!s->series[i].in_steps)
            continue;
        fill_series_steps(steps, s, i);
        rc = sqlite3_step(steps) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(steps);
    }
    sqlite3_finalize(steps);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_steps_window VALUES (?,?,?)", s, s->nwindows,
                         fill_window);
    if (rc == SQLITE_OK && s->gpu_slowdowns)
        rc = insert_rows(db, "INSERT INTO summary_gpu VALUES (?,?,?,?,?)", s, s->ngpus, fill_gpu);
    if (rc == SQLITE_OK)
        rc = insert_rows(
            db, "INSERT INTO summary_timing VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", s,
            s->timings->nrows, fill_timing);
    if (rc == SQLITE_OK)
        rc = insert_rows(db,
                         "INSERT INTO summary_step VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         s, s->timings->nsteps, fill_step);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, "INSERT INTO summary_epoch VALUES (?,?,?,?,?,?,?)", s,
                         s->timings->nepochs, fill_epoch);
    if (rc == SQLITE_OK)
        rc = insert_rows(db, /* by name: a file's added columns come last */
                         "INSERT INTO summary_rank (rank, agent_id, local_rank, steps, t0_ns, "
                         "t1_ns, input_s, compute_s, comm_s, comm_overlap_s, other_s, "
                         "gpu_util_percent, gpu_sm_clock_mhz, gpu, gpu_reasons, "
                         "gpu_reasons_share, comm_device_s, comm_device_exposed_s, "
                         "cpu_wait_percent, measured_steps) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         s, s->ranks->n, fill_rank);
    if (rc == SQLITE_OK)
        rc = write_stack_tables(db, s);
    if (rc == SQLITE_OK)
        rc = write_plots(db, s);
    if (rc == SQLITE_OK)
        rc = write_stalls(db, s);
    if (rc == SQLITE_OK)
        rc = write_latest_ranks(db, s);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, "INSERT OR REPLACE INTO meta VALUES ('" TP_META_SUMMARIZED "', '1');"
                         "INSERT OR REPLACE INTO meta VALUES ('" TP_META_SUMMARY_BY
                         "', '" TP_ANALYSIS_ID "'); COMMIT;");
    if (rc != SQLITE_OK) {
        snprintf(why, cap, "%s", sqlite3_errmsg(db)); /* before the rollback resets it */
        tp_exec(db, "ROLLBACK");
    }
    return rc;
}

bool tp_summary_tables_save(const tp_run *run, const tp_summary_rows *rows, char *err, size_t cap)
{
    sqlite3 *db = NULL;
    char why[256] = "";
    int rc = sqlite3_open_v2(run->path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        rc = write_summary(db, rows, run->schema_version < TP_SCHEMA_VERSION,
                           tp_run_has_column(run, "summary_rank", "gpu"),
                           tp_run_has_column(run, "summary_step", "batches"), why, sizeof why);
    }
    if (rc != SQLITE_OK)
        snprintf(err, cap, "%s: cannot store the summary: %s", run->path,
                 *why ? why : sqlite3_errstr(rc));
    sqlite3_close(db);
    return rc == SQLITE_OK;
}
