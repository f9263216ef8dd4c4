/* rank_facts.h: the facts about ranks side by side (ranks.h builds them,
 * summary_store.h reads them back from a run file, render/ shows them). */
#ifndef TP_CORE_RANK_FACTS_H
#define TP_CORE_RANK_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What makes a straggler slow, as figures (render/verdict_words.c says it):
 * the part of its own work that exceeds its median by the most, a GPU that
 * stands out, and whether its whole node is slow. */
typedef enum {
    TP_GPU_NOTE_NONE,
    TP_GPU_NOTE_CLOCK,     /* a slower SM clock, no clock event reasons recorded */
    TP_GPU_NOTE_UTIL,      /* a busier or idler GPU */
    TP_GPU_NOTE_THROTTLED, /* NVML's clock event reasons: power cap, thermal, ... */
} tp_gpu_note;

typedef struct tp_straggler_cause {
    bool input;                   /* input (dataloader_next, to_device), else compute */
    double part_s, median_part_s; /* that part per step: its, and the median rank's */
    tp_gpu_note gpu_note;         /* a slower SM clock (throttled?), or a busier/idler GPU */
    double gpu_value, gpu_median; /* MHz or percent: its GPU's and the median rank's */
    uint32_t gpu_reasons;         /* THROTTLED: the slowdown reasons its GPU had */
    bool node_slow;               /* every rank on its node is slow (and others run elsewhere) */
    /* its step thread waited for a CPU >= TP_CPU_WAIT_PERCENT of the time
     * and 10 points more than the median rank's: cpu_wait and its median */
    bool cpu_held;
    double cpu_wait, median_cpu_wait;
} tp_straggler_cause;

typedef struct tp_rank_row {
    int rank, local_rank;
    int gpu; /* the index of the GPU it drove on its agent (rank_gpu.h), -1 unknown */
    int64_t agent_id;
    size_t steps; /* complete steps in the window */
    /* of them, those measured: its steady steps, the warm-up's, capture
     * windows' and stalled ones left out (analyze/step_kinds.h); every
     * step where none is steady; the parts below are over them */
    size_t measured_steps;
    int64_t t0_ns, t1_ns;          /* the window: its first measured step's start, last's end */
    double window_s;               /* its measured steps' time, seconds */
    double input_s, compute_s;     /* totals over the measured steps */
    double comm_s, comm_overlap_s; /* communication, and its part under compute */
    double other_s;
    double gpu_util_percent, gpu_sm_clock_mhz; /* means over the window; NaN if none */
    /* NVML's clock event reasons over the window: the slowdown bits seen
     * (power cap, thermal, ...: NVML_CLOCK_REASONS_SLOWDOWN) and the share of
     * samples with any; NaN share where none were recorded */
    uint32_t gpu_slowdown_reasons;
    double gpu_slowdown_share;
    /* communication's device time over the window (CUDA events around the
     * collectives: NCCL's, whose host time is the launch), 0 where none, and
     * its part exposed to compute (ranks.c's device_comm) */
    double comm_device_s, comm_device_exposed_s;
    /* its step thread's wait for a CPU over the window, % of the time
     * (step_thread_cpu_wait_percent of its process); NaN: not recorded */
    double cpu_wait_percent;
    bool straggler;
    double excess;            /* own work per step over the median's, as a fraction */
    tp_straggler_cause cause; /* set for a straggler */
} tp_rank_row;

typedef struct tp_ranks {
    tp_rank_row *rows; /* in rank order; only ranks with at least one step */
    size_t n;
    double median_own_s, median_input_s, median_compute_s, median_comm_s; /* per step */
    double median_step_s; /* the median rank's window per step */
    size_t nstragglers;
} tp_ranks;

void tp_ranks_free(tp_ranks *r);

/* rank's row, by binary search (rows are in rank order); NULL if none. */
const tp_rank_row *tp_ranks_find(const tp_ranks *r, int rank);

#endif
