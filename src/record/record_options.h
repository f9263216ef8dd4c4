/* record_options.h: what `record`'s command line asks of a recording
 * (cmd_record.c parses it; record/session.h runs it). */
#ifndef TP_RECORD_RECORD_OPTIONS_H
#define TP_RECORD_RECORD_OPTIONS_H

#include <stdbool.h>

typedef struct tp_record_options {
    const char *output; /* the run file (expanded) */
    const char *agent;
    const char *serve;     /* HOST:PORT of the Prometheus endpoint, or NULL */
    const char *log_to;    /* trackers to log into once it ended (record/trackers.h), or NULL */
    const char *name_hint; /* why the output name may be another recorder's, or "" */
    double interval_s;
    double stacks_hz;     /* Python stack samples a second per thread; 0: off */
    double stall_after_s; /* a rank without progress this long has stalled; 0: by its steps */
    double
        wait_after_exit_s; /* how long traced processes that outlive the command are waited for */
    bool force;
    bool quiet;
    char **command;
    int ops_off;        /* --ops: 0 on, 1 off */
    long ops_steps;     /* steps a capture window covers */
    double ops_every_s; /* the schedule's period after the first window; 0 none */
    double ops_on_slow; /* a step this many times the median triggers one; 0 never */
} tp_record_options;

#endif
