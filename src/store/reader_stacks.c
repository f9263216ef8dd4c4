/* reader_stacks.c: see reader_stacks.h. */
#include "store/reader_stacks.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/schema.h"
#include "store/sql_util.h"
#include "util/grow.h"
#include "util/oom.h"

static bool failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read %s: %s", run->path, what, sqlite3_errmsg(run->db));
    return false;
}

/* Whether run's stored summary holds its stack counts. */
static bool counts_stored(tp_run *run)
{
    return tp_summary_stored(run) && tp_run_has_column(run, "summary_stack", "samples");
}

bool tp_run_has_stacks(tp_run *run)
{
    int64_t n = 0;
    return run->schema_version >= TP_SCHEMA_STACKS_VERSION &&
           tp_sql_query_int(run->db,
                            counts_stored(run) ? "SELECT EXISTS (SELECT 1 FROM summary_stack)"
                                               : "SELECT EXISTS (SELECT 1 FROM stack_sample)",
                            &n) == SQLITE_OK &&
           n == 1;
}

/* Grows the by-id arrays of t to hold id (1-based), zeroed. */
static void node_room(tp_stack_tree *t, size_t id, size_t *cap)
{
    if (id <= t->n)
        return;
    size_t old = *cap;
    if (id > *cap) {
        size_t c1 = *cap, c2 = *cap;
        t->parent = tp_grow(t->parent, id - 1, cap, sizeof *t->parent);
        t->frame = tp_grow(t->frame, id - 1, &c1, sizeof *t->frame);
        t->line = tp_grow(t->line, id - 1, &c2, sizeof *t->line);
        memset(t->parent + old, 0, (*cap - old) * sizeof *t->parent);
        memset(t->frame + old, 0, (*cap - old) * sizeof *t->frame);
        memset(t->line + old, 0, (*cap - old) * sizeof *t->line);
    }
    t->n = id;
}

bool tp_run_stack_tree(tp_run *run, tp_stack_tree *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (run->schema_version < TP_SCHEMA_STACKS_VERSION)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db, "SELECT id, function, file FROM frame ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        return failed(run, "the stacks' frames", err, cap);
    size_t fcap = 0, fcap2 = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id < 1 || id > (int64_t)UINT32_MAX)
            continue;
        while (out->nframes < (size_t)id) {
            out->function = tp_grow(out->function, out->nframes, &fcap, sizeof *out->function);
            out->file = tp_grow(out->file, out->nframes, &fcap2, sizeof *out->file);
            out->function[out->nframes] = out->file[out->nframes] = NULL;
            out->nframes++;
        }
        free(out->function[id - 1]);
        free(out->file[id - 1]);
        out->function[id - 1] = tp_sql_dup_text(st, 1);
        out->file[id - 1] = tp_sql_dup_text(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return failed(run, "the stacks' frames", err, cap);
    if (sqlite3_prepare_v2(run->db, "SELECT id, parent, frame_id, line FROM stack_node", -1, &st,
                           NULL) != SQLITE_OK)
        return failed(run, "the stacks", err, cap);
    size_t ncap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), parent = sqlite3_column_int64(st, 1);
        if (id < 1 || id > (int64_t)(1u << 26) || parent < 0 || parent >= id)
            continue; /* a parent is made before its children: anything else is damage */
        node_room(out, (size_t)id, &ncap);
        int64_t frame = sqlite3_column_int64(st, 2);
        out->parent[id - 1] = (uint32_t)parent;
        out->frame[id - 1] = frame > 0 && frame <= (int64_t)UINT32_MAX ? (uint32_t)frame : 0;
        out->line[id - 1] = (int32_t)sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "the stacks", err, cap);
}

void tp_stack_tree_free(tp_stack_tree *t)
{
    for (size_t i = 0; i < t->nframes; i++) {
        free(t->function[i]);
        free(t->file[i]);
    }
    free(t->function);
    free(t->file);
    free(t->parent);
    free(t->frame);
    free(t->line);
    memset(t, 0, sizeof *t);
}

size_t tp_stack_path(const tp_stack_tree *t, uint32_t node, uint32_t *path, size_t cap)
{
    size_t n = 0;
    for (uint32_t at = node; at >= 1 && at <= t->n && n < cap; at = t->parent[at - 1]) {
        path[n++] = at;
        if (t->parent[at - 1] >= at)
            break;
    }
    return n;
}

/* Prepares sql (sqlite3_mprintf'd, freed here; NULL: out of memory) on the
 * run's stack samples; NULL with the reason in err when it can't. */
