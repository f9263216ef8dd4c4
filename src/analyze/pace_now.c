/* pace_now.c: a running training's regimes (pace_now.h). */
#include "analyze/pace_now.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/regimes.h"
#include "core/stall_rule.h"
#include "util/oom.h"

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

size_t tp_pace_now_regimes(const tp_pace_now *p, tp_pace_regime *first, tp_pace_regime *now)
{
    double d[TP_PACE_GROUPS], t0[TP_PACE_GROUPS], t1[TP_PACE_GROUPS];
    size_t at[TP_PACE_GROUPS], n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->count[i]) {
            d[n] = p->sum[i] / (double)p->count[i];
            t0[n] = p->t0[i];
            t1[n] = p->t1[i];
            at[n++] = i;
        }
    if (!n)
        return 0;
    size_t starts[TP_REGIMES_MAX];
    size_t changes = tp_regime_starts(d, t0, t1, n, starts);
    size_t a = changes ? starts[0] : n, b = changes ? starts[changes - 1] : 0;
    /* a regime's last step: the one before the next regime's first */
    *first = (tp_pace_regime){.first_step = p->first_step[at[0]],
                              .last_step = a < n ? p->first_step[at[a]] - 1 : p->begun - 1,
                              .t0_s = t0[0],
                              .typical_s = tp_regime_typical(d, a)};
    *now = (tp_pace_regime){.first_step = p->first_step[at[b]],
                            .last_step = p->begun - 1,
                            .t0_s = t0[b],
                            .typical_s = tp_regime_typical(d + b, n - b)};
    return changes + 1;
}
