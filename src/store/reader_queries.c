/* reader_queries.c: the queries a reader asks of a run's rows: every
 * series' samples, regions grouped by rank and name, a series' mean between
 * two times or its value at one, threads' totals. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/reader.h"
#include "store/schema.h"
#include "store/sql_util.h"
#include "stacks.h"
#include "util/grow.h"

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
            texts[i] = sqlite3_step(st) == SQLITE_ROW ? tp_sql_dup_text(st, 0) : strdup("?");
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

/* A statement selecting `what` of the samples of agent_id's series
 * (metric, labels) in (t0_ns, t1_ns]: those after t0_ns up to the first at or
 * after t1_ns; NULL when it can't be prepared. */
static sqlite3_stmt *window_samples(tp_run *run, const char *what, int64_t agent_id,
                                    const char *metric, const char *labels, int64_t t0_ns,
                                    int64_t t1_ns)
{
    const tp_run_series *series = tp_run_series_find(run, agent_id, metric, labels);
    if (!series)
        return NULL;
    /* by the sample table's key (series_id, t_ns): a range of one series */
    char *sql = sqlite3_mprintf("SELECT %s FROM sample x WHERE x.series_id = ?1 AND x.t_ns > ?2"
                                " AND x.t_ns <= COALESCE((SELECT MIN(y.t_ns) FROM sample y"
                                " WHERE y.series_id = ?1 AND y.t_ns >= ?3), ?3)",
                                what);
    sqlite3_stmt *st = NULL;
    if (!sql || sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        st = NULL;
    sqlite3_free(sql);
    if (st) {
        sqlite3_bind_int64(st, 1, series->id);
        sqlite3_bind_int64(st, 2, t0_ns);
        sqlite3_bind_int64(st, 3, t1_ns);
    }
    return st;
}

bool tp_run_agent_mean_between(tp_run *run, int64_t agent_id, const char *metric,
                               const char *labels, int64_t t0_ns, int64_t t1_ns, double *mean)
{
    sqlite3_stmt *st = window_samples(run, "AVG(x.value)", agent_id, metric, labels, t0_ns, t1_ns);
    if (!st)
        return false;
    bool found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (found)
        *mean = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return found;
}

bool tp_run_agent_stats_between(tp_run *run, int64_t agent_id, const char *metric,
                                const char *labels, int64_t t0_ns, int64_t t1_ns, tp_stats *out)
{
    sqlite3_stmt *st = window_samples(run, "x.value", agent_id, metric, labels, t0_ns, t1_ns);
    if (!st)
        return false;
    double *values = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        values = tp_grow(values, n, &cap, sizeof *values);
        values[n++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    tp_stats_compute(values, n, out);
    free(values);
    return n > 0;
}

bool tp_run_agent_bits_between(tp_run *run, int64_t agent_id, const char *metric,
                               const char *labels, int64_t t0_ns, int64_t t1_ns, uint32_t mask,
                               uint32_t *bits, double *share)
{
    sqlite3_stmt *st = window_samples(run, "x.value", agent_id, metric, labels, t0_ns, t1_ns);
    if (!st)
        return false;
    size_t n = 0, with = 0;
    *bits = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double v = sqlite3_column_double(st, 0);
        uint32_t b = v >= 0 && v < 4294967296.0 ? (uint32_t)v & mask : 0;
        *bits |= b;
        with += b != 0;
        n++;
    }
    sqlite3_finalize(st);
    if (n) /* else *share is left as it was: none recorded */
        *share = (double)with / (double)n;
    return n > 0;
}

void tp_run_rank_device_rows(tp_run *run, int64_t agent_id, int rank, const char *name,
                             int64_t t0_ns, int64_t t1_ns, tp_device_row **rows, size_t *n)
{
    static const char sql[] =
        "SELECT d.start_ns, d.device_ns FROM device_time d JOIN thread t ON t.id = d.thread_id"
        " JOIN name n ON n.id = d.name_id WHERE t.agent_id = ?1 AND t.rank = ?2"
        " AND n.text = ?3 AND d.start_ns >= ?4 AND d.start_ns <= ?5 ORDER BY d.start_ns";
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (run->schema_version < TP_SCHEMA_DEVICE ||
        sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, agent_id);
    sqlite3_bind_int(st, 2, rank);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, t0_ns);
    sqlite3_bind_int64(st, 5, t1_ns);
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        *rows = tp_grow(*rows, *n, &cap, sizeof **rows);
        (*rows)[(*n)++] = (tp_device_row){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
    }
    sqlite3_finalize(st);
}

int64_t tp_run_thread_rows(const tp_run *run)
{
    int64_t rows = 0;
    if (run->schema_version >= 2)
        tp_sql_query_int(run->db, "SELECT count(*) FROM thread", &rows);
    return rows;
}

