/* pace_drift.h: whether a rank's step time grew (or shrank) steadily over
 * the run rather than at a few steps, as numbers only (analyze/regimes.h
 * keeps the answer beside the regimes; render/ says it).
 *
 * A training that slows down over time (a metrics history summed every
 * step, a cache or a list walked each step) has no step where its pace
 * changed: change points cut the slope somewhere and a report naming that
 * step sends its reader looking for an event that never was. A drift is
 * told from a change by its groups of steps over the four quarters of
 * their time span: each quarter's level (the regimes' typical step) moves
 * the same way as the one before, by TP_DRIFT_QUARTER_STEP or more, the
 * last TP_DRIFT_MIN_CHANGE or more from the first, and inside each regime
 * the change points found the level moved on the same way, from its
 * earlier half to its later, at TP_DRIFT_WITHIN of the run's slope or more
 * (a change at one step leaves its regimes flat). The steps must span
 * TP_DRIFT_MIN_SECONDS. */
#ifndef TP_ANALYZE_PACE_DRIFT_H
#define TP_ANALYZE_PACE_DRIFT_H

#include <stdbool.h>
#include <stddef.h>

#define TP_DRIFT_MIN_CHANGE   0.3  /* the last quarter's level over the first's, less 1 */
#define TP_DRIFT_QUARTER_STEP 0.02 /* each quarter's over the one before, less 1 */
#define TP_DRIFT_MIN_SECONDS  8.0  /* four quarters of a regime's shortest span */
#define TP_DRIFT_MIN_GROUPS   3    /* groups in each quarter, and each half of a regime */
#define TP_DRIFT_WITHIN       0.25 /* a regime's own slope (level a group) over the run's */

typedef struct tp_pace_drift {
    bool found;
    /* the first and the last quarter: their first and last group (indices
     * into the groups given), their levels (seconds a step) */
    size_t first_lo, first_hi, last_lo, last_hi;
    double first_s, last_s;
} tp_pace_drift;

/* The drift of n groups of steps: d[] their mean step (seconds, stalled
 * groups left out), t0[] and t1[] their first step's begin and last step's
 * end (seconds; none is found where one is unknown), starts[0..nstarts)
 * the first group of each regime after the first (tp_regime_starts). */
tp_pace_drift tp_pace_drift_of(const double *d, const double *t0, const double *t1, size_t n,
                               const size_t *starts, size_t nstarts);

#endif
