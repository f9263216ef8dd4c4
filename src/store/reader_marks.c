/* reader_marks.c: a run's step, epoch and samples marks, and the spans of
 * its training steps (reader.h). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/mark_kind.h"
#include "store/reader.h"
#include "store/schema.h"
#include "util/grow.h"

/* The marks that where_sql (a condition on m, the mark) lets through, in
 * (rank, thread, time) order. */
static bool read_marks(tp_run *run, const char *where_sql, tp_run_mark **marks, size_t *n,
                       char *err, size_t cap)
{
    *marks = NULL;
    *n = 0;
    if (run->schema_version < 2)
        return true;
    char *sql = sqlite3_mprintf("SELECT m.thread_id, t.rank, m.kind, m.t_ns, m.value FROM mark m"
                                " JOIN thread t ON t.id = m.thread_id WHERE %s"
                                " ORDER BY t.rank, m.thread_id, m.t_ns",
                                where_sql);
    if (!sql) {
        snprintf(err, cap, "%s: out of memory", run->path);
        return false;
    }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(run->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot read marks: %s", run->path, sqlite3_errmsg(run->db));
        return false;
    }
    size_t mcap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *marks = tp_grow(*marks, *n, &mcap, sizeof **marks);
        (*marks)[(*n)++] = (tp_run_mark){sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                                         tp_mark_kind_column(st, 2), sqlite3_column_int64(st, 3),
                                         sqlite3_column_int64(st, 4)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tp_read_failure(err, cap, run->path, run->db);
        return false;
    }
    return true;
}

bool tp_run_marks(tp_run *run, tp_run_mark **marks, size_t *n, char *err, size_t cap)
{
    return read_marks(run, "1", marks, n, err, cap);
}

bool tp_run_step_marks(tp_run *run, tp_run_mark **marks, size_t *n, char *err, size_t cap)
{
    /* every kind but samples (6), in either form (mark_kind.h) */
    return read_marks(run, "m.kind NOT IN (6, 'samples')", marks, n, err, cap);
}

bool tp_run_read_windows(tp_run *run, const char *sql, tp_steps_window **out, size_t *n, char *err,
                         size_t cap)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(run->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot read the steps' span: %s", run->path,
                 sqlite3_errmsg(run->db));
        return false;
    }
    size_t wcap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = tp_grow(*out, *n, &wcap, sizeof **out);
        (*out)[(*n)++] = (tp_steps_window){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                           sqlite3_column_int64(st, 2)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        tp_read_failure(err, cap, run->path, run->db);
        return false;
    }
    return true;
}

bool tp_run_steps_windows(tp_run *run, tp_steps_window **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    return run->schema_version < 2 ||
           tp_run_read_windows(run,
                               "SELECT t.agent_id, min(m.t_ns), max(m.t_ns) FROM mark m"
                               " JOIN thread t ON t.id = m.thread_id"
                               " WHERE m.kind IN ('step', 3)" /* a word before schema 7 */
                               " GROUP BY t.agent_id HAVING count(*) >= 2 ORDER BY t.agent_id",
                               out, n, err, cap);
}
