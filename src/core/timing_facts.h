/* timing_facts.h: the facts about where step time goes (timings.h builds
 * them, summary_store.h reads them back from a run file, render/ shows
 * them). */
#ifndef TP_CORE_TIMING_FACTS_H
#define TP_CORE_TIMING_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stats.h"

typedef struct tp_timing_row {
    int rank; /* -1 when the process had no rank */
    char *name;
    tp_stats stats; /* seconds */
    double total_s;
    double in_steps_s; /* the part of total_s inside the rank's steps (all of it without steps) */
    double in_profiled_s; /* the part inside steps a capture window took (not in in_steps_s) */
    double in_warmup_s;   /* the part inside its rank's warm-up steps (not in in_steps_s) */
    double share;         /* in_steps_s over the rank's step time */
    bool pause;           /* tp_timing_is_pause(name) */
    /* Device (CUDA event) times of the same regions, seconds: the span on the
     * device between the region's begin and end; count 0 when none */
    tp_stats device;
    double device_total_s;
} tp_timing_row;

/* A rank's steps. The figures are those of its steady steps: its warm-up
 * steps (a thread's first steps, for as long as each held a `compile`
 * region: torch.compile's first compilations; then for as long as each took
 * more than twice the median step: cuDNN's autotuning, CUDA's start) are
 * counted apart and left
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
    int64_t warmup_samples, warmup_batches; /* what they fetched */
    /* steps a capture window ran in or stopped in (analyze/ops.h), their
     * duration, samples and batches: counted as steps (the training's own
     * count is stats.count + profiled), their time in none of the figures
     * above nor in the shares (tp_timing_row.in_profiled_s) */
    size_t profiled;
    double profiled_s;
    int64_t profiled_samples, profiled_batches;
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
    tp_timing_row *rows; /* in (rank, name) order (strcmp's) */
    size_t nrows;
    tp_step_row *steps; /* in rank order */
    size_t nsteps;
    tp_epoch_row *epochs;
    size_t nepochs;
    int64_t threads, dropped;
    /* events the recorders could not keep (their memory, their writer behind) */
    int64_t not_recorded;
} tp_timings;

void tp_timings_free(tp_timings *t);

/* The row of (rank, name) and the steps of rank, by binary search; NULL
 * where there are none. */
const tp_timing_row *tp_timings_row(const tp_timings *t, int rank, const char *name);
const tp_step_row *tp_timings_steps_of(const tp_timings *t, int rank);

/* Puts rows and steps in the order above where they are not (a file
 * written otherwise): the lookups' condition. */
void tp_timings_order(tp_timings *t);

#endif
