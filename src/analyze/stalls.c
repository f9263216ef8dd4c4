/* stalls.c: ranks that stopped making progress (stalls.h). */
#include "analyze/stalls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_own.h"
#include "core/phases.h"
#include "store/summary_tables.h"
#include "util/ns_math.h"
#include "util/grow.h"
#include "util/oom.h"
#include "core/run_keys.h"

static double median_step(const tp_timings *t, int rank)
{
    const tp_step_row *st = tp_timings_steps_of(t, rank);
    return st && st->stats.count > 0 ? st->stats.p50 : NAN;
}

/* A thread's samples by innermost node, while it is gathered. */
typedef struct node_weight {
    uint32_t node;
    double weight;
} node_weight;

typedef struct gather_thread {
    tp_stall_thread t;
    node_weight *nodes;
    size_t nnodes, cap;
    double phase_weight; /* the weight of the run whose region t.phase is */
} gather_thread;

typedef struct gather_ctx {
    tp_stalls *stalls;
    gather_thread **threads; /* per stall */
    size_t *caps;
} gather_ctx;

static void add_node(gather_thread *g, uint32_t node, double w)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].node == node) {
            g->nodes[i].weight += w;
            return;
        }
    g->nodes = tp_grow(g->nodes, g->nnodes, &g->cap, sizeof *g->nodes);
    g->nodes[g->nnodes++] = (node_weight){node, w};
}

/* Adds run r's part inside stall k (weight w) to the stall's thread. */
static void gather_into(gather_ctx *c, size_t k, const tp_stack_thread_run *r, double w)
{
    tp_stall *st = &c->stalls->v[k];
    size_t i = 0;
    while (i < st->nthreads &&
           !(c->threads[k][i].t.pid == r->pid && c->threads[k][i].t.tid == r->tid))
        i++;
    if (i == st->nthreads) {
        c->threads[k] = tp_grow(c->threads[k], st->nthreads, &c->caps[k], sizeof **c->threads);
        c->threads[k][st->nthreads++] = (gather_thread){.t = {.pid = r->pid, .tid = r->tid}};
    }
    gather_thread *g = &c->threads[k][i];
    g->t.worker = g->t.worker || r->worker;
    /* the region of its heaviest run inside the stall (a later one on a tie):
     * where it spent the stall, not the work that followed it before the
     * step closed, which a sampler that looks again within 0.1 s now sees */
    if (w >= g->phase_weight) {
        free(g->t.phase);
        g->t.phase = r->phase ? tp_xstrdup(r->phase) : NULL;
        g->phase_weight = w;
    }
    g->t.samples += w;
    if (tp_stack_state_known(r->state)) {
        g->t.known += w;
        if (tp_stack_state_on_cpu(r->state))
            g->t.on_cpu += w;
        if (tp_stack_state_blocked(r->state))
            g->t.blocked += w;
    }
    add_node(g, r->node, w);
}

/* A run of samples counts, for its part inside each, toward every stall of
 * its rank it overlaps: a thread asleep through an ended stall and past its
 * end into a stall the run's last seconds seemed to begin (the process slow
 * to exit, beside other work, its loop over) counts in both, and the first
 * is kept whatever becomes of the second. */
static void gather(void *ctx, const tp_stack_thread_run *r)
{
    gather_ctx *c = ctx;
    for (size_t k = 0; k < c->stalls->n; k++) {
        if (c->stalls->v[k].rank != r->rank)
            continue;
        int64_t start = tp_ns_round_s(c->stalls->v[k].start_s);
        int64_t stop = tp_ns_round_s(c->stalls->v[k].end_s), end = tp_ns_add(r->t_ns, r->span_ns);
        if (end < start || r->t_ns > stop)
            continue;
        int64_t a = r->t_ns > start ? r->t_ns : start, b = end < stop ? end : stop;
        gather_into(c, k, r,
                    r->span_ns <= 0 ? (double)r->count
                                    : (double)r->count * (double)(b - a) / (double)r->span_ns);
    }
}

static int by_samples(const void *x, const void *y)
{
    const tp_stall_thread *a = x, *b = y;
    return (a->samples < b->samples) - (a->samples > b->samples);
}

/* Each stall's threads from what was gathered: its busiest node, most
 * samples first; and the rank's phase: its busiest thread's that had one
 * (workers aside). */
