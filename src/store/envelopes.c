/* envelopes.c: see envelopes.h. */
#include "store/envelopes.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/schema.h"
#include "store/sql_util.h"
#include "util/grow.h"
#include "core/run_keys.h"

static int write_rows(sqlite3 *db, const tp_envelope_rows *rows, size_t n)
{
    int rc = tp_exec(db, "BEGIN;" TP_SCHEMA_SUMMARY_ENVELOPE "DELETE FROM summary_envelope;");
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO summary_envelope VALUES (?, ?, ?, ?, ?, ?)", -1,
                                &st, NULL);
    for (size_t m = 0; rc == SQLITE_OK && m < n; m++)
        for (size_t k = 0; rc == SQLITE_OK && k < rows[m].n; k++) {
            sqlite3_bind_text(st, 1, rows[m].metric, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)rows[m].lines);
            sqlite3_bind_double(st, 3, rows[m].x[k]);
            sqlite3_bind_double(st, 4, rows[m].low[k]);
            sqlite3_bind_double(st, 5, rows[m].median[k]);
            sqlite3_bind_double(st, 6, rows[m].high[k]);
            rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            sqlite3_reset(st);
        }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = tp_exec(db,
                     "INSERT OR REPLACE INTO meta VALUES ('" TP_META_ENVELOPES "', '1'); COMMIT;");
    else
        tp_exec(db, "ROLLBACK;");
    return rc;
}

bool tp_envelopes_write(const char *path, const tp_envelope_rows *rows, size_t n, char *err,
                        size_t cap)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = write_rows(db, rows, n);
    if (rc != SQLITE_OK)
        snprintf(err, cap, "%s: cannot store the metrics' envelopes: %s", path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return rc == SQLITE_OK;
}

bool tp_envelopes_stored(const tp_run *run)
{
    return run->settings.envelopes && tp_run_has_table(run, "summary_envelope");
}

/* One metric's points as they are read. */
typedef struct envelope_read {
    char metric[128];
    size_t lines, n, cap[4];
    double *v[4]; /* x, low, median, high */
} envelope_read;

static bool flush(envelope_read *r, tp_envelope_fn fn, void *ctx)
{
    if (!r->n)
        return true;
    tp_envelope_rows rows = {r->metric, r->lines, r->v[0], r->v[1], r->v[2], r->v[3], r->n};
    bool go_on = fn(ctx, &rows);
    r->n = 0;
    return go_on;
}

bool tp_stored_envelopes(tp_run *run, tp_envelope_fn fn, void *ctx, char *err, size_t cap)
{
    if (!tp_envelopes_stored(run))
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT metric, lines, x, low, median, high FROM summary_envelope"
                           " ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot read the stored envelopes: %s", run->path,
                 sqlite3_errmsg(run->db));
        return false;
    }
    envelope_read r = {0};
    int rc = SQLITE_DONE;
    bool go_on = true;
    while (go_on && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *metric = sqlite3_column_text(st, 0);
        char name[sizeof r.metric];
        snprintf(name, sizeof name, "%s", metric ? (const char *)metric : "");
        sqlite3_int64 lines = sqlite3_column_int64(st, 1);
        if (r.n && (strcmp(name, r.metric) != 0 || (size_t)lines != r.lines))
            go_on = flush(&r, fn, ctx);
        if (!r.n) {
            memcpy(r.metric, name, sizeof name);
            r.lines = lines > 0 ? (size_t)lines : 0;
        }
        for (int c = 0; c < 4; c++) {
            r.v[c] = tp_grow(r.v[c], r.n, &r.cap[c], sizeof *r.v[c]);
            r.v[c][r.n] = sqlite3_column_double(st, 2 + c);
        }
        r.n++;
    }
    sqlite3_finalize(st);
    if (go_on)
        go_on = flush(&r, fn, ctx);
    for (int c = 0; c < 4; c++)
        free(r.v[c]);
    if (go_on && rc != SQLITE_DONE) {
        snprintf(err, cap, "%s: cannot read the stored envelopes: %s", run->path,
                 sqlite3_errmsg(run->db));
        return false;
    }
    return true;
}
