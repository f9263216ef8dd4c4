/* ops_write.c: see ops_write.h. */
#include "store/ops_write.h"

#include <stdint.h>

static int step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int write_window(sqlite3 *db, sqlite3_stmt *win, sqlite3_stmt *str, sqlite3_stmt *ev,
                        const tp_ops_window *w)
{
    sqlite3_bind_int64(win, 1, w->thread);
    sqlite3_bind_int64(win, 2, w->pid);
    sqlite3_bind_int64(win, 3, w->tid);
    sqlite3_bind_int64(win, 4, w->reason);
    sqlite3_bind_int64(win, 5,
                       (sqlite3_int64)(w->first_step > INT64_MAX ? INT64_MAX : w->first_step));
    sqlite3_bind_int64(win, 6, w->steps);
    sqlite3_bind_int(win, 7, (w->flags & 1) != 0);
    sqlite3_bind_int64(win, 8, w->start_ns);
    sqlite3_bind_int64(win, 9, w->end_ns);
    sqlite3_bind_int64(win, 10, w->nevents);
    sqlite3_bind_int64(win, 11, w->dropped);
    sqlite3_bind_int64(win, 12, w->device_memory);
    sqlite3_bind_int64(win, 13, w->alloc_start);
    sqlite3_bind_int(win, 14, w->skipped);
    if (w->note)
        sqlite3_bind_text(win, 15, w->note, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(win, 15);
    int rc = step(win);
    sqlite3_int64 id = sqlite3_last_insert_rowid(db);
    for (uint32_t i = 0; rc == SQLITE_OK && i < w->nstrings; i++) {
        sqlite3_bind_int64(str, 1, id);
        sqlite3_bind_int64(str, 2, i);
        sqlite3_bind_text(str, 3, w->strings[i], -1, SQLITE_STATIC);
        rc = step(str);
    }
    for (uint32_t i = 0; rc == SQLITE_OK && i < w->nevents; i++) {
        const tp_op_event *e = &w->events[i];
        sqlite3_bind_int64(ev, 1, id);
        sqlite3_bind_int(ev, 2, (int)e->kind);
        sqlite3_bind_int64(ev, 3, e->name);
        if (e->shapes == UINT32_MAX)
            sqlite3_bind_null(ev, 4);
        else
            sqlite3_bind_int64(ev, 4, e->shapes);
        sqlite3_bind_int64(ev, 5, e->thread);
        sqlite3_bind_int(ev, 6, e->device);
        sqlite3_bind_int64(ev, 7, e->stream);
        sqlite3_bind_int64(ev, 8, e->start_ns);
        sqlite3_bind_int64(ev, 9, e->dur_ns);
        sqlite3_bind_int64(ev, 10, e->correlation);
        sqlite3_bind_int64(ev, 11, e->linked);
        sqlite3_bind_int64(ev, 12, e->value);
        rc = step(ev);
    }
    return rc;
}

int tp_ops_write(sqlite3 *db, const tp_batch *b)
{
    if (!b->ops_windows.len)
        return SQLITE_OK;
    sqlite3_stmt *win = NULL, *str = NULL, *ev = NULL;
    int rc = sqlite3_prepare_v2(
        db,
        "INSERT INTO op_window (thread_id, pid, tid, reason, first_step, steps, cuda, start_ns,"
        " end_ns, events, dropped, device_memory, alloc_start, skipped, note)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        -1, &win, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO op_string (window_id, idx, text) VALUES (?, ?, ?)",
                                -1, &str, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO op_event (window_id, kind, name, shapes, thread,"
                                " device, stream, start_ns, dur_ns, correlation, linked, value)"
                                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                -1, &ev, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < b->ops_windows.len; i++)
        rc = write_window(db, win, str, ev, b->ops_windows.items[i]);
    sqlite3_finalize(win);
    sqlite3_finalize(str);
    sqlite3_finalize(ev);
    return rc;
}
