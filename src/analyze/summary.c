/* summary.c: a run's facts for the report, built once: each part (the
 * series' statistics, timings, ranks, step phases, stacks, stalls) from the
 * figures the file stores where it holds them, else computed from its rows;
 * the one place that chooses. */
#include "analyze/summary.h"

#include "analyze/step_phases.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/gpu_use.h"
#include "analyze/intervals.h"
#include "analyze/ops.h"
#include "analyze/regime_stacks.h"
#include "analyze/gpu_slowdowns.h"
#include "util/ns_math.h"
#include "store/inputs.h"
#include "store/summary_tables.h"
#include "core/metric_catalog.h"
#include "util/grow.h"
#include "util/labels.h"
#include "util/oom.h"
#include "core/run_keys.h"

/* The summary being built from the samples, and who else sees them. */
typedef struct series_pass {
    tp_summary *summary;
    tp_series_values_fn also;
    void *also_ctx;
    tp_steps_window *windows; /* each agent's steps, read by the pass itself */
    size_t nwindows;
} series_pass;

static void add_series(void *ctx, const tp_run_series *series, const int64_t *t_ns, double *values,
                       size_t n)
{
    series_pass *pass = ctx;
    if (pass->also) /* first: the statistics reorder values */
        pass->also(pass->also_ctx, series, t_ns, values, n);
    tp_summary *s = pass->summary;
    s->items = tp_grow(s->items, s->n, &s->cap, sizeof *s->items);
    tp_series_summary *item = &s->items[s->n++];
    item->series = series;
    item->in_steps = false;
    for (size_t w = 0; w < pass->nwindows; w++)
        if (pass->windows[w].agent_id == series->agent_id) {
            /* the samples inside the steps: a contiguous range, whose
             * reordering by the statistics leaves the whole run's intact */
            size_t lo = tp_first_at_or_after(t_ns, n, pass->windows[w].t0_ns);
            size_t hi = tp_first_at_or_after(t_ns, n, tp_ns_add(pass->windows[w].t1_ns, 1));
            if (hi > lo) {
                tp_stats_compute(values + lo, hi - lo, &item->steps);
                item->in_steps = true;
            }
        }
    tp_stats_compute(values, n, &item->stats);
    if (!item->in_steps)
        item->steps = item->stats;
}

static void add_stored(void *ctx, const tp_run_series *series, const tp_stats *st)
{
    tp_summary *s = ctx;
    s->items = tp_grow(s->items, s->n, &s->cap, sizeof *s->items);
    s->items[s->n].series = series;
    s->items[s->n].stats = *st;
    s->items[s->n].steps = *st; /* until the stored figures over the steps say otherwise */
    s->items[s->n].in_steps = false;
    s->n++;
}

/* The stored series' items by series (each series' index in run->series:
 * its item, or -1), so that each stored figure over the steps finds its
 * item at once: a fleet's merged file holds a thousand agents' series. */
typedef struct stored_steps_ctx {
    tp_summary *summary;
    long *item_of;
} stored_steps_ctx;

/* A stored series' figures over its agent's steps, onto the item of that
 * series (loaded just before). */
static void add_stored_steps(void *ctx, const tp_run_series *series, const tp_stats *st)
{
    stored_steps_ctx *c = ctx;
    tp_summary *s = c->summary;
    size_t k = (size_t)(series - s->run->series);
    long i = k < s->run->nseries ? c->item_of[k] : -1;
    if (i >= 0) {
        s->items[i].steps = *st;
        s->items[i].in_steps = true;
    }
}

static bool stored_series_steps(tp_run *run, tp_summary *out, char *err, size_t cap)
{
    stored_steps_ctx c = {out, tp_xmalloc((run->nseries + 1) * sizeof *c.item_of)};
    for (size_t k = 0; k < run->nseries; k++)
        c.item_of[k] = -1;
    for (size_t i = 0; i < out->n; i++) {
        size_t k = (size_t)(out->items[i].series - run->series);
        if (k < run->nseries)
            c.item_of[k] = (long)i;
    }
    bool ok = tp_stored_series_steps(run, add_stored_steps, &c, err, cap);
    free(c.item_of);
    return ok;
}

