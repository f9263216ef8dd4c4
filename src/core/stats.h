/* stats.h: descriptive statistics of one series. */
#ifndef TP_CORE_STATS_H
#define TP_CORE_STATS_H

#include <stddef.h>

typedef struct tp_stats {
    size_t count;
    double mean, min, p5, p50, p95, max;
} tp_stats;

/* Computes count, mean, min, max and the 5th, 50th and 95th percentiles
 * (linear interpolation between closest ranks, as numpy's default). Reorders
 * values in place. n == 0 gives count 0 and NaN elsewhere. */
void tp_stats_compute(double *values, size_t n, tp_stats *out);

/* The q-quantile (0..1) of sorted values. */
double tp_quantile_sorted(const double *sorted, size_t n, double q);

#endif
