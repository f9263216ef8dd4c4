/* own_facts.h: trainprof's own work in a rank's sampled stacks, as its
 * samples weigh it (analyze/own_cost.h counts them from the raw samples, the
 * summary stores the counts, analyze/own_cost.h reads them back). */
#ifndef TP_CORE_OWN_FACTS_H
#define TP_CORE_OWN_FACTS_H

#include <stdint.h>

/* Whose work a sample is, by its innermost node (analyze/stack_own.h's
 * tp_stack_own_work). */
typedef enum {
    TP_WORK_USERS,        /* the user's code (and what it calls) */
    TP_WORK_WRAPPERS,     /* a frame of ours innermost: a wrapper, the step tracker, the facts */
    TP_WORK_DEVICE_TIMES, /* under device times' frames (CUDA events: patches/device.py) */
    TP_WORK_WINDOWS,      /* under a capture window's (PyTorch's profiler: runtime/ops.py) */
    TP_WORK_KINDS
} tp_work_kind;

/* A rank's step thread's samples within its steps, and whose work they were
 * (weights: a run of samples straddling the steps' bounds counts for its
 * part inside). */
typedef struct tp_own_samples {
    int rank;
    int64_t agent_id;
    double samples;
    double own[TP_WORK_KINDS]; /* of those, by whose work */
} tp_own_samples;

#endif
