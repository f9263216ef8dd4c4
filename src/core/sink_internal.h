/* sink_internal.h: the sink's state, for its own files only (sink.c, and
 * sink_stacks.c: the sampled stacks' runs). Everything here is used under
 * s->lock. */
#ifndef TP_CORE_SINK_INTERNAL_H
#define TP_CORE_SINK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/name_table.h"
#include "core/series_table.h"
#include "core/sink.h"
#include "core/stack_runs.h"
#include "core/stack_table.h"
#include "util/grow.h"

struct tp_sink {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    uint64_t start_ns;
    bool closed;
    tp_series_table registry;       /* the series made, by (metric, labels) */
    TP_VEC(tp_thread_info) threads; /* every thread ever seen */
    tp_name_table names;            /* region names, by hash */
    tp_name_table frames;           /* Python frames ("function\nfile"), by hash */
    tp_name_table said;             /* unavailable sources said ("source\nreason") */
    tp_name_table fact_keys[2];     /* the distinct keys of facts kept: the run's, processes' */
    uint64_t facts_refused;         /* facts of keys past the bounds */
    size_t events_max;              /* regions pending at most, and marks (0: no bound) */
    uint64_t behind;                /* events not kept: the writer was events_max behind */
    uint64_t threads_unrecorded;    /* threads whose ring processes could not hand over */
    tp_stack_table stacks;          /* sampled stacks, as a tree */
    tp_stack_runs runs;             /* each sampled thread's open run */
    /* the runs' clock: the latest stack or system sample's time (a thread
     * gone quiet, or the one stack of each thread asked for as a stall
     * begins with sampling off, is handed on by the system samples' ticks) */
    uint64_t stacks_now_ns;
    tp_batch pending;
    uint64_t lost[TP_LOST_KINDS]; /* what memory ran out for */
    uint64_t total_samples;
    uint32_t total_unavailable;
};

/* Makes room in a TP_VEC for one more item; ok false when memory ran out
 * (the vector as it was). */
#define VEC_ROOM(v, ok)                                                           \
    do {                                                                          \
        void *np_ = tp_grow_try((v).items, (v).len, &(v).cap, sizeof *(v).items); \
        if (np_)                                                                  \
            (v).items = np_;                                                      \
        (ok) = np_ != NULL;                                                       \
    } while (0)

/* Appends item to a TP_VEC; out of memory, counts it lost in s (of kind). */
#define VEC_PUSH(s, v, item, kind)         \
    do {                                   \
        bool ok_;                          \
        VEC_ROOM(v, ok_);                  \
        if (ok_)                           \
            (v).items[(v).len++] = (item); \
        else                               \
            (s)->lost[kind]++;             \
    } while (0)

/* t (CLOCK_MONOTONIC) as ns since the sink's start (0 before it). */
static inline uint64_t tp_sink_since_start(const tp_sink *s, uint64_t t)
{
    return t > s->start_ns ? t - s->start_ns : 0;
}

/* Hands the writer (pending) every open run of sampled stacks that grew and
 * whose checkpoint passed, or with all every one that grew (the end). */
void tp_sink_hand_open_runs(tp_sink *s, bool all);

#endif
