/* reader.c: validating and reading run files. */
#include "store/reader.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/schema.h"
#include "util/grow.h"

static char *dup_col(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return tp_xstrdup((const char *)t);
}

/* Grows *items (element size sz) so that index n fits. */

static int query_int(sqlite3 *db, const char *sql, int64_t *out)
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

/* Checks application_id and user_version. */
static bool validate(sqlite3 *db, const char *path, char *err, size_t cap)
{
    int64_t app = 0, version = 0;
    int rc = query_int(db, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = query_int(db, "PRAGMA user_version", &version);
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
        run->meta[run->nmeta] = (tp_run_meta){dup_col(st, 0), dup_col(st, 1)};
    }
    sqlite3_finalize(st);
    /* optional: only merges write it, and older ones don't */
    bool per_agent = rc == SQLITE_OK && sqlite3_prepare_v2(db,
                                                           "SELECT agent_id, key, value FROM"
                                                           " agent_meta ORDER BY agent_id, key",
                                                           -1, &st, NULL) == SQLITE_OK;
    for (cap = 0; per_agent && sqlite3_step(st) == SQLITE_ROW; run->nagent_meta++) {
        run->agent_meta = tp_grow(run->agent_meta, run->nagent_meta, &cap, sizeof *run->agent_meta);
        run->agent_meta[run->nagent_meta] =
            (tp_run_agent_meta){sqlite3_column_int64(st, 0), dup_col(st, 1), dup_col(st, 2)};
    }
    if (per_agent)
        sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT id, name, host FROM agent ORDER BY id", -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nagents++) {
        run->agents = tp_grow(run->agents, run->nagents, &cap, sizeof *run->agents);
        run->agents[run->nagents] =
            (tp_run_agent){sqlite3_column_int64(st, 0), dup_col(st, 1), dup_col(st, 2)};
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
                            dup_col(st, 2), dup_col(st, 3), dup_col(st, 4)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            db, "SELECT agent_id, source, reason FROM unavailable ORDER BY rowid", -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->nunavailable++) {
        run->unavailable =
            tp_grow(run->unavailable, run->nunavailable, &cap, sizeof *run->unavailable);
        run->unavailable[run->nunavailable] =
            (tp_run_unavailable){sqlite3_column_int64(st, 0), dup_col(st, 1), dup_col(st, 2)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "SELECT agent_id, gpu_index, name, uuid, mem_total_bytes,"
                                " energy_source FROM gpu ORDER BY agent_id, gpu_index",
                                -1, &st, NULL);
    for (cap = 0; rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW; run->ngpus++) {
        run->gpus = tp_grow(run->gpus, run->ngpus, &cap, sizeof *run->gpus);
        run->gpus[run->ngpus] = (tp_run_gpu){sqlite3_column_int64(st, 0),
                                             sqlite3_column_int(st, 1),
                                             dup_col(st, 2),
                                             dup_col(st, 3),
                                             sqlite3_column_int64(st, 4),
                                             dup_col(st, 5)};
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        /* per series through the primary key: no scan of the samples */
        rc = query_int(db,
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
    int first = query_int(db, "PRAGMA application_id", &probe);
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
    query_int(db, "PRAGMA user_version", &version);
    run->schema_version = (int)version;
    rc = load_tables(run);
    if (rc != SQLITE_OK) {
        tp_read_failure(err, cap, path, db);
        tp_run_close(run);
        return NULL;
    }
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

const char *tp_run_agent_meta_get(const tp_run *run, int64_t agent_id, const char *key)
{
    for (size_t i = 0; i < run->nagent_meta; i++)
        if (run->agent_meta[i].agent_id == agent_id && strcmp(run->agent_meta[i].key, key) == 0)
            return run->agent_meta[i].value;
    if (run->nagent_meta || !run->nagents || run->agents[0].id != agent_id)
        return NULL;
    return tp_run_meta_get(run, key);
}

bool tp_run_summary_only(const tp_run *run)
{
    const char *v = tp_run_meta_get(run, "summary_only");
    return v && strcmp(v, "1") == 0;
}

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

bool tp_run_has_column(const tp_run *run, const char *table, const char *column)
{
    return has_column(run, table, column);
}

bool tp_run_each_series(tp_run *run, tp_series_values_fn fn, void *ctx, char *err, size_t cap)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        run->db, "SELECT series_id, value, t_ns FROM sample ORDER BY series_id, t_ns", -1, &st,
        NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot read samples: %s", run->path, sqlite3_errmsg(run->db));
        return false;
    }
    double *values = NULL;
    int64_t *times = NULL;
    size_t n = 0, vcap = 0, tcap = 0;
    int64_t current = -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id != current) {
            const tp_run_series *s = tp_run_series_by_id(run, current);
            if (s && n)
                fn(ctx, s, times, values, n);
            current = id;
            n = 0;
        }
        values = tp_grow(values, n, &vcap, sizeof *values);
        times = tp_grow(times, n, &tcap, sizeof *times);
        values[n] = sqlite3_column_double(st, 1);
        times[n++] = sqlite3_column_int64(st, 2);
    }
    const tp_run_series *s = tp_run_series_by_id(run, current);
    if (s && n && rc == SQLITE_DONE)
        fn(ctx, s, times, values, n);
    free(values);
    free(times);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tp_read_failure(err, cap, run->path, run->db);
        return false;
    }
    return true;
}

