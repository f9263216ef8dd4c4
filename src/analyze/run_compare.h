/* run_compare.h: two runs of the same training, A (the baseline) and B,
 * compared phase by phase, with what differs between them. No words:
 * render/compare.h says them.
 *
 * Each side is its first rank's steady steps (warm-up steps and those a
 * capture window ran in left out), those of its latest pace where its
 * pace changed lastingly (regimes.h: what its report's verdicts judge;
 * the machine then over that pace too, and the job's samples/s scaled by
 * its whole run's mean step over the latest's), in the groups of consecutive steps the
 * step phases give (analyze/step_phases.h: each step while a rank has 300
 * or fewer, else 300 groups): the mean step, the seconds per step of each
 * standard phase, the machine over the steps (regimes.h's figures). The
 * change in the mean step, B's over A's less one, comes with a 95 %
 * interval bootstrapped from the groups (a block bootstrap where groups
 * hold several steps), so that noise is never called a change: a change
 * is called where the interval leaves zero out and the change is
 * TP_COMPARE_MIN_CHANGE or more (two runs of one training on one machine
 * differ by a few percent). What moved and why (where the step changed
 * or a phase moved) are regimes.h's causes
 * between A as the regime before and B as the one after, the function
 * whose share of the moved phase's stack samples moved the most among
 * them; the facts of the script and the machine that differ are listed
 * (strings as the run files hold them: hostile, render/ encodes them). */
#ifndef TP_ANALYZE_RUN_COMPARE_H
#define TP_ANALYZE_RUN_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/compare_facts.h"
#include "analyze/regimes.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "core/step_phase_facts.h"

#define TP_COMPARE_MIN_CHANGE 0.05 /* of A's mean step: the smallest change called one */
#define TP_COMPARE_RESAMPLES  1000 /* bootstrap resamples */

typedef struct tp_compare_side {
    const char *path;
    int rank;                     /* the rank followed; -1 without a rank */
    size_t steps;                 /* its steady steps compared (0: none) */
    size_t first_step, last_step; /* a regime's steps (numbers from 1); 0 for a whole run */
    double step_s;                /* their mean, seconds */
    /* where its run's pace changed lastingly (regimes.h: two regimes or more
     * of the rank followed), two runs compared compare its latest pace
     * (first_step to last_step): its regimes and the mean step of the regime
     * before the latest (0 and NaN where the side is the whole run) */
    size_t paces;
    double before_s;
    /* where its run's steps grew or shrank steadily rather than at a step
     * (regimes.h: the regimes then only cut the slope): its quarters */
    tp_regimes_drift drift;
    double whole_step_s;  /* the whole run's steady steps' mean (step_s where the side is them) */
    double samples_per_s; /* the job's: summed over ranks (NaN unknown) */
    double samples_per_step; /* the followed rank's (NaN unknown) */
    int world;
    double phase_s[TP_STEP_PHASES]; /* seconds per step */
    tp_regime_machine machine;      /* over its steps */
    uint32_t verdicts;              /* bit k: a tp_verdict_kind k verdict fired */
} tp_compare_side;

/* Whether the side is compared on its run's latest pace (first_step to
 * last_step, as its report judges it) rather than on its whole run. */
static inline bool tp_compare_side_on_latest_pace(const tp_compare_side *side)
{
    return side->paces >= 2;
}

typedef struct tp_run_compare {
    tp_compare_side a, b;
    bool comparable; /* both sides have 2 steps or more */
    /* B's mean step over A's, less one, and its 95 % interval (NaN unless comparable) */
    double change, low, high;
    bool changed; /* the interval leaves 0 out, and |change| >= TP_COMPARE_MIN_CHANGE */
    /* where a side is its run's latest pace: B's whole run's mean step over
     * A's, less one (the steps before the change included; NaN otherwise) */
    double whole_change;
    double rate_change; /* B's samples/s over A's, less one (NaN unknown) */
    /* per phase: moved by TP_COMPARE_MIN_CHANGE of A's step or more, by a
     * quarter of the step's change or more, and beyond the noise of its own
     * steps (the bootstrap interval of B's mean less A's leaves 0 out) */
    bool moved[TP_STEP_PHASES];
    /* what changed from A to B (regimes.h's kinds; a TP_CAUSE_FUNCTION one
     * right after the phase it belongs to) */
    tp_regime_cause causes[TP_REGIME_CAUSES];
    size_t ncauses;
    tp_compare_fact facts[TP_COMPARE_FACTS];
    size_t nfacts;
    bool same_script; /* the command's program (its script for an interpreter) is the same */
    bool one_run;     /* A and B are two regimes of one run (tp_run_compare_regimes) */
} tp_run_compare;

/* Compares a to b (summaries loaded with their stacks; their verdicts va,
 * vb). False (reason in err) when a file can't be read. */
bool tp_run_compare_build(const tp_summary *a, const tp_verdicts *va, const tp_summary *b,
                          const tp_verdicts *vb, tp_run_compare *out, char *err, size_t cap);

/* The same comparison between two regimes of one run (analyze/regimes.h:
 * s loaded with its course), before and after (indices in s->regimes):
 * each side the regime's steps, phases and machine, their step verdicts;
 * the causes are the change's own where after follows before. Not
 * comparable where either is not a regime of s. False (reason in err)
 * when the step phases can't be read. */
bool tp_run_compare_regimes(const tp_summary *s, size_t before, size_t after, tp_run_compare *out,
                            char *err, size_t cap);

/* The change in step time the data rule out as smaller: the interval's low
 * end (B slower by at least that), NaN when not comparable. compare
 * --fail-if-slower fails where it is above the allowed share. */
double tp_compare_slower_at_least(const tp_run_compare *c);

/* The causes of c that are the machine's, not the training's: other
 * processes' CPU, CPU or I/O pressure, swap, the GPU's clock or its
 * slowdowns, each past its noise (regimes.h), into out; how many. CPU
 * pressure only with other processes' CPU: without it, the tasks that
 * waited were the training's own (a run with DataLoader workers on every
 * core beside one without). */
size_t tp_compare_machine_causes(const tp_run_compare *c, tp_regime_cause out[TP_REGIME_CAUSES]);

#endif
