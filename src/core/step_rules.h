/* step_rules.h: the shares of step time the step verdicts fire at, which
 * the verdicts (analyze/verdicts.h), each regime of a run
 * (analyze/regimes.h) and `bottleneck` (analyze/bottleneck_facts.h) judge
 * by, and the CPU share they call saturated. */
#ifndef TP_CORE_STEP_RULES_H
#define TP_CORE_STEP_RULES_H

/* input_bound's share of step time spent waiting for the next batch; also
 * `bottleneck`'s: a loader alone below (1 - it) of the training's rate
 * leaves that share of each step waiting, so both call the same run so. */
#define TP_INPUT_BOUND_SHARE    0.25
#define TP_TRANSFER_BOUND_SHARE 0.15 /* to_device */
/* compute_bound (and host_bound): train_batch at least this share, with
 * dataloader_next under TP_INPUT_BOUND_SHARE (not input-bound). Under
 * TP_COMPUTE_BOUND_INPUT_MAX the input keeps up; from it up to input_bound's
 * share the loader comes next (the computation made faster, its wait grows),
 * and the verdict says so: a step that is 87 % compute and 10 % loading is
 * compute-bound, not "nothing stands out". */
#define TP_COMPUTE_BOUND_SHARE     0.60
#define TP_COMPUTE_BOUND_INPUT_MAX 0.10

/* On a GPU, a step that computes (TP_COMPUTE_BOUND_SHARE) is the GPU's
 * limit only where the GPU was busy at least this share of the steps;
 * below, the host can't feed it: host_bound. */
#define TP_HOST_BOUND_GPU_BUSY 0.70

/* `bottleneck`'s compute limit: the training alone (its first batch
 * replayed) below this share of the loader alone's rate. */
#define TP_COMPUTE_LIMIT_SHARE 0.90

/* The CPUs count as saturated at this mean or median busy share: the
 * cpu_saturated verdict, an input-bound verdict's CPU cause, and
 * `bottleneck`'s loader that more workers won't help. */
#define TP_CPU_SATURATED_PERCENT 90.0

/* The training counts as held back by others on busy CPUs where its
 * processes' main threads waited for a CPU (run-queue delay) at least this
 * share of the time: cpu_contention, and input_bound's contention cause. */
#define TP_CPU_WAIT_PERCENT 10.0

/* A virtual machine's host took its CPUs (steal) at least this share of
 * the time on average over the steps, while the training's processes used
 * at least TP_CPU_STEAL_OWN_MIN (100 a core) of them: cpu_steal. */
#define TP_CPU_STEAL_PERCENT 10.0
#define TP_CPU_STEAL_OWN_MIN 50.0

#endif
