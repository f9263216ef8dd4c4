/* reader_stream.c: row-by-row reads of regions, samples and threads. */
#include "store/reader_stream.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/schema.h"

static bool failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read %s: %s", run->path, what, sqlite3_errmsg(run->db));
    return false;
}

bool tp_run_threads(tp_run *run, tp_run_thread **threads, size_t *n, char *err, size_t cap)
{
    *threads = NULL;
    *n = 0;
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           tp_run_has_table(run, "thread_cuda")
                               ? "SELECT t.id, t.pid, t.tid, t.rank, t.name, t.world_size,"
                                 " t.agent_id, t.local_rank, c.visible_devices FROM thread t"
                                 " LEFT JOIN thread_cuda c ON c.thread_id = t.id ORDER BY t.id"
                               : "SELECT id, pid, tid, rank, name, world_size, agent_id,"
                                 " local_rank, NULL FROM thread ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "threads", err, cap);
    size_t tcap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == tcap) {
            tcap = tcap ? tcap * 2 : 16;
            tp_run_thread *p = realloc(*threads, tcap * sizeof *p);
            if (!p)
                abort();
            *threads = p;
        }
        tp_run_thread *t = &(*threads)[(*n)++];
        t->id = sqlite3_column_int64(st, 0);
        t->pid = sqlite3_column_int(st, 1);
        t->tid = sqlite3_column_int(st, 2);
        t->rank = sqlite3_column_int(st, 3);
        t->world_size = sqlite3_column_int(st, 5);
        t->agent_id = sqlite3_column_int64(st, 6);
        t->local_rank = sqlite3_column_int(st, 7);
        const unsigned char *name = sqlite3_column_text(st, 4);
        snprintf(t->name, sizeof t->name, "%s", name ? (const char *)name : "");
        const unsigned char *visible = sqlite3_column_text(st, 8);
        t->cuda_visible_set = visible != NULL;
        snprintf(t->cuda_visible, sizeof t->cuda_visible, "%s",
                 visible ? (const char *)visible : "");
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "threads", err, cap);
}

/* Streams region rows of the given SQL. */
static bool each_region_row(tp_run *run, const char *sql, tp_region_row_fn fn, void *ctx, char *err,
                            size_t cap)
{
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "regions", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 1);
        fn(ctx, sqlite3_column_int64(st, 0), name ? (const char *)name : "",
           sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "regions", err, cap);
}

bool tp_run_each_region(tp_run *run, tp_region_row_fn fn, void *ctx, char *err, size_t cap)
{
    return each_region_row(run,
                           "SELECT r.thread_id, n.text, r.depth, r.start_ns, r.end_ns FROM region r"
                           " JOIN name n ON n.id = r.name_id",
                           fn, ctx, err, cap);
}

bool tp_run_each_point(tp_run *run, const char *sql, const char *what, tp_sample_row_fn fn,
                       void *ctx, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, what, err, cap);
    int rc;
    const tp_run_series *s = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (!s || s->id != id)
            s = tp_run_series_by_id(run, id);
        if (s)
            fn(ctx, s, sqlite3_column_int64(st, 1), sqlite3_column_double(st, 2));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, what, err, cap);
}

bool tp_run_each_sample(tp_run *run, tp_sample_row_fn fn, void *ctx, char *err, size_t cap)
{
    return tp_run_each_point(run,
                             "SELECT series_id, t_ns, value FROM sample ORDER BY series_id, t_ns",
                             "samples", fn, ctx, err, cap);
}

bool tp_run_each_outer_region(tp_run *run, tp_region_row_fn fn, void *ctx, char *err, size_t cap)
{
    return each_region_row(run,
                           "SELECT r.thread_id, n.text, r.depth, r.start_ns, r.end_ns FROM region r"
                           " JOIN name n ON n.id = r.name_id WHERE r.depth = 0",
                           fn, ctx, err, cap);
}

bool tp_run_each_device_time(tp_run *run, tp_device_row_fn fn, void *ctx, char *err, size_t cap)
{
    if (run->schema_version < TP_SCHEMA_DEVICE)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT d.thread_id, n.text, d.start_ns, d.device_ns FROM device_time d"
                           " JOIN name n ON n.id = d.name_id ORDER BY d.thread_id, d.start_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "device times", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 1);
        fn(ctx, sqlite3_column_int64(st, 0), name ? (const char *)name : "",
           sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "device times", err, cap);
}
