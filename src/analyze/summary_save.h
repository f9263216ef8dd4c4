/* summary_save.h: a run's report figures, computed and stored in its file.
 *
 * When the command ends, the recorder (and `trainprof summarize`) computes
 * what `report` shows from the file's rows and writes it into the summary_*
 * tables, which store/summary_tables.h reads back. */
#ifndef TP_ANALYZE_SUMMARY_SAVE_H
#define TP_ANALYZE_SUMMARY_SAVE_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/summary.h"

/* Computes the summary of the finished run file at path from its rows and
 * stores it there; a schema 3 file becomes schema 4 on the way. False with a
 * one-line reason otherwise (schema 2 and older have no summary tables). */
bool tp_summary_store_save(const char *path, char *err, size_t cap);

/* The same, and where kept is not NULL and it succeeded, the summary it
 * built and stored in *kept, its run open (tp_summary_close ends both): what
 * `record` prints as it closes, without building it again. */
bool tp_summary_store_save_keeping(const char *path, tp_summary *kept, char *err, size_t cap);

#endif
