/* summary_plots.h: what `html` draws, stored with the run's summary.
 *
 * Besides the report's figures (store/summary_tables.h), the recorder stores when
 * the command ends what the html page plots: every series downsampled as the
 * page draws it (TP_PLOT_BUCKETS buckets over the run, each bucket's lowest
 * and highest sample: table summary_plot) and every rank's step time by phase
 * in at most TP_STEP_GROUPS groups (summary_step_phase); meta plots = 1 says
 * they are there. The page of a day-long run then reads a few thousand rows
 * instead of every sample, region and mark, and so does the page of several
 * node files, whose merge carries them over. The page drawn from them is the
 * page drawn from the rows (tested); a merged run's buckets span the merged
 * time line, so near a bucket's edge a node's stored extreme may land in the
 * neighbouring bucket. */
#ifndef TP_ANALYZE_SUMMARY_PLOTS_H
#define TP_ANALYZE_SUMMARY_PLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/downsample.h"
#include "analyze/step_phases.h"
#include "store/reader.h"
#include "store/reader_stream.h"
#include "store/summary_tables.h"

/* The plots of one run, computed from its rows. */
typedef struct tp_summary_plots {
    tp_plot_point *points; /* npoints, series by series, each in time order */
    size_t npoints;
    int *ranks; /* nranks ranks, each with its step phases */
    tp_step_phases *phases;
    size_t nranks;
    /* while building */
    tp_downsampler ds;
    double *x, *y; /* room for 2 * TP_PLOT_BUCKETS */
    size_t cap_points;
} tp_summary_plots;

/* Building the plots of run: tp_summary_plots_init; then
 * tp_summary_plots_series for every series' samples (a tp_series_values_fn:
 * tp_summary_build_also gives it the summary's own pass over the samples);
 * then tp_summary_plots_finish, which adds the step phases of
 * ranks[0..nranks) (those that marked steps), the first skip[k] (their
 * warm-up steps) left out. False (reason in err) on failure;
 * tp_summary_plots_free in every case. */
bool tp_summary_plots_init(const tp_run *run, tp_summary_plots *out, char *err, size_t cap);
void tp_summary_plots_series(void *plots, const tp_run_series *series, const int64_t *t_ns,
                             double *values, size_t n);
bool tp_summary_plots_finish(tp_run *run, const int *ranks, const size_t *skip, size_t nranks,
                             tp_summary_plots *out, char *err, size_t cap);
void tp_summary_plots_free(tp_summary_plots *p);

#endif
