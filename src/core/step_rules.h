/* step_rules.h: the shares of step time the step verdicts fire at, which
 * the verdicts (analyze/verdicts.h), each regime of a run
 * (analyze/regimes.h) and `bottleneck` judge by. */
#ifndef TP_CORE_STEP_RULES_H
#define TP_CORE_STEP_RULES_H

/* input_bound's share of step time spent waiting for the next batch; also
 * `bottleneck`'s: a loader alone below (1 - it) of the training's rate
 * leaves that share of each step waiting, so both call the same run so. */
#define TP_INPUT_BOUND_SHARE       0.25
#define TP_TRANSFER_BOUND_SHARE    0.15 /* to_device */
#define TP_COMPUTE_BOUND_SHARE     0.60 /* train_batch, ... */
#define TP_COMPUTE_BOUND_INPUT_MAX 0.10 /* ... with dataloader_next under this */

#endif
