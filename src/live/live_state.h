/* live_state.h: what a recording is doing now, the one live state that the
 * status line, `top` and the /metrics endpoint all read.
 *
 * It is fed batches (core/batch.h): by the recorder's writer thread as it
 * takes them from the sink, by `serve`'s, or by `top` from the rows a
 * running recording has added to its file (store/reader_live.h). From them it
 * keeps
 *   - every series' latest value and its integral over time (the counter a
 *     rate integrates to);
 *   - running totals per (rank, phase): regions closed, their seconds, their
 *     device times; per rank: steps, samples, batches, epochs, drops;
 *   - the last TP_LIVE_WINDOW seconds per second: steps, samples, batches and
 *     each phase's busy and device seconds (top's "last 10 s").
 * Times are the batches' own: nanoseconds since the run's anchor.
 *
 * Thread-safe: one mutex guards applying and reading; applying costs what the
 * batch holds, reading what the state holds. Memory is bounded by the
 * series (the machine's devices), TP_LIVE_MAX_PHASES (rank, name) pairs
 * (beyond them counted under "(other)"), TP_LIVE_MAX_RANKS ranks and
 * TP_LIVE_NAMES names in the window. Out of memory costs a series, name or
 * thread its live view, never the recording. No I/O. */
#ifndef TP_LIVE_LIVE_STATE_H
#define TP_LIVE_LIVE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"

#define TP_LIVE_MAX_PHASES 4096
#define TP_LIVE_MAX_RANKS  1024
#define TP_LIVE_WINDOW     10                   /* seconds */
#define TP_LIVE_BUCKETS    (TP_LIVE_WINDOW + 1) /* the window and the second in progress */
#define TP_LIVE_NAMES      32                   /* phases the window follows */
#define TP_LIVE_PHASES     6                    /* phases a window reports, busiest first */

typedef struct tp_live tp_live;

/* interval_s: the sampling interval, the time a series' first sample is
 * taken to cover in its integral. NULL on out of memory. */
tp_live *tp_live_new(double interval_s);
void tp_live_free(tp_live *l);

/* Takes in what one batch holds (series, samples, threads, names, regions,
 * device times, marks). */
void tp_live_apply(tp_live *l, const tp_batch *b);

/* The latest value of the series (metric, labels), if it has one. */
bool tp_live_latest(tp_live *l, const char *metric, const char *labels, double *value);

/* fn(ctx, labels, value) for every series of metric that has a value, in
 * the order they were made; called under the lock (fn must not call l). */
typedef void (*tp_live_latest_fn)(void *ctx, const char *labels, double value);
void tp_live_latest_each(tp_live *l, const char *metric, tp_live_latest_fn fn, void *ctx);

/* The whole state, read under the lock (tp_live_read). */
typedef struct tp_live_series {
    const char *metric, *labels; /* NULL metric: a series out of memory made unknown */
    bool has_value;
    double latest;
    double integral; /* sum of value x seconds it held, the first sample over interval_s */
} tp_live_series;

typedef struct tp_live_phase_total {
    int32_t rank; /* -1: a thread without a rank */
    uint32_t name;
    uint64_t count;
    double seconds;
    uint64_t device_count; /* device (CUDA event) times of the phase's regions */
    double device_seconds;
} tp_live_phase_total;

#define TP_LIVE_RECENT_STEPS 31 /* steps a rank's median step is of */

typedef struct tp_live_rank {
    int32_t rank;
    uint64_t steps, samples, batches, epochs, dropped;
    int64_t epoch; /* the latest epoch mark's value, -1 before one */
    /* its progress: the latest step mark, and the latest step mark or region
     * end of its threads (ns since the anchor; 0 before any), whether a step
     * was open then (its latest step-ish mark began one), and the durations
     * of its last steps (a ring), for its median */
    uint64_t last_step_ns, last_progress_ns;
    bool step_open;
    double recent[TP_LIVE_RECENT_STEPS];
    size_t nrecent;
    /* where it was last seen while stalled, and what it was doing there
     * (tp_live_set_where's); NULL where not said */
    char *where;
    char doing[24];
} tp_live_rank;

