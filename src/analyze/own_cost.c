/* own_cost.c: see own_cost.h. */
#include "analyze/own_cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/phases.h"
#include "core/run_keys.h"
#include "core/stats.h"
#include "store/reader_stacks.h"
#include "store/summary_tables.h"
#include "store/reader_stream.h"
#include "trainprof.h"
#include "util/oom.h"

/* A rank's step thread and steps window, while its samples are counted. */
typedef struct followed {
    int64_t pid;
    int32_t tid;
    int64_t t0, t1;
} followed;

typedef struct count_ctx {
    tp_own_costs *out;
    const followed *f;         /* by the costs' index */
    const unsigned char *work; /* by node id */
    size_t nnodes;
} count_ctx;

static void count(void *ctx, const tp_stack_thread_run *r)
{
    count_ctx *c = ctx;
    for (size_t k = 0; k < c->out->n; k++) {
        const followed *f = &c->f[k];
        if (f->pid != r->pid || f->tid != r->tid)
            continue;
        int64_t end = r->t_ns + (r->span_ns > 0 ? r->span_ns : 0);
        if (end < f->t0 || r->t_ns > f->t1)
            return;
        int64_t a = r->t_ns > f->t0 ? r->t_ns : f->t0, b = end < f->t1 ? end : f->t1;
        double w = r->span_ns <= 0 ? (double)r->count
                                   : (double)r->count * (double)(b - a) / (double)r->span_ns;
        unsigned char work = r->node <= c->nnodes ? c->work[r->node] : TP_WORK_USERS;
        if (work == TP_WORK_WRAPPERS && r->phase &&
            (strcmp(r->phase, TP_PHASE_TO_DEVICE) == 0 ||
             strcmp(r->phase, TP_PHASE_FROM_DEVICE) == 0))
            work = TP_WORK_USERS; /* the wrapper waits in the user's C call */
        /* a wrapper in C: its caller's frames, unless the work it does is
         * ours in Python (a capture window's end, run from a step's mark) */
        if ((r->state & TP_STACK_STATE_OWN) && work == TP_WORK_USERS)
            work = TP_WORK_WRAPPERS;
        c->out->v[k].samples += w;
        c->out->v[k].own[work] += w;
        return;
    }
}

/* The script's own regions (names of no standard phase) a step of rank,
 * inside its timed steps, and what they cost of a step (NaN: no steps).
 * Regions the recorder could not keep (t->not_recorded: a writer too far
 * behind drops regions while it keeps every step mark) cost the training
 * all the same: they count at the rate of the ones kept. */
static void user_regions(const tp_timings *t, int rank, double *per_step, double *share)
{
    const tp_step_row *st = tp_timings_steps_of(t, rank);
    double n = 0, kept = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        const tp_timing_row *r = &t->rows[i];
        kept += (double)r->stats.count;
        if (r->rank == rank && tp_phase_kind_of(r->name) == TP_PHASE_KIND_NONE && r->total_s > 0 &&
            r->in_steps_s > 0)
            n += (double)r->stats.count * r->in_steps_s / r->total_s;
    }
    if (kept > 0 && t->not_recorded > 0)
        n *= (kept + (double)t->not_recorded) / kept;
    *per_step = st && st->stats.count ? n / (double)st->stats.count : NAN;
    *share = st && st->stats.mean > 0 ? *per_step * TP_OWN_REGION_COST_S / st->stats.mean : NAN;
}

/* The meta "backoff" = "AT_NS STEP SHARE REGIONS_PER_STEP regions|windows
 * [DEVICE_EVERY]" (record/ops_relay.c); unset where absent or malformed (a
 * crafted file). */
static tp_own_backoff read_backoff(tp_run *run)
{
    tp_own_backoff b = {0};
    const char *v = tp_run_meta_get(run, TP_META_BACKOFF);
    unsigned long long at_ns, step;
    char why[16];
    int every = 0;
    int got =
        v ? sscanf(v, "%llu %llu %lf %lf %15s %d", &at_ns, &step, &b.share, &b.regions, why, &every)
          : 0;
    if (got < 5 || !isfinite(b.share) || !isfinite(b.regions))
        return (tp_own_backoff){0};
    b.device_every = got == 6 && every > 1 && every <= 255 ? every : 0;
    b.set = true;
    b.at_s = (double)at_ns / 1e9;
    b.step = step;
    b.mostly_windows = strcmp(why, "windows") == 0;
    return b;
}

/* A pass over the samples under way: what count() reads, and what it holds. */
struct tp_own_pass {
    count_ctx c;
    followed *f;
    unsigned char *work;
    tp_stack_tree tree;
    bool tree_loaded;
};

static void pass_free(tp_own_pass *p)
{
    if (!p)
        return;
    if (p->tree_loaded)
        tp_stack_tree_free(&p->tree);
    free(p->work);
    free(p->f);
    free(p);
}

/* Each followed rank's samples and whose work they were, from the raw
 * samples: the ranks' step threads (the course's), within their steps. The
 * costs are set up in out, the pass in p (its reader's fn NULL where there
 * is nothing to read). */
