/* ops_write.h: writing capture windows into a run file (schema 10's
 * op_window, op_string, op_event), inside the writer's transaction. */
#ifndef TP_STORE_OPS_WRITE_H
#define TP_STORE_OPS_WRITE_H

#include <sqlite3.h>

#include "core/batch.h"

/* Writes the batch's windows; an SQLite code. */
int tp_ops_write(sqlite3 *db, const tp_batch *b);

#endif
