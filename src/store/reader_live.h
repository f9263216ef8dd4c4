/* reader_live.h: the rows a recording still running has added to its run
 * file (WAL mode lets a reader see each committed second), as batches for the
 * live state (live/live_state.h) that `top` shows.
 *
 * A tp_run_tail remembers how far each table was read (by rowid), so a
 * refresh costs what the training added since the last one, not the size of
 * the run. */
#ifndef TP_STORE_READER_LIVE_H
#define TP_STORE_READER_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/batch.h"
#include "store/reader.h"

typedef struct tp_run_tail {
    int64_t name_id, thread_id, region_rowid, mark_rowid, device_rowid;
} tp_run_tail; /* all 0 before the first read */

/* The recording's time now, in nanoseconds since its anchor (meta
 * start_mono_ns, on this machine's monotonic clock). False when the file has
 * no anchor or no timings (schema 1): a recording not yet started, or not
 * one this reader follows. */
bool tp_run_live_now(const tp_run *run, uint64_t *now_ns);

/* Appends to out what was added since tail: names, threads, the regions
 * that end at or after since_ns, device times and marks from since_ns on
 * (older ones are only skipped: the live window starts there). False when
 * a query failed or memory ran out; tail then stays where the rows read
 * left it, and out holds them. */
bool tp_run_read_tail(tp_run *run, tp_run_tail *tail, uint64_t since_ns, tp_batch *out);

/* Each rank's last per_rank step and step-end marks, by rank then time (the
 * caller frees *out): what top seeds its live state with, so that a rank
 * that stopped before top looked is seen stalled. False when the file can't
 * be read. */
bool tp_run_recent_steps(tp_run *run, size_t per_rank, tp_run_mark **out, size_t *n);

/* Where each rank's threads were last seen inside a region: the innermost
 * node and state (TP_STACK_STATE_*) of the rank's stack sample whose last
 * sample is latest, among the file's latest TP_LIVE_WHERE_ROWS rows (one
 * pass for every rank: 6 ms on 10,000 rows; a long run's millions would
 * take a second); fn(ctx, rank, node, state) once per rank that has one.
 * False where the file can't be read. A run of samples that goes on is
 * first written a second on (core/stack_runs.h), then every 10 s: a thread
 * stuck in one place is seen there within seconds, its row among the
 * latest. */
#define TP_LIVE_WHERE_ROWS 20000
typedef void (*tp_run_where_fn)(void *ctx, int32_t rank, uint32_t node, int state);
bool tp_run_live_wheres(tp_run *run, tp_run_where_fn fn, void *ctx);

/* The begin times of the steps marked after *rowid (0: from the start) by
 * the thread that marked the first step (*thread_id; 0 until known, then
 * set here), in order, at most max of them into out; returns how many and
 * moves *rowid past the rows read. A refresh reads what the recording
 * added since the last one (top's pace, analyze/pace_now.h). */
size_t tp_run_step_begins_after(tp_run *run, int64_t *rowid, int64_t *thread_id, int64_t *out,
                                size_t max);

/* The mean of the first agent's series of metric with no labels over the
 * samples in (t0_ns, t1_ns], found by name in the file as it is now (the
 * series the recorder added since the file was opened too). False when it
 * has none there. */
bool tp_run_live_mean(tp_run *run, const char *metric, int64_t t0_ns, int64_t t1_ns, double *mean);

/* Of the first agent's series of metric, whatever their labels (one per
 * process), the largest mean over the samples in (t0_ns, t1_ns], and how
 * many series had samples there (*n); false when none had. */
bool tp_run_live_max_mean(tp_run *run, const char *metric, int64_t t0_ns, int64_t t1_ns,
                          double *max, int *n);

#endif
