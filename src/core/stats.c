/* stats.c: mean and percentiles.
 *
 * Percentiles use selection (quickselect), not a full sort: a 24-hour series
 * at 0.5 s has 172,800 values and the report needs only three order
 * statistics (and their right neighbours) of each. */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tp_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

void tp_share_interval(double k, double n, double z, double *lo, double *hi)
{
    if (!(n > 0)) {
        *lo = 0, *hi = 1;
        return;
    }
    double p = fmin(fmax(k, 0), n) / n, z2 = z * z / n;
    double centre = (p + z2 / 2) / (1 + z2);
    double half = z * sqrt(p * (1 - p) / n + z2 / (4 * n)) / (1 + z2);
    *lo = p > 0 ? fmax(centre - half, 0) : 0; /* exactly, not a rounding's 1e-17 */
    *hi = p < 1 ? fmin(centre + half, 1) : 1;
}

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Rearranges v[lo..hi] so that v[k] is the value a sort would put there,
 * with nothing larger before it and nothing smaller after it. Quickselect
 * with a median-of-three pivot, as an introselect: an input shaped against
 * the pivot choice (10^6 nested regions of a crafted file took 21 s) gets
 * 2 log2(n) + 8 partitions, then the rest is sorted, so the cost stays
 * O(n log n) whatever the values. */
static void select_kth(double *v, size_t lo, size_t hi, size_t k)
{
    int budget = 8;
    for (size_t n = hi - lo + 1; n > 1; n >>= 1)
        budget += 2;
    while (hi - lo > 16 && budget-- > 0) {
        size_t mid = lo + (hi - lo) / 2;
        /* median of three as the pivot, moved to v[lo] */
        if (v[mid] < v[lo])
            swap(&v[mid], &v[lo]);
        if (v[hi] < v[lo])
            swap(&v[hi], &v[lo]);
        if (v[hi] < v[mid])
            swap(&v[hi], &v[mid]);
        swap(&v[lo], &v[mid]);
        double pivot = v[lo];
        size_t i = lo, j = hi + 1;
        for (;;) {
            do
                i++;
            while (i <= hi && v[i] < pivot);
            do
                j--;
            while (v[j] > pivot);
            if (i >= j)
                break;
            swap(&v[i], &v[j]);
        }
        swap(&v[lo], &v[j]);
        if (j == k)
            return;
        if (k < j)
            hi = j - 1;
        else
            lo = j + 1;
    }
    qsort(v + lo, hi - lo + 1, sizeof *v, cmp_double);
}

/* The q-quantile of v[0..n) by selection; v[from..n) must hold every value
 * not smaller than the previous quantile's (the partition is kept). */
static double select_quantile(double *v, size_t n, double q, size_t *from)
{
    double pos = q * (double)(n - 1);
    size_t k = (size_t)pos;
    select_kth(v, *from, n - 1, k);
    *from = k;
    if (k + 1 >= n)
        return v[k];
    double next = v[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (v[i] < next)
            next = v[i];
    return v[k] + (next - v[k]) * (pos - (double)k);
}

void tp_stats_compute(double *values, size_t n, tp_stats *out)
{
    out->count = n;
    if (n == 0) {
        out->mean = out->min = out->p5 = out->p50 = out->p95 = out->max = NAN;
        return;
    }
    double sum = 0, lo = values[0], hi = values[0];
    for (size_t i = 0; i < n; i++) {
        sum += values[i];
        if (values[i] < lo)
            lo = values[i];
        if (values[i] > hi)
            hi = values[i];
    }
    out->mean = sum / (double)n;
    out->min = lo;
    out->max = hi;
    size_t from = 0;
    out->p5 = select_quantile(values, n, 0.05, &from);
    out->p50 = select_quantile(values, n, 0.50, &from);
    out->p95 = select_quantile(values, n, 0.95, &from);
}
