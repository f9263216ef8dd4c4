/* gpu_memory.h: each rank's GPU memory, as its allocator kept it at step
 * boundaries (the cuda_* series of its process, {pid}: trainprof.h's
 * tp_device_memory), as facts: how much room a step leaves, whether the
 * allocator's cache is fragmented, whether what stays allocated between
 * steps grows (a leak on the device) and at which step it would run out,
 * and a death by the allocator's out-of-memory with its figures.
 *
 * Headroom. A step boundary holds the weights, gradients and optimizer state
 * (start: the median reading over the rank's steps); a step's work adds its
 * activations above it (adds: the peak less the start). The limit is the
 * device's capacity less what others hold on it (NVML's memory used less
 * what the allocator reserved, where NVML recorded the rank's GPU). A batch
 * batch_factor times larger would fit, assuming the activations grow with
 * the batch and nothing else does.
 *
 * Growth. Judged from the end of the rank's warm-up (timings.h) and past the
 * first TP_GPU_GROWTH_SETTLE of what is left, over at least
 * TP_GPU_GROWTH_MIN_STEPS steps and TP_GPU_GROWTH_MIN_READINGS readings:
 * the window in TP_GPU_GROWTH_SLICES slices, each slice's mean; it grows
 * when the last slice is TP_GPU_GROWTH_MIN_BYTES or more above the first,
 * all but one of the steps between slices go up (or stay within 1 % of the
 * limit), and the second half grows by at least 30 % of the first half's
 * (a ramp that levels off is no leak). The rate is per step, from the
 * slices' centres; the step it runs out at is where the peak, growing at
 * that rate, meets the limit.
 *
 * The peaks are the process's since it began (trainprof never resets them:
 * the script's own figures stay its own), or since the script reset them.
 * No words: render/ says them. */
#ifndef TP_ANALYZE_GPU_MEMORY_H
#define TP_ANALYZE_GPU_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/deaths.h"

struct tp_summary;

#define TP_GPU_GROWTH_SETTLE       0.10
#define TP_GPU_GROWTH_SLICES       10
#define TP_GPU_GROWTH_MIN_STEPS    20
#define TP_GPU_GROWTH_MIN_READINGS 20
#define TP_GPU_GROWTH_MIN_BYTES    (64.0 * 1024 * 1024)
/* fragmented: the peak reserved above the peak allocated by this share of
 * it, and at least TP_GPU_FRAGMENT_MIN_BYTES */
#define TP_GPU_FRAGMENT_SHARE     0.20
#define TP_GPU_FRAGMENT_MIN_BYTES (512.0 * 1024 * 1024)
/* near full: the peak allocated at this share of the limit or more */
#define TP_GPU_MEMORY_NEAR_FULL 0.90

typedef struct tp_gpu_memory_rank {
    int rank; /* -1: a training of one process that named none */
    int64_t agent_id, pid;
    double capacity_bytes;       /* the device's, as the training saw it */
    double other_bytes;          /* held on the device outside the allocator, NaN unknown */
    double limit_bytes;          /* capacity less other (capacity where unknown) */
    double peak_allocated_bytes; /* the most allocated at once */
    double usual_peak_bytes;     /* the peak's median reading over the steps */
    double peak_reserved_bytes;  /* the most the allocator held */
    double start_bytes;          /* allocated at a step boundary, median over the steps */
    double adds_bytes;           /* peak less start: a step's activations */
    double batch_factor;         /* (limit - start) / adds; NaN without adds */
    double fragment_bytes;       /* peak reserved less peak allocated */
    bool fragmented;             /* by TP_GPU_FRAGMENT_SHARE and _MIN_BYTES */
    bool expandable;             /* the training ran with expandable_segments:True */
    double retries, ooms;        /* the allocator's, since the process began */
    size_t readings;             /* its readings of allocated */
    /* growth between steps (growing: by the rule above) */
    bool growing;
    double growth_first_bytes, growth_last_bytes; /* the first and last slices' means */
    double growth_bytes_per_step;
    size_t steps_seen;       /* the rank's steps begun */
    double out_of_room_step; /* the step the peak would meet the limit at; NaN unknown */
    /* its process died of the allocator's out-of-memory (deaths.h): the
     * death, and the allocated and reserved its last reading saw */
    const tp_death *oom;
    double oom_allocated_bytes, oom_reserved_bytes;
} tp_gpu_memory_rank;

typedef struct tp_gpu_memory {
    tp_gpu_memory_rank *v; /* in rank order */
    size_t n;
} tp_gpu_memory;

/* Whether a death was the GPU allocator's out-of-memory (its exception's
 * type or words, or the figures its message gave). */
bool tp_death_is_gpu_oom(const tp_death *d);

/* Each traced process's GPU memory that has readings, from s (its series,
 * and of its part TP_PART_COURSE each rank's steps and the deaths): none
 * where the run has no readings; a figure a summary-only file lacks the
 * rows for is NaN or false. tp_gpu_memory_free in every case. */
void tp_gpu_memory_build(const struct tp_summary *s, tp_gpu_memory *out);
void tp_gpu_memory_free(tp_gpu_memory *g);

#endif
