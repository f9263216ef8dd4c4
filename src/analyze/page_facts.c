/* page_facts.c: see page_facts.h. */
#include "analyze/page_facts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/downsample.h"
#include "analyze/fleet_envelopes.h"
#include "analyze/pauses.h"
#include "core/metric_catalog.h"
#include "core/phases.h"
#include "store/envelopes.h"
#include "store/reader_stream.h"
#include "store/summary_tables.h"

/* The place of agent id in run->agents (loaded in id order), nagents if
 * none. */
static size_t agent_place(const tp_run *run, int64_t id)
{
    size_t lo = 0, hi = run->nagents;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (run->agents[mid].id == id)
            return mid;
        if (run->agents[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return run->nagents;
}

/* Each series' agent's per-core CPU series, counted once (a fleet's series
 * are hundreds of thousands: counting them per series was quadratic). */
static size_t *cores_per_series(const tp_run *run)
{
    size_t n = run->nseries, *cores = calloc(n + 1, sizeof *cores);
    size_t *per_agent = calloc(run->nagents + 1, sizeof *per_agent);
    if (!cores || !per_agent) {
        free(cores);
        free(per_agent);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const tp_run_series *r = &run->series[i];
        if (strcmp(r->metric, TP_METRIC_CPU_UTIL_PERCENT) == 0 && strcmp(r->labels, "{}") != 0)
            per_agent[agent_place(run, r->agent_id)]++;
    }
    for (size_t i = 0; i < n; i++)
        cores[i] = per_agent[agent_place(run, run->series[i].agent_id)];
    free(per_agent);
    return cores;
}

typedef struct line_build {
    const tp_run_series *first; /* run->series: a series' index is its offset */
    tp_downsampler *ds;         /* per series index: its line's, or NULL */
    bool *has;
} line_build;

static void collect_point(void *ctx, const tp_run_series *series, int64_t t_ns, double value)
{
    line_build *b = ctx;
    size_t i = (size_t)(series - b->first);
    if (b->has[i])
        tp_downsample_add(&b->ds[i], (double)t_ns / 1e9, value);
}

static bool build_lines(const tp_summary *s, tp_page_facts *p, char *err, size_t cap)
{
    const tp_run *run = s->run;
    size_t n = run->nseries;
    line_build b = {run->series, calloc(n + 1, sizeof *b.ds), calloc(n + 1, sizeof *b.has)};
    p->lines = calloc(n + 1, sizeof *p->lines);
    size_t *cores = cores_per_series(run);
    bool ok = b.ds && b.has && p->lines && cores;
    for (size_t i = 0; ok && i < n; i++)
        if ((b.has[i] = tp_series_plotted(&run->series[i], cores[i])))
            tp_downsample_init(&b.ds[i], TP_PLOT_BUCKETS, p->span);
    free(cores);
    if (!ok)
        snprintf(err, cap, "out of memory");
    else
        ok = s->plots_stored ? tp_stored_plot_points(s->run, collect_point, &b, err, cap)
                             : tp_run_each_sample(s->run, collect_point, &b, err, cap);
    for (size_t i = 0; b.has && i < n; i++) {
        if (!b.has[i])
            continue;
        tp_page_line *l = &p->lines[p->nlines];
        l->series = &run->series[i];
        l->x = malloc(2 * TP_PLOT_BUCKETS * sizeof(double));
        l->y = malloc(2 * TP_PLOT_BUCKETS * sizeof(double));
        if (l->x && l->y) {
            l->n = tp_downsample_take(&b.ds[i], l->x, l->y);
        } else if (ok) {
            snprintf(err, cap, "out of memory");
            ok = false;
        }
        p->nlines++;
        tp_downsample_free(&b.ds[i]);
    }
    free(b.ds);
    free(b.has);
    return ok;
}

static void free_lines(tp_page_facts *p)
{
    for (size_t i = 0; i < p->nlines; i++) {
        free(p->lines[i].x);
        free(p->lines[i].y);
    }
    free(p->lines);
    p->lines = NULL;
    p->nlines = 0;
}

/* The lines, or for many agents the envelopes: stored, else made from the
 * lines (which then go). */
static bool build_plots(const tp_summary *s, tp_page_facts *p, char *err, size_t cap)
{
    if (p->across && tp_envelopes_stored(s->run))
        return tp_envelopes_load(s->run, &p->envelopes, err, cap);
    if (!build_lines(s, p, err, cap))
        return false;
    if (!p->across)
        return true;
    const tp_run_series **series = calloc(p->nlines + 1, sizeof *series);
    const double **x = calloc(p->nlines + 1, sizeof *x), **y = calloc(p->nlines + 1, sizeof *y);
    size_t *n = calloc(p->nlines + 1, sizeof *n);
    bool ok = series && x && y && n;
    for (size_t i = 0; ok && i < p->nlines; i++) {
        series[i] = p->lines[i].series;
        x[i] = p->lines[i].x, y[i] = p->lines[i].y, n[i] = p->lines[i].n;
    }
    ok = ok && tp_envelopes_from_lines(series, x, y, n, p->nlines, p->span, &p->envelopes);
    if (!ok)
        snprintf(err, cap, "out of memory");
    free(series);
    free(x);
    free(y);
    free(n);
    free_lines(p);
    return ok;
}

/* The run's pauses as shades: spans of a name closer than a plot bucket to
 * the one before are one shade (so at most about TP_PLOT_BUCKETS per name). */
static bool build_pauses(const tp_summary *s, tp_page_facts *p, char *err, size_t cap)
{
    tp_pauses all;
    if (!tp_pauses_build(s->run, &all, err, cap))
        return false;
    p->pauses = calloc(all.n + 1, sizeof *p->pauses);
    if (!p->pauses) {
        tp_pauses_free(&all);
        snprintf(err, cap, "out of memory");
        return false;
    }
    double gap = p->span / TP_PLOT_BUCKETS;
    size_t last[TP_PAUSE_NAMES]; /* per name: its latest shade */
    for (size_t n = 0; n < TP_PAUSE_NAMES; n++)
        last[n] = SIZE_MAX;
    for (size_t i = 0; i < all.n; i++) {
        double from = (double)all.spans[i].t0_ns / 1e9, to = (double)all.spans[i].t1_ns / 1e9;
        size_t name = 0;
        while (name + 1 < TP_PAUSE_NAMES && tp_pause_names[name] != all.spans[i].name)
            name++;
        size_t k = last[name] != SIZE_MAX && from - p->pauses[last[name]].to < gap ? last[name]
                                                                                   : p->npauses;
        last[name] = k;
        if (k == p->npauses)
            p->pauses[p->npauses++] = (tp_page_pause){all.spans[i].name, from, to, 0, 0};
        else if (to > p->pauses[k].to)
            p->pauses[k].to = to;
        p->pauses[k].count++;
        p->pauses[k].busy_s += to - from;
    }
    tp_pauses_free(&all);
    return true;
}

/* The ranks whose step time is plotted, and their phases. */
static bool build_step_phases(const tp_summary *s, bool all, tp_page_facts *p, char *err,
                              size_t cap)
{
    const tp_timings *t = &s->timings;
    size_t room = t->nsteps + TP_NOTABLE_RANKS;
    p->ranks = calloc(room, sizeof *p->ranks);
    p->phases = calloc(room, sizeof *p->phases);
    size_t *warmup = calloc(room, sizeof *warmup);
    if (!p->ranks || !p->phases || !warmup) {
        free(warmup);
        snprintf(err, cap, "out of memory");
        return false;
    }
    size_t n = 0;
    if (!all && t->nsteps > TP_NOTABLE_RANKS && (n = tp_ranks_notable(&s->ranks, p->ranks)))
        p->notable_ranks = true;
    for (size_t i = 0; !p->notable_ranks && i < t->nsteps && (all || n < TP_NOTABLE_RANKS); i++)
        p->ranks[n++] = t->steps[i].rank;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < t->nsteps; k++)
            if (t->steps[k].rank == p->ranks[i])
                warmup[i] = t->steps[k].warmup;
    bool ok = tp_summary_step_phases_of(s, p->ranks, warmup, n, p->phases, err, cap);
    p->nranks = n; /* freed whatever happened */
    free(warmup);
    return ok;
}

bool tp_page_facts_build(const tp_summary *s, bool all, tp_page_facts *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->span = s->n ? (double)s->run->last_t_ns / 1e9 : 0;
    for (size_t w = 0; w < s->nwindows; w++) {
        double t0 = (double)s->windows[w].t0_ns / 1e9, t1 = (double)s->windows[w].t1_ns / 1e9;
        out->steps_from = w == 0 || t0 < out->steps_from ? t0 : out->steps_from;
        out->steps_to = w == 0 || t1 > out->steps_to ? t1 : out->steps_to;
        out->has_steps = true;
    }
    out->across = !all && s->run->nagents >= TP_ENVELOPE_AGENTS_MIN;
    out->points_elsewhere = all && !s->plots_stored && tp_envelopes_stored(s->run);
    out->across |= out->points_elsewhere;
    return build_step_phases(s, all, out, err, cap) &&
           tp_rank_heatmap_build(s, &out->heatmap, err, cap) && build_pauses(s, out, err, cap) &&
           build_plots(s, out, err, cap);
}

void tp_page_facts_free(tp_page_facts *p)
{
    free_lines(p);
    tp_envelopes_free(&p->envelopes);
    free(p->pauses);
    for (size_t i = 0; i < p->nranks; i++)
        tp_step_phases_free(&p->phases[i]);
    free(p->ranks);
    free(p->phases);
    tp_rank_heatmap_free(&p->heatmap);
    memset(p, 0, sizeof *p);
}
