/* merge_ops.h: an input's capture windows in a merged run (store/merge.c):
 * window ids after those of the inputs before, thread ids offset, times
 * shifted to the merged run's start. */
#ifndef TP_STORE_MERGE_OPS_H
#define TP_STORE_MERGE_OPS_H

/* The SQL that copies attached `src`'s op_window, op_string and op_event
 * into main (sqlite3_free it); NULL out of memory. window: main's largest
 * window id; thread: the input's thread id offset; dt: its time shift. */
char *tp_merge_ops_sql(long long window, long long thread, long long dt);

#endif
