/* stall_facts.h: the facts about ranks that stalled (analyze/stalls.h
 * finds them, the summary stores them, render/ says them). */
#ifndef TP_CORE_STALL_FACTS_H
#define TP_CORE_STALL_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_stall_thread {
    int64_t pid;
    int32_t tid;
    bool worker;   /* a DataLoader worker's */
    char *phase;   /* the region it had open at its last sample, NULL none */
    uint32_t node; /* the innermost node of most of its samples since the stall began */
    /* node's innermost caller outside the standard library, where node is in
     * it (the user's line that called queue.get); node otherwise */
    uint32_t outer;
    /* since then (runs cut at the start pro rata): its samples, those whose
     * state the kernel said, of those running, and in state D */
    double samples, known, on_cpu, blocked;
} tp_stall_thread;

typedef struct tp_stall {
    int rank;
    /* it ended: a step that took longer than the threshold and closed, a
     * pause left out of the step figures (timings.h); else it lasted until
     * the recording ended */
    bool ended;
    double end_s;   /* when it ended (the step's end, or the recording's) */
    double start_s; /* its last progress: the last region closed or step mark on its threads */
    double seconds; /* from then to the end of the recording */
    double threshold_s;
    size_t step; /* the step it was in (1 for its first), or last closed (between) */
    /* its last step had closed and none began: it stopped in a region
     * between steps (`.item()` after the optimizer's step, waiting on a GPU
     * that never answers) */
    bool between;
    /* the rank's GPU over the stall: its index and NVML's utilization
     * there (mean, %), busy on a kernel that does not end or idle (waiting
     * for a peer); -1 and NaN where unknown (no GPU, no samples) */
    int gpu;
    double gpu_util_percent;
    /* the training's threads waiting on storage over the stall (state D:
     * proc_blocked's mean on the rank's agent), a hang on a filesystem that
     * does not answer; NaN unknown (not recorded, or no sample in it) */
    double blocked;
    const char *phase;        /* its step thread's open region (a thread's below), NULL unknown */
    bool waits;               /* it waits for the others (communication, backward) */
    bool first;               /* the one the others wait for, or stopped first */
    tp_stall_thread *threads; /* most samples first */
    size_t nthreads;
} tp_stall;

#endif
