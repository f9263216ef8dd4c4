/* pace_now.c: a running training's regimes (pace_now.h). */
#include "analyze/pace_now.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/pace_drift.h"
#include "analyze/regimes.h"
#include "core/stall_rule.h"

void tp_pace_now_init(tp_pace_now *p, double stall_after_s)
{
    memset(p, 0, sizeof *p);
    p->stall_after_s = stall_after_s;
    p->per = 1;
    p->stall_s = tp_stall_threshold(stall_after_s, NAN);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median of the groups' means: what the stall threshold is taken on. */
static double median_step(const tp_pace_now *p)
{
    double v[TP_PACE_GROUPS];
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->count[i])
            v[n++] = p->sum[i] / (double)p->count[i];
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Halves the groups: each pair becomes one. */
static void merge_pairs(tp_pace_now *p)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i += 2, k++) {
        p->sum[k] = p->sum[i];
        p->count[k] = p->count[i];
        p->t0[k] = p->t0[i];
        p->t1[k] = p->t1[i];
        p->first_step[k] = p->first_step[i];
        if (i + 1 < p->n) {
            p->sum[k] += p->sum[i + 1];
            p->count[k] += p->count[i + 1];
            p->t1[k] = p->t1[i + 1];
        }
    }
    p->n = k;
    p->per *= 2;
}

void tp_pace_now_step(tp_pace_now *p, int64_t t_ns)
{
    if (t_ns <= p->last_ns && p->begun)
        return;
    int64_t prev = p->last_ns;
    p->last_ns = t_ns;
    size_t step = p->begun++; /* the step that just ended: prev to t_ns */
    if (step == 0 || step <= TP_PACE_WARMUP_STEPS)
        return;
    double d = (double)(t_ns - prev) / 1e9;
    if (d > p->stall_s)
        return; /* a stall that ended: left out, as the report leaves it */
    size_t last = p->n ? p->n - 1 : 0;
    /* a group takes per steps, counting those left out */
    if (!p->n || step - p->first_step[last] >= p->per) {
        if (p->n == TP_PACE_GROUPS)
            merge_pairs(p);
        if (p->n)
            p->stall_s = tp_stall_threshold(p->stall_after_s, median_step(p));
        p->first_step[p->n] = step;
        p->t0[p->n] = (double)prev / 1e9;
        p->sum[p->n] = 0;
        p->count[p->n] = 0;
        last = p->n++;
    }
    p->sum[last] += d;
    p->count[last]++;
    p->t1[last] = (double)t_ns / 1e9;
}

/* The groups that hold steps: their mean step, span and index in p. */
typedef struct groups {
    double d[TP_PACE_GROUPS], t0[TP_PACE_GROUPS], t1[TP_PACE_GROUPS];
    size_t at[TP_PACE_GROUPS], n;
} groups;

static void groups_of(const tp_pace_now *p, groups *g)
{
    g->n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->count[i]) {
            g->d[g->n] = p->sum[i] / (double)p->count[i];
            g->t0[g->n] = p->t0[i];
            g->t1[g->n] = p->t1[i];
            g->at[g->n++] = i;
        }
}

/* Groups lo to hi (of g) as a regime, typical_s given. */
static tp_pace_regime span_of(const tp_pace_now *p, const groups *g, size_t lo, size_t hi,
                              double typical_s)
{
    /* its last step: the one before the next group's first */
    return (tp_pace_regime){.first_step = p->first_step[g->at[lo]],
                            .last_step =
                                hi + 1 < g->n ? p->first_step[g->at[hi + 1]] - 1 : p->begun - 1,
                            .t0_s = g->t0[lo],
                            .typical_s = typical_s};
}

bool tp_pace_now_drift(const tp_pace_now *p, tp_pace_regime *first, tp_pace_regime *last)
{
    groups store, *g = &store; /* 16 KiB: top's own thread */
    groups_of(p, g);
    size_t starts[TP_REGIMES_MAX];
    size_t changes = g->n ? tp_regime_starts(g->d, g->t0, g->t1, g->n, starts) : 0;
    tp_pace_drift drift =
        g->n ? tp_pace_drift_of(g->d, g->t0, g->t1, g->n, starts, changes) : (tp_pace_drift){0};
    if (drift.found) {
        *first = span_of(p, g, drift.first_lo, drift.first_hi, drift.first_s);
        *last = span_of(p, g, drift.last_lo, drift.last_hi, drift.last_s);
    }
    return drift.found;
}

size_t tp_pace_now_regimes(const tp_pace_now *p, tp_pace_regime *first, tp_pace_regime *now)
{
    groups store, *g = &store; /* 16 KiB: top's own thread */
    groups_of(p, g);
    size_t n = g->n, starts[TP_REGIMES_MAX], changes = 0;
    if (n) {
        changes = tp_regime_starts(g->d, g->t0, g->t1, n, starts);
        size_t a = changes ? starts[0] : n, b = changes ? starts[changes - 1] : 0;
        *first = span_of(p, g, 0, a - 1, tp_regime_typical(g->d, a));
        *now = span_of(p, g, b, n - 1, tp_regime_typical(g->d + b, n - b));
    }
    return n ? changes + 1 : 0;
}
