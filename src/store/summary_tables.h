/* summary_tables.h: a run's report figures, kept in the run file itself:
 * every statement on the summary_* tables, read (summary_tables.c) and
 * written (summary_write.c). The analysis computes the figures
 * (analyze/summary_save.c) and reads them back through here.
 *
 * When the command ends, the recorder computes what `report` shows from its
 * own file (series statistics, timings per rank and region, steps, epochs,
 * each rank's parts) and writes it into the summary_* tables, then sets meta
 * summarized = 1. Readers use those rows instead of scanning every sample,
 * region and mark; the figures are the same, to the bit, as computing them
 * from the rows (tested). Figures that depend on the whole (possibly merged)
 * run are still computed at read time: shares of step time, energy per
 * epoch, medians and stragglers. A file without them (killed recorder, older
 * schema, or a merge whose inputs share ranks) is analysed from its rows. */
#ifndef TP_STORE_SUMMARY_TABLES_H
#define TP_STORE_SUMMARY_TABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gpu_slowdown.h"
#include "core/own_facts.h"
#include "core/pace_facts.h"
#include "core/rank_facts.h"
#include "core/stall_facts.h"
#include "core/stats.h"
#include "core/step_phase_facts.h"
#include "core/timing_facts.h"
#include "core/within_facts.h"
#include "store/reader.h"
#include "store/reader_stacks.h"
#include "store/reader_stream.h"

/* The stored statistics of each series, in series order. */
typedef void (*tp_stored_series_fn)(void *ctx, const tp_run_series *series, const tp_stats *st);
bool tp_stored_series(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap);
/* The same over the steps (summary_series_steps): fn once per series that has
 * such figures; none, and true, in a file stored before them. */
bool tp_stored_series_steps(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap);

/* Each agent's stored steps window (summary_steps_window); none, and true,
 * in a file stored before them. The caller frees *out. */
bool tp_stored_steps_windows(tp_run *run, tp_steps_window **out, size_t *n, char *err, size_t cap);

/* The stored timing rows, steps and epochs (shares and energy are left for
 * the caller to compute). */
bool tp_stored_timings(tp_run *run, tp_timings *out, char *err, size_t cap);

/* Each of run->gpus' stored clock event reasons over the steps
 * (summary_gpu) into out[0..run->ngpus); *found: whether the file stores
 * them (out untouched where not, and for a GPU without a row). False (reason
 * in err) where the file can't be read. */
bool tp_stored_gpu_slowdowns(tp_run *run, tp_gpu_slowdown *out, bool *found, char *err, size_t cap);

/* The stored rows of every rank (straggler fields left unset). */
bool tp_stored_ranks(tp_run *run, tp_ranks *out, char *err, size_t cap);
/* The stored rows of every rank over the steps first_step to last_step
 * of its node's first rank (summary_rank_latest), each end within slack
 * steps of those asked for (a merged file holds each node's table over its
 * own first rank's latest pace); none, and true, where the file stores none
 * for such steps. */
bool tp_stored_ranks_latest(tp_run *run, size_t first_step, size_t last_step, size_t slack,
                            tp_ranks *out, char *err, size_t cap);

/* ---- stored plots (html) ---- */

/* A point html plots: a series' sample kept by the min/max buckets. */
typedef struct tp_plot_point {
    int64_t series_id, t_ns;
    double value;
} tp_plot_point;

/* Whether run carries stored plots (meta plots = 1, with its summary). */
bool tp_plots_stored(const tp_run *run);
/* The stored points in the order stored: series by series, each in time
 * order, as the summary writes them and merge copies them (read in that
 * order, not sorted: sorting a fleet's points was half of html's time). */
bool tp_stored_plot_points(tp_run *run, tp_sample_row_fn fn, void *ctx, char *err, size_t cap);
/* The stored step phases of each of the n ranks (out[k] for ranks[k]). */
bool tp_stored_step_phases(tp_run *run, const int *ranks, size_t n, tp_step_phases *out, char *err,
                           size_t cap);

/* ---- writing ---- */

/* A series' figures: over the run, and over its agent's steps when in_steps. */
typedef struct tp_series_figures {
    int64_t series_id;
    tp_stats stats;
    bool in_steps;
    tp_stats steps;
} tp_series_figures;

/* Everything the summary tables hold. */
typedef struct tp_summary_rows {
    const tp_series_figures *series;
    size_t nseries;
    const tp_steps_window *windows;
    size_t nwindows;
    const tp_timings *timings;
    const tp_ranks *ranks;
    const tp_plot_point *points;
    size_t npoints;
    const int *phase_ranks; /* nphases ranks, each with its step phases */
    const tp_step_phases *phases;
    size_t nphases;
    const tp_stack_count *stacks; /* the sampled stacks, counted (reader_stacks.h) */
    size_t nstacks;
    const tp_stall *stalls; /* the ranks' stalls (analyze/stalls.h) */
    size_t nstalls;
    /* the ranks over the first rank's latest pace and its steps (NULL or
     * none: the pace did not change) */
    const tp_ranks *ranks_latest;
    size_t latest_first_step, latest_last_step;
    /* each of the run's ngpus GPUs' clock event reasons over the steps */
    const tp_run_gpu *gpus;
    const tp_gpu_slowdown *gpu_slowdowns;
    size_t ngpus;
    /* each rank's step thread's samples and whose work they were */
    const tp_own_samples *own;
    size_t nown;
    /* over the latest pace (latest_first_step..latest_last_step): the stack
     * counts; and each change of pace's function */
    const tp_stack_count *stacks_latest;
    size_t nstacks_latest;
    const tp_pace_function *pace_functions;
    size_t npace_functions;
    /* the standard region each user region ran inside */
    const tp_region_within *withins;
    size_t nwithins;
} tp_summary_rows;

/* The stalls the recorder stored (meta stalls_stored), each with its
 * threads (their phases the caller's to free: tp_stored_stalls_free); false
 * (nothing in out) when the file stores none, or can't be read (reason in
 * err, which is then not empty). */
bool tp_stored_stalls(tp_run *run, tp_stall **out, size_t *n, char *err, size_t cap);
void tp_stored_stalls_free(tp_stall *v, size_t n);

/* Each change of pace's function the summary stored (summary_pace_function),
 * into *out (none where it stores none); false (reason in err) when they
 * can't be read. */
bool tp_stored_pace_functions(tp_run *run, tp_pace_function **out, size_t *n, char *err,
                              size_t cap);

/* Each rank's own work counts the summary stored (summary_own), in rank
 * order, into *out (the caller frees; none where the file stores none);
 * false (reason in err) when they can't be read. */
bool tp_stored_own_samples(tp_run *run, tp_own_samples **out, size_t *n, char *err, size_t cap);

/* Each stored (user region, the standard one it ran inside or NULL,
 * seconds) of summary_region_within, *stored true where the file holds the
 * table (false: a file summarized before it, or not summarized). */
typedef void (*tp_stored_within_fn)(void *ctx, const char *name, const char *within,
                                    double seconds);
bool tp_stored_region_withins(tp_run *run, tp_stored_within_fn fn, void *ctx, bool *stored,
                              char *err, size_t cap);

/* Writes rows into the summary tables of run's file (opened again, read and
 * write) in one transaction, with meta summarized = 1 and plots = 1. A file
 * of an older schema is brought to the current one on the way (summary_timing
 * made anew, the device tables and the marks view added, columns added).
 * False with a one-line reason otherwise. */
bool tp_summary_tables_save(const tp_run *run, const tp_summary_rows *rows, char *err, size_t cap);

#endif
