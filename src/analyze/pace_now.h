/* pace_now.h: a running training's pace, regime by regime, for top.
 *
 * Fed the begin times of one step thread's steps as the recorder writes
 * them, it keeps their durations in at most TP_PACE_GROUPS groups of
 * consecutive steps (two neighbours merged into one whenever they fill,
 * so memory stays fixed however long the run), the first
 * TP_PACE_WARMUP_STEPS left out, and finds the regimes in them with the
 * run's own rule (analyze/regimes.h's tp_regime_starts): top shows the
 * current regime against the first. A step longer than the stall threshold
 * (core/stall_rule.h, on the median so far) is left out, as the report
 * leaves it. No words: cmd_top.c says it. */
#ifndef TP_ANALYZE_PACE_NOW_H
#define TP_ANALYZE_PACE_NOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_PACE_GROUPS       512
#define TP_PACE_WARMUP_STEPS 10

typedef struct tp_pace_now {
    double stall_after_s; /* the run's --stall-after, 0 for the default rule */
    double stall_s;       /* the threshold, taken again as each group opens */
    int64_t last_ns;      /* the last step's begin, 0 before the first */
    size_t begun;         /* steps begun */
    size_t per;           /* steps per group (a power of two) */
    size_t n;             /* groups */
    /* per group: the durations' sum and count, its first step (from 1) and
     * the first step's begin and the last one's end (seconds) */
    double sum[TP_PACE_GROUPS], t0[TP_PACE_GROUPS], t1[TP_PACE_GROUPS];
    size_t count[TP_PACE_GROUPS], first_step[TP_PACE_GROUPS];
} tp_pace_now;

/* A regime of the steps so far: its steps (from 1), its first step's
 * begin (seconds on the run's clock), its typical step. */
typedef struct tp_pace_regime {
    size_t first_step, last_step;
    double t0_s, typical_s;
} tp_pace_regime;

void tp_pace_now_init(tp_pace_now *p, double stall_after_s);

/* A step began at t_ns (on the run's clock, after the last one's). Times
 * that go back are ignored. */
void tp_pace_now_step(tp_pace_now *p, int64_t t_ns);

/* How many regimes the steps so far make (0 before the first step past the
 * warm-up), and the first and the current one (the same where there is one). */
size_t tp_pace_now_regimes(const tp_pace_now *p, tp_pace_regime *first, tp_pace_regime *now);

/* Whether the steps so far grew or shrank steadily rather than at a few
 * steps (analyze/pace_drift.h, the report's rule): true, with the first
 * and the last quarter of their span as regimes (their steps, the first's
 * begin, their typical step). */
bool tp_pace_now_drift(const tp_pace_now *p, tp_pace_regime *first, tp_pace_regime *last);

#endif
