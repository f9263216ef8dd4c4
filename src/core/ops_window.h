/* ops_window.h: a capture window's operators and device activities, as the
 * recorder takes them from a training process (record/ops_blob.c) and the
 * run file keeps them (op_window, op_string, op_event; docs/run-file.md).
 * The vocabulary every layer above shares; no I/O here. */
#ifndef TP_CORE_OPS_WINDOW_H
#define TP_CORE_OPS_WINDOW_H

#include <stdint.h>
#include <stdlib.h>

/* An event's kind (op_event.kind): one encoding from the training's blob to
 * every reader. */
enum {
    TP_OP_CPU = 1,     /* an operator on the CPU (aten::conv2d) */
    TP_OP_RANGE = 2,   /* a record_function range of the script's or a framework's */
    TP_OP_KERNEL = 3,  /* a GPU kernel: device, stream */
    TP_OP_MEMCPY = 4,  /* a GPU copy */
    TP_OP_MEMSET = 5,  /* a GPU memset */
    TP_OP_RUNTIME = 6, /* a CUDA runtime or driver call (the launch a kernel links to) */
    TP_OP_MEMORY = 7,  /* the caching allocator: value bytes (negative: freed) on device */
    TP_OP_STEP = 8,    /* a step mark in the window: correlation = the process's step count,
                        * linked = allocated, value = reserved bytes (-1 unknown) */
    TP_OP_KINDS
};

typedef struct tp_op_event {
    uint32_t kind;
    uint32_t name;    /* string index; 0 "" */
    uint32_t shapes;  /* string index of the input shapes, UINT32_MAX none */
    uint32_t thread;  /* the profiler's thread id (not the kernel's) */
    int32_t device;   /* device index, -1 the CPU */
    int64_t stream;   /* a GPU activity's stream */
    int64_t start_ns; /* since the run's anchor once taken by the sink */
    int64_t dur_ns;
    int64_t correlation; /* CUPTI's: a kernel, copy or memset has its launch's; an
                          * operator its own (the external id) */
    int64_t linked;      /* a launch's and a kernel's: the operator open at the
                          * launch (its correlation), as torch links them */
    int64_t value;
} tp_op_event;

/* Why a window was taken: lib/ops_window.h's TP_OPS_* (1 schedule, 2
 * demand, 3 slow). */
typedef struct tp_ops_window {
    uint32_t thread;     /* the sink thread that marks the steps, 0 unknown */
    int32_t pid, tid;    /* the process and its step thread */
    uint32_t reason;     /* TP_OPS_* */
    uint32_t steps;      /* steps asked for */
    uint64_t first_step; /* the process's step count at the window's first step */
    uint32_t flags;      /* 1: CUDA activities were captured */
    int64_t start_ns, end_ns;
    uint32_t dropped;      /* events past the bound */
    int64_t device_memory; /* the device's memory, bytes; 0 unknown */
    int64_t alloc_start;   /* allocated at the start, bytes; -1 unknown */
    int skipped;           /* no profiler ran: note says why */
    char *note;            /* why skipped or cut short, the profiler's warnings; NULL none */
    char **strings;        /* nstrings texts, valid UTF-8 */
    uint32_t nstrings;
    tp_op_event *events;
    uint32_t nevents;
} tp_ops_window;

static inline void tp_ops_window_free(tp_ops_window *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; i < w->nstrings; i++)
        free(w->strings[i]);
    free(w->strings);
    free(w->events);
    free(w->note);
    free(w);
}

#endif
