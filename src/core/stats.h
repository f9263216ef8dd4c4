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

/* Where a share measured by sampling lies: the Wilson score interval of k
 * hits in n samples (real counts: a sample split between spans counts in
 * parts) at z standard errors (TP_Z95 for 95 %), into lo and hi, within
 * [0, 1]; [0, 1] where n is not positive, k clamped to [0, n]. Unlike
 * k/n +- z se, it is not empty at k = 0 and stays inside [0, 1] near the
 * ends, where a profiler's shares of a few samples lie. */
#define TP_Z95 1.959963984540054
void tp_share_interval(double k, double n, double z, double *lo, double *hi);

#endif