static bool count_rows_begin(tp_run *run, const tp_course *course, tp_own_costs *out,
                             tp_own_pass *p, tp_stack_reader *reader, char *err, size_t cap)
{
    if (!course->n || !tp_run_has_stacks(run))
        return true;
    tp_run_thread *threads = NULL;
    size_t nthreads = 0;
    if (!tp_run_threads(run, &threads, &nthreads, err, cap))
        return false;
    out->v = tp_xcalloc(course->n, sizeof *out->v);
    p->f = tp_xcalloc(course->n, sizeof *p->f);
    for (size_t i = 0; i < course->n; i++) {
        const tp_rank_course *rc = &course->v[i];
        for (size_t k = 0; k < nthreads && rc->n; k++)
            if (threads[k].id == rc->thread) {
                p->f[out->n] =
                    (followed){threads[k].pid, threads[k].tid, rc->a[0], rc->b[rc->n - 1]};
                out->v[out->n++] = (tp_own_cost){.rank = rc->rank, .agent_id = threads[k].agent_id};
            }
    }
    free(threads);
    if (!out->n)
        return true;
    if (!tp_run_stack_tree(run, &p->tree, err, cap))
        return false;
    p->tree_loaded = true;
    p->work = tp_xmalloc(p->tree.n + 1);
    tp_stack_own_work(&p->tree, p->work);
    p->c = (count_ctx){out, p->f, p->work, p->tree.n};
    *reader = (tp_stack_reader){0, count, &p->c};
    return true;
}

/* The counts the summary stored (tp_own_costs_counts), where it stored them. */
static bool count_stored(tp_run *run, tp_own_costs *out, bool *stored, char *err, size_t cap)
{
    tp_own_samples *v = NULL;
    size_t n = 0;
    *stored = tp_summary_stored(run) && tp_run_has_table(run, "summary_own");
    if (!*stored)
        return true;
    if (!tp_stored_own_samples(run, &v, &n, err, cap))
        return false;
    out->v = n ? tp_xcalloc(n, sizeof *out->v) : NULL;
    for (size_t i = 0; i < n; i++) {
        tp_own_cost *o = &out->v[out->n++];
        *o = (tp_own_cost){.rank = v[i].rank, .agent_id = v[i].agent_id, .samples = v[i].samples};
        for (int w = 0; w < TP_WORK_KINDS; w++)
            o->own[w] = v[i].own[w];
    }
    free(v);
    return true;
}

tp_own_pass *tp_own_costs_begin(tp_run *run, const tp_course *course, tp_own_costs *out,
                                tp_stack_reader *reader, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    *reader = (tp_stack_reader){0};
    out->backoff = read_backoff(run);
    tp_own_pass *p = tp_xcalloc(1, sizeof *p);
    bool stored;
    if (count_stored(run, out, &stored, err, cap) &&
        (stored || count_rows_begin(run, course, out, p, reader, err, cap)))
        return p;
    pass_free(p);
    *reader = (tp_stack_reader){0};
    return NULL;
}

void tp_own_costs_end(tp_own_pass *p, const tp_timings *t, tp_own_costs *out)
{
    pass_free(p);
    for (size_t k = 0; k < out->n; k++) {
        tp_own_cost *o = &out->v[k];
        double ours = 0, most = 0;
        for (int w = TP_WORK_WRAPPERS; w < TP_WORK_KINDS; w++) {
            ours += o->own[w];
            if (o->own[w] > most)
                most = o->own[w], o->most = (tp_work_kind)w;
        }
        o->ours = ours;
        user_regions(t, o->rank, &o->user_regions, &o->regions_share);
        double regions = isfinite(o->regions_share) ? o->regions_share : 0;
        o->share = o->samples > 0 ? ours / o->samples + regions : NAN;
        tp_share_interval(ours, o->samples, TP_Z95, &o->share_low, &o->share_high);
        o->share_low += regions, o->share_high += regions;
        o->over_budget = o->samples > 0 && o->share_low > TP_OWN_BUDGET;
        o->regions_most = o->samples > 0 && regions > most / o->samples;
    }
}

bool tp_own_costs_build(tp_run *run, const tp_course *course, const tp_timings *t,
                        tp_own_costs *out, char *err, size_t cap)
{
    tp_stack_reader reader;
    tp_own_pass *p = tp_own_costs_begin(run, course, out, &reader, err, cap);
    bool ok = p && tp_run_each_stack_run_to(run, &reader, 1, err, cap);
    tp_own_costs_end(p, t, out);
    return ok;
}

tp_own_samples *tp_own_costs_counts(const tp_own_costs *c)
{
    tp_own_samples *v = tp_xcalloc(c->n ? c->n : 1, sizeof *v);
    for (size_t i = 0; i < c->n; i++) {
        v[i] = (tp_own_samples){c->v[i].rank, c->v[i].agent_id, c->v[i].samples, {0}};
        for (int w = 0; w < TP_WORK_KINDS; w++)
            v[i].own[w] = c->v[i].own[w];
    }
    return v;
}

void tp_own_costs_free(tp_own_costs *c)
{
    free(c->v);
    memset(c, 0, sizeof *c);
}
