/* batch.h: what the recorder measures, as it travels from producers to the
 * writer and the live state: samples of series, timing events (regions,
 * marks, device times) of training threads, names, metadata. The words every
 * layer above shares; no I/O here. */
#ifndef TP_CORE_BATCH_H
#define TP_CORE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ops_window.h"
#include "ring.h"

typedef struct tp_sample {
    uint32_t series;
    uint64_t t_ns; /* nanoseconds since the run's monotonic anchor */
    double value;
} tp_sample;

typedef struct tp_series_def {
    uint32_t id;
    char *metric;
    char *labels; /* JSON object text */
} tp_series_def;

typedef struct tp_text_pair {
    char *key;
    char *value;
} tp_text_pair;

typedef struct tp_gpu_info {
    int index;
    char name[96];
    char uuid[96];
    uint64_t mem_total_bytes;
    char energy_source[32]; /* "counter" or "power_integral" */
} tp_gpu_info;

/* A training thread that sent events (one ring). */
typedef struct tp_thread_info {
    uint32_t id;
    int32_t pid, tid, rank, local_rank, world_size;
    char name[16];
    uint64_t dropped; /* events the thread dropped on a full ring */
    bool cuda_visible_set;
    char cuda_visible[512]; /* its process's CUDA_VISIBLE_DEVICES (ring.h's size) */
    char device_uuid[96];   /* the GPU its process drives (its CUDA UUID), "" unknown */
} tp_thread_info;

/* A closed region: [start, end) on one thread, depth 0 for outermost. */
typedef struct tp_interval {
    uint32_t thread;
    uint32_t name;
    uint32_t depth;
    uint64_t start_ns, end_ns; /* since the run's anchor */
} tp_interval;

/* The device (GPU) time of a region begun at start_ns on thread. */
typedef struct tp_device_span {
    uint32_t thread;
    uint32_t name;
    uint64_t start_ns; /* the region's host start, since the run's anchor */
    uint64_t device_ns;
} tp_device_span;

/* A step or epoch boundary. */
typedef struct tp_mark {
    uint32_t thread;
    uint32_t kind; /* TP_MARK_STEP, _STEP_END, _EPOCH or _SAMPLES */
    uint64_t t_ns;
    int64_t value;
} tp_mark;

/* A mark's kind, one encoding from the training's ring to the run file's
 * mark.kind (schema 7) and every reader: the ring's event kinds.
 *   TP_MARK_STEP      a step begins (and the one before ends)
 *   TP_MARK_EPOCH     an epoch begins; value: its number
 *   TP_MARK_SAMPLES   a batch fetched for the open step; value: its samples
 *   TP_MARK_STEP_END  the open step ended there and none begins until the
 *                     thread's next step (an evaluation pass mid-epoch) */
enum {
    TP_MARK_STEP = TP_EV_STEP,
    TP_MARK_EPOCH = TP_EV_EPOCH,
    TP_MARK_SAMPLES = TP_EV_SAMPLES,
    TP_MARK_STEP_END = TP_EV_STEP_END,
};

typedef struct tp_name_def {
    uint32_t id;
    char *text;
} tp_name_def;

/* A node of the sampled stacks' tree (core/stack_table.h): its frame (a
 * frame id, whose text is "function\nfile"), at line, called from parent
 * (0: the outermost frame). */
typedef struct tp_stack_node {
    uint32_t id, parent, frame;
    int32_t line;
} tp_stack_node;

/* What a sampled stack's state says (tp_stack_sample.state). */
enum {
    TP_STACK_STATE_ON_CPU = 1,    /* the thread was running or runnable */
    TP_STACK_STATE_KNOWN = 2,     /* TP_STACK_STATE_ON_CPU is the kernel's word */
    TP_STACK_STATE_TRUNCATED = 4, /* its outermost frames are missing */
    /* the kernel had it in uninterruptible sleep (state D: a read of a disk
     * or a network mount, a device's driver); with TP_STACK_STATE_KNOWN only */
    TP_STACK_STATE_BLOCKED = 16,
    /* it ran trainprof's own work in C (a wrapper without frames of its own,
     * lib's tp_own_work): the frames are its caller's */
    TP_STACK_STATE_OWN = 32,
    /* the bits a stack count keeps (8 is the readers': store/reader_stacks.h) */
    TP_STACK_STATE_COUNTED = TP_STACK_STATE_ON_CPU | TP_STACK_STATE_KNOWN | TP_STACK_STATE_BLOCKED,
};

/* A thread's Python stack, sampled by its process's sampler (thread: the
 * sampler's ring; tid: the sampled thread's kernel id, 0 unknown): count
 * samples in a row of that thread with the same phase, state and stack, the
 * first at t_ns and the last span_ns later. row: its row's id in the run
 * file (a run still growing is written again under the same id). */
typedef struct tp_stack_sample {
    uint64_t row;
    uint32_t thread;
    int32_t tid;
    uint64_t t_ns;  /* since the run's anchor */
    uint32_t phase; /* the thread's innermost open region (a name id), 0 none */
    uint32_t state; /* TP_STACK_STATE_* */
    uint32_t node;  /* its innermost frame's node */
    uint32_t count; /* 1 or more */
    uint64_t span_ns;
} tp_stack_sample;

/* A vector of T with count and capacity. */
#define TP_VEC(T)        \
    struct {             \
        T *items;        \
        size_t len, cap; \
    }

typedef struct tp_batch {
    TP_VEC(tp_series_def) series;
    TP_VEC(tp_sample) samples;
    TP_VEC(tp_text_pair) unavailable; /* key: source, value: reason */
    TP_VEC(tp_text_pair) meta;
    TP_VEC(tp_gpu_info) gpus;
    TP_VEC(tp_thread_info) threads; /* new threads, and final drop counts */
    TP_VEC(tp_name_def) names;
    TP_VEC(tp_interval) intervals;
    TP_VEC(tp_mark) marks;
    TP_VEC(tp_device_span) device_spans;
    TP_VEC(tp_name_def) frames; /* text: "function\nfile" */
    TP_VEC(tp_stack_node) stack_nodes;
    TP_VEC(tp_stack_sample) stacks;
    TP_VEC(tp_ops_window *) ops_windows; /* capture windows (owned) */
} tp_batch;

/* Frees the texts a batch holds and empties it, keeping its vectors'
 * allocations; tp_batch_free releases those too. */
void tp_batch_clear(tp_batch *b);
void tp_batch_free(tp_batch *b);

#endif