/* The samples pass: each agent's steps window, then every series. The
 * windows go to the summary. */
static bool each_series(tp_run *run, series_pass *pass, tp_series_values_fn fn, void *ctx,
                        char *err, size_t cap)
{
    bool ok = tp_run_steps_windows(run, &pass->windows, &pass->nwindows, err, cap) &&
              tp_run_each_series(run, fn, ctx, err, cap);
    pass->summary->windows = pass->windows;
    pass->summary->nwindows = pass->nwindows;
    pass->windows = NULL;
    pass->nwindows = 0;
    return ok;
}

static long catalog_rank(const char *metric)
{
    size_t count;
    const tp_metric_def *defs = tp_metric_catalog(&count);
    for (size_t i = 0; i < count; i++)
        if (strcmp(defs[i].name, metric) == 0)
            return (long)i;
    return (long)count; /* unknown metrics (newer writers) go last */
}

static int cmp_summary(const void *a, const void *b)
{
    const tp_run_series *x = ((const tp_series_summary *)a)->series;
    const tp_run_series *y = ((const tp_series_summary *)b)->series;
    if (x->agent_id != y->agent_id)
        return x->agent_id < y->agent_id ? -1 : 1;
    long rx = catalog_rank(x->metric), ry = catalog_rank(y->metric);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    int c = strcmp(x->metric, y->metric);
    if (c)
        return c;
    /* "{}" (the total) sorts before any labelled series. */
    bool tx = strcmp(x->labels, "{}") == 0, ty = strcmp(y->labels, "{}") == 0;
    if (tx != ty)
        return tx ? -1 : 1;
    return strverscmp(x->labels, y->labels);
}

static bool build(tp_run *run, tp_summary *out, series_pass *pass, char *err, size_t cap);

bool tp_summary_build(tp_run *run, tp_summary *out, char *err, size_t cap)
{
    return tp_summary_build_also(run, out, NULL, NULL, err, cap);
}

bool tp_summary_build_also(tp_run *run, tp_summary *out, tp_series_values_fn also, void *also_ctx,
                           char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->run = run;
    series_pass pass = {.summary = out, .also = also, .also_ctx = also_ctx};
    if (!tp_run_inventory_build(run, &out->inv)) {
        snprintf(err, cap, "out of memory reading %s", run->path);
        return false;
    }
    bool began = tp_run_begin_read(run);
    bool ok = build(run, out, &pass, err, cap);
    if (began)
        tp_run_end_read(run);
    return ok;
}

/* One part of a summary computed from the rows on a thread of its own,
 * through its own connection to the run file (an SQLite connection is used by
 * one thread): the samples pass, or the ranks. */
typedef struct side_pass {
    tp_run *main;      /* the run the summary belongs to (read by its own thread only) */
    const char *file;  /* the file to open again */
    series_pass *pass; /* samples: where the statistics go */
    tp_ranks *ranks;   /* ranks: where they go */
    bool ok;
    char err[512];
} side_pass;

/* A series of the side connection's run, as the same series of the main run
 * (series are loaded by id from the same file; one added since the main run
 * was opened, while recording, is left out like any newer sample). */
static void add_series_of_side(void *ctx, const tp_run_series *series, const int64_t *t_ns,
                               double *values, size_t n)
{
    side_pass *side = ctx;
    const tp_run_series *same = tp_run_series_by_id(side->main, series->id);
    if (same)
        add_series(side->pass, same, t_ns, values, n);
}

