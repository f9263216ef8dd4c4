/* summary.h: the figures a report shows, built once from a run file (the
 * stored summary tables, store/summary_tables.h, where it has them; its
 * rows otherwise). record/closing.c prints its closing lines from the one it
 * just stored (analyze/summary_save.h).
 *
 * One entry per series that has samples, ordered by agent, then by the metric
 * catalogue's order, then by labels (totals first, then natural order:
 * cpu 2 before cpu 10). Renderers (text, JSON) read only this. */
#ifndef TP_ANALYZE_SUMMARY_H
#define TP_ANALYZE_SUMMARY_H

#include "core/ops_facts.h"
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "analyze/run_inventory.h"
#include "analyze/deaths.h"
#include "analyze/own_cost.h"
#include "analyze/rank_course.h"
#include "analyze/ranks.h"
#include "analyze/regimes.h"
#include "analyze/stalls.h"
#include "analyze/stack_facts.h"
#include "core/gpu_slowdown.h"
#include "core/stats.h"
#include "core/step_phase_facts.h"
#include "analyze/timings.h"
#include "store/reader.h"

typedef struct tp_series_summary {
    const tp_run_series *series;
    tp_stats stats; /* over the whole run */
    /* over its agent's training steps (tp_steps_window) when in_steps; else a
     * copy of stats: the agent marked fewer than 2 steps, no sample fell
     * inside them, or the file's stored summary predates these figures.
     * What the rules of thumb judge, so that the start-up (imports, data
     * preparation, compilation) and the end don't water down a busy
     * training's figures. */
    tp_stats steps;
    bool in_steps;
} tp_series_summary;

/* A series' figures over its agent's training steps (the whole run's where
 * it has none), or over the whole run when whole_run. */
static inline const tp_stats *tp_series_stats(const tp_series_summary *m, bool whole_run)
{
    return whole_run ? &m->stats : &m->steps;
}

/* The parts of a summary beyond its base (every series' figures, the
 * timings, the ranks, the GPUs' use), built only for those that read them:
 * a caller asks for what it needs (tp_summary_load, tp_summary_add), and
 * each consumer holds the parts it reads (tp_summary_needs), so that every
 * command sees the same verdicts for the same file. */
enum {
    TP_PART_STACKS = 1u << 0, /* stacks and ops: the sampled stacks, the capture windows */
    TP_PART_COURSE = 1u << 1, /* course, stalls, regimes, deaths, own: the run's course */
};
#define TP_PARTS_ALL (TP_PART_STACKS | TP_PART_COURSE)

typedef struct tp_summary {
    tp_run *run;
    /* what the run holds that the renderers list, and its metadata's facts:
     * render/ reads these, never run */
    tp_run_inventory inv;
    unsigned parts; /* TP_PART_* built so far */
    tp_series_summary *items;
    size_t n, cap;
    tp_timings timings;
    tp_ranks ranks; /* every rank that marked steps */
    /* for each of run->gpus, whether the job used it (analyze/gpu_use.h's
     * TP_GPU_USED, _NOT_USED, _USE_UNKNOWN); NULL without GPUs */
    int8_t *gpu_used;
    /* for each of run->gpus, NVML's clock event reasons over its agent's
     * steps (core/gpu_slowdown.h): the stored ones where the summary is
     * stored with them (a summary-only merge keeps no samples to read them
     * from), else from the samples. NULL without GPUs */
    tp_gpu_slowdown *gpu_slowdown;
    /* each agent's training steps (first to last step mark), over which
     * tp_series_summary.steps are; none for an agent with fewer than 2 step
     * marks, or in a file whose stored summary predates them */
    tp_steps_window *windows;
    size_t nwindows;
    /* the file holds the plots the recorder stored (analyze/summary_plots.h):
     * the html page draws those, not the rows */
    bool plots_stored;
    /* where each phase's time goes in the code (sampled stacks): part
     * TP_PART_STACKS */
    tp_stack_facts stacks;
    /* the same over the span of the first rank's latest regime only, where
     * its pace changed (regimes below): what a verdict judged on the latest
     * pace cites. No groups for a steady run, a file stored before (no
     * regime times), or a summary-only file (no samples kept): part
     * TP_PART_COURSE */
    tp_stack_facts stacks_latest;
    /* what the user regions' samples count for (analyze/region_within.h):
     * made once for the stack parts above */
    tp_region_withins withins;
    /* what the capture windows saw (analyze/ops.h): filled with the stacks */
    tp_ops_facts ops;
    /* the recording's length, seconds (its end, or its last sample's) */
    double duration_s;
    /* each rank's steps in time order and the ranks that stalled, with the
     * four below: part TP_PART_COURSE */
    tp_course course;
    tp_stalls stalls;
    tp_regimes regimes; /* of the first rank's steps (timings.steps[0]) */
    /* the ranks over the latest of those regimes, where the pace changed and
     * two or more ranks marked steps (empty otherwise, and in a merged
     * file's stored summary unless every node stored its own over about the
     * same steps: summary.c): the straggler verdicts judge these, so that a
     * straggler since step N is not diluted by the steps before it */
    tp_ranks ranks_latest;
    /* each of those ranks' step split over the same span (analyze/regimes.h:
     * tp_rank_pace_over), in ranks_latest's order where known: the step
     * verdicts of ranks judge these where the pace changed */
    tp_rank_pace *rank_paces;
    size_t nrank_paces;
    tp_deaths deaths; /* processes that died, and the run's stop */
    tp_own_costs own; /* what trainprof's own work cost each rank (analyze/own_cost.h) */
} tp_summary;