static sqlite3_stmt *prepare_owned(tp_run *run, char *sql, char *err, size_t cap)
{
    if (!sql) {
        snprintf(err, cap, "%s: out of memory", run->path);
        return NULL;
    }
    sqlite3_stmt *st;
    int prepared = sqlite3_prepare_v2(run->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (prepared != SQLITE_OK) {
        failed(run, "the stack samples", err, cap);
        return NULL;
    }
    return st;
}

char *tp_stack_counts_sql(const char *schema, int version)
{
    bool runs = version >= TP_SCHEMA_STACK_RUNS_VERSION; /* a row: a run of samples */
    const char *weight = runs ? "count" : "1", *s_weight = runs ? "s.count" : "1";
    return sqlite3_mprintf(
        "WITH workers AS (SELECT DISTINCT agent_id, pid, tid FROM %s.thread"
        "  WHERE name LIKE 'DL worker%%'),"
        " waited AS (SELECT thread_id, tid FROM %s.stack_sample GROUP BY 1, 2"
        "  HAVING MAX(phase_id) = 0 AND MIN(state & %d) = %d"
        "  AND SUM((state & %d) * %s) * %d <= SUM(%s) + %d)"
        " SELECT t.rank, n.text, w.pid IS NOT NULL, s.node_id,"
        "  (s.state & %d) | (CASE WHEN s.state & %d = %d THEN %d ELSE 0 END) | CASE WHEN wt.tid IS "
        "NOT NULL AND w.pid IS NULL THEN %d ELSE 0 END,"
        "  SUM(%s)"
        " FROM %s.stack_sample s JOIN %s.thread t ON t.id = s.thread_id"
        " LEFT JOIN workers w ON w.agent_id = t.agent_id AND w.pid = t.pid AND w.tid = s.tid"
        " LEFT JOIN waited wt ON wt.thread_id = s.thread_id AND wt.tid = s.tid"
        " LEFT JOIN %s.name n ON n.id = s.phase_id"
        " GROUP BY 1, 2, 3, 4, 5",
        schema, schema, TP_STACK_STATE_KNOWN, TP_STACK_STATE_KNOWN, TP_STACK_STATE_ON_CPU, weight,
        TP_STACK_WAITED_ONCPU_MAX, weight, TP_STACK_WAITED_ONCPU_MAX * TP_STACK_WAITED_ONCPU_FEW,
        TP_STACK_STATE_ON_CPU | TP_STACK_STATE_KNOWN, TP_STACK_STATE_COUNTED,
        TP_STACK_STATE_BLOCKED | TP_STACK_STATE_KNOWN, TP_STACK_STATE_BLOCKED,
        TP_STACK_STATE_WAITED, s_weight, schema, schema, schema);
}

/* The counts st's rows give (rank, phase, worker, node_id, state, samples)
 * into *out, st finalized. */
static bool read_counts(tp_run *run, sqlite3_stmt *st, tp_stack_count **out, size_t *n, char *err,
                        size_t cap)
{
    size_t ccap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t node = sqlite3_column_int64(st, 3), state = sqlite3_column_int64(st, 4),
                samples = sqlite3_column_int64(st, 5);
        *out = tp_grow(*out, *n, &ccap, sizeof **out);
        (*out)[(*n)++] = (tp_stack_count){
            .rank = sqlite3_column_int(st, 0),
            .phase = sqlite3_column_type(st, 1) == SQLITE_NULL ? NULL : tp_sql_dup_text(st, 1),
            .worker = sqlite3_column_int(st, 2) != 0,
            .node = node > 0 && node <= (int64_t)UINT32_MAX ? (uint32_t)node : 0,
            .on_cpu = tp_stack_state_on_cpu(state),
            .cpu_known = tp_stack_state_known(state),
            .blocked = tp_stack_state_blocked(state),
            .waited = (state & TP_STACK_STATE_WAITED) != 0,
            .samples = samples > 0 ? (uint64_t)samples : 0,
        };
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "the stack samples", err, cap);
}

bool tp_run_stack_counts(tp_run *run, tp_stack_count **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (run->schema_version < TP_SCHEMA_STACKS_VERSION)
        return true;
    char *rows = counts_stored(run) ? NULL : tp_stack_counts_sql("main", run->schema_version);
    char *sql = sqlite3_mprintf(
        "%s ORDER BY 1, 2, 3, 4, 5",
        rows ? rows
             : "SELECT rank, phase, worker, node_id, state, samples FROM main.summary_stack");
    sqlite3_free(rows);
    sqlite3_stmt *st = prepare_owned(run, sql, err, cap);
    return st && read_counts(run, st, out, n, err, cap);
}

bool tp_stored_stack_counts_latest(tp_run *run, size_t first_step, size_t last_step,
                                   tp_stack_count **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!tp_summary_stored(run) || !tp_run_has_table(run, "summary_stack_latest"))
        return true;
    char *sql = sqlite3_mprintf(
        "SELECT rank, phase, worker, node_id, state, samples FROM main.summary_stack_latest"
        " WHERE first_step = %lld AND last_step = %lld ORDER BY rowid",
        (long long)first_step, (long long)last_step);
    sqlite3_stmt *st = prepare_owned(run, sql, err, cap);
    return st && read_counts(run, st, out, n, err, cap);
}

void tp_stack_counts_free(tp_stack_count *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].phase);
    free(c);
}

