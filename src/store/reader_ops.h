/* reader_ops.h: a run file's capture windows (schema 10's op_window,
 * op_string, op_event; docs/ops.md), as the analysis reads them: the
 * windows first, then each one's texts and events and its step thread's
 * regions over it, one window at a time. A file without them has none. */
#ifndef TP_STORE_READER_OPS_H
#define TP_STORE_READER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ops_window.h"
#include "store/reader.h"

typedef struct tp_run_op_window {
    int64_t id;
    int64_t thread; /* the step thread's row, 0 unknown */
    int32_t pid, tid;
    int rank; /* its thread's rank, -1 unknown */
    int reason;
    int64_t first_step;
    int steps;
    bool cuda;
    int64_t start_ns, end_ns;
    int64_t events, dropped, device_memory, alloc_start;
    bool skipped;
    char *note; /* NULL none */
} tp_run_op_window;

/* A region of the step thread over a window. */
typedef struct tp_run_op_region {
    char *name;
    int depth;
    int64_t start_ns, end_ns;
} tp_run_op_region;

typedef struct tp_run_op_data {
    char **strings;
    size_t nstrings;
    tp_op_event *events; /* by start */
    size_t nevents;
    tp_run_op_region *regions; /* by start */
    size_t nregions;
} tp_run_op_data;

/* A run of a thread's sampled stacks (count samples, the first at t_ns, the
 * last span_ns later) and its innermost frame's node. */
typedef struct tp_run_op_sample {
    int64_t t_ns, span_ns;
    int64_t count;
    uint32_t node;
} tp_run_op_sample;

/* The stack samples of thread tid of process pid that overlap [t0, t1];
 * none in a file without stacks. */
bool tp_run_op_samples(tp_run *run, int32_t pid, int32_t tid, int64_t t0, int64_t t1,
                       tp_run_op_sample **out, size_t *n, char *err, size_t cap);

/* Every window, by start. True with none for a file without them. */
bool tp_run_op_windows(tp_run *run, tp_run_op_window **out, size_t *n, char *err, size_t cap);
void tp_run_op_windows_free(tp_run_op_window *w, size_t n);

/* One window's texts, events and step-thread regions. */
bool tp_run_op_data_load(tp_run *run, const tp_run_op_window *w, tp_run_op_data *out, char *err,
                         size_t cap);
void tp_run_op_data_free(tp_run_op_data *d);

#endif
