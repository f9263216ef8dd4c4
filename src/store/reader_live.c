/* reader_live.c: see reader_live.h. */
#include "store/reader_live.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store/mark_kind.h"
#include "store/schema.h"
#include "util/grow.h"
#include "core/run_keys.h"

bool tp_run_live_now(const tp_run *run, uint64_t *now_ns)
{
    const char *start = tp_run_meta_get(run, TP_META_START_MONO_NS);
    if (!start || run->schema_version < 2)
        return false;
    uint64_t anchor = strtoull(start, NULL, 10), now = tp_clock_mono_ns();
    *now_ns = now > anchor ? now - anchor : 0;
    return true;
}

/* Makes room for one more element of a batch vector, or returns false from
 * the function using it (memory ran out; the vector is kept as it was). */
#define ROOM_OR_FAIL(v)                                                          \
    do {                                                                         \
        void *p_ = tp_grow_try((v).items, (v).len, &(v).cap, sizeof *(v).items); \
        if (!p_)                                                                 \
            return false;                                                        \
        (v).items = p_;                                                          \
    } while (0)

typedef struct tail_read {
    tp_run_tail *tail;
    tp_batch *out;
    uint64_t since_ns;
} tail_read;

/* Each row_* takes one row, moves the tail past it and keeps it in the
 * batch when it is recent enough; false when memory ran out. */

static bool row_name(sqlite3_stmt *st, tail_read *r)
{
    r->tail->name_id = sqlite3_column_int64(st, 0);
    const char *text = (const char *)sqlite3_column_text(st, 1);
    ROOM_OR_FAIL(r->out->names);
    tp_name_def d = {(uint32_t)r->tail->name_id, strdup(text ? text : "")};
    if (!d.text)
        return false;
    r->out->names.items[r->out->names.len++] = d;
    return true;
}

static bool row_thread(sqlite3_stmt *st, tail_read *r)
{
    r->tail->thread_id = sqlite3_column_int64(st, 0);
    ROOM_OR_FAIL(r->out->threads);
    tp_thread_info t = {.id = (uint32_t)r->tail->thread_id,
                        .pid = sqlite3_column_int(st, 1),
                        .tid = sqlite3_column_int(st, 2),
                        .rank = sqlite3_column_int(st, 3)};
    r->out->threads.items[r->out->threads.len++] = t;
    return true;
}

static bool row_region(sqlite3_stmt *st, tail_read *r)
{
    r->tail->region_rowid = sqlite3_column_int64(st, 0);
    tp_interval v = {(uint32_t)sqlite3_column_int64(st, 1), (uint32_t)sqlite3_column_int64(st, 2),
                     (uint32_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 4),
                     (uint64_t)sqlite3_column_int64(st, 5)};
    if (v.end_ns < r->since_ns || v.end_ns < v.start_ns)
        return true;
    ROOM_OR_FAIL(r->out->intervals);
    r->out->intervals.items[r->out->intervals.len++] = v;
    return true;
}

static bool row_device(sqlite3_stmt *st, tail_read *r)
{
    r->tail->device_rowid = sqlite3_column_int64(st, 0);
    tp_device_span d = {
        (uint32_t)sqlite3_column_int64(st, 1), (uint32_t)sqlite3_column_int64(st, 2),
        (uint64_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 4)};
    if (d.start_ns < r->since_ns)
        return true;
    ROOM_OR_FAIL(r->out->device_spans);
    r->out->device_spans.items[r->out->device_spans.len++] = d;
    return true;
}

static bool row_mark(sqlite3_stmt *st, tail_read *r)
{
    r->tail->mark_rowid = sqlite3_column_int64(st, 0);
    tp_mark m = {(uint32_t)sqlite3_column_int64(st, 1), (uint32_t)tp_mark_kind_column(st, 2),
                 (uint64_t)sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)};
    if (m.t_ns < r->since_ns)
        return true;
    ROOM_OR_FAIL(r->out->marks);
    r->out->marks.items[r->out->marks.len++] = m;
    return true;
}

/* Runs sql, whose one parameter is the rowid to read after, giving each row
 * to row; false on a failed query or when memory ran out. */
static bool each_row(tp_run *run, const char *sql, int64_t after,
                     bool (*row)(sqlite3_stmt *, tail_read *), tail_read *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, after);
    int rc;
    bool ok = true;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW)
        ok = row(st, r);
    sqlite3_finalize(st);
    return ok && rc == SQLITE_DONE;
}

bool tp_run_read_tail(tp_run *run, tp_run_tail *tail, uint64_t since_ns, tp_batch *out)
{
    tail_read r = {tail, out, since_ns};
    bool ok = each_row(run, "SELECT id, text FROM name WHERE id > ? ORDER BY id", tail->name_id,
                       row_name, &r) &&
              each_row(run, "SELECT id, pid, tid, rank FROM thread WHERE id > ? ORDER BY id",
                       tail->thread_id, row_thread, &r) &&
              each_row(run,
                       "SELECT rowid, thread_id, name_id, depth, start_ns, end_ns FROM region"
                       " WHERE rowid > ? ORDER BY rowid",
                       tail->region_rowid, row_region, &r);
    if (ok && run->schema_version >= TP_SCHEMA_DEVICE)
        ok = each_row(run,
                      "SELECT rowid, thread_id, name_id, start_ns, device_ns FROM device_time"
                      " WHERE rowid > ? ORDER BY rowid",
                      tail->device_rowid, row_device, &r);
    return ok && each_row(run,
                          "SELECT rowid, thread_id, kind, t_ns, value FROM mark WHERE rowid > ?"
                          " ORDER BY rowid",
                          tail->mark_rowid, row_mark, &r);
}