bool tp_run_each_stack_sample(tp_run *run, tp_stack_sample_fn fn, void *ctx, char *err, size_t cap)
{
    if (run->schema_version < TP_SCHEMA_STACKS_VERSION)
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           run->schema_version >= TP_SCHEMA_STACK_RUNS_VERSION
                               ? "SELECT thread_id, tid, t_ns, phase_id, state, node_id, count,"
                                 " span_ns FROM stack_sample ORDER BY t_ns"
                               : "SELECT thread_id, tid, t_ns, phase_id, state, node_id, 1, 0"
                                 " FROM stack_sample ORDER BY t_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "the stack samples", err, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t node = sqlite3_column_int64(st, 5), count = sqlite3_column_int64(st, 6),
                span = sqlite3_column_int64(st, 7);
        tp_stack_run r = {
            .thread_id = sqlite3_column_int64(st, 0),
            .tid = sqlite3_column_int(st, 1),
            .t_ns = sqlite3_column_int64(st, 2),
            .phase = sqlite3_column_int64(st, 3),
            .state = sqlite3_column_int(st, 4),
            .node = node > 0 && node <= (int64_t)UINT32_MAX ? (uint32_t)node : 0,
            .count = count > 0 ? (uint64_t)count : 1, /* a damaged file's: one sample */
            .span_ns = span > 0 ? span : 0,
        };
        fn(ctx, &r);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "the stack samples", err, cap);
}

bool tp_run_each_stack_run_since(tp_run *run, int64_t since_ns, tp_stack_since_fn fn, void *ctx,
                                 char *err, size_t cap)
{
    tp_stack_reader one = {since_ns, fn, ctx};
    return tp_run_each_stack_run_to(run, &one, 1, err, cap);
}

/* Whether a run that ends at column col of st (a run's first sample plus
 * its span, as SQLite adds them: an integer, or a real past 2^63) reaches
 * since_ns. */
static bool reaches(sqlite3_stmt *st, int col, int64_t since_ns)
{
    if (sqlite3_column_type(st, col) == SQLITE_INTEGER)
        return sqlite3_column_int64(st, col) >= since_ns;
    return sqlite3_column_double(st, col) >= (double)since_ns;
}

bool tp_run_each_stack_run_to(tp_run *run, const tp_stack_reader *readers, size_t n, char *err,
                              size_t cap)
{
    bool any = false;
    int64_t since_ns = INT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (readers[i].fn) {
            any = true;
            since_ns = readers[i].since_ns < since_ns ? readers[i].since_ns : since_ns;
        }
    if (!any || run->schema_version < TP_SCHEMA_STACKS_VERSION)
        return true;
    bool runs = run->schema_version >= TP_SCHEMA_STACK_RUNS_VERSION;
    char *sql = sqlite3_mprintf(
        "WITH workers AS (SELECT DISTINCT agent_id, pid, tid FROM thread"
        "  WHERE name LIKE 'DL worker%%')"
        " SELECT t.rank, t.agent_id, t.pid, s.tid, w.pid IS NOT NULL, n.text, s.state,"
        " s.node_id, %s, s.t_ns, s.t_ns + %s, s.thread_id, s.phase_id FROM stack_sample s"
        " JOIN thread t"
        " ON t.id = s.thread_id"
        " LEFT JOIN workers w ON w.agent_id = t.agent_id AND w.pid = t.pid AND w.tid = s.tid"
        " LEFT JOIN name n ON n.id = s.phase_id WHERE s.t_ns + %s >= ?1 ORDER BY s.t_ns",
        runs ? "s.count, s.span_ns" : "1, 0", runs ? "s.span_ns" : "0", runs ? "s.span_ns" : "0");
    sqlite3_stmt *st = prepare_owned(run, sql, err, cap);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, since_ns);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t node = sqlite3_column_int64(st, 7), count = sqlite3_column_int64(st, 8),
                span = sqlite3_column_int64(st, 9);
        tp_stack_thread_run r = {
            .thread_id = sqlite3_column_int64(st, 12),
            .phase_id = sqlite3_column_int64(st, 13),
            .rank = sqlite3_column_int(st, 0),
            .agent_id = sqlite3_column_int64(st, 1),
            .pid = sqlite3_column_int64(st, 2),
            .tid = sqlite3_column_int(st, 3),
            .worker = sqlite3_column_int(st, 4) != 0,
            .phase = (const char *)sqlite3_column_text(st, 5),
            .state = sqlite3_column_int(st, 6),
            .node = node > 0 && node <= (int64_t)UINT32_MAX ? (uint32_t)node : 0,
            .count = count > 0 ? (uint64_t)count : 1,
            .span_ns = span > 0 ? span : 0,
            .t_ns = sqlite3_column_int64(st, 10),
        };
        for (size_t i = 0; i < n; i++)
            if (readers[i].fn && (n == 1 || reaches(st, 11, readers[i].since_ns)))
                readers[i].fn(readers[i].ctx, &r);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || failed(run, "the stack samples", err, cap);
}
