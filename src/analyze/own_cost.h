/* own_cost.h: what trainprof's own work cost the training, per rank, by its
 * sampled Python stacks (no cost on the training's path: the sampler
 * already takes them).
 *
 * Of the samples of a rank's step thread (the thread its steps are marked
 * on) taken between its first step's begin and its last closed step's end,
 * those whose work is ours (analyze/stack_own.h's tp_stack_own_work): a
 * wrapper of ours innermost (the step tracker, a region's begin and end,
 * the facts), device times' CUDA events, a capture window's profiler. A
 * wrapper innermost while its region wraps a C call of the user's
 * (to_device, from_device) waits in that call: the user's. Its share of
 * the samples is trainprof's share of the step thread's time, the
 * sampler's own thread aside (it reads without the GIL, on another core
 * where there is one). The recorder's summary stores the counts
 * (summary_own), which a report reads, and a merge carries, where every
 * node stored them; none where the run has no stack samples (record
 * --stacks 0), or a summary-only merge of a node file stored before them. */
#ifndef TP_ANALYZE_OWN_COST_H
#define TP_ANALYZE_OWN_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/rank_course.h"
#include "analyze/stack_own.h"
#include "core/own_facts.h"
#include "core/timing_facts.h"
#include "store/reader.h"
#include "store/reader_stacks.h"

#define TP_OWN_BUDGET 0.01 /* of the step thread's time: what trainprof may cost */
/* What a region the script times itself costs its thread (a `with region`
 * pair from Python under record: bench/python_region_cost.py, 221 ns): its
 * own regions run in trainprof's C, under the script's frame, which the
 * stacks count as the script's; the report adds their cost at this rate. */
#define TP_OWN_REGION_COST_S 200e-9

typedef struct tp_own_cost {
    int rank;
    int64_t agent_id;
    double samples;            /* the step thread's, in its steps */
    double ours;               /* of those, trainprof's (own[] but the user's) */
    double own[TP_WORK_KINDS]; /* of those, by whose work ([TP_WORK_USERS]: the user's) */
    double user_regions;       /* the script's own regions a step (trainprof.region) */
    double regions_share;      /* what they cost, at TP_OWN_REGION_COST_S, of a step */
    double share;              /* ours over all, the regions' added; NaN without samples */
    /* where the share lies (95 %: the samples' Wilson interval, the
     * regions' added), and whether it is over TP_OWN_BUDGET beyond doubt:
     * its lower end above it. A short run's few samples of ours (8 of 625:
     * 1.3 %, between 0.6 and 2.5) are not a budget overrun. */
    double share_low, share_high;
    bool over_budget;
    tp_work_kind most; /* the part of ours with the most samples */
    bool regions_most; /* ... or the script's regions, more than that part */
} tp_own_cost;

/* The recorder's back-off over its budget (record/ops_plan.h, meta
 * "backoff"), where it backed off. */
typedef struct tp_own_backoff {
    bool set;
    double at_s;         /* into the run */
    uint64_t step;       /* the furthest process's step count then */
    double share;        /* its cost estimated then, of the steps' time */
    double regions;      /* the script's regions a step */
    bool mostly_windows; /* the capture windows cost most (else the regions) */
    /* device times (CUDA events) from then on one step in this many; 0 where
     * the file does not say (recorded before they were sampled) */
    int device_every;
} tp_own_backoff;

typedef struct tp_own_costs {
    tp_own_cost *v; /* by rank */
    size_t n;
    tp_own_backoff backoff;
} tp_own_costs;

/* Each rank's own cost (its timings give the script's regions a step), and
 * the recorder's back-off, read whether or not the run has stacks: from the
 * counts the summary stored (summary_own: a report reads a few rows, not an
 * hour's samples again), else from the samples; false (reason in err) where
 * they can't be read. */
bool tp_own_costs_build(tp_run *run, const tp_course *course, const tp_timings *t,
                        tp_own_costs *out, char *err, size_t cap);
/* The same in parts, for a pass over the samples shared with other
 * readers (tp_run_each_stack_run_to): begin sets out up and *reader (its
 * fn NULL where nothing is to be read: the counts stored, no samples), the
 * pass reads, end finishes out and frees the pass (NULL: begin failed, the
 * reason in err; out is still finished and freed by tp_own_costs_free). */
typedef struct tp_own_pass tp_own_pass;
tp_own_pass *tp_own_costs_begin(tp_run *run, const tp_course *course, tp_own_costs *out,
                                tp_stack_reader *reader, char *err, size_t cap);
void tp_own_costs_end(tp_own_pass *p, const tp_timings *t, tp_own_costs *out);
/* The counts behind c (c->n of them, the caller frees), as the summary stores them. */
tp_own_samples *tp_own_costs_counts(const tp_own_costs *c);
void tp_own_costs_free(tp_own_costs *c);

#endif