typedef struct tp_live_view {
    const tp_live_series *series;
    size_t nseries;
    const tp_live_phase_total *phases;
    size_t nphases;
    const tp_live_rank *ranks;
    size_t nranks;
    const char *const *names; /* by name id - 1; entries may be NULL */
    size_t nnames;
    uint64_t now_ns;              /* tp_live_now's */
    double stall_after_s;         /* tp_live_set_stall_after's */
    uint64_t events_not_recorded; /* tp_live_set_events_not_recorded's */
} tp_live_view;

/* How long rank r has gone without a step mark, and without any progress
 * (a step mark, a region closed), at now_ns; and whether it has stalled
 * (core/stall_rule.h: a step open and no progress past the threshold of
 * stall_after_s or its median step). */
typedef struct tp_live_progress {
    double since_step_s, since_progress_s, threshold_s;
    bool stalled;
} tp_live_progress;
void tp_live_rank_progress(const tp_live_rank *r, uint64_t now_ns, double stall_after_s,
                           tp_live_progress *out);

/* The latest time the state has seen (a sample, a mark, a region's end):
 * the recording's "now" as far as its batches tell, within a sampling
 * interval; what /metrics and top judge a stall at. */
uint64_t tp_live_now(tp_live *l);

/* Takes in rank's earlier step marks (TP_MARK_STEP or _STEP_END at t_ns,
 * ascending): top's view of a recording it joined late. */
void tp_live_seed_steps(tp_live *l, int32_t rank, const uint64_t *t_ns, const uint32_t *kinds,
                        size_t n);

/* The stalled rank that has gone longest without progress, and how long,
 * judged at now_ns or the latest time the state saw, whichever is later
 * (top's state holds no samples: it passes the recording's now); false when
 * none has stalled. */
bool tp_live_worst_stall(tp_live *l, uint64_t now_ns, int32_t *rank, double *seconds);

/* The ranks stalled at now_ns or the latest time the state saw, whichever
 * is later (as tp_live_worst_stall), up to max of them into out; how many
 * there are in all. */
size_t tp_live_stalled_ranks(tp_live *l, uint64_t now_ns, int32_t *out, size_t max);

/* Where rank was last seen while stalled, and what it was doing (a word,
 * "" unknown), as its view will say them: the recorder reads them from its
 * run file (record/stall_where.h); where NULL forgets them. A rank the
 * state does not know is left unknown. */
void tp_live_set_where(tp_live *l, int32_t rank, const char *where, const char *doing);

/* The run's own stall threshold (record --stall-after; 0: the rule's). */
void tp_live_set_stall_after(tp_live *l, double seconds);

/* The timing events the recorder has not kept so far (its memory ran out,
 * or its writer was too far behind: tp_sink_events_not_kept). */
void tp_live_set_events_not_recorded(tp_live *l, uint64_t n);

/* A phase's name in a view; "(other)" for name 0 and names never defined. */
const char *tp_live_view_name(const tp_live_view *v, uint32_t name);

typedef void (*tp_live_read_fn)(void *ctx, const tp_live_view *v);
void tp_live_read(tp_live *l, tp_live_read_fn fn, void *ctx);

/* The last TP_LIVE_WINDOW whole seconds before now_ns (since the anchor). */
typedef struct tp_live_window_phase {
    char name[48];
    double share;        /* busy seconds in the window / the window's seconds */
    double device_share; /* the same for its device times */
    bool has_device;     /* it had device times in the window, even 0 ns */
} tp_live_window_phase;

typedef struct tp_live_window {
    double steps_per_s;      /* 0 when no steps were marked */
    double samples_per_s;    /* 0 when batch sizes were not seen */
    double batches_per_step; /* micro-batches a step; 0 when none seen */
    tp_live_window_phase phases[TP_LIVE_PHASES];
    size_t nphases;
} tp_live_window;

void tp_live_window_at(tp_live *l, uint64_t now_ns, tp_live_window *out);

#endif
