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

/* Trace Event Format JSON (Perfetto UI, chrome://tracing): a process per
 * training process (named "rank N" where it had one) with a track per thread
 * and regions as nested slices, device (CUDA event) times on a track beside
 * their thread's (placed at the region's host start), steps and epochs as
 * instant events, sampled Python stacks as instants on their thread's track
 * (named by the innermost function, the stack in args), and counter tracks
 * for the system metrics of each agent and each GPU. Times are microseconds
 * since the run started. */
bool tp_export_chrome(FILE *out, tp_run *run, char *err, size_t cap);

/* One row per sample: t_s,agent,metric,labels,value (labels as k=v;k=v). */
bool tp_export_csv(FILE *out, tp_run *run, char *err, size_t cap);

/* The sampled Python stacks, folded (flamegraph.pl, speedscope, inferno):
 * one line per distinct stack, "PHASE;frame;...;frame COUNT", outermost
 * frame first, each "function (dir/file.py:line)"; PHASE is the region the
 * thread had open, dataloader_worker for a DataLoader worker's samples, or
 * (no region). Lines are sorted; the same stack from several ranks or
 * nodes is one line. Nothing for a run without stacks. */
bool tp_export_folded(FILE *out, tp_run *run, char *err, size_t cap);

#endif
