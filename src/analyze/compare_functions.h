/* compare_functions.h: the function behind a phase that moved between two
 * runs compared (analyze/run_compare.h), from each side's stack samples.
 *
 * Each side's samples are its followed rank's, over the steps it is
 * compared on: the whole run's groups (analyze/stack_facts.h), or, where
 * the side is its run's latest pace, those of the samples taken over that
 * pace only (summary.h: stacks_latest; a run whose store slowed two thirds
 * in is compared on its slow steps: the function that took over is judged
 * on them, not diluted by the steps before). A summary-only file knows no
 * samples over a span: such a side has no function cause. The group is the step thread's
 * samples inside the phase, or the DataLoader workers' where the phase is
 * dataloader_next and both sides have workers. Functions are matched
 * across the two files by (function, file). No words. */
#ifndef TP_ANALYZE_COMPARE_FUNCTIONS_H
#define TP_ANALYZE_COMPARE_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/regimes.h"
#include "analyze/stack_facts.h"

/* One side's samples: its groups (the summary's stacks, or stacks_latest
 * where the side is its latest pace) and the rank followed. */
typedef struct tp_compare_samples {
    const tp_stack_facts *facts;
    int rank;
} tp_compare_samples;

/* The function whose self share of the moved phase's samples moved the
 * most from a to b in the phase's direction (grew where it slowed), by
 * TP_REGIME_FUNCTION_MOVE or more, with TP_REGIME_FUNCTION_SAMPLES samples
 * or more on each side: true, and *out the TP_CAUSE_FUNCTION cause (shares
 * before and after, its line, function and file made valid UTF-8). */
bool tp_compare_function_cause(const tp_compare_samples *a, const tp_compare_samples *b,
                               const tp_regime_cause *phase, tp_regime_cause *out);

#endif
