/* timings.h: where step time goes, from a run's regions and marks.
 *
 * Per rank and region name: count, total, mean and percentiles of durations,
 * and the share of the rank's step time (the sum of its step durations when
 * steps were marked, else the run's duration). The share counts only the
 * time inside the rank's closed steps (in_steps_s): an evaluation loop's
 * forward or the validation loader's fetches between epochs count in count
 * and total but would otherwise inflate the training step's shares. Nested regions count inside
 * their parents too, so shares of nested names add up to more than 1. Steps
 * run from one step mark to the next on the same thread, never across an
 * epoch mark; an epoch runs from its mark to the thread's next epoch mark (the
 * last one to its last step mark, or the end of the run). Regions whose work
 * ran on a CUDA device carry that work's device time too (device_*). A
 * row is a pause when its region is one of the training's pauses outside
 * the steps (tp_timing_is_pause). */
#ifndef TP_ANALYZE_TIMINGS_H
#define TP_ANALYZE_TIMINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stats.h"
#include "core/phases.h"
#include "core/timing_facts.h"
#include "store/reader.h"

/* The regions that are pauses in the training, which trainprof names and
 * keeps out of the steps: evaluate, sanity_check, checkpoint, compile. */
bool tp_timing_is_pause(const char *name);

/* Timing rows, steps and epochs from the run's regions and marks. Whether
 * to read the stored ones instead (summary_store.h) is the summary's call
 * (summary.c), made there only; either way tp_timings_finish then adds what
 * depends on the whole run: pauses, shares of step time, epochs' energy,
 * threads and dropped events. */
bool tp_timings_from_rows(tp_run *run, double run_duration_s, tp_timings *out, char *err,
                          size_t cap);
void tp_timings_finish(tp_run *run, double run_duration_s, tp_timings *out);

#endif
