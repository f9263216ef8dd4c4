/* summary_store.h: a run's report figures, kept in the run file itself.
 *
 * When the command ends, the recorder computes what `report` shows from its
 * own file (series statistics, timings per rank and region, steps, epochs,
 * each rank's parts) and writes it into the summary_* tables, then sets meta
 * summarized = 1. Readers use those rows instead of scanning every sample,
 * region and mark; the figures are the same, to the bit, as computing them
 * from the rows (tested). Figures that depend on the whole (possibly merged)
 * run are still computed at read time: shares of step time, energy per
 * epoch, medians and stragglers. A file without them (killed recorder, older
 * schema, or a merge whose inputs share ranks) is analysed from its rows. */
#ifndef TP_ANALYZE_SUMMARY_STORE_H
#define TP_ANALYZE_SUMMARY_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/rank_facts.h"
#include "core/stats.h"
#include "core/timing_facts.h"
#include "store/reader.h"

/* Whether run carries a stored summary to read from. */
bool tp_summary_stored(const tp_run *run);

/* The stored statistics of each series, in series order. */
typedef void (*tp_stored_series_fn)(void *ctx, const tp_run_series *series, const tp_stats *st);
bool tp_stored_series(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap);
/* The same over the steps (summary_series_steps): fn once per series that has
 * such figures; none, and true, in a file stored before them. */
bool tp_stored_series_steps(tp_run *run, tp_stored_series_fn fn, void *ctx, char *err, size_t cap);

/* Each agent's stored steps window (summary_steps_window); none, and true,
 * in a file stored before them. The caller frees *out. */
bool tp_stored_steps_windows(tp_run *run, tp_steps_window **out, size_t *n, char *err, size_t cap);

/* The stored timing rows, steps and epochs (shares and energy are left for
 * the caller to compute). */
bool tp_stored_timings(tp_run *run, tp_timings *out, char *err, size_t cap);

/* The stored rows of every rank (straggler fields left unset). */
bool tp_stored_ranks(tp_run *run, tp_ranks *out, char *err, size_t cap);

#endif
