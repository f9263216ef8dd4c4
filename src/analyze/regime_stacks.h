/* regime_stacks.h: which functions' share of a phase moved at a change of
 * pace, from the sampled Python stacks.
 *
 * For each change whose step time one phase carries (a TP_CAUSE_PHASE
 * cause), the stack samples of the followed rank over the regime before
 * and the regime after are split by innermost function (function, file),
 * in two groups: the step thread's samples inside that phase (train_batch
 * with the forward, loss, backward and optimizer_step inside it; a user
 * region's samples in the phase it ran inside: analyze/region_within.h), and, where the
 * phase is dataloader_next, the DataLoader workers' samples, whatever they
 * had open (what the step thread waits for). The function whose share of
 * its group moved the most, in the direction of the phase's time (grew where
 * the phase slowed, shrank where it sped up), by TP_REGIME_FUNCTION_MOVE or
 * more, with TP_REGIME_FUNCTION_SAMPLES samples or more on each side, is a
 * TP_CAUSE_FUNCTION cause, right after the phase's: the workers' where one
 * of theirs moved (the step thread only receives their batches), else the
 * step thread's. Where none moved but the phase grew, and nothing of the
 * machine changed with it (or the pace drifted: regimes.h), the function
 * it is made of, on
 * TP_REGIME_FUNCTION_WHOLE of its samples or more on both sides (the
 * deepest, outside the standard library where one is, no <module>), grew
 * with it: it is the cause (a history walked every step, before and after
 * alike the phase's whole). Runs of samples that
 * straddle a regime's bounds count for their part inside. No words. */
#ifndef TP_ANALYZE_REGIME_STACKS_H
#define TP_ANALYZE_REGIME_STACKS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/region_within.h"
#include "analyze/regimes.h"
#include "core/pace_facts.h"
#include "store/reader.h"
#include "store/reader_stacks.h"

#define TP_REGIME_FUNCTION_MOVE    0.10 /* of a group's samples */
#define TP_REGIME_FUNCTION_SAMPLES 20.0
#define TP_REGIME_FUNCTION_WHOLE   0.8 /* of both groups' samples */

/* Adds the function causes to r's changes (regimes whose times are known):
 * those the stored summary holds for every one of r's changes
 * (summary_pace_function: a report reads them, not every sample since the
 * first regime again), else from the samples; a run without stacks, or a
 * file stored before regimes had times, gets none. withins: the run's
 * user regions' places, made here where not yet (tp_region_withins_once).
 * False (reason in err) where the file could not be read. */
bool tp_regimes_add_stack_causes(tp_run *run, tp_regimes *r, tp_region_withins *withins, char *err,
                                 size_t cap);

/* The same in parts, for a pass over the samples shared with other readers
 * (tp_run_each_stack_run_to): begin sets *reader (fn NULL where nothing is
 * to be read; withins: what the user regions' samples count for, NULL
 * none) and returns the pass (NULL where there is none to end; *ok
 * false where the file could not be read, the reason in err); end adds the
 * causes where the pass read them all (read) and frees it. r lives until
 * then. */
typedef struct tp_causes_pass tp_causes_pass;
tp_causes_pass *tp_regimes_causes_begin(tp_run *run, tp_regimes *r,
                                        const tp_region_withins *withins, tp_stack_reader *reader,
                                        char *err, size_t cap, bool *ok);
void tp_regimes_causes_end(tp_causes_pass *p, bool read);

/* Each change of r's function cause (r->n - 1 of them, into *n; the caller
 * frees), as the summary stores them. */
tp_pace_function *tp_regimes_pace_functions(const tp_regimes *r, size_t *n);

#endif
