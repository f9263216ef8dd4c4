/* gpu_slowdown.h: what held a GPU's clocks back over a run's training steps,
 * as figures (the summary computes them from NVML's clock event reasons,
 * the summary tables store them, render/ says them). */
#ifndef TP_CORE_GPU_SLOWDOWN_H
#define TP_CORE_GPU_SLOWDOWN_H

#include <stdint.h>

/* One GPU's clock event reasons over its agent's steps (the whole run
 * without them): the slowdown bits seen, the share of samples with any,
 * and with a troubling one (TP_GPU_REASONS_TROUBLE); shares NaN where
 * none were recorded. */
typedef struct tp_gpu_slowdown {
    uint32_t bits;
    double share, trouble_share;
} tp_gpu_slowdown;

#endif
