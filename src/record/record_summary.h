/* record_summary.h: the few lines `record` prints when the command ends. */
#ifndef TP_RECORD_RECORD_SUMMARY_H
#define TP_RECORD_RECORD_SUMMARY_H

#include <stdio.h>

/* Reads the finished run file back and prints its path, duration, the
 * headline figures (CPU, memory, each GPU) and how to see the rest. */
void tp_record_summary_print(FILE *out, const char *path);

#endif
