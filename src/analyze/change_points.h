/* change_points.h: where a rank's step durations changed lastingly, as
 * numbers only (analyze/regimes.h builds the regimes of a run on them, and
 * top's live pace, analyze/pace_now.h, its own).
 *
 * Binary segmentation of the log durations, median-filtered over 5 steps
 * (one slow step is no change); a split holds when its gain beats 20 times
 * the noise's variance (the median absolute difference of neighbouring
 * steps) times log n, both sides hold TP_REGIME_MIN_STEPS groups and 4 % of
 * them, and their levels (trimmed means of the log durations) differ by
 * TP_REGIME_MIN_CHANGE or more. A short episode between two alike regimes
 * is a blip, a short slower first regime the warm-up; of the changes left,
 * those kept are the subset whose regimes all last TP_REGIME_MIN_SECONDS
 * (where their times are known) and still differ, at the least squared
 * error plus penalty. */
#ifndef TP_ANALYZE_CHANGE_POINTS_H
#define TP_ANALYZE_CHANGE_POINTS_H

#include <stddef.h>

#define TP_REGIMES_MAX        6
#define TP_REGIME_MIN_STEPS   10
#define TP_REGIME_MIN_CHANGE  0.15 /* of the median step */
#define TP_REGIME_MIN_SECONDS 2.0  /* a regime's span, where the steps' times are known */

/* The change points of durations[0..n) (seconds): fills starts[] with the
 * first index of every regime after the first, ascending, and returns how
 * many (at most TP_REGIMES_MAX - 1). The benchmark and the unit test call
 * it on their own series. */
size_t tp_change_points(const double *durations, size_t n, size_t *starts);

/* The regimes of n groups of steps: d[] their mean step (seconds, stalled
 * groups left out), t0[] and t1[] their first step's begin and last step's
 * end (seconds, NaN unknown). The change points of d less a short slower
 * first regime (the warm-up), then the subset of them whose regimes all
 * last TP_REGIME_MIN_SECONDS and differ by TP_REGIME_MIN_CHANGE, at the
 * least cost (a short episode gives up its own bounds, not the change
 * around it): the first group of every regime after the first into
 * starts[], ascending; how many. The run's regimes and top's live pace both
 * use it. */
size_t tp_regime_starts(const double *d, const double *t0, const double *t1, size_t n,
                        size_t *starts);

/* A regime's typical step from its groups' durations d[0..n): the geometric
 * mean without the lowest and highest 10 % (NaN for n = 0). */
double tp_regime_typical(const double *d, size_t n);

/* The median of v[0..n), n > 0, sorting a copy in tmp (n values). */
double tp_median_of(const double *v, size_t n, double *tmp);

/* The mean of v[0..n), n > 0, without its lowest and highest 10 % (sorting
 * a copy in tmp, n values): the level of a regime whose steps alternate
 * between two speeds, which the median would pick one of. */
double tp_trimmed_mean(const double *v, size_t n, double *tmp);

#endif
