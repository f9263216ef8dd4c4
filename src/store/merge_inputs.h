/* merge_inputs.h: what merge learns of each input before copying it: its
 * start, its ranks, and which tables and columns its schema holds (each
 * decides a copy's SQL), and whether the inputs belong together. Internal to
 * store/merge*.c. */
#ifndef TP_STORE_MERGE_INPUTS_H
#define TP_STORE_MERGE_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_merge_input {
    int64_t start_wall_ns, uncertainty_ns;
    char command[512], job[128], agent[128];
    bool summarized, plots;          /* plots: it stores what html plots (meta plots) */
    bool summary_foreign;            /* its summary is another analysis's (carried as it is) */
    bool series_steps, steps_window; /* its series' figures over the steps; its steps window */
    bool rank_gpu, rank_truth; /* summary_rank has each rank's GPU; clock reasons, device comm */
    bool rank_cpu_wait;        /* and its step thread's wait for a CPU */
    bool rank_measured;        /* and the steps its parts are over */
    bool batches;              /* its summary_step has batches and warm-up steps */
    bool thread_cuda, thread_device; /* each thread's CUDA_VISIBLE_DEVICES; process's GPU UUID */
    bool step_pauses, step_times;    /* its stored step phases have their pauses, groups' times */
    bool stack_counts, stalls;       /* summary_stack counted; its stalls (meta stalls_stored) */
    bool ops, step_profiled, timing_profiled; /* op_window; summary_step.profiled*; in_profiled_s */
    bool step_warmup;                         /* summary_step.warmup_samples, warmup_batches */
    bool stall_between;                       /* summary_stall.between_steps */
    bool stall_gpu;                           /* summary_stall.gpu, gpu_util_percent */
    bool stall_blocked;                       /* summary_stall.blocked */
    bool stall_thread_blocked;                /* summary_stall_thread.blocked */
    bool timing_warmup;                       /* summary_timing.in_warmup_s */
    bool rank_latest; /* summary_rank_latest: its ranks over its first rank's latest pace */
    bool rank_latest_measured; /* and the steps their parts are over */
    bool gpu_slowdowns;        /* summary_gpu: its GPUs' clock event reasons over the steps */
    bool own;                  /* summary_own: its ranks' own work counts */
    bool withins;              /* summary_region_within: its user regions' phases */
    int *ranks;
    size_t nranks;      /* distinct ranks of its threads (-1: no rank) */
    int64_t shift;      /* added to its t_ns: its start's distance from the earliest */
    int64_t series_off; /* added to its series ids */
    int version;        /* its schema: before 5, no device times */
} tp_merge_input;

/* Reads inputs[0..n) into info (zeroed by the caller): false with a one-line
 * reason naming the input when one can't be read, is itself a merge, has no
 * valid start time, repeats another's agent name, or (unless force) ran
 * another command or job than the first. */
bool tp_merge_read_inputs(const char *const *inputs, size_t n, tp_merge_input *info, bool force,
                          char *err, size_t cap);

/* The inputs' stored summaries stay valid merged when each has one and no
 * rank appears in two inputs (figures per rank can't be combined); else false
 * with why, naming the input(s). */
bool tp_merge_summaries_carry_over(const char *const *inputs, const tp_merge_input *info, size_t n,
                                   char *why, size_t cap);

/* Whether any input's stored summary is another analysis's. */
bool tp_merge_any_foreign(const tp_merge_input *info, size_t n);

/* Frees info[0..n) and info itself (NULL is fine). */
void tp_merge_free_inputs(tp_merge_input *info, size_t n);

#endif
