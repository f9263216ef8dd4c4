/* reader.c: validating and reading run files. */
#include "store/reader.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/schema.h"
#include "store/sql_util.h"
#include "util/grow.h"
#include "core/run_keys.h"
#include "analysis_id.h"

/* tp_run_agent_meta_get's order: by agent, then key. */
static int agent_meta_order(const void *a, const void *b)
{
    const tp_run_agent_meta *x = a, *y = b;
    if (x->agent_id != y->agent_id)
        return x->agent_id < y->agent_id ? -1 : 1;
    return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

/* Whether the SQLite file at path is in WAL mode (its header's format
 * bytes 18 and 19 are 2); *no_wal whether it has no -wal file beside it,
 * or an empty one (SQLite makes one as it opens the file). */
static bool wal_mode(const char *path, bool *no_wal)
{
    unsigned char header[20];
    FILE *f = fopen(path, "rb");
    bool wal = f && fread(header, 1, sizeof header, f) == sizeof header &&
               memcmp(header, "SQLite format 3", 15) == 0 && header[18] == 2 && header[19] == 2;
    if (f)
        fclose(f);
    char side[4200];
    struct stat sb;
    snprintf(side, sizeof side, "%s-wal", path);
    *no_wal = stat(side, &sb) != 0 || sb.st_size == 0;
    return wal;
}

/* Checks application_id and user_version: false, the reason in err, for a
 * file that is no run file this trainprof reads. */
static bool validate(sqlite3 *db, const char *path, char *err, size_t cap)
{
    int64_t app = 0, version = 0;
    int rc = tp_sql_query_int(db, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = tp_sql_query_int(db, "PRAGMA user_version", &version);
    if (rc == SQLITE_NOTADB) {
        snprintf(err, cap, "%s: not a trainprof run file (not an SQLite database)", path);
        return false;
    }
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot read: %s", path, sqlite3_errstr(rc));
        return false;
    }
    struct stat sb;
    if (app == 0 && version == 0 && stat(path, &sb) == 0 && sb.st_size == 0) {
        snprintf(err, cap,
                 "%s: an empty file: a run that ended before it began (its recorder was killed "
                 "as it started), or not a run file",
                 path);
        return false;
    }
    bool no_wal = false;
    if (app == 0 && version == 0 && wal_mode(path, &no_wal)) {
        if (no_wal)
            snprintf(err, cap,
                     "%s: a database in WAL mode with nothing outside its write-ahead log, and "
                     "%s-wal is not beside it (or empty): a recording killed before its first "
                     "commit (nothing was recorded), or one copied without its -wal file (copy "
                     "both, then read it)",
                     path, path);
        else /* its pages written into the log, the commit not: killed in between */
            snprintf(err, cap,
                     "%s: a database in WAL mode whose write-ahead log %s-wal holds no commit: "
                     "a recording killed before its first commit (nothing was recorded)",
                     path, path);
        return false;
    }
    if (app != TP_APPLICATION_ID || version < 1) {
        snprintf(err, cap, "%s: not a trainprof run file (an SQLite database of another kind)",
                 path);
        return false;
    }
    if (version > TP_SCHEMA_VERSION) {
        snprintf(err, cap,
                 "%s: run file schema version %lld is newer than this trainprof reads (%d); "
                 "upgrade trainprof",
                 path, (long long)version, TP_SCHEMA_VERSION);
        return false;
    }
    return true;
}

static int load_tables(tp_run *run)
{
    sqlite3 *db = run->db;
    sqlite3_stmt *st;
    size_t cap;
    int rc = sqlite3_prepare_v2(db, "SELECT key, value FROM meta ORDER BY key", -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nmeta++) {
        run->meta = tp_grow(run->meta, run->nmeta, &cap, sizeof *run->meta);
        run->meta[run->nmeta] = (tp_run_meta){tp_sql_dup_text(st, 0), tp_sql_dup_text(st, 1)};
    }
    sqlite3_finalize(st);
    /* optional: only merges write it, and older ones don't */
    bool per_agent = rc == SQLITE_OK && sqlite3_prepare_v2(db,
                                                           "SELECT agent_id, key, value FROM"
                                                           " agent_meta ORDER BY agent_id, key",
                                                           -1, &st, NULL) == SQLITE_OK;
    for (cap = 0; per_agent && sqlite3_step(st) == SQLITE_ROW; run->nagent_meta++) {
        run->agent_meta = tp_grow(run->agent_meta, run->nagent_meta, &cap, sizeof *run->agent_meta);
        run->agent_meta[run->nagent_meta] = (tp_run_agent_meta){
            sqlite3_column_int64(st, 0), tp_sql_dup_text(st, 1), tp_sql_dup_text(st, 2)};
    }
    if (per_agent)
        sqlite3_finalize(st);
    /* in C's order too (a file whose keys are not all text sorts otherwise) */
    if (run->nagent_meta > 1)
        qsort(run->agent_meta, run->nagent_meta, sizeof *run->agent_meta, agent_meta_order);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT id, name, host FROM agent ORDER BY id", -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nagents++) {
        run->agents = tp_grow(run->agents, run->nagents, &cap, sizeof *run->agents);
        run->agents[run->nagents] = (tp_run_agent){sqlite3_column_int64(st, 0),
                                                   tp_sql_dup_text(st, 1), tp_sql_dup_text(st, 2)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "SELECT s.id, s.agent_id, m.name, m.unit, s.labels FROM series s"
                                " JOIN metric m ON m.id = s.metric_id ORDER BY s.id",
                                -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nseries++) {
        run->series = tp_grow(run->series, run->nseries, &cap, sizeof *run->series);
        run->series[run->nseries] =
            (tp_run_series){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                            tp_sql_dup_text(st, 2), tp_sql_dup_text(st, 3), tp_sql_dup_text(st, 4)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            db, "SELECT agent_id, source, reason FROM unavailable ORDER BY rowid", -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nunavailable++) {
        run->unavailable =
            tp_grow(run->unavailable, run->nunavailable, &cap, sizeof *run->unavailable);
        run->unavailable[run->nunavailable] = (tp_run_unavailable){
            sqlite3_column_int64(st, 0), tp_sql_dup_text(st, 1), tp_sql_dup_text(st, 2)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "SELECT agent_id, gpu_index, name, uuid, mem_total_bytes,"
                                " energy_source FROM gpu ORDER BY agent_id, gpu_index",
                                -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->ngpus++) {
        run->gpus = tp_grow(run->gpus, run->ngpus, &cap, sizeof *run->gpus);
        run->gpus[run->ngpus] = (tp_run_gpu){sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                                             tp_sql_dup_text(st, 2),      tp_sql_dup_text(st, 3),
                                             sqlite3_column_int64(st, 4), tp_sql_dup_text(st, 5)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        /* per series through the primary key: no scan of the samples */
        rc = tp_sql_query_int(db,
                              "SELECT max((SELECT max(t_ns) FROM sample WHERE series_id = s.id))"
                              " FROM series s",
                              &run->last_t_ns);
    return rc;
}

/* path opened with SQLite's immutable=1 (no lock, no -shm, no -wal read),
 * or NULL: a URI, with the characters URIs reserve in a path escaped. */
static sqlite3 *open_immutable(const char *path)
{
    size_t len = strlen(path);
    char *uri = malloc(3 * len + 32);
    if (!uri)
        return NULL;
    size_t n = (size_t)sprintf(uri, "file:");
    for (const char *p = path; *p; p++)
        n += strchr("?#%", *p) ? (size_t)sprintf(uri + n, "%%%02X", (unsigned char)*p)
                               : (size_t)sprintf(uri + n, "%c", *p);
    sprintf(uri + n, "?immutable=1");
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                             NULL);
    free(uri);
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

tp_run *tp_run_open(const char *path, char *err, size_t cap)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, cap, "%s: no such file", path);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, cap, "%s: not a regular file", path);
        return NULL;
    }
    tp_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->path = strdup(path);
    sqlite3 *db = NULL;
    /* a tp_run is used by one thread at a time: no SQLite mutex per call */
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    run->db = db;
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot open: %s", path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        tp_run_close(run);
        return NULL;
    }
    sqlite3_busy_timeout(db, 2000);
    int64_t probe;
    int first = tp_sql_query_int(db, "PRAGMA application_id", &probe);
    if (first == SQLITE_READONLY || first == SQLITE_CANTOPEN) {
        /* a killed recording (still in WAL mode) where this reader can't make
         * its -shm: read the file as it is on disk, which holds everything
         * its recorder checkpointed */
        sqlite3_close(db);
        run->db = db = open_immutable(path);
        if (!db) {
            snprintf(err, cap, "%s: cannot open read-only", path);
            tp_run_close(run);
            return NULL;
        }
    }
    tp_exec(db, "PRAGMA cache_size=-65536");
    if (!validate(db, path, err, cap)) {
        tp_run_close(run);
        return NULL;
    }
    int64_t version = 0;
    tp_sql_query_int(db, "PRAGMA user_version", &version);
    run->schema_version = (int)version;
    rc = load_tables(run);
    if (rc != SQLITE_OK) {
        tp_read_failure(err, cap, path, db);
        tp_run_close(run);
        return NULL;
    }
    tp_run_settings_read(run->meta, run->nmeta, &run->settings);
    run->summary_foreign =
        run->settings.summarized && strcmp(run->settings.summary_by, TP_ANALYSIS_ID) != 0;
    if (run->summary_foreign && !run->settings.summary_only)
        run->raw_only = true; /* a verdict fixed since is made as fixed */
    return run;
}

