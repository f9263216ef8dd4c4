/* stats.c: mean and percentiles. */
#include "analyze/stats.h"

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

void tp_stats_compute(double *values, size_t n, tp_stats *out)
{
    out->count = n;
    if (n == 0) {
        out->mean = out->min = out->p5 = out->p50 = out->p95 = out->max = NAN;
        return;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += values[i];
    qsort(values, n, sizeof *values, cmp_double);
    out->mean = sum / (double)n;
    out->min = values[0];
    out->max = values[n - 1];
    out->p5 = tp_quantile_sorted(values, n, 0.05);
    out->p50 = tp_quantile_sorted(values, n, 0.50);
    out->p95 = tp_quantile_sorted(values, n, 0.95);
}
