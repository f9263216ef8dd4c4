/* run_meta.h: what `record` writes about the run itself into the run
 * file's meta, straight through the writer (not the sink): the start, before
 * the command runs, and the end, after it ended; both must not depend on
 * memory that may have run out. */
#ifndef TP_RECORD_RUN_META_H
#define TP_RECORD_RUN_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "core/sink.h"
#include "record/record_options.h"
#include "record/supervise.h"
#include "store/writer.h"

/* Writes what is known before the command starts (the command line, the
 * clocks, the settings); the command line, as the closing lines show it,
 * goes in command (cap bytes). False when the file would not take it. */
bool tp_record_start_meta(tp_writer *writer, const tp_record_options *o, const tp_clock_anchor *a,
                          char *command, size_t cap);

/* Metadata rows made on the stack (their texts in buf). */
typedef struct tp_meta_rows {
    const char *keys[16];
    const char *values[16];
    char buf[16][64];
    char child_key[48]; /* proc.PID.status: the rows point at it */
    size_t n;
} tp_meta_rows;

/* The run's end: the exit status, the command's own end as the drain
 * writes every traced process's, the signal that ended it and the one that
 * asked it to stop (if any), the duration, status "finished". */
void tp_record_end_meta(tp_meta_rows *m, int exit_status, int wstatus, uint64_t duration_ns,
                        const stop_request *stop, pid_t child);
/* Adds to m the timing events the sink could not keep, where there were any
 * (the producers stopped: the count is final). */
void tp_record_end_losses(tp_meta_rows *m, tp_sink *sink);

/* What memory ran out for, in words ("" for nothing), from the sink's counts. */
void tp_record_losses(tp_sink *sink, char *out, size_t cap);
/* The timing events the writer was too far behind for, in words ("" for
 * none), from the sink's count. */
void tp_record_behind(tp_sink *sink, char *out, size_t cap);

#endif