/* Each of stalls' rank's GPU and NVML's utilization over its stall (a
 * kernel that does not end keeps it busy; a wait for a peer leaves it idle),
 * and the training's threads waiting on storage then (its agent's
 * proc_blocked), from s's run's samples; a summary-only file keeps no
 * samples over a span: the stored ones stand there (store/summary_tables.h:
 * tp_stored_stalls). */
void tp_summary_stalls_machine(const tp_summary *s, tp_stalls *stalls);

/* rank's split over the latest pace (rank_paces), or NULL. */
const tp_rank_pace *tp_summary_rank_pace(const tp_summary *s, int rank);

/* Agent agent_id's steps window in s, or NULL. */
const tp_steps_window *tp_summary_window(const tp_summary *s, int64_t agent_id);

/* Reads every series and computes its statistics, and the timings. False (reason in err) if
 * the run file can't be read. */
bool tp_summary_build(tp_run *run, tp_summary *out, char *err, size_t cap);

/* tp_summary_build, where every series' samples, when they are read from the
 * rows, also go to also(also_ctx, ...) (before the statistics reorder the
 * values): the recorder's stored plots come from the same pass. */
bool tp_summary_build_also(tp_run *run, tp_summary *out, tp_series_values_fn also, void *also_ctx,
                           char *err, size_t cap);
void tp_summary_free(tp_summary *s);

/* Gives the summary of an opened merged temporary (store/inputs.h) the name
 * of its inputs, in its run and its inventory ("a.db + b.db"). */
struct tp_inputs;
void tp_summary_name_inputs(tp_summary *s, const struct tp_inputs *in);

/* Opens the run file at path and builds its summary with parts (TP_PART_*,
 * 0 for the base only); out->run is then owned by the summary and closed by
 * tp_summary_close. False (one-line reason in err) when the file can't be
 * opened or read. */
bool tp_summary_load(const char *path, unsigned parts, tp_summary *out, char *err, size_t cap);
void tp_summary_close(tp_summary *s);

/* Adds parts to s (those it has are built again): TP_PART_STACKS, the
 * sampled stacks' facts (none in a run without them) and the capture
 * windows'; TP_PART_COURSE, each rank's steps in time order, the stalls
 * (analyze/stalls.h), the first rank's regimes (analyze/regimes.h), the
 * processes that died (analyze/deaths.h) and trainprof's own cost. False
 * (reason in err) when they can't be read. */
bool tp_summary_add(tp_summary *s, unsigned parts, char *err, size_t cap);

/* Holds a consumer (who: its name) to the parts it reads: where s lacks
 * one, says which on stderr and aborts, since reading a part never built
 * gives another command's answer silently. */
void tp_summary_needs(const tp_summary *s, unsigned parts, const char *who);

/* rank's step phases (analyze/step_phases.h) after its first skip steps:
 * the recorder's stored ones where the file has them (merged summaries
 * too), else built from the rows. False (reason in err) when they can't be
 * read; tp_step_phases_free in every case. */
bool tp_summary_step_phases(const tp_summary *s, int rank, size_t skip, tp_step_phases *ph,
                            char *err, size_t cap);
/* The same for n ranks at once (ph[k] for ranks[k], skip[k]): one pass
 * over the rows or the stored table, whatever n. */
bool tp_summary_step_phases_of(const tp_summary *s, const int *ranks, const size_t *skip, size_t n,
                               tp_step_phases *ph, char *err, size_t cap);

/* The GPU rank drove (its ranks row's), or the run's one GPU where the
 * rank's is unknown; NULL where neither. */
const tp_run_gpu *tp_summary_rank_gpu(const tp_summary *s, int rank);

/* The summary of one series by metric and labels on an agent, or NULL. */
const tp_series_summary *tp_summary_find(const tp_summary *s, int64_t agent_id, const char *metric,
                                         const char *labels);

#endif
