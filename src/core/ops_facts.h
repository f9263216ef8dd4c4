/* ops_facts.h: what the capture windows say (analyze/ops.c builds them,
 * render/ shows them; docs/ops.md). Times in seconds, over the windows'
 * captured steps. */
#ifndef TP_CORE_OPS_FACTS_H
#define TP_CORE_OPS_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/name_table.h"

/* One window a process took or skipped. */
typedef struct tp_ops_window_fact {
    int rank;
    int32_t pid;
    int reason;                  /* lib/ops_window.h's TP_OPS_*: 1 schedule, 2 demand, 3 slow */
    int64_t first_step;          /* the process's count at the window's first step */
    int steps;                   /* steps captured (complete, between the window's step marks) */
    bool cuda;                   /* GPU activities captured */
    bool skipped;                /* no profiler ran: note says why */
    const char *note;            /* NULL none */
    double start_s, end_s;       /* the captured steps, run time */
    int64_t events, dropped;     /* events kept, and past the bound */
    double peak_allocated_bytes; /* the caching allocator's peak in the steps; NAN unknown */
    double reserved_bytes;       /* reserved at the steps' end; NAN unknown */
    double device_memory_bytes;  /* the device's; NAN unknown */
} tp_ops_window_fact;

/* An operator (or a record_function range) in a phase of a rank's captured
 * steps: the seed's table. outer_s: its time where no other operator
 * (aten::) encloses it, which splits the phase without counting twice. */
typedef struct tp_op_fact {
    int rank;
    const char *phase; /* the innermost region of the step thread then; "" none */
    const char *name;
    bool range; /* a record_function range, not an operator */
    uint64_t calls;
    double cpu_total_s, cpu_self_s, device_total_s, outer_s;
    /* bytes the GPU's caching allocator handed out while it ran (its
     * callees' included: PyTorch's profile_memory), 0 on a CPU */
    double alloc_bytes;
} tp_op_fact;

/* A GPU kernel (or memcpy, memset) of a rank's captured steps, with the
 * operator that launched it. */
typedef struct tp_kernel_fact {
    int rank;
    const char *name;
    const char *op; /* "" unknown */
    int kind;       /* core/ops_window.h's TP_OP_KERNEL, _MEMCPY, _MEMSET */
    uint64_t calls;
    double device_s;
} tp_kernel_fact;

/* The GPU idle within a rank's captured steps, by what the host's step
 * thread was in then (its innermost region). */
typedef struct tp_gpu_idle_fact {
    int rank;
    const char *phase; /* "" none */
    double idle_s;
    /* the function the step thread's sampled stacks were in most then (its
     * innermost frame outside the standard library: the user's call into it),
     * its file and line, its share of those samples, its samples and all
     * (a capture window's few steps hold a few: the evidence is thin);
     * NULL function: no sample fell in this idle time */
    const char *function, *file;
    int line;
    double function_share;
    uint64_t function_samples, samples;
} tp_gpu_idle_fact;

/* A rank's phase time in its captured steps (the shares' denominator). */
typedef struct tp_ops_phase_time {
    int rank;
    const char *phase;
    double time_s;
} tp_ops_phase_time;

#define TP_OPS_BOXES_MAX 3000

typedef struct tp_ops_facts {
    tp_ops_window_fact *windows;
    size_t nwindows;
    tp_op_fact *ops; /* by rank, phase, then CPU self time (device total on a GPU), most first */
    size_t nops;
    tp_kernel_fact *kernels; /* by rank, then device time, most first */
    size_t nkernels;
    tp_gpu_idle_fact *idle; /* by rank, then idle time, most first */
    size_t nidle;
    tp_ops_phase_time *phases;
    size_t nphases;
    /* per rank with a GPU window: the captured steps' span and the GPU's busy
     * time within it (index: the order ranks first appear in windows) */
    struct tp_ops_gpu_busy {
        int rank;
        double span_s, busy_s;
    } * busy;
    size_t nbusy;
    /* one captured step of the first window with steps, for a timeline:
     * the step thread's regions (lane 0), the outermost operators of each
     * profiler thread, and each GPU stream's activities (lane names in
     * lanes); at most TP_OPS_BOXES_MAX boxes, times from the step's start */
    struct tp_ops_box {
        int lane;
        const char *name;
        double t0_s, t1_s;
    } * boxes;
    size_t nboxes;
    const char *lanes[16];
    size_t nlanes;
    double step_s;       /* the step's duration */
    tp_name_table texts; /* the texts the rows point into */
} tp_ops_facts;

#endif