void tp_run_close(tp_run *run)
{
    if (!run)
        return;
    for (size_t i = 0; i < run->nmeta; i++) {
        free(run->meta[i].key);
        free(run->meta[i].value);
    }
    for (size_t i = 0; i < run->nagent_meta; i++) {
        free(run->agent_meta[i].key);
        free(run->agent_meta[i].value);
    }
    free(run->agent_meta);
    for (size_t i = 0; i < run->nagents; i++) {
        free(run->agents[i].name);
        free(run->agents[i].host);
    }
    for (size_t i = 0; i < run->nseries; i++) {
        free(run->series[i].metric);
        free(run->series[i].unit);
        free(run->series[i].labels);
    }
    free(run->series_by_key);
    for (size_t i = 0; i < run->nunavailable; i++) {
        free(run->unavailable[i].source);
        free(run->unavailable[i].reason);
    }
    for (size_t i = 0; i < run->ngpus; i++) {
        free(run->gpus[i].name);
        free(run->gpus[i].uuid);
        free(run->gpus[i].energy_source);
    }
    free(run->meta);
    free(run->agents);
    free(run->series);
    free(run->unavailable);
    free(run->gpus);
    sqlite3_finalize(run->value_at_stmt);
    sqlite3_close(run->db);
    free(run->path);
    free(run);
}