static void finish_threads(tp_stall *st, gather_thread *g)
{
    st->threads = tp_xcalloc(st->nthreads ? st->nthreads : 1, sizeof *st->threads);
    for (size_t i = 0; i < st->nthreads; i++) {
        double best = -1;
        for (size_t k = 0; k < g[i].nnodes; k++)
            if (g[i].nodes[k].weight > best) {
                best = g[i].nodes[k].weight;
                g[i].t.node = g[i].nodes[k].node;
            }
        free(g[i].nodes);
        st->threads[i] = g[i].t;
    }
    qsort(st->threads, st->nthreads, sizeof *st->threads, by_samples);
    for (size_t i = 0; i < st->nthreads && !st->phase; i++)
        if (!st->threads[i].worker && st->threads[i].phase)
            st->phase = st->threads[i].phase;
}

/* Whether a rank stopped where it waits for the others: in communication,
 * or in backward (DDP's gradient all-reduce). */
static bool waits_for_others(const char *phase)
{
    return phase &&
           (tp_phase_kind_of(phase) == TP_PHASE_KIND_COMM || strcmp(phase, TP_PHASE_BACKWARD) == 0);
}

/* Names the rank(s) the others wait for (stalls.h). */
static void name_first(tp_stalls *s)
{
    size_t waiting = 0, ongoing = 0;
    for (size_t i = 0; i < s->n; i++)
        ongoing += !s->v[i].ended;
    for (size_t i = 0; i < s->n; i++) {
        s->v[i].waits = !s->v[i].ended && ongoing > 1 && waits_for_others(s->v[i].phase);
        waiting += s->v[i].waits;
    }
    if (waiting > 0 && waiting < ongoing) {
        for (size_t i = 0; i < s->n; i++)
            s->v[i].first = !s->v[i].ended && !s->v[i].waits;
        return;
    }
    long first = -1;
    for (size_t i = 0; i < s->n; i++)
        if (!s->v[i].ended && (first < 0 || s->v[i].start_s < s->v[first].start_s))
            first = (long)i;
    if (first >= 0)
        s->v[first].first = true;
}

/* Ongoing stalls first, then those that ended, each in rank order. */
static int cmp_stall(const void *x, const void *y)
{
    const tp_stall *a = x, *b = y;
    if (a->ended != b->ended)
        return a->ended ? 1 : -1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->start_s > b->start_s) - (a->start_s < b->start_s);
}

static void drop_stall(tp_stalls *s, size_t i)
{
    for (size_t k = 0; k < s->v[i].nthreads; k++)
        free(s->v[i].threads[k].phase);
    free(s->v[i].threads);
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
}

/* Of the ranks that stopped moving, those that stalled: a step thread
 * inside a region (a loop that ended leaves its last step open too, with
 * nothing inside), inside a pause (a checkpoint, an evaluation) only past
 * TP_STALL_FIRST_STEP_S unless the run set its own threshold; and, where one
 * did, those that stopped with a step open outside any region: what the
 * others may wait for. A rank whose last step had closed (between) stalled
 * only inside a region. */
static void keep_stalled(tp_stalls *s, double stall_after)
{
    bool any = false;
    for (size_t i = 0; i < s->n;) {
        const tp_stall *r = &s->v[i];
        if (r->ended) {
            i++;
            continue;
        }
        bool pause = r->phase && tp_phase_kind_of(r->phase) == TP_PHASE_KIND_PAUSE;
        if ((pause && !(stall_after > 0) && r->seconds <= TP_STALL_FIRST_STEP_S) ||
            (r->between && !r->phase)) { /* between steps, in no region: the loop may be over */
            drop_stall(s, i);
            continue;
        }
        any = any || r->phase;
        i++;
    }
    for (size_t i = s->n; !any && i-- > 0;)
        if (!s->v[i].ended)
            drop_stall(s, i);
}

/* The ranks that made no progress (no region closed, no step mark) for
 * longer than their threshold until the recording ended, into out: with a
 * step open, or (between) after their last step closed; keep_stalled keeps
 * the latter only where a region of the step thread stayed open. */
