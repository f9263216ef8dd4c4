/* summary_plots.c: computing what html plots, for the summary to store. */
#include "analyze/summary_plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/downsample.h"
#include "util/grow.h"

bool tp_summary_plots_init(const tp_run *run, tp_summary_plots *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->x = malloc(2 * TP_PLOT_BUCKETS * sizeof *out->x);
    out->y = malloc(2 * TP_PLOT_BUCKETS * sizeof *out->y);
    bool ok = out->x && out->y &&
              tp_downsample_init(&out->ds, TP_PLOT_BUCKETS, (double)run->last_t_ns / 1e9);
    if (!ok)
        snprintf(err, cap, "%s: out of memory for the plots", run->path);
    return ok;
}

/* A series' points as html draws them: its samples in the buckets, each
 * bucket's lowest and highest kept. */
void tp_summary_plots_series(void *plots, const tp_run_series *series, const int64_t *t_ns,
                             double *values, size_t n)
{
    tp_summary_plots *o = plots;
    for (size_t i = 0; i < n; i++)
        tp_downsample_add(&o->ds, (double)t_ns[i] / 1e9, values[i]);
    size_t m = tp_downsample_take(&o->ds, o->x, o->y);
    for (size_t i = 0; i < m; i++) {
        o->points = tp_grow(o->points, o->npoints, &o->cap_points, sizeof *o->points);
        /* x is the sample's own t_ns / 1e9: rounding gives t_ns back */
        o->points[o->npoints++] = (tp_plot_point){series->id, llround(o->x[i] * 1e9), o->y[i]};
    }
}

bool tp_summary_plots_finish(tp_run *run, const int *ranks, const size_t *skip, size_t nranks,
                             tp_summary_plots *out, char *err, size_t cap)
{
    out->ranks = malloc((nranks ? nranks : 1) * sizeof *out->ranks);
    out->phases = calloc(nranks ? nranks : 1, sizeof *out->phases);
    if (!out->ranks || !out->phases) {
        snprintf(err, cap, "%s: out of memory for the plots", run->path);
        return false;
    }
    memcpy(out->ranks, ranks, nranks * sizeof *ranks);
    out->nranks = nranks;
    return tp_step_phases_build(run, ranks, skip, nranks, TP_STEP_GROUPS, out->phases, err, cap);
}

void tp_summary_plots_free(tp_summary_plots *p)
{
    for (size_t k = 0; p->phases && k < p->nranks; k++)
        tp_step_phases_free(&p->phases[k]);
    free(p->points);
    free(p->ranks);
    free(p->phases);
    free(p->x);
    free(p->y);
    tp_downsample_free(&p->ds);
    memset(p, 0, sizeof *p);
}