bool tp_run_live_wheres(tp_run *run, tp_run_where_fn fn, void *ctx)
{
    sqlite3_stmt *st;
    if (run->schema_version < TP_SCHEMA_STACK_RUNS_VERSION)
        return true;
    /* SQLite takes a bare column from the row max() picked */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT t.rank, s.node_id, s.state, max(s.t_ns + s.span_ns) FROM (SELECT thread_id,"
             " node_id, state, t_ns, span_ns, phase_id FROM stack_sample ORDER BY rowid DESC"
             " LIMIT %d) s JOIN thread t ON t.id = s.thread_id WHERE s.phase_id != 0"
             " GROUP BY t.rank",
             TP_LIVE_WHERE_ROWS);
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 1);
        if (id > 0 && id <= (int64_t)UINT32_MAX)
            fn(ctx, sqlite3_column_int(st, 0), (uint32_t)id, sqlite3_column_int(st, 2));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
}

bool tp_run_recent_steps(tp_run *run, size_t per_rank, tp_run_mark **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT thread_id, rank, kind, t_ns FROM (SELECT m.thread_id, t.rank,"
                           " m.kind, m.t_ns, row_number() OVER (PARTITION BY t.rank"
                           " ORDER BY m.t_ns DESC) AS k FROM mark m JOIN thread t"
                           " ON t.id = m.thread_id WHERE m.kind IN (3, 9, 'step', 'step_end'))"
                           " WHERE k <= ?1 ORDER BY rank, t_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)per_rank);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tp_run_mark *m = tp_grow_try(*out, *n, &cap, sizeof **out);
        if (!m)
            break;
        *out = m;
        (*out)[(*n)++] = (tp_run_mark){sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                                       tp_mark_kind_column(st, 2), sqlite3_column_int64(st, 3), 0};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
}

size_t tp_run_step_begins_after(tp_run *run, int64_t *rowid, int64_t *thread_id, int64_t *out,
                                size_t max)
{
    sqlite3_stmt *st;
    if (run->schema_version < 2 || max == 0 ||
        sqlite3_prepare_v2(run->db,
                           "SELECT rowid, thread_id, t_ns FROM mark WHERE rowid > ?1"
                           " AND kind IN (3, 'step') ORDER BY rowid LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, *rowid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        *rowid = sqlite3_column_int64(st, 0);
        int64_t thread = sqlite3_column_int64(st, 1);
        if (!*thread_id)
            *thread_id = thread;
        if (thread == *thread_id)
            out[n++] = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return n;
}

/* sql (?1 a metric's name, samples in (?2, ?3]) stepped once: its row, or
 * NULL where it has none or its first column is NULL (finalize st then). */
static sqlite3_stmt *live_row(tp_run *run, const char *sql, const char *metric, int64_t t0_ns,
                              int64_t t1_ns)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t0_ns);
    sqlite3_bind_int64(st, 3, t1_ns);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        return st;
    sqlite3_finalize(st);
    return NULL;
}

bool tp_run_live_max_mean(tp_run *run, const char *metric, int64_t t0_ns, int64_t t1_ns,
                          double *max, int *n)
{
    sqlite3_stmt *st =
        live_row(run,
                 "SELECT MAX(m), COUNT(*) FROM (SELECT AVG(x.value) AS m FROM sample x"
                 " JOIN series s ON s.id = x.series_id JOIN metric k ON k.id = s.metric_id"
                 " WHERE k.name = ?1 AND s.agent_id = (SELECT MIN(agent_id) FROM series)"
                 " AND x.t_ns > ?2 AND x.t_ns <= ?3 GROUP BY x.series_id)",
                 metric, t0_ns, t1_ns);
    bool found = st != NULL;
    if (found) {
        *max = sqlite3_column_double(st, 0);
        *n = sqlite3_column_int(st, 1);
        sqlite3_finalize(st);
    }
    return found;
}

bool tp_run_live_mean(tp_run *run, const char *metric, int64_t t0_ns, int64_t t1_ns, double *mean)
{
    sqlite3_stmt *st = live_row(run,
                                "SELECT AVG(x.value) FROM sample x WHERE x.series_id = (SELECT s.id"
                                " FROM series s JOIN metric m ON m.id = s.metric_id WHERE m.name ="
                                " ?1 AND s.labels = '{}' ORDER BY s.agent_id LIMIT 1)"
                                " AND x.t_ns > ?2 AND x.t_ns <= ?3",
                                metric, t0_ns, t1_ns);
    if (!st)
        return false;
    *mean = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return true;
}
