/* export.h: a run file as a Chrome/Perfetto trace or as CSV, streamed.
 *
 * Both write as they read (regions and samples are never held in memory) and
 * return false with a one-line reason in err if the run file can't be read. */
#ifndef TP_RENDER_EXPORT_H
#define TP_RENDER_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "store/reader.h"

/* How much an export may write (export --max-bytes): exporters look at
 * *written (a counting stream's, util/counted_file.h) before each event,
 * row or line, and past max_bytes leave the rest out, counted in cut, the
 * output still whole (a trace's JSON closed). NULL: no bound. */
typedef struct tp_export_budget {
    const uint64_t *written;
    uint64_t max_bytes;
    uint64_t cut; /* events, rows or lines left out */
} tp_export_budget;

/* Whether there is room for one more event; counts one cut where there is
 * none. */
bool tp_export_room(tp_export_budget *b);

/* Trace Event Format JSON (Perfetto UI, chrome://tracing): a process per
 * training process (named "rank N" where it had one) with a track per thread
 * and regions as nested slices, device (CUDA event) times on a track beside
 * their thread's (placed at the region's host start), steps and epochs as
 * instant events, sampled Python stacks as instants on their thread's track
 * (named by the innermost function, the stack in args), and counter tracks
 * for the system metrics of each agent and each GPU. Times are microseconds
 * since the run started. */
bool tp_export_chrome(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap);

/* The capture windows' operators, launches and kernels with flow arrows
 * from each launch to its kernel (export_ops.c), as events of a trace whose
 * separator sep writes (false: past the budget, nothing written). */
bool tp_export_chrome_ops(FILE *out, tp_run *run, bool (*sep)(void *ctx), void *ctx, char *err,
                          size_t cap);

/* One row per sample: t_s,agent,metric,labels,value (labels as k=v;k=v). */
bool tp_export_csv(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap);

/* The sampled Python stacks, folded (flamegraph.pl, speedscope, inferno):
 * one line per distinct stack, "PHASE;frame;...;frame COUNT", outermost
 * frame first, each "function (dir/file.py:line)"; PHASE is the region the
 * thread had open, dataloader_worker for a DataLoader worker's samples, or
 * (no region). Lines are sorted; the same stack from several ranks or
 * nodes is one line. Nothing for a run without stacks. */
bool tp_export_folded(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap);

/* Each rank's steps by phase, one JSON object a line, rank after rank: its
 * steps (analyze/step_phases.h, capture windows' left out) in at most
 * TP_EXPORT_STEP_GROUPS groups of consecutive steps, each with its first
 * step (from 1), its span, mean seconds a step, steps/s, the mean
 * seconds a step of each phase, and its GPU's mean utilization then (null
 * unknown). What record --log-to sends to a tracker. */
#define TP_EXPORT_STEP_GROUPS 1000
bool tp_export_steps(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap);

#endif
