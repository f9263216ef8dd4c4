/* change_points.c: where a series of step durations changed lastingly
 * (change_points.h): binary segmentation of the log durations, and the
 * regimes that last. Pure: no run, no words. */
#include "analyze/change_points.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/oom.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double tp_median_of(const double *v, size_t n, double *tmp)
{
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

double tp_trimmed_mean(const double *v, size_t n, double *tmp)
{
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    size_t cut = n / 10;
    double sum = 0;
    for (size_t i = cut; i < n - cut; i++)
        sum += tmp[i];
    return sum / (double)(n - 2 * cut);
}

/* The best split of [lo, hi) of y by the gain in squared error (prefix sums
 * p): its index in *at (0 when the segment is too short), and the gain. */
static double best_split(const double *p, size_t lo, size_t hi, size_t min_len, size_t *at)
{
    double best = 0;
    *at = 0;
    if (hi - lo < 2 * min_len)
        return 0;
    double total = p[hi] - p[lo], n = (double)(hi - lo);
    for (size_t k = lo + min_len; k + min_len <= hi; k++) {
        double n1 = (double)(k - lo), m1 = (p[k] - p[lo]) / n1,
               m2 = (total - (p[k] - p[lo])) / (n - n1);
        double gain = n1 * (n - n1) / n * (m1 - m2) * (m1 - m2);
        if (gain > best) {
            best = gain;
            *at = k;
        }
    }
    return best;
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

/* A series of steps as the change points see it: x[] the log durations,
 * y[] their median over 5 steps (one slow step is no change), p[] the
 * prefix sums of y, and the penalty a split's gain must beat (20 times the
 * noise's variance, from the median absolute difference of neighbouring
 * steps, times log n). */
typedef struct log_series {
    double *x, *y, *p, *tmp;
    size_t n;
    double penalty;
} log_series;

static void log_series_init(log_series *ls, const double *durations, size_t n)
{
    ls->n = n;
    ls->x = tp_xmalloc((n ? n : 1) * sizeof *ls->x);
    ls->y = tp_xmalloc((n ? n : 1) * sizeof *ls->y);
    ls->p = tp_xmalloc((n + 1) * sizeof *ls->p);
    ls->tmp = tp_xmalloc((n ? n : 1) * sizeof *ls->tmp);
    for (size_t i = 0; i < n; i++)
        ls->x[i] = log(durations[i] > 1e-9 ? durations[i] : 1e-9);
    for (size_t i = 0; i < n; i++) {
        size_t a = i >= 2 ? i - 2 : 0, b = i + 3 <= n ? i + 3 : n;
        ls->y[i] = tp_median_of(ls->x + a, b - a, ls->tmp);
    }
    for (size_t i = 1; i < n; i++)
        ls->tmp[i - 1] = fabs(ls->x[i] - ls->x[i - 1]);
    double sigma = n > 1 ? 1.4826 * tp_median_of(ls->tmp, n - 1, ls->p) / sqrt(2) : 0;
    sigma = sigma > 0.01 ? sigma : 0.01;
    ls->penalty = 20 * sigma * sigma * log((double)(n > 1 ? n : 2));
    ls->p[0] = 0;
    for (size_t i = 0; i < n; i++)
        ls->p[i + 1] = ls->p[i] + ls->y[i];
}

static void log_series_free(log_series *ls)
{
    free(ls->x);
    free(ls->y);
    free(ls->p);
    free(ls->tmp);
}

/* Whether [lo, at) and [at, hi) are two regimes: the split's gain beats the
 * noise's penalty and their levels (trimmed means of the log durations: the
 * typical steps the words give) differ by TP_REGIME_MIN_CHANGE or more. */
static bool split_holds(log_series *ls, size_t lo, size_t at, size_t hi)
{
    if (at <= lo || at >= hi)
        return false;
    double n = (double)(hi - lo), n1 = (double)(at - lo);
    double m1 = (ls->p[at] - ls->p[lo]) / n1, m2 = (ls->p[hi] - ls->p[at]) / (n - n1);
    double gain = n1 * (n - n1) / n * (m1 - m2) * (m1 - m2);
    double left = tp_trimmed_mean(ls->x + lo, at - lo, ls->tmp);
    double right = tp_trimmed_mean(ls->x + at, hi - at, ls->tmp);
    return gain > ls->penalty && fabs(left - right) >= log(1 + TP_REGIME_MIN_CHANGE);
}

/* Drops from starts[0..*n) (regime starts in [0, ls->n)) every start whose
 * regimes, as they now stand, are no two regimes (split_holds), the least
 * telling first, until every one holds. */
static void keep_holding(log_series *ls, size_t *starts, size_t *n)
{
    for (;;) {
        size_t weakest = *n;
        double least = INFINITY;
        for (size_t r = 0; r < *n; r++) {
            size_t lo = r ? starts[r - 1] : 0, hi = r + 1 < *n ? starts[r + 1] : ls->n;
            if (split_holds(ls, lo, starts[r], hi))
                continue;
            double moved = fabs(tp_trimmed_mean(ls->x + lo, starts[r] - lo, ls->tmp) -
                                tp_trimmed_mean(ls->x + starts[r], hi - starts[r], ls->tmp));
            if (moved < least)
                least = moved, weakest = r;
        }
        if (weakest == *n)
            return;
        memmove(&starts[weakest], &starts[weakest + 1], (*n - weakest - 1) * sizeof *starts);
        (*n)--;
    }
}

static size_t change_points(log_series *ls, size_t *starts)
{
    size_t n = ls->n;
    if (n < 2 * TP_REGIME_MIN_STEPS)
        return 0;
    double *x = ls->x, *p = ls->p, *tmp = ls->tmp, penalty = ls->penalty;
    /* a regime lasts: at least TP_REGIME_MIN_STEPS steps and 4 % of them */
    size_t min_len = n / 25 > TP_REGIME_MIN_STEPS ? n / 25 : TP_REGIME_MIN_STEPS;
    size_t bounds[TP_REGIMES_MAX + 1] = {0, n}, nb = 2, found = 0;
    while (nb < TP_REGIMES_MAX + 1) {
        double best = 0;
        size_t best_at = 0;
        for (size_t s = 0; s + 1 < nb; s++) {
            size_t at;
            double gain = best_split(p, bounds[s], bounds[s + 1], min_len, &at);
            if (!at || gain <= penalty || gain <= best)
                continue;
            double left = tp_trimmed_mean(x + bounds[s], at - bounds[s], tmp);
            double right = tp_trimmed_mean(x + at, bounds[s + 1] - at, tmp);
            if (fabs(left - right) < log(1 + TP_REGIME_MIN_CHANGE))
                continue;
            best = gain;
            best_at = at;
        }
        if (!best_at)
            break;
        bounds[nb++] = best_at;
        qsort(bounds, nb, sizeof *bounds, cmp_size);
        starts[found++] = best_at;
    }
    /* neighbours that a later split left alike are one regime again */
    for (size_t i = 0; i + 1 < nb - 1 && nb > 2;) {
        double left = tp_trimmed_mean(x + bounds[i], bounds[i + 1] - bounds[i], tmp);
        double right = tp_trimmed_mean(x + bounds[i + 1], bounds[i + 2] - bounds[i + 1], tmp);
        if (fabs(left - right) < log(1 + TP_REGIME_MIN_CHANGE)) {
            memmove(&bounds[i + 1], &bounds[i + 2], (nb - i - 2) * sizeof *bounds);
            nb--;
        } else {
            i++;
        }
    }
    /* a short episode between two alike regimes (under a tenth of the
     * steps) is a blip the pace came back from, not a lasting change */
    for (size_t i = 1; i + 2 < nb;) {
        double before = tp_trimmed_mean(x + bounds[i - 1], bounds[i] - bounds[i - 1], tmp);
        double after = tp_trimmed_mean(x + bounds[i + 1], bounds[i + 2] - bounds[i + 1], tmp);
        if (bounds[i + 1] - bounds[i] < n / 10 &&
            fabs(before - after) < log(1 + TP_REGIME_MIN_CHANGE)) {
            memmove(&bounds[i], &bounds[i + 2], (nb - i - 2) * sizeof *bounds);
            nb -= 2;
            i = 1;
        } else {
            i++;
        }
    }
    found = nb - 2;
    memcpy(starts, bounds + 1, found * sizeof *starts);
    return found;
}

/* Whether groups [lo, hi) span TP_REGIME_MIN_SECONDS or more, or their
 * times are unknown (NaN at either end). */
static bool lasts(const double *t0, const double *t1, size_t lo, size_t hi)
{
    return !(t1[hi - 1] - t0[lo] < TP_REGIME_MIN_SECONDS);
}

/* The cost of the regimes that the starts chosen by mask (bit r: starts[r])
 * make of ls: their squared error about their own levels (the filtered log
 * durations, prefix sums p and q of y and y squared) plus the penalty for
 * each change; INFINITY where one of them doesn't last (t0, t1) or two
 * neighbours' levels (split_holds') differ by less than
 * TP_REGIME_MIN_CHANGE. */
static double subset_cost(log_series *ls, const double *q, const double *t0, const double *t1,
                          const size_t *starts, size_t n, unsigned mask)
{
    double cost = 0, level = NAN;
    for (size_t r = 0, lo = 0; r <= n; r++) {
        if (r < n && !(mask >> r & 1u))
            continue;
        size_t hi = r < n ? starts[r] : ls->n;
        double sum = ls->p[hi] - ls->p[lo], own = tp_trimmed_mean(ls->x + lo, hi - lo, ls->tmp);
        if (!lasts(t0, t1, lo, hi) || fabs(own - level) < log(1 + TP_REGIME_MIN_CHANGE))
            return INFINITY;
        cost += (q[hi] - q[lo]) - sum * sum / (double)(hi - lo) + (lo ? ls->penalty : 0);
        level = own;
        lo = hi;
    }
    return cost;
}

/* Keeps, of the change points starts[0..*n), the subset whose regimes all
 * last and differ (subset_cost) at the least cost; none where no subset
 * does. The changes stay where the search placed them, and a short
 * episode gives up its own bounds, not the change around it: a CPU
 * training beside a busy machine went 12, 24, 12 ms a step, then 34, 12
 * and 40 ms under burners, each episode under 2 s; merged one by one into
 * the regime before, they took the doubling at step 151 with them. */
static void keep_lasting(log_series *ls, const double *t0, const double *t1, size_t *starts,
                         size_t *n)
{
    if (!*n)
        return; /* one regime (or none: no groups), whatever it lasts */
    double *q = tp_xmalloc((ls->n + 1) * sizeof *q), best = INFINITY;
    q[0] = 0;
    for (size_t i = 0; i < ls->n; i++)
        q[i + 1] = q[i] + ls->y[i] * ls->y[i];
    unsigned chosen = 0;
    for (unsigned mask = 0; mask < 1u << *n; mask++) {
        double cost = subset_cost(ls, q, t0, t1, starts, *n, mask);
        if (cost < best) {
            best = cost;
            chosen = mask;
        }
    }
    size_t kept = 0;
    for (size_t r = 0; r < *n; r++)
        if (chosen >> r & 1u)
            starts[kept++] = starts[r];
    *n = kept;
    free(q);
}

size_t tp_change_points(const double *durations, size_t n, size_t *starts)
{
    log_series ls;
    log_series_init(&ls, durations, n);
    size_t found = change_points(&ls, starts);
    log_series_free(&ls);
    return found;
}

size_t tp_regime_starts(const double *d, const double *t0, const double *t1, size_t n,
                        size_t *starts)
{
    log_series ls;
    log_series_init(&ls, d, n);
    double *tmp = tp_xmalloc((n ? n : 1) * sizeof *tmp);
    size_t nchanges = change_points(&ls, starts);
    /* a short first regime slower than the next is the training warming up
     * (caches, the allocator, lazy imports), not a change of pace */
    size_t short_start = n / 10 > 20 ? n / 10 : 20;
    if (nchanges && starts[0] <= short_start &&
        tp_trimmed_mean(d, starts[0], tmp) >
            tp_trimmed_mean(d + starts[0], (nchanges > 1 ? starts[1] : n) - starts[0], tmp)) {
        memmove(starts, starts + 1, (nchanges - 1) * sizeof *starts);
        nchanges--;
    }
    /* a regime lasts: a few seconds at least, where the groups' times are
     * known (a hundred steps of a millisecond are no change of pace) */
    keep_lasting(&ls, t0, t1, starts, &nchanges);
    /* what the merges left must still be a change, in the statistic its
     * words use: a start between two regimes the warm-up's or a short
     * regime's removal made alike is none */
    keep_holding(&ls, starts, &nchanges);
    log_series_free(&ls);
    free(tmp);
    return nchanges;
}

double tp_regime_typical(const double *d, size_t n)
{
    if (!n)
        return NAN;
    double *logs = tp_xmalloc(n * sizeof *logs), *tmp = tp_xmalloc(n * sizeof *tmp);
    for (size_t i = 0; i < n; i++)
        logs[i] = log(d[i] > 1e-9 ? d[i] : 1e-9);
    double typical = exp(tp_trimmed_mean(logs, n, tmp));
    free(logs);
    free(tmp);
    return typical;
}