const char *tp_run_meta_get(const tp_run *run, const char *key)
{
    for (size_t i = 0; i < run->nmeta; i++)
        if (strcmp(run->meta[i].key, key) == 0)
            return run->meta[i].value;
    return NULL;
}

const char *tp_run_agent_name(const tp_run *run, int64_t id)
{
    for (size_t i = 0; i < run->nagents; i++)
        if (run->agents[i].id == id)
            return run->agents[i].name;
    return "?";
}

/* Binary search: agent_meta is sorted by agent and key as it loads, so
 * that the lookups of a fleet (tens of thousands of rows, asked per GPU and
 * per agent) are not each a scan. */
const char *tp_run_agent_meta_get(const tp_run *run, int64_t agent_id, const char *key)
{
    size_t lo = 0, hi = run->nagent_meta;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tp_run_agent_meta *m = &run->agent_meta[mid];
        int c = m->agent_id != agent_id ? (m->agent_id < agent_id ? -1 : 1)
                                        : strcmp(m->key ? m->key : "", key);
        if (c == 0)
            return m->value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (run->nagent_meta || !run->nagents || run->agents[0].id != agent_id)
        return NULL;
    return tp_run_meta_get(run, key);
}

bool tp_run_summary_only(const tp_run *run) { return run->settings.summary_only; }

/* Whether table has a column named column, or any column when column is
 * NULL (the table exists). */
static bool has_column(const tp_run *run, const char *table, const char *column)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT 1 FROM pragma_table_info(?1) WHERE ?2 IS NULL OR name = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    if (column)
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    bool found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

bool tp_run_has_table(const tp_run *run, const char *name) { return has_column(run, name, NULL); }

bool tp_summary_stored(const tp_run *run)
{
    return !run->raw_only && run->schema_version >= TP_SCHEMA_SUMMARY && run->settings.summarized;
}

bool tp_run_has_column(const tp_run *run, const char *table, const char *column)
{
    return has_column(run, table, column);
}

bool tp_run_begin_read(tp_run *run)
{
    return sqlite3_get_autocommit(run->db) &&
           sqlite3_exec(run->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}

void tp_run_end_read(tp_run *run)
{
    if (!sqlite3_get_autocommit(run->db))
        sqlite3_exec(run->db, "COMMIT", NULL, NULL, NULL);
}

static int cmp_series_key(const tp_run_series *a, int64_t agent, const char *metric,
                          const char *labels)
{
    if (a->agent_id != agent)
        return (a->agent_id > agent) - (a->agent_id < agent);
    int c = strcmp(a->metric, metric);
    return c ? c : strcmp(a->labels, labels);
}

static int cmp_series_ptr(const void *x, const void *y)
{
    const tp_run_series *a = *(const tp_run_series *const *)x;
    const tp_run_series *b = *(const tp_run_series *const *)y;
    return cmp_series_key(a, b->agent_id, b->metric, b->labels);
}

const tp_run_series *tp_run_series_find(tp_run *run, int64_t agent_id, const char *metric,
                                        const char *labels)
{
    if (!run->series_by_key && run->nseries) {
        run->series_by_key = malloc(run->nseries * sizeof *run->series_by_key);
        if (!run->series_by_key)
            return NULL;
        for (size_t i = 0; i < run->nseries; i++)
            run->series_by_key[i] = &run->series[i];
        qsort(run->series_by_key, run->nseries, sizeof *run->series_by_key, cmp_series_ptr);
    }
    size_t lo = 0, hi = run->nseries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_series_key(run->series_by_key[mid], agent_id, metric, labels) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < run->nseries &&
                   cmp_series_key(run->series_by_key[lo], agent_id, metric, labels) == 0
               ? run->series_by_key[lo]
               : NULL;
}

const tp_run_series *tp_run_series_by_id(const tp_run *run, int64_t id)
{
    size_t lo = 0, hi = run->nseries; /* loaded in id order */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (run->series[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < run->nseries && run->series[lo].id == id ? &run->series[lo] : NULL;
}

const char *tp_run_file(const tp_run *run) { return sqlite3_db_filename(run->db, "main"); }

bool tp_runs_open_in_threads(void) { return sqlite3_threadsafe() != 0; }