static void *run_side_pass(void *arg)
{
    side_pass *side = arg;
    tp_run *run = tp_run_open(side->file, side->err, sizeof side->err);
    if (!run)
        return NULL;
    free(run->path); /* messages name the run as the reader knows it */
    run->path = strdup(side->main->path ? side->main->path : side->file);
    run->raw_only = side->main->raw_only;
    bool began = tp_run_begin_read(run);
    if (side->pass)
        side->ok =
            each_series(run, side->pass, add_series_of_side, side, side->err, sizeof side->err);
    else
        side->ok = tp_ranks_from_rows(run, side->ranks, side->err, sizeof side->err);
    if (began)
        tp_run_end_read(run);
    tp_run_close(run);
    return NULL;
}

/* Starts side on a thread when the run is a file that can be opened again;
 * false (nothing started) otherwise, and the caller does the work itself. */
static bool start_side(tp_run *run, side_pass *side, pthread_t *thread)
{
    const char *file = tp_run_file(run);
    if (!file || !*file)
        return false;
    side->main = run;
    side->file = file;
    return pthread_create(thread, NULL, run_side_pass, side) == 0;
}

/* Waits for a side pass; false with its reason in err if it failed. */
static bool join_side(pthread_t thread, side_pass *side, char *err, size_t cap)
{
    pthread_join(thread, NULL);
    if (!side->ok)
        snprintf(err, cap, "%s", side->err);
    return side->ok;
}

/* The summary's parts; tp_summary_build wraps them in one read snapshot.
 * Stored figures or the rows: decided here, for every part, and only here.
 * From the rows, the samples pass and the ranks (each a full pass over a table)
 * run on threads of their own beside the timings: the record-end summary of
 * a node-day, 15 s on one core, waits only for the longest on a machine with
 * three (docs/benchmarks.md). */
static bool build(tp_run *run, tp_summary *out, series_pass *pass, char *err, size_t cap)
{
    bool stored = tp_summary_stored(run);
    out->plots_stored = tp_plots_stored(run);
    side_pass samples = {.pass = pass}, ranks = {.ranks = &out->ranks};
    pthread_t samples_thread, ranks_thread;
    bool samples_aside = !stored && start_side(run, &samples, &samples_thread);
    bool ranks_aside = !stored && start_side(run, &ranks, &ranks_thread);
    bool ok = samples_aside ||
              (stored ? tp_stored_series(run, add_stored, out, err, cap) &&
                            stored_series_steps(run, out, err, cap) &&
                            tp_stored_steps_windows(run, &out->windows, &out->nwindows, err, cap)
                      : each_series(run, pass, add_series, pass, err, cap));
    int64_t duration_ns = run->settings.duration_ns;
    double run_s = (double)(duration_ns >= 0 ? duration_ns : run->last_t_ns) / 1e9;
    run_s = run_s > 0 ? run_s : 0;
    out->duration_s = run_s;
    ok = ok && (stored ? tp_stored_timings(run, &out->timings, err, cap)
                       : tp_timings_from_rows(run, run_s, &out->timings, err, cap));
    if (ok)
        tp_timings_finish(run, run_s, &out->timings);
    if (samples_aside)
        ok = join_side(samples_thread, &samples, err, cap) && ok;
    if (ranks_aside)
        ok = join_side(ranks_thread, &ranks, err, cap) && ok;
    else if (stored && ok && (ok = tp_stored_ranks(run, &out->ranks, err, cap)))
        tp_ranks_compare(&out->ranks);
    else if (ok)
        ok = tp_ranks_from_rows(run, &out->ranks, err, cap);
    if (ok && out->n)
        qsort(out->items, out->n, sizeof *out->items, cmp_summary);
    if (ok) {
        out->gpu_used = tp_gpus_used(run);
        ok = tp_gpu_slowdowns_build(run, out->windows, out->nwindows, stored, &out->gpu_slowdown,
                                    err, cap);
    }
    return ok;
}

