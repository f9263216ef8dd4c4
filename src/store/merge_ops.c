/* merge_ops.c: see merge_ops.h. */
#include "store/merge_ops.h"

#include <sqlite3.h>

char *tp_merge_ops_sql(long long window, long long thread, long long dt)
{
    return sqlite3_mprintf(
        "INSERT INTO main.op_window SELECT id + %lld, CASE thread_id WHEN 0 THEN 0 ELSE"
        " thread_id + %lld END, pid, tid, reason, first_step, steps, cuda, start_ns + %lld,"
        " end_ns + %lld, events, dropped, device_memory, alloc_start, skipped, note"
        " FROM src.op_window;"
        "INSERT INTO main.op_string SELECT window_id + %lld, idx, text FROM src.op_string;"
        "INSERT INTO main.op_event SELECT window_id + %lld, kind, name, shapes, thread, device,"
        " stream, start_ns + %lld, dur_ns, correlation, linked, value FROM src.op_event"
        " ORDER BY rowid;",
        window, thread, dt, dt, window, window, dt);
}
