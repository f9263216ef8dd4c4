/* sql_util.h: small SQLite helpers the readers share (store/ only). */
#ifndef TP_STORE_SQL_UTIL_H
#define TP_STORE_SQL_UTIL_H

#include <sqlite3.h>
#include <stdint.h>

#include "util/oom.h"

/* A column's text, copied ("" for NULL). */
static inline char *tp_sql_dup_text(sqlite3_stmt *st, int col)
{
    return tp_xstrdup((const char *)sqlite3_column_text(st, col));
}

/* The one integer sql returns into *out (-1 for NULL); an SQLite code. */
static inline int tp_sql_query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

#endif