void tp_summary_free(tp_summary *s)
{
    tp_region_withins_free(&s->withins);
    tp_stack_facts_free(&s->stacks);
    tp_stack_facts_free(&s->stacks_latest);
    tp_ops_facts_free(&s->ops);
    tp_stalls_free(&s->stalls);
    tp_deaths_free(&s->deaths);
    tp_own_costs_free(&s->own);
    tp_course_free(&s->course);
    free(s->items);
    free(s->windows);
    tp_timings_free(&s->timings);
    tp_ranks_free(&s->ranks);
    tp_ranks_free(&s->ranks_latest);
    free(s->rank_paces);
    free(s->gpu_used);
    free(s->gpu_slowdown);
    tp_run_inventory_free(&s->inv);
    memset(s, 0, sizeof *s);
}

void tp_summary_name_inputs(tp_summary *s, const tp_inputs *in)
{
    tp_inputs_name_run(in, s->run);
    s->inv.path = s->run->path;
}

bool tp_summary_load(const char *path, unsigned parts, tp_summary *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    tp_run *run = tp_run_open(path, err, cap);
    if (!run)
        return false;
    if (!tp_summary_build(run, out, err, cap)) {
        tp_summary_free(out);
        tp_run_close(run);
        return false;
    }
    if (!tp_summary_add(out, parts, err, cap)) {
        tp_summary_close(out);
        return false;
    }
    return true;
}

static bool add_stacks(tp_summary *s, char *err, size_t cap)
{
    tp_stack_facts_free(&s->stacks);
    tp_ops_facts_free(&s->ops);
    return tp_stack_facts_build(s->run, &s->withins, &s->stacks, err, cap) &&
           tp_ops_facts_build(s->run, &s->ops, err, cap);
}

/* Each rank's split over the span of pace g (tp_summary.rank_paces), from
 * their step phases a chunk of ranks at a time (a fleet's would not fit at
 * once). */
static bool add_rank_paces(tp_summary *s, const tp_regime *g, char *err, size_t cap)
{
    enum { CHUNK = 256 };
    size_t n = s->ranks_latest.n;
    int ranks[CHUNK];
    size_t skip[CHUNK];
    tp_step_phases ph[CHUNK];
    s->rank_paces = tp_xcalloc(n, sizeof *s->rank_paces);
    bool ok = true;
    for (size_t lo = 0; ok && lo < n; lo += CHUNK) {
        size_t m = n - lo < CHUNK ? n - lo : CHUNK;
        for (size_t k = 0; k < m; k++) {
            const tp_step_row *st =
                tp_timings_steps_of(&s->timings, s->ranks_latest.rows[lo + k].rank);
            ranks[k] = s->ranks_latest.rows[lo + k].rank;
            skip[k] = st ? st->warmup : 0;
        }
        ok = tp_summary_step_phases_of(s, ranks, skip, m, ph, err, cap);
        for (size_t k = 0; k < m; k++) {
            if (ok && tp_rank_pace_over(s->run, &ph[k], ranks[k], g->t0_s, g->t1_s,
                                        &s->rank_paces[s->nrank_paces]))
                s->nrank_paces++;
            tp_step_phases_free(&ph[k]);
        }
    }
    return ok;
}

