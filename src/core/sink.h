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
#ifndef TP_CORE_SINK_H
#define TP_CORE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"

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
/* A source that could not be measured, and why; the same pair said again (by
 * each process a sandbox covers) is kept once. */
void tp_sink_unavailable(tp_sink *s, const char *source, const char *reason);
void tp_sink_meta(tp_sink *s, const char *key, const char *value);
/* A fact a training process told (the meta key it is stored under; of a
 * process: proc.PID.KEY): kept as meta while the run has fewer distinct such
 * keys than its bound (TP_SINK_FACT_KEYS_MAX for the run's, or
 * TP_SINK_PROCESS_FACT_KEYS_MAX for processes' own), or the key is one of
 * them; the rest are counted and said once, as an unavailable source, when
 * the sink closes. */
#define TP_SINK_FACT_KEYS_MAX         1024u
#define TP_SINK_PROCESS_FACT_KEYS_MAX 65536u
void tp_sink_fact(tp_sink *s, bool of_process, const char *key, const char *value);
void tp_sink_gpu(tp_sink *s, const tp_gpu_info *gpu);

/* Timing events (from the drain thread). Times are CLOCK_MONOTONIC. */

/* Returns the thread id; 0 when memory ran out (events sent to thread 0, or
 * with name 0, are counted lost). Here and in tp_sink_thread_rank a rank,
 * local rank or world size below 0 (a process wrote it) is kept as -1. */
uint32_t tp_sink_thread(tp_sink *s, const tp_thread_info *info);
void tp_sink_thread_dropped(tp_sink *s, uint32_t thread, uint64_t dropped);
/* The rank a thread's process gave itself after the thread's first event. */
void tp_sink_thread_rank(tp_sink *s, uint32_t thread, int32_t rank, int32_t local_rank,
                         int32_t world_size);
/* The GPU a thread's process drives, by its CUDA UUID (the fact cuda.device). */
void tp_sink_thread_device(tp_sink *s, uint32_t thread, const char *uuid);
/* The same id for the same text; 0 when memory ran out. */
uint32_t tp_sink_name(tp_sink *s, const char *text);
void tp_sink_interval(tp_sink *s, uint32_t thread, uint32_t name, uint32_t depth,
                      uint64_t start_mono_ns, uint64_t end_mono_ns);
/* v[0..n) as tp_sink_interval takes each (their start_ns and end_ns
 * CLOCK_MONOTONIC), under one lock: the drain's regions a batch at a time
 * (a lock a region took 9 % of its time under a flood). */
void tp_sink_intervals(tp_sink *s, const tp_interval *v, size_t n);
void tp_sink_mark(tp_sink *s, uint32_t thread, uint32_t kind, uint64_t t_mono_ns, int64_t value);
void tp_sink_device_span(tp_sink *s, uint32_t thread, uint32_t name, uint64_t start_mono_ns,
                         uint64_t device_ns);

/* Sampled Python stacks (from the drain). A frame's text is
 * "function\nfile"; the same id for the same text, 0 when memory ran out. */
uint32_t tp_sink_frame(tp_sink *s, const char *text);
/* The text of a name or frame id the sink gave out (a frame's is "function\n
 * file"), into out; false ("") for an id it never gave. */
bool tp_sink_name_text(tp_sink *s, uint32_t id, char *out, size_t cap);
bool tp_sink_frame_text(tp_sink *s, uint32_t id, char *out, size_t cap);
/* One sample of thread tid (0: unknown), taken by the sampler whose ring is
 * thread: frames[0..n) and their lines innermost first (sink frame ids, 0
 * for one not known), phase a name id (0: none), state TP_STACK_STATE_*.
 * A sample the same as its thread's previous one (phase, state, stack)
 * joins that run (tp_stack_sample.count) rather than making a row of its
 * own, however long the run (core/stack_runs.h): a run is pending (for the
 * writer, by its row id) when it ends, when it has grown for
 * TP_STACK_RUN_CHECKPOINT_NS since it was last pending, and at the end. */
void tp_sink_stack(tp_sink *s, uint32_t thread, uint64_t t_mono_ns, int32_t tid, uint32_t phase,
                   uint32_t state, const uint32_t *frames, const int32_t *lines, size_t n);
/* Thread tid's last sample again, count times, the last at t_mono_ns (the
 * sampler saw its CPU time unmoved); counted lost where it has no run. */
void tp_sink_stack_repeat(tp_sink *s, uint32_t thread, uint64_t t_mono_ns, int32_t tid,
                          uint32_t count);

/* A capture window a training process sent (from the drain): the sink
 * takes it (and frees it), its times made the run's. */
void tp_sink_ops_window(tp_sink *s, tp_ops_window *w);

/* The regions and device times pending for the writer at most, and apart
 * from them the step and epoch marks (a flood of regions never costs a
 * step's boundary): one more, while the writer is that far behind, is not
 * kept and is counted (tp_sink_behind). A training that makes regions
 * faster than the run file takes them (millions a second) then costs
 * events, not memory without end (the recorder grew by 55 MB a second so).
 * The writer holds one taken batch besides: at most twice this many
 * regions, 64 MiB each, are held. */
#define TP_SINK_PENDING_EVENTS_MAX (1u << 21)
/* Another bound than TP_SINK_PENDING_EVENTS_MAX (0: none); before the
 * producers start. */
void tp_sink_set_pending_events_max(tp_sink *s, size_t n);
/* The timing events not kept so far because the writer was behind. */
uint64_t tp_sink_behind(tp_sink *s);
/* Those and the timing events memory ran out for: all it did not keep. */
uint64_t tp_sink_events_not_kept(tp_sink *s);
/* Threads a process could not hand its ring to the recorder for (its page's
 * count, ring.h's tp_proc_page, read as it ended): added up, and said once
 * as the unavailable source "timings" when the sink closes. */
void tp_sink_threads_unrecorded(tp_sink *s, uint64_t n);

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

#endif
