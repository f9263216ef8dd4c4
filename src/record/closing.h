/* closing.h: the few lines `record` prints when the command ends. */
#ifndef TP_RECORD_CLOSING_H
#define TP_RECORD_CLOSING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* How the recording ended, as the recorder saw it (the file may hold less). */
typedef struct tp_record_outcome {
    const char *command;  /* as the user typed it, shell-quoted (maybe cut) */
    int exit_status;      /* the command's, as record returns it */
    uint64_t duration_ns; /* from the start to the command's end */
    bool write_failed;    /* the run file stopped taking rows (a full disk) */
    const char *lost;     /* what memory ran out for, in words; "" for nothing */
    const char *behind;   /* events the writer was too far behind for, in words; "" none */
    bool wal_kept;        /* the file stayed in WAL mode: another process had it open */
} tp_record_outcome;

/* The end of `record`, after the run file is closed: stores its summary
 * tables and, unless quiet, prints the closing summary, both in a child
 * process, so that memory running out there costs the summary, never the
 * command's exit status or the closing line: where the child fails, the
 * closing line is printed from what the recorder knows, with how to
 * summarize the run later. */
void tp_record_close(const char *path, const tp_record_outcome *outcome, bool quiet);

#endif
