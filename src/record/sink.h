/* sink.h: where collectors put what they measure, and where the writer takes it.
 *
 * One sink per recording. Producers (the sampler thread, the slow NVML thread,
 * and later the timing-event drain) call the tp_sink_* producer functions; the
 * writer thread takes everything pending in one swap with tp_sink_take. The
 * sink is thread-safe (one mutex; this is the recorder process, not the
 * training's hot path). Sample buffers are reused between takes, so steady
 * state allocates nothing.
 *
 * Series are identified by (metric, labels). tp_sink_series returns the same
 * id for the same pair however often it is asked, so a device that vanishes
 * and comes back continues its series. */
#ifndef TP_RECORD_SINK_H
#define TP_RECORD_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

enum { TP_MARK_STEP = 1, TP_MARK_EPOCH = 2, TP_MARK_SAMPLES = 3, TP_MARK_STEP_END = 4 };

typedef struct tp_name_def {
    uint32_t id;
    char *text;
} tp_name_def;

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
} tp_batch;

typedef struct tp_sink tp_sink;

/* start_mono_ns is the run's anchor: sample times are stored relative to it. */
tp_sink *tp_sink_new(uint64_t start_mono_ns);
void tp_sink_free(tp_sink *s);

uint64_t tp_sink_start_ns(const tp_sink *s);

/* Producer side. None of it fails: memory running out costs the item, and
 * is counted (tp_sink_losses). */
/* The series' id; 0 when memory ran out (its samples are counted lost). */
uint32_t tp_sink_series(tp_sink *s, const char *metric, const char *labels);
/* t_mono_ns is CLOCK_MONOTONIC; negative or non-finite values are dropped. */
void tp_sink_sample(tp_sink *s, uint32_t series, uint64_t t_mono_ns, double value);
void tp_sink_unavailable(tp_sink *s, const char *source, const char *reason);
void tp_sink_meta(tp_sink *s, const char *key, const char *value);
void tp_sink_gpu(tp_sink *s, const tp_gpu_info *gpu);

/* Timing events (from the drain thread). Times are CLOCK_MONOTONIC. */
/* Returns the thread id; 0 when memory ran out (events sent to thread 0, or
 * with name 0, are counted lost). */
uint32_t tp_sink_thread(tp_sink *s, const tp_thread_info *info);
void tp_sink_thread_dropped(tp_sink *s, uint32_t thread, uint64_t dropped);
/* The rank a thread's process gave itself after the thread's first event. */
void tp_sink_thread_rank(tp_sink *s, uint32_t thread, int32_t rank, int32_t local_rank,
                         int32_t world_size);
/* The same id for the same text; 0 when memory ran out. */
uint32_t tp_sink_name(tp_sink *s, const char *text);
void tp_sink_interval(tp_sink *s, uint32_t thread, uint32_t name, uint32_t depth,
                      uint64_t start_mono_ns, uint64_t end_mono_ns);
void tp_sink_mark(tp_sink *s, uint32_t thread, uint32_t kind, uint64_t t_mono_ns, int64_t value);
void tp_sink_device_span(tp_sink *s, uint32_t thread, uint32_t name, uint64_t start_mono_ns,
                         uint64_t device_ns);

/* Reader side for live displays: the latest value of a series, if any. */
bool tp_sink_latest(tp_sink *s, const char *metric, const char *labels, double *value);
/* The same for every series of metric that has one, in the order they were
 * made: fn(ctx, labels, value), called under the sink's lock (fn must not
 * call the sink). */
typedef void (*tp_sink_latest_fn)(void *ctx, const char *labels, double value);
void tp_sink_latest_each(tp_sink *s, const char *metric, tp_sink_latest_fn fn, void *ctx);
/* What the recorder could not keep because memory ran out: the sink counts
 * its own losses (an item it had no room for, a series, name or thread it
 * could not make, and everything later sent to one), and producers add
 * theirs with tp_sink_lost. */
typedef enum {
    TP_LOST_SAMPLES, /* system-metric samples */
    TP_LOST_EVENTS,  /* regions, step and epoch marks, device times */
    TP_LOST_THREADS, /* training threads (all their events count as lost too) */
    TP_LOST_OTHER,   /* series, region names, metadata, GPU descriptions */
    TP_LOST_KINDS
} tp_lost_kind;
void tp_sink_lost(tp_sink *s, tp_lost_kind kind, uint64_t n);
void tp_sink_losses(tp_sink *s, uint64_t out[TP_LOST_KINDS]);

/* Counts of everything accepted so far. */
void tp_sink_counts(tp_sink *s, uint64_t *samples, uint32_t *series, uint32_t *unavailable);

/* Consumer side. Waits until something is pending, the sink is closed, or
 * timeout_ms passes. Returns false once the sink is closed and drained. */
bool tp_sink_wait(tp_sink *s, int timeout_ms);
/* Moves everything pending into out (which must be empty: tp_batch_clear). */
void tp_sink_take(tp_sink *s, tp_batch *out);
/* Wakes the consumer for the last time; producers must have stopped. */
void tp_sink_close(tp_sink *s);

void tp_batch_clear(tp_batch *b);
void tp_batch_free(tp_batch *b);

#endif