typedef struct region_bucket {
    int rank;
    int64_t name_id;
    const char *name;
    double *v;
    size_t n, cap;
} region_bucket;

static int cmp_bucket(const void *a, const void *b)
{
    const region_bucket *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Streams the (rank, name id, ns) rows of sql unsorted into one bucket per
 * (rank, name): far cheaper than letting SQLite sort millions of rows. */
static bool each_group(tp_run *run, const char *sql, tp_region_group_fn fn, void *ctx, char *err,
                       size_t cap)
{
    region_bucket *b = NULL;
    size_t nb = 0, bcap = 0, last = 0;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(run->db, sql, -1, &st, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW)
            break;
        int rank = sqlite3_column_int(st, 0);
        int64_t name = sqlite3_column_int64(st, 1);
        if (!(nb && b[last].rank == rank && b[last].name_id == name)) {
            for (last = 0; last < nb && !(b[last].rank == rank && b[last].name_id == name);)
                last++;
            if (last == nb) {
                b = tp_grow(b, nb, &bcap, sizeof *b);
                b[nb++] = (region_bucket){rank, name, NULL, NULL, 0, 0};
            }
        }
        region_bucket *k = &b[last];
        k->v = tp_grow(k->v, k->n, &k->cap, sizeof *k->v);
        k->v[k->n++] = (double)sqlite3_column_int64(st, 2) / 1e9;
    }
    sqlite3_finalize(st);
    bool ok = rc == SQLITE_DONE;
    char **texts = calloc(nb + 1, sizeof *texts);
    for (size_t i = 0; ok && i < nb; i++) {
        rc = sqlite3_prepare_v2(run->db, "SELECT text FROM name WHERE id = ?", -1, &st, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, b[i].name_id);
            texts[i] = sqlite3_step(st) == SQLITE_ROW ? dup_col(st, 0) : strdup("?");
            sqlite3_finalize(st);
        }
        b[i].name = texts[i] ? texts[i] : "?";
    }
    if (ok && nb)
        qsort(b, nb, sizeof *b, cmp_bucket);
    for (size_t i = 0; i < nb; i++) {
        if (ok)
            fn(ctx, b[i].rank, b[i].name, b[i].v, b[i].n);
        free(b[i].v);
    }
    for (size_t i = 0; i < nb; i++)
        free(texts[i]);
    free(texts);
    free(b);
    if (!ok)
        snprintf(err, cap, "%s: cannot read timings: %s", run->path, sqlite3_errmsg(run->db));
    return ok;
}

bool tp_run_each_region_group(tp_run *run, tp_region_group_fn fn, void *ctx, char *err, size_t cap)
{
    return run->schema_version < 2 ||
           each_group(run,
                      "SELECT t.rank, r.name_id, r.end_ns - r.start_ns FROM region r"
                      " JOIN thread t ON t.id = r.thread_id",
                      fn, ctx, err, cap);
}

bool tp_run_each_device_group(tp_run *run, tp_region_group_fn fn, void *ctx, char *err, size_t cap)
{
    return run->schema_version < TP_SCHEMA_DEVICE ||
           each_group(run,
                      "SELECT t.rank, d.name_id, d.device_ns FROM device_time d"
                      " JOIN thread t ON t.id = d.thread_id",
                      fn, ctx, err, cap);
}

