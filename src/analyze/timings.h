/* timings.h: where step time goes, from a run's regions and marks.
 *
 * Per rank and region name: count, total, mean and percentiles of durations,
 * and the share of the rank's step time (the sum of its step durations when
 * steps were marked, else the run's duration). The share counts only the
 * time inside the rank's closed steps (in_steps_s): an evaluation loop's
 * forward or the validation loader's fetches between epochs count in count
 * and total but would otherwise inflate the training step's shares. Nested regions count inside
 * their parents too, so shares of nested names add up to more than 1. Steps
 * run from one step mark to the next on the same thread, never across an
 * epoch mark; an epoch runs from its mark to the thread's next epoch mark (the
 * last one to its last step mark, or the end of the run). Regions whose work
 * ran on a CUDA device carry that work's device time too (device_*). A
 * row is a pause when its region is one of the training's pauses outside
 * the steps (tp_timing_is_pause). */
#ifndef TP_ANALYZE_TIMINGS_H
#define TP_ANALYZE_TIMINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/stats.h"
#include "store/reader.h"

typedef struct tp_timing_row {
    int rank; /* -1 when the process had no rank */
    char *name;
    tp_stats stats; /* seconds */
    double total_s;
    double in_steps_s; /* the part of total_s inside the rank's steps (all of it without steps) */
    double share;      /* in_steps_s over the rank's step time */
    bool pause;        /* tp_timing_is_pause(name) */
    /* Device (CUDA event) times of the same regions, seconds: the span on the
     * device between the region's begin and end; count 0 when none */
    tp_stats device;
    double device_total_s;
} tp_timing_row;

/* A rank's steps. The figures are those of its steady steps: its warm-up
 * steps (a thread's first steps, for as long as each held a `compile`
 * region: torch.compile's first compilations) are counted apart and left
 * out of them, of samples/s and of the shares, unless every step held one
 * (then none is warm-up). A step's batches are its `samples` marks: one per
 * batch (micro-batch) the training fetched for it. */
typedef struct tp_step_row {
    int rank;
    tp_stats stats;  /* steady step durations, seconds */
    double total_s;  /* their sum */
    int64_t samples; /* samples fetched in them (0 when the batch size was not visible) */
    int64_t batches; /* batches fetched in them (0 when none was seen) */
    size_t warmup;   /* warm-up steps, not in the figures above */
    double warmup_s; /* their total duration */
} tp_step_row;

typedef struct tp_epoch_row {
    int rank;
    int64_t epoch;
    double start_s, duration_s;
    size_t steps; /* every step, warm-up ones included */
    int64_t samples, batches;
    double energy_j; /* GPUs and CPU, NaN when no energy was recorded */
} tp_epoch_row;

typedef struct tp_timings {
    tp_timing_row *rows;
    size_t nrows;
    tp_step_row *steps;
    size_t nsteps;
    tp_epoch_row *epochs;
    size_t nepochs;
    int64_t threads, dropped;
} tp_timings;

/* The regions that are pauses in the training, which trainprof names and
 * keeps out of the steps: evaluate, sanity_check, checkpoint, compile. */
#define TP_PAUSE_NAMES 4
extern const char *const tp_pause_names[TP_PAUSE_NAMES];
bool tp_timing_is_pause(const char *name);

bool tp_timings_build(tp_run *run, double run_duration_s, tp_timings *out, char *err, size_t cap);
void tp_timings_free(tp_timings *t);

#endif
