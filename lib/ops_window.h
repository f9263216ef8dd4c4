/* ops_window.h: capture windows, the training process's side (docs/ops.md).
 *
 * The recorder decides when a process captures its operators (a schedule, a
 * request, a slow step) and says so in every ring's header (ring.h's ops_*
 * fields). The process counts the steps it marks, reads the request at each
 * one, runs PyTorch's profiler over the steps asked for (trainprof/_ops.py)
 * and hands the result back as one sealed memfd over its connection
 * (tp_ops_send): never through the ring, which is for the hot path. */
#ifndef TP_LIB_OPS_WINDOW_H
#define TP_LIB_OPS_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a window was taken (ring.h's ops_reason, the run file's op_window.reason). */
enum {
    TP_OPS_SCHEDULE = 1, /* the schedule: after the warm-up, then every --ops-every */
    TP_OPS_DEMAND = 2,   /* `trainprof capture`, or POST /capture */
    TP_OPS_SLOW = 3,     /* a step slower than --ops-on-slow times the running median */
};

/* A request's reason holds more than why: its low byte is the TP_OPS_* reason,
 * the next the period of device times once the recorder backed off over its
 * budget (record/ops_plan.h: the process records CUDA events on one step in
 * that many; 0, every step). */
#define TP_OPS_REASON_MASK        0xffu
#define TP_OPS_DEVICE_EVERY_SHIFT 8
#define TP_OPS_DEVICE_EVERY_OF(r) (((r) >> TP_OPS_DEVICE_EVERY_SHIFT) & 0xffu)

typedef struct tp_ops_request {
    uint32_t seq;        /* changes with every new request; 0: none yet */
    uint32_t reason;     /* TP_OPS_*, and the device times' period (above) */
    uint32_t steps;      /* steps to capture */
    uint64_t first_step; /* the step (the process's count of its step marks) to begin at */
} tp_ops_request;

/* Step marks this process made (tp_step, tp_step_at), from any thread. */
uint64_t tp_steps_marked(void);

/* The request seq in this thread's ring (0: none, or no ring): one
 * acquire load, for every step mark. */
uint32_t tp_ops_seq(void);

/* The request in this thread's ring, into out; false when there is none. */
bool tp_ops_request_read(tp_ops_request *out);

/* Says in this thread's ring that a window begins at step count step
 * (before the profiler starts: a death from there on loses it). Cold path:
 * once a window. */
void tp_ops_begun(uint64_t step);

/* Hands a finished window (trainprof/_ops.py's blob, len bytes) to the
 * recorder in a sealed memfd; false when none took it (then counted in the
 * process's page, which the recorder reads as the process ends). Cold
 * path: a few system calls, once a window. */
bool tp_ops_send(const void *blob, size_t len);

#endif
