/* reader_stream.c: row-by-row reads of regions, samples and threads. */
#include "store/reader_stream.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/schema.h"
#include "util/grow.h"

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
    /* a process's GPU, told on one of its threads (the first such), is each
     * of its threads': found once per process (SQLite's min() takes the
     * other columns from its row), not by a scan per thread */
    bool devices = tp_run_has_table(run, "thread_device");
    char sql[900];
    snprintf(sql, sizeof sql,
             "%s SELECT t.id, t.pid, t.tid, t.rank, t.name, t.world_size, t.agent_id, t.local_rank,"
             " %s, %s FROM thread t %s %s ORDER BY t.id",
             devices ? "WITH dev AS (SELECT u.agent_id AS agent_id, u.pid AS pid, d.uuid AS uuid,"
                       " min(u.id) FROM thread_device d JOIN thread u ON u.id = d.thread_id"
                       " GROUP BY u.agent_id, u.pid)"
                     : "",
             tp_run_has_table(run, "thread_cuda") ? "c.visible_devices" : "NULL",
             devices ? "dev.uuid" : "NULL",
             tp_run_has_table(run, "thread_cuda") ? "LEFT JOIN thread_cuda c ON c.thread_id = t.id"
                                                  : "",
             devices ? "LEFT JOIN dev ON dev.agent_id = t.agent_id AND dev.pid = t.pid" : "");
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "threads", err, cap);
    size_t tcap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *threads = tp_grow(*threads, *n, &tcap, sizeof **threads);
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
        const unsigned char *uuid = sqlite3_column_text(st, 9);
        snprintf(t->device_uuid, sizeof t->device_uuid, "%s", uuid ? (const char *)uuid : "");
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

bool tp_run_each_region_id(tp_run *run, tp_region_id_fn fn, void *ctx, char *err, size_t cap)
{
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT thread_id, name_id, depth, start_ns, end_ns FROM region"
                           " ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "regions", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2),
           sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "regions", err, cap);
}

bool tp_run_each_name(tp_run *run, tp_name_fn fn, void *ctx, char *err, size_t cap)
{
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, "SELECT id, text FROM name", -1, &st, NULL) != SQLITE_OK)
        return failed(run, "names", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(st, 1);
        fn(ctx, sqlite3_column_int64(st, 0), text ? (const char *)text : "");
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "names", err, cap);
}

/* "?1, ?2, ... ?n" into buf. */
static void placeholders(char *buf, size_t cap, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s?%zu", i ? ", " : "", i + 1);
}

bool tp_run_each_named_region(tp_run *run, const char *const *names, size_t nnames,
                              tp_region_row_fn fn, void *ctx, char *err, size_t cap)
{
    if (run->schema_version < 2 || nnames == 0)
        return true;
    if (nnames > 16) {
        snprintf(err, cap, "%s: cannot read regions of more than 16 names at once", run->path);
        return false;
    }
    /* the names' ids first: a run that has none of them costs no pass over
     * the regions, and one that has some costs one (a join would scan the
     * table once per name) */
    char params[128], sql[256];
    placeholders(params, sizeof params, nnames);
    snprintf(sql, sizeof sql, "SELECT id, text FROM name WHERE text IN (%s)", params);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "names", err, cap);
    for (size_t i = 0; i < nnames; i++)
        sqlite3_bind_text(st, (int)i + 1, names[i], -1, SQLITE_STATIC);
    int64_t ids[16];
    const char *texts[16];
    size_t nids = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && nids < nnames) {
        const char *text = (const char *)sqlite3_column_text(st, 1);
        for (size_t i = 0; text && i < nnames; i++)
            if (strcmp(text, names[i]) == 0) {
                ids[nids] = sqlite3_column_int64(st, 0);
                texts[nids++] = names[i];
                break;
            }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return failed(run, "names", err, cap);
    if (!nids)
        return true;
    placeholders(params, sizeof params, nids);
    snprintf(sql, sizeof sql,
             "SELECT thread_id, name_id, depth, start_ns, end_ns FROM region"
             " WHERE name_id IN (%s) ORDER BY thread_id, start_ns",
             params);
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return failed(run, "regions", err, cap);
    for (size_t i = 0; i < nids; i++)
        sqlite3_bind_int64(st, (int)i + 1, ids[i]);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 1);
        size_t k = 0;
        while (k + 1 < nids && ids[k] != id)
            k++;
        fn(ctx, sqlite3_column_int64(st, 0), texts[k], sqlite3_column_int(st, 2),
           sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "regions", err, cap);
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
