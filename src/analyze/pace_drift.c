/* pace_drift.c: see pace_drift.h. */
#include "analyze/pace_drift.h"

#include <math.h>
#include <stdlib.h>

#include "analyze/change_points.h"
#include "util/oom.h"

/* Whether inside each regime the level moved on at TP_DRIFT_WITHIN of the
 * run's slope or more (slope: level a group of steps, its sign the
 * drift's), from the regime's earlier half (by time) to its later: a drift
 * goes on inside the regimes that cut it, a change at one step leaves them
 * flat. A slope a group, not a rate a second in log terms: a step that
 * grows by as much each step (a history summed every step) grows at a
 * log rate a second that falls with the square of the step's length, and
 * its last regime read as flat beside the run's average (CI: 0.20 of it,
 * where 0.25 was asked, on a slope its regimes all went up by 4 % or more).
 * Regimes of too few groups to halve are passed over; false where none is
 * left. */
static bool within_regimes(const double *d, const double *t0, const double *t1, size_t n,
                           const size_t *starts, size_t nstarts, double slope)
{
    size_t judged = 0;
    for (size_t r = 0; r <= nstarts; r++) {
        size_t lo = r ? starts[r - 1] : 0, hi = r < nstarts ? starts[r] : n;
        if (hi > n || hi < lo + 2 * TP_DRIFT_MIN_GROUPS)
            continue;
        double half = 0.5 * (t0[lo] + t1[hi - 1]);
        size_t mid = lo;
        while (mid < hi && 0.5 * (t0[mid] + t1[mid]) < half)
            mid++;
        if (mid < lo + TP_DRIFT_MIN_GROUPS || hi < mid + TP_DRIFT_MIN_GROUPS)
            continue;
        double a = tp_regime_typical(d + lo, mid - lo), b = tp_regime_typical(d + mid, hi - mid);
        double apart = 0.5 * (double)(hi - lo); /* the halves' middles, in groups */
        if (!((b - a) / apart / slope >= TP_DRIFT_WITHIN))
            return false;
        judged++;
    }
    return judged > 0;
}

/* Whether the quarters' levels move one way, each by TP_DRIFT_QUARTER_STEP
 * or more, the last from the first by TP_DRIFT_MIN_CHANGE or more. */
static bool steadily(const double level[4])
{
    double sign = level[3] > level[0] ? 1 : -1;
    for (int q = 1; q < 4; q++)
        if (!(sign * log(level[q] / level[q - 1]) >= log1p(TP_DRIFT_QUARTER_STEP)))
            return false;
    return fabs(log(level[3] / level[0])) >= log1p(TP_DRIFT_MIN_CHANGE);
}

tp_pace_drift tp_pace_drift_of(const double *d, const double *t0, const double *t1, size_t n,
                               const size_t *starts, size_t nstarts)
{
    tp_pace_drift none = {0};
    if (n < 4 * TP_DRIFT_MIN_GROUPS)
        return none;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(t0[i]) || !isfinite(t1[i]) || !(d[i] > 0) || !isfinite(d[i]))
            return none;
    double start = t0[0], span = t1[n - 1] - t0[0];
    if (!(span >= TP_DRIFT_MIN_SECONDS))
        return none;
    /* each group in the quarter of the span its middle falls in */
    size_t lo[4] = {0}, hi[4] = {n, n, n, n}, q = 0;
    for (size_t i = 0; i < n; i++) {
        double mid = 0.5 * (t0[i] + t1[i]);
        while (q < 3 && mid >= start + (double)(q + 1) * span / 4) {
            hi[q] = i;
            lo[++q] = i;
        }
    }
    for (size_t k = q + 1; k < 4; k++) /* quarters no group reached: empty */
        lo[k] = n;
    double level[4];
    for (int k = 0; k < 4; k++) {
        if (hi[k] < lo[k] + TP_DRIFT_MIN_GROUPS)
            return none;
        level[k] = tp_regime_typical(d + lo[k], hi[k] - lo[k]);
    }
    /* the first and last quarters' middles, in groups */
    double apart = 0.5 * ((double)(lo[3] + hi[3]) - (double)(lo[0] + hi[0]));
    double slope = (level[3] - level[0]) / apart;
    if (!(apart > 0) || !steadily(level) || !within_regimes(d, t0, t1, n, starts, nstarts, slope))
        return none;
    return (tp_pace_drift){.found = true,
                           .first_lo = lo[0],
                           .first_hi = hi[0] - 1,
                           .last_lo = lo[3],
                           .last_hi = hi[3] - 1,
                           .first_s = level[0],
                           .last_s = level[3]};
}
