/* in_steps.h: how much of each region's time lies inside its rank's steps:
 * its timed steps (in_steps_s, what the shares count), the steps a capture
 * window took (in_profiled_s) and its warm-up steps (in_warmup_s), which
 * the figures leave out. What is left of a region's total lies outside
 * the steps (an evaluation of the script's own, the wait between epochs). */
#ifndef TP_ANALYZE_IN_STEPS_H
#define TP_ANALYZE_IN_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/intervals.h"
#include "core/timing_facts.h"
#include "store/reader.h"

/* A rank's runs of steps of each kind, merged (disjoint, increasing). */
typedef struct tp_rank_spans {
    int rank;
    tp_time_spans spans;      /* its timed steps */
    tp_time_spans prof_spans; /* its steps a capture window took */
    tp_time_spans warm_spans; /* its warm-up steps */
} tp_rank_spans;

typedef struct tp_rank_spans_list {
    tp_rank_spans *v; /* by rank, increasing */
    size_t n, cap;
} tp_rank_spans_list;

/* Each row's in_steps_s, in_profiled_s and in_warmup_s: one pass over the
 * run's regions, each cut to its rank's runs of steps. Rows of a rank with
 * no steps keep all of their time in in_steps_s (their share is of the
 * run). False (reason in err) where the regions can't be read. */
bool tp_measure_in_steps(tp_run *run, tp_timings *t, const tp_rank_spans_list *spans, char *err,
                         size_t cap);

void tp_rank_spans_list_free(tp_rank_spans_list *l);

#endif
