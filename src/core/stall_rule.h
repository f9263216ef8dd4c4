/* stall_rule.h: when a rank that makes no progress has stalled, the one
 * rule the recorder's live view (live/) and the analysis of a run file
 * (analyze/stalls.h) both judge by. */
#ifndef TP_CORE_STALL_RULE_H
#define TP_CORE_STALL_RULE_H

#define TP_STALL_MIN_S        30.0  /* the threshold's floor */
#define TP_STALL_STEPS        10.0  /* ... else this many median steps */
#define TP_STALL_FIRST_STEP_S 600.0 /* before a rank's first step closed */
/* A stalled rank's GPU, by NVML's mean utilization over the stall: busy (a
 * kernel that does not end) at or above, idle (waiting elsewhere) at or below */
#define TP_STALL_GPU_BUSY_PERCENT 50.0
#define TP_STALL_GPU_IDLE_PERCENT 10.0
/* the training's threads in state D over a stall, on average, from which
 * the stall is said to wait on storage (half a thread: one of them half the
 * time) */
#define TP_STALL_BLOCKED 0.5

/* The seconds without progress after which a rank has stalled:
 * stall_after_s where the run set one (record --stall-after, > 0), else 10
 * times its median step and at least 30 s, or 10 minutes before it has a
 * median step (NaN or <= 0). */
static inline double tp_stall_threshold(double stall_after_s, double median_step_s)
{
    if (stall_after_s > 0)
        return stall_after_s;
    if (!(median_step_s > 0))
        return TP_STALL_FIRST_STEP_S;
    double t = TP_STALL_STEPS * median_step_s;
    return t > TP_STALL_MIN_S ? t : TP_STALL_MIN_S;
}

#endif
