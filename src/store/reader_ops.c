/* reader_ops.c: see reader_ops.h. */
#include "store/reader_ops.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/oom.h"

static bool failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read %s: %s", run->path, what, sqlite3_errmsg(run->db));
    return false;
}

static char *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? tp_xstrdup((const char *)t) : NULL;
}

bool tp_run_op_windows(tp_run *run, tp_run_op_window **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!tp_run_has_table(run, "op_window"))
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT w.id, w.thread_id, w.pid, w.tid,"
                           " coalesce((SELECT t.rank FROM thread t WHERE t.id = w.thread_id),"
                           " (SELECT t.rank FROM thread t WHERE t.pid = w.pid LIMIT 1), -1),"
                           " w.reason, w.first_step, w.steps, w.cuda, w.start_ns, w.end_ns,"
                           " w.events, w.dropped, w.device_memory, w.alloc_start, w.skipped, w.note"
                           " FROM op_window w ORDER BY w.start_ns, w.id",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "its capture windows", err, cap);
    size_t room = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = tp_grow(*out, *n, &room, sizeof **out);
        tp_run_op_window *w = &(*out)[(*n)++];
        *w = (tp_run_op_window){.id = sqlite3_column_int64(st, 0),
                                .thread = sqlite3_column_int64(st, 1),
                                .pid = sqlite3_column_int(st, 2),
                                .tid = sqlite3_column_int(st, 3),
                                .rank = sqlite3_column_int(st, 4),
                                .reason = sqlite3_column_int(st, 5),
                                .first_step = sqlite3_column_int64(st, 6),
                                .steps = sqlite3_column_int(st, 7),
                                .cuda = sqlite3_column_int(st, 8) != 0,
                                .start_ns = sqlite3_column_int64(st, 9),
                                .end_ns = sqlite3_column_int64(st, 10),
                                .events = sqlite3_column_int64(st, 11),
                                .dropped = sqlite3_column_int64(st, 12),
                                .device_memory = sqlite3_column_int64(st, 13),
                                .alloc_start = sqlite3_column_int64(st, 14),
                                .skipped = sqlite3_column_int(st, 15) != 0,
                                .note = text_or_null(st, 16)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tp_run_op_windows_free(*out, *n);
        *out = NULL;
        *n = 0;
        return failed(run, "its capture windows", err, cap);
    }
    return true;
}

void tp_run_op_windows_free(tp_run_op_window *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i].note);
    free(w);
}

static int by_start(const void *a, const void *b)
{
    const tp_op_event *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return (x->dur_ns < y->dur_ns) - (x->dur_ns > y->dur_ns); /* the enclosing one first */
}

