/* session.h: one recording, from the run file's creation to its closing
 * lines: the parts `record` starts in order (the run file, signals, the
 * sink, the live state and its HTTP endpoint, the writer thread, the drain,
 * the command, the sampler), the command supervised, and one unwind that
 * stops whatever started. cmd_record.c parses the command line and drives
 * it. */
#ifndef TP_RECORD_SESSION_H
#define TP_RECORD_SESSION_H

#include "record/record_options.h"

/* Records o->command into o->output and returns its exit status (as a
 * shell gives it); where the recording can't be set up, says why in one
 * line, leaves no run file and returns 2 (bad input: the output path, the
 * --serve address), 1 (no memory, no thread) or the shell's status for a
 * command that could not run. */
int tp_record_session_run(const tp_record_options *o);

#endif
