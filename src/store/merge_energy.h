/* merge_energy.h: what a summary-only merge makes smaller (store/merge.c):
 * the energy samples it keeps, those the energy of an epoch looks up; and a
 * fleet's step groups. analyze/timings.c
 * measures the job's energy over the lowest rank's epochs, and over a rank's
 * own epoch only where the lowest rank has none of that number; the merge
 * keeps, of every input's cumulative energy series, the samples on either
 * side of those epochs' starts and ends. */
#ifndef TP_STORE_MERGE_ENERGY_H
#define TP_STORE_MERGE_ENERGY_H

#include <sqlite3.h>
#include <stddef.h>

/* Temp table epoch_bound (t_ns, merged clock): the starts and ends of the
 * lowest rank's epochs in main.summary_epoch, and of the other ranks' epochs
 * whose number the lowest rank has not (a few, not every rank's: bounds of
 * every rank made the merge quadratic in its inputs). Once all inputs'
 * epochs are in; the caller drops it. An SQLite result code. */
int tp_merge_epoch_bounds(sqlite3 *db);

/* Copies into main.sample, of the input at path (series ids + off, times +
 * dt), for each bound b, its energy series' two last samples at or before
 * b - 1 us, every sample within 1 us of b (the reader recomputes b from
 * seconds, give or take a nanosecond) and the two first after b + 1 us:
 * the two the reader interpolates between, or the two whose line it
 * extends a little past its samples (tp_run_series_counter_at). An SQLite
 * result code. */
int tp_merge_epoch_energy(sqlite3 *db, const char *path, long long off, long long dt);

/* A fleet's stored step groups made fewer: every rank's but the lowest
 * rank's (whose groups the changes of pace read) joined, consecutive ones,
 * into at most max groups: each phase's mean weighted by the groups' steps,
 * the pauses of any, the first start and the last end. The heatmap and the
 * phase charts of a fleet then need a tenth of the room. */
int tp_merge_thin_step_groups(sqlite3 *db, size_t max);

#endif