/* The window's strings (its events' names and shapes) into out, by index. */
static bool load_strings(tp_run *run, const tp_run_op_window *w, tp_run_op_data *out, char *err,
                         size_t cap)
{
    sqlite3_stmt *st;
    size_t room = 0;
    int rc;
    if (sqlite3_prepare_v2(run->db, "SELECT idx, text FROM op_string WHERE window_id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return failed(run, "a capture window's texts", err, cap);
    sqlite3_bind_int64(st, 1, w->id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t idx = sqlite3_column_int64(st, 0);
        if (idx < 0 || idx > 10000000)
            continue; /* a crafted file's: left out */
        if ((size_t)idx >= out->nstrings) {
            size_t old = room;
            out->strings = tp_grow(out->strings, (size_t)idx, &room, sizeof *out->strings);
            memset(out->strings + old, 0, (room - old) * sizeof *out->strings);
            out->nstrings = (size_t)idx + 1;
        }
        free(out->strings[idx]);
        out->strings[idx] = text_or_null(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return failed(run, "a capture window's texts", err, cap);
    return true;
}

/* The regions of the window's thread that overlap the window, into out. */
static bool load_regions(tp_run *run, const tp_run_op_window *w, tp_run_op_data *out, char *err,
                         size_t cap)
{
    sqlite3_stmt *st;
    size_t room = 0;
    int rc;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT n.text, r.depth, r.start_ns, r.end_ns FROM region r"
                           " JOIN name n ON n.id = r.name_id WHERE r.thread_id = ?"
                           " AND r.end_ns >= ? AND r.start_ns <= ? ORDER BY r.start_ns, r.depth",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "a capture window's regions", err, cap);
    sqlite3_bind_int64(st, 1, w->thread);
    sqlite3_bind_int64(st, 2, w->start_ns);
    sqlite3_bind_int64(st, 3, w->end_ns);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        out->regions = tp_grow(out->regions, out->nregions, &room, sizeof *out->regions);
        out->regions[out->nregions++] =
            (tp_run_op_region){text_or_null(st, 0), sqlite3_column_int(st, 1),
                               sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return failed(run, "a capture window's regions", err, cap);
    return true;
}

bool tp_run_op_data_load(tp_run *run, const tp_run_op_window *w, tp_run_op_data *out, char *err,
                         size_t cap)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    size_t room = 0;
    int rc;
    if (!load_strings(run, w, out, err, cap))
        return tp_run_op_data_free(out), false;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT kind, name, coalesce(shapes, -1), thread, device, stream,"
                           " start_ns, dur_ns, correlation, linked, value FROM op_event"
                           " WHERE window_id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return tp_run_op_data_free(out), failed(run, "a capture window's events", err, cap);
    sqlite3_bind_int64(st, 1, w->id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t name = sqlite3_column_int64(st, 1), shapes = sqlite3_column_int64(st, 2);
        int64_t start = sqlite3_column_int64(st, 6), dur = sqlite3_column_int64(st, 7);
        int kind = sqlite3_column_int(st, 0);
        /* a crafted file's out-of-bounds event is left out */
        if (kind < TP_OP_CPU || kind >= TP_OP_KINDS || name < 0 || (size_t)name >= out->nstrings ||
            !out->strings[name] || start < 0 || dur < 0 || dur > INT64_MAX - start)
            continue;
        out->events = tp_grow(out->events, out->nevents, &room, sizeof *out->events);
        out->events[out->nevents++] = (tp_op_event){
            .kind = (uint32_t)kind,
            .name = (uint32_t)name,
            .shapes = shapes >= 0 && (size_t)shapes < out->nstrings && out->strings[shapes]
                          ? (uint32_t)shapes
                          : UINT32_MAX,
            .thread = (uint32_t)sqlite3_column_int64(st, 3),
            .device = sqlite3_column_int(st, 4),
            .stream = sqlite3_column_int64(st, 5),
            .start_ns = start,
            .dur_ns = dur,
            .correlation = sqlite3_column_int64(st, 8),
            .linked = sqlite3_column_int64(st, 9),
            .value = sqlite3_column_int64(st, 10)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return tp_run_op_data_free(out), failed(run, "a capture window's events", err, cap);
    if (out->nevents)
        qsort(out->events, out->nevents, sizeof *out->events, by_start);
    if (!load_regions(run, w, out, err, cap))
        return tp_run_op_data_free(out), false;
    return true;
}

void tp_run_op_data_free(tp_run_op_data *d)
{
    for (size_t i = 0; i < d->nstrings; i++)
        free(d->strings[i]);
    free(d->strings);
    free(d->events);
    for (size_t i = 0; i < d->nregions; i++)
        free(d->regions[i].name);
    free(d->regions);
    memset(d, 0, sizeof *d);
}

bool tp_run_op_samples(tp_run *run, int32_t pid, int32_t tid, int64_t t0, int64_t t1,
                       tp_run_op_sample **out, size_t *n, char *err, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!tp_run_has_column(run, "stack_sample", "span_ns"))
        return true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT s.t_ns, s.span_ns, s.count, s.node_id FROM stack_sample s"
                           " JOIN thread t ON t.id = s.thread_id WHERE t.pid = ? AND s.tid = ?"
                           " AND s.t_ns <= ? AND s.t_ns + s.span_ns >= ? ORDER BY s.t_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "the stack samples of a capture window", err, cap);
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    sqlite3_bind_int64(st, 3, t1);
    sqlite3_bind_int64(st, 4, t0);
    size_t room = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t count = sqlite3_column_int64(st, 2), span = sqlite3_column_int64(st, 1);
        int64_t node = sqlite3_column_int64(st, 3);
        if (count < 1 || span < 0 || node <= 0 || node > UINT32_MAX)
            continue; /* a crafted file's */
        *out = tp_grow(*out, *n, &room, sizeof **out);
        (*out)[(*n)++] =
            (tp_run_op_sample){sqlite3_column_int64(st, 0), span, count, (uint32_t)node};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return failed(run, "the stack samples of a capture window", err, cap);
    }
    return true;
}