const tp_rank_pace *tp_summary_rank_pace(const tp_summary *s, int rank)
{
    size_t lo = 0, hi = s->nrank_paces; /* in rank order, as ranks_latest */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->rank_paces[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nrank_paces && s->rank_paces[lo].rank == rank ? &s->rank_paces[lo] : NULL;
}

static int cmp_agent(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Whether latest (in rank order, as stored) holds each rank once, and rows
 * of every agent (node) of whole: a merged file whose nodes' tables were
 * not all over the same pace is not judged on some nodes' ranks alone. */
static bool every_agent_once(const tp_ranks *whole, const tp_ranks *latest)
{
    for (size_t i = 1; i < latest->n; i++)
        if (latest->rows[i].rank <= latest->rows[i - 1].rank)
            return false;
    int64_t *agents = tp_xmalloc((latest->n + 1) * sizeof *agents);
    for (size_t k = 0; k < latest->n; k++)
        agents[k] = latest->rows[k].agent_id;
    qsort(agents, latest->n, sizeof *agents, cmp_agent);
    bool all = true;
    for (size_t i = 0; i < whole->n && all; i++)
        all =
            bsearch(&whole->rows[i].agent_id, agents, latest->n, sizeof *agents, cmp_agent) != NULL;
    free(agents);
    return all;
}

/* A node's latest pace is the merged run's where its first rank's regime
 * ends within a tenth of the regime's steps of the merged first rank's
 * (each node's recorder placed the change on its own steps: in synchronous
 * training the same, give or take a group of steps), and at least one step. */
#define LATEST_SLACK_DIV 10

/* The ranks over the first rank's latest pace (tp_summary.ranks_latest):
 * the stored ones for its steps where the recorder kept them, else the
 * rows'. A merged file's stored tables are each node's over its own first
 * rank's latest pace: taken where every node of the whole run has its table
 * over steps near the merged first rank's (LATEST_SLACK_DIV), else none
 * (a node whose pace did not change, or changed elsewhere: the whole run
 * is judged). */
static bool add_latest_ranks(tp_summary *s, char *err, size_t cap)
{
    const tp_regime *g = tp_regimes_latest(&s->regimes, s->regimes.rank);
    if (!g || s->ranks.n < 2)
        return true;
    if (!tp_summary_stored(s->run)) {
        if (!tp_ranks_latest_from_rows(s->run, &s->regimes, 2, &s->ranks_latest, err, cap))
            return false;
    } else {
        size_t span = g->last_step - g->first_step + 1, slack = span / LATEST_SLACK_DIV;
        if (!tp_stored_ranks_latest(s->run, g->first_step, g->last_step, slack ? slack : 1,
                                    &s->ranks_latest, err, cap))
            return false;
        if (s->ranks_latest.n < 2 || !every_agent_once(&s->ranks, &s->ranks_latest))
            tp_ranks_free(&s->ranks_latest);
        else
            tp_ranks_compare(&s->ranks_latest);
    }
    if (s->ranks_latest.n < 2)
        return true;
    /* the first rank's pace changed because it waits for a straggler: said */
    tp_ranks_pace_cause(&s->ranks, &s->ranks_latest, &s->regimes.v[s->regimes.n - 1]);
    return add_rank_paces(s, g, err, cap);
}

static bool add_course(tp_summary *s, char *err, size_t cap)
{
    tp_stalls_free(&s->stalls);
    tp_deaths_free(&s->deaths);
    tp_own_costs_free(&s->own);
    tp_course_free(&s->course);
    tp_ranks_free(&s->ranks_latest);
    tp_stack_facts_free(&s->stacks_latest);
    free(s->rank_paces);
    s->rank_paces = NULL, s->nrank_paces = 0;
    memset(&s->regimes, 0, sizeof s->regimes);
    if (!tp_course_build(s->run, &s->course, err, cap) ||
        !tp_stalls_build(s->run, &s->course, &s->timings, s->duration_s, &s->stalls, err, cap) ||
        !tp_deaths_build(s->run, &s->course, s->duration_s, &s->deaths, err, cap) ||
        !tp_own_costs_build(s->run, &s->course, &s->timings, &s->own, err, cap))
        return false;
    tp_summary_stalls_machine(s, &s->stalls);
    for (size_t i = 0; i < s->deaths.n; i++) { /* the memory each death's training peaked at */
        const tp_series_summary *rss =
            tp_summary_find(s, s->deaths.v[i].agent_id, TP_METRIC_PROC_RSS_BYTES, "{}");
        s->deaths.v[i].rss_bytes = rss && rss->stats.count ? rss->stats.max : NAN;
    }
    /* the first rank's changes of pace, from its step phases: the stored
     * ones where the recorder kept them (merged summaries too), else the rows' */
    const tp_timings *t = &s->timings;
    if (!t->nsteps)
        return true;
    int rank = t->steps[0].rank;
    size_t skip = t->steps[0].warmup;
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    int64_t agent = place ? place->agent_id : 1;
    /* the rank's GPU as its verdicts find it (a run of one process has no
     * rank row, and its one GPU is its) */
    const tp_run_gpu *on = tp_summary_rank_gpu(s, rank);
    int gpu = on && on->agent_id == agent ? on->index : -1;
    tp_step_phases ph;
    bool ok = tp_summary_step_phases(s, rank, skip, &ph, err, cap);
    if (ok)
        tp_regimes_build(s->run, &ph, rank, agent, gpu, &s->regimes);
    tp_step_phases_free(&ph);
    const tp_regime *latest = ok ? tp_regimes_latest(&s->regimes, rank) : NULL;
    return ok && tp_regimes_add_stack_causes(s->run, &s->regimes, &s->withins, err, cap) &&
           (!latest ||
            tp_stack_facts_build_over(s->run, latest, &s->withins, &s->stacks_latest, err, cap)) &&
           add_latest_ranks(s, err, cap);
}

bool tp_summary_add(tp_summary *s, unsigned parts, char *err, size_t cap)
{
    if ((parts & TP_PART_STACKS) && !add_stacks(s, err, cap))
        return false;
    s->parts |= parts & TP_PART_STACKS;
    if ((parts & TP_PART_COURSE) && !add_course(s, err, cap))
        return false;
    s->parts |= parts & TP_PART_COURSE;
    return true;
}

void tp_summary_needs(const tp_summary *s, unsigned parts, const char *who)
{
    unsigned missing = parts & ~s->parts;
    if (!missing)
        return;
    fprintf(stderr, "trainprof: internal error: %s reads a summary built without its%s%s\n", who,
            missing & TP_PART_STACKS ? " stacks" : "", missing & TP_PART_COURSE ? " course" : "");
    abort();
}

bool tp_summary_step_phases_of(const tp_summary *s, const int *ranks, const size_t *skip, size_t n,
                               tp_step_phases *ph, char *err, size_t cap)
{
    /* a summary-only merge keeps them even where it leaves the plots out */
    bool stored = s->plots_stored || tp_run_summary_only(s->run);
    return stored ? tp_stored_step_phases(s->run, ranks, n, ph, err, cap)
                  : tp_step_phases_build(s->run, ranks, skip, n, TP_STEP_GROUPS, ph, err, cap);
}

bool tp_summary_step_phases(const tp_summary *s, int rank, size_t skip, tp_step_phases *ph,
                            char *err, size_t cap)
{
    return tp_summary_step_phases_of(s, &rank, &skip, 1, ph, err, cap);
}

void tp_summary_close(tp_summary *s)
{
    tp_run *run = s->run;
    tp_summary_free(s);
    tp_run_close(run);
}

const tp_steps_window *tp_summary_window(const tp_summary *s, int64_t agent_id)
{
    for (size_t i = 0; i < s->nwindows; i++)
        if (s->windows[i].agent_id == agent_id)
            return &s->windows[i];
    return NULL;
}

const tp_series_summary *tp_summary_find(const tp_summary *s, int64_t agent_id, const char *metric,
                                         const char *labels)
{
    size_t lo = 0, hi = s->n; /* the items are in agent order: the agent's first */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].series->agent_id < agent_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < s->n && s->items[i].series->agent_id == agent_id; i++) {
        const tp_run_series *r = s->items[i].series;
        if (strcmp(r->metric, metric) == 0 && strcmp(r->labels, labels) == 0)
            return &s->items[i];
    }
    return NULL;
}