bool tp_run_mean_between(tp_run *run, const char *metric, const char *labels, int64_t t0_ns,
                         int64_t t1_ns, double *mean)
{
    return tp_run_agent_mean_between(run, 1, metric, labels, t0_ns, t1_ns, mean);
}

bool tp_run_agent_mean_between(tp_run *run, int64_t agent_id, const char *metric,
                               const char *labels, int64_t t0_ns, int64_t t1_ns, double *mean)
{
    static const char sql[] =
        "SELECT AVG(x.value) FROM sample x JOIN series s ON s.id = x.series_id"
        " JOIN metric m ON m.id = s.metric_id"
        " WHERE s.agent_id = ?5 AND m.name = ?1 AND s.labels = ?2 AND x.t_ns > ?3"
        " AND x.t_ns <= COALESCE((SELECT MIN(y.t_ns) FROM sample y"
        " WHERE y.series_id = s.id AND y.t_ns >= ?4), ?4)";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, labels, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, t0_ns);
    sqlite3_bind_int64(st, 4, t1_ns);
    sqlite3_bind_int64(st, 5, agent_id);
    bool found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (found)
        *mean = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return found;
}

void tp_run_thread_totals(tp_run *run, int64_t *threads, int64_t *dropped)
{
    *threads = *dropped = 0;
    if (run->schema_version < 2)
        return;
    query_int(run->db, "SELECT count(*) FROM thread", threads);
    query_int(run->db, "SELECT coalesce(sum(dropped_events), 0) FROM thread", dropped);
}

bool tp_run_value_at(tp_run *run, const char *metric, const char *labels, int64_t t_ns,
                     double *value)
{
    return tp_run_agent_value_at(run, 1, metric, labels, t_ns, value);
}

bool tp_run_series_value_at(tp_run *run, int64_t series_id, int64_t t_ns, double *value)
{
    /* the last sample at or before t_ns, else the first one */
    static const char sql[] =
        "SELECT value FROM (SELECT value, 0 AS k FROM (SELECT value FROM sample"
        " WHERE series_id = ?1 AND t_ns <= ?2 ORDER BY t_ns DESC LIMIT 1)"
        " UNION ALL SELECT value, 1 FROM (SELECT value FROM sample WHERE series_id = ?1"
        " ORDER BY t_ns LIMIT 1)) ORDER BY k LIMIT 1";
    sqlite3_stmt *st = run->value_at_stmt;
    if (!st && sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    run->value_at_stmt = st;
    sqlite3_bind_int64(st, 1, series_id);
    sqlite3_bind_int64(st, 2, t_ns);
    bool found = sqlite3_step(st) == SQLITE_ROW;
    if (found)
        *value = sqlite3_column_double(st, 0);
    sqlite3_reset(st);
    return found;
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

bool tp_run_agent_value_at(tp_run *run, int64_t agent_id, const char *metric, const char *labels,
                           int64_t t_ns, double *value)
{
    static const char before[] =
        "SELECT x.value FROM sample x JOIN series s ON s.id = x.series_id"
        " JOIN metric m ON m.id = s.metric_id"
        " WHERE s.agent_id = ?4 AND m.name = ?1 AND s.labels = ?2 AND x.t_ns <= ?3"
        " ORDER BY x.t_ns DESC LIMIT 1";
    static const char first[] =
        "SELECT x.value FROM sample x JOIN series s ON s.id = x.series_id"
        " JOIN metric m ON m.id = s.metric_id"
        " WHERE s.agent_id = ?4 AND m.name = ?1 AND s.labels = ?2 ORDER BY x.t_ns LIMIT 1";
    bool found = false;
    for (int pass = 0; pass < 2 && !found; pass++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(run->db, pass ? first : before, -1, &st, NULL) != SQLITE_OK)
            return false;
        sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, labels, -1, SQLITE_STATIC);
        if (!pass)
            sqlite3_bind_int64(st, 3, t_ns);
        sqlite3_bind_int64(st, 4, agent_id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *value = sqlite3_column_double(st, 0);
            found = true;
        }
        sqlite3_finalize(st);
    }
    return found;
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
