/* record_summary.h: the few lines `record` prints when the command ends. */
#ifndef TP_RECORD_RECORD_SUMMARY_H
#define TP_RECORD_RECORD_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* How the recording ended, as the recorder saw it (the file may hold less). */
typedef struct tp_record_outcome {
    int exit_status;      /* the command's, as record returns it */
    uint64_t duration_ns; /* from the start to the command's end */
    bool write_failed;    /* the run file stopped taking rows (a full disk) */
} tp_record_outcome;

/* Reads the finished run file back and prints its path, the command's
 * duration and exit status, how much the file holds where writing it failed,
 * the headline figures (CPU, memory, each GPU) and how to see the rest. */
void tp_record_summary_print(FILE *out, const char *path, const tp_record_outcome *outcome);

#endif
