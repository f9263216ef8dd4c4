/* stack_runs.h: the sink's open run of each sampled thread.
 *
 * A thread's samples with the same phase, state and stack make one run, one
 * row in the run file however long it lasts (an idle thread's wait of an
 * hour: one row, not 360,000). The sink keeps each thread's latest run here,
 * keyed by (the sampler's ring thread, the sampled tid), and hands it to the
 * writer (under its row id, so that a later copy replaces the row) when the
 * run ends, when it has grown for TP_STACK_RUN_CHECKPOINT_NS since it was
 * last handed (what a killed recorder can lose of it), and at the end; a
 * run never handed, after TP_STACK_RUN_FIRST_CHECKPOINT_NS: a wait that
 * began (a stalled rank's) is in the file soon, for top, the status line
 * and /metrics to say where it is, at one more row written for each run
 * that long (a busy thread's runs, a sample or a few, end before). Not
 * thread-safe: the sink holds its lock. */
#ifndef TP_CORE_STACK_RUNS_H
#define TP_CORE_STACK_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"

#define TP_STACK_RUN_CHECKPOINT_NS       10000000000ull /* 10 s */
#define TP_STACK_RUN_FIRST_CHECKPOINT_NS 1000000000ull  /* 1 s */

typedef struct tp_stack_open_run {
    uint64_t key; /* thread << 32 | tid; 0: a free slot */
    tp_stack_sample run;
    uint32_t handed_count; /* run.count when last handed to the writer; 0 never */
    uint64_t handed_ns;    /* when (the run's time of its last sample then) */
} tp_stack_open_run;

typedef struct tp_stack_runs {
    tp_stack_open_run *slots; /* open addressing, a power of two */
    size_t cap, len;
    uint64_t next_row; /* the last row id given */
} tp_stack_runs;

/* The open run of (thread, tid); NULL where it has none. */
tp_stack_open_run *tp_stack_runs_find(tp_stack_runs *r, uint32_t thread, int32_t tid);

/* A new open run for x's thread in place of its last (which the caller
 * handed on first), with the next row id; NULL when memory ran out. */
tp_stack_open_run *tp_stack_runs_open(tp_stack_runs *r, const tp_stack_sample *x);

/* Whether o has samples its last handed copy lacks: handing it on then
 * records them (and when). */
bool tp_stack_run_grown(const tp_stack_open_run *o);
void tp_stack_run_handed(tp_stack_open_run *o);

void tp_stack_runs_free(tp_stack_runs *r);

#endif