void tp_run_thread_totals(tp_run *run, int64_t *threads, int64_t *dropped)
{
    *threads = *dropped = 0;
    if (run->schema_version < 2)
        return;
    /* the stack samplers' rings are not the training's threads */
    tp_sql_query_int(
        run->db, "SELECT count(*) FROM thread WHERE name != '" TP_SAMPLER_THREAD_NAME "'", threads);
    tp_sql_query_int(run->db,
                     "SELECT coalesce(sum(dropped_events), 0) FROM thread"
                     " WHERE name != '" TP_SAMPLER_THREAD_NAME "'",
                     dropped);
}

int64_t tp_run_stack_samples_dropped(tp_run *run)
{
    int64_t dropped = 0;
    if (run->schema_version >= 2)
        tp_sql_query_int(run->db,
                         "SELECT coalesce(sum(max(dropped_events, 0)), 0) FROM thread"
                         " WHERE name = '" TP_SAMPLER_THREAD_NAME "'",
                         &dropped);
    return dropped > 0 ? dropped : 0;
}

bool tp_run_value_at(tp_run *run, const char *metric, const char *labels, int64_t t_ns,
                     double *value)
{
    return tp_run_agent_value_at(run, 1, metric, labels, t_ns, value);
}

/* The line through (t0, v0) and (t1, v1) at t; v0 where t1 == t0. */
static double line_at(int64_t t0, double v0, int64_t t1, double v1, int64_t t)
{
    return t1 != t0 ? v0 + (v1 - v0) * ((double)(t - t0) / (double)(t1 - t0)) : v0;
}

bool tp_run_series_counter_at(tp_run *run, int64_t series_id, int64_t t_ns, int64_t slack_ns,
                              double *value)
{
    /* the two last samples at or before t_ns (k 0) and the two first after it (k 1) */
    static const char sql[] =
        "SELECT t_ns, value, 0 FROM (SELECT t_ns, value FROM sample"
        " WHERE series_id = ?1 AND t_ns <= ?2 ORDER BY t_ns DESC LIMIT 2)"
        " UNION ALL SELECT t_ns, value, 1 FROM (SELECT t_ns, value FROM sample"
        " WHERE series_id = ?1 AND t_ns > ?2 ORDER BY t_ns LIMIT 2)";
    sqlite3_stmt *st = run->value_at_stmt;
    if (!st && sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    run->value_at_stmt = st;
    sqlite3_bind_int64(st, 1, series_id);
    sqlite3_bind_int64(st, 2, t_ns);
    int n[2] = {0, 0};       /* samples found on each side, nearest first */
    int64_t t[2][2] = {{0}}; /* [side][0 nearest, 1 next] */
    double v[2][2] = {{0}};
    while (sqlite3_step(st) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 2) ? 1 : 0;
        if (n[k] < 2) {
            t[k][n[k]] = sqlite3_column_int64(st, 0);
            v[k][n[k]++] = sqlite3_column_double(st, 1);
        }
    }
    sqlite3_reset(st);
    if (n[0] && n[1])
        *value = line_at(t[0][0], v[0][0], t[1][0], v[1][0], t_ns);
    else if (n[0] && t[0][0] == t_ns)
        *value = v[0][0];
    else if (n[0] == 2 && t_ns - t[0][0] <= slack_ns) /* just after its last: at its last rate */
        *value = line_at(t[0][1], v[0][1], t[0][0], v[0][0], t_ns);
    else if (n[1] == 2 && t[1][0] - t_ns <= slack_ns) /* just before its first */
        *value = line_at(t[1][0], v[1][0], t[1][1], v[1][1], t_ns);
    else
        return false; /* further outside its samples: the counter's value there is not known */
    return true;
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

int64_t tp_run_rank_last_region_end(tp_run *run, int rank, int64_t since_ns)
{
    if (run->schema_version < 2)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT max(r.end_ns) FROM region r JOIN thread t ON t.id = r.thread_id"
                           " WHERE t.rank = ?1 AND r.end_ns >= ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int(st, 1, rank);
    sqlite3_bind_int64(st, 2, since_ns);
    int64_t end = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        end = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return end;
}

bool tp_run_processes(tp_run *run, tp_run_process **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (run->schema_version < 2)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT agent_id, pid, max(rank), max(name LIKE 'DL worker%'),"
                           " max(name = '" TP_SAMPLER_THREAD_NAME
                           "') FROM thread GROUP BY agent_id, pid",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = tp_grow(*out, *n, &cap, sizeof **out);
        (*out)[(*n)++] = (tp_run_process){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                          sqlite3_column_int(st, 2), sqlite3_column_int(st, 3) != 0,
                                          sqlite3_column_int(st, 4) != 0};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
}
