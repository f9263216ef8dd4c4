/* run_settings.h: what a run file's metadata says of the recording, parsed
 * once when the file is opened (tp_run_open) into typed fields: every reader
 * takes run->settings, none parses a key's text itself. A value that is not
 * what its key holds (a crafted or damaged file: "nan", "-1", "yes") is taken
 * as absent. The keys are core/run_keys.h's. */
#ifndef TP_STORE_RUN_SETTINGS_H
#define TP_STORE_RUN_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row of the run file's meta table (or an agent's). */
typedef struct tp_run_meta {
    char *key;
    char *value;
} tp_run_meta;

typedef struct tp_run_settings {
    /* record --stall-after, seconds: a step longer is a stall; 0 when unset
     * (the rule from the steps' median, core/stall_rule.h) */
    double stall_after_s;
    double interval_s; /* the sampling interval; 0 unknown */
    /* the regions' device times taken on one step in this many from the
     * start (TRAINPROF_DEVICE_TIMES=N); 1: every step */
    int device_times_every;
    bool start_known;      /* start_wall_ns holds the recording's start */
    int64_t start_wall_ns; /* ns since the epoch */
    int64_t duration_ns;   /* the recording's length; -1 while recording, or killed */
    int64_t exit_status;   /* the command's exit status; -1 unknown (or killed by a signal) */
    /* how far the start's wall and monotonic clocks may disagree, ns; 0 unknown */
    int64_t clock_uncertainty_ns;
    /* the stored summary (store/summary_write.c) and what it holds */
    bool summarized, plots, stalls_stored;
    bool merged;       /* a merge of node files (store/merge.c) */
    bool summary_only; /* a merge that kept only what report reads */
    bool envelopes;    /* a fleet's metrics kept as envelopes */
    /* the command, as recorded; "" when the file has none (its memory is the run's) */
    const char *command, *argv, *version;
    const char *summary_by; /* the analysis that made the stored summary; "" unknown */
} tp_run_settings;

/* Reads the run's metadata meta[0..n) into out (its texts stay meta's). */
void tp_run_settings_read(const tp_run_meta *meta, size_t n, tp_run_settings *out);

#endif