static void ongoing_candidates(const tp_course *course, const tp_timings *t, tp_run *run,
                               double run_s, double stall_after, tp_stalls *out, size_t *vcap)
{
    int64_t end_ns = tp_ns_round_s(run_s);
    for (size_t i = 0; i < course->n; i++) {
        const tp_rank_course *rc = &course->v[i];
        double threshold = tp_stall_threshold(stall_after, rc->n ? median_step(t, rc->rank) : NAN);
        if (rc->last_ns < 0 || (double)tp_ns_sub(end_ns, rc->last_ns) / 1e9 <= threshold)
            continue;
        int64_t last = tp_run_rank_last_region_end(run, rc->rank, rc->last_ns);
        int64_t progress = last > rc->last_ns ? last : rc->last_ns;
        double seconds = (double)tp_ns_sub(end_ns, progress) / 1e9;
        if (seconds <= threshold)
            continue;
        out->v = tp_grow(out->v, out->n, vcap, sizeof *out->v);
        out->v[out->n++] = (tp_stall){.rank = rc->rank,
                                      .end_s = run_s,
                                      .start_s = (double)progress / 1e9,
                                      .seconds = seconds,
                                      .threshold_s = threshold,
                                      .step = rc->begun,
                                      .between = !rc->open,
                                      .gpu = -1,
                                      .gpu_util_percent = NAN,
                                      .blocked = NAN};
    }
}

/* Each thread's caller outside the standard library (tp_stall_thread.outer). */
static void tell_outer(tp_stalls *out)
{
    for (size_t i = 0; i < out->n; i++)
        for (size_t k = 0; k < out->v[i].nthreads; k++) {
            tp_stall_thread *th = &out->v[i].threads[k];
            th->outer = tp_stack_outside_stdlib(&out->tree, th->node);
        }
}

bool tp_stalls_build(tp_run *run, const tp_course *course, const tp_timings *t, double run_s,
                     tp_stalls *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    /* the recorder's, where it stored them (a merged summary holds no marks) */
    if (tp_stored_stalls(run, &out->v, &out->n, err, cap)) {
        if (out->n) /* a merge's come node by node */
            qsort(out->v, out->n, sizeof *out->v, cmp_stall);
        name_first(out);
        if (out->n && !tp_stack_tree_load(run, &out->tree, err, cap))
            return false;
        tell_outer(out);
        return true;
    }
    if (err[0])
        return false;
    double stall_after = run->settings.stall_after_s;
    size_t vcap = 0;
    ongoing_candidates(course, t, run, run_s, stall_after, out, &vcap);
    size_t ended = 0;
    for (size_t i = 0; i < course->n; i++) {
        const tp_rank_course *rc = &course->v[i];
        double threshold = tp_stall_threshold(stall_after, rc->n ? median_step(t, rc->rank) : NAN);
        for (size_t k = 0; k < rc->n; k++) {
            double seconds = (double)tp_ns_sub(rc->b[k], rc->a[k]) / 1e9;
            if (seconds <= threshold)
                continue;
            if (ended++ >= TP_STALLS_ENDED_MAX) {
                out->ended_untold++;
                continue;
            }
            out->v = tp_grow(out->v, out->n, &vcap, sizeof *out->v);
            out->v[out->n++] = (tp_stall){.rank = rc->rank,
                                          .ended = true,
                                          .start_s = (double)rc->a[k] / 1e9,
                                          .end_s = (double)rc->b[k] / 1e9,
                                          .seconds = seconds,
                                          .threshold_s = threshold,
                                          .step = k + 1,
                                          .gpu = -1,
                                          .gpu_util_percent = NAN,
                                          .blocked = NAN};
        }
    }
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_stall);
    if (!out->n || !tp_run_has_stacks(run)) {
        /* where nothing says a region was open, the loop may have ended */
        for (size_t i = out->n; i-- > 0;)
            if (!out->v[i].ended)
                drop_stall(out, i);
        return true;
    }
    if (!tp_stack_tree_load(run, &out->tree, err, cap))
        return false;
    double since = out->v[0].start_s;
    for (size_t i = 1; i < out->n; i++)
        since = out->v[i].start_s < since ? out->v[i].start_s : since;
    gather_ctx g = {out, tp_xcalloc(out->n, sizeof *g.threads), tp_xcalloc(out->n, sizeof *g.caps)};
    bool ok = tp_run_each_stack_run_since(run, tp_ns_round_s(since), gather, &g, err, cap);
    for (size_t i = 0; i < out->n; i++) {
        finish_threads(&out->v[i], g.threads[i]);
        free(g.threads[i]);
    }
    free(g.threads);
    free(g.caps);
    keep_stalled(out, stall_after);
    name_first(out);
    tell_outer(out);
    return ok;
}

void tp_stalls_free(tp_stalls *s)
{
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->v[i].nthreads; k++)
            free(s->v[i].threads[k].phase);
        free(s->v[i].threads);
    }
    free(s->v);
    tp_stack_tree_free(&s->tree);
    memset(s, 0, sizeof *s);
}
