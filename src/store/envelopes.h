/* envelopes.h: the stored envelopes of a fleet's metrics (table
 * summary_envelope), which a merged run of many node files keeps instead of
 * every series' plotted points: per metric compared across agents, the
 * lowest, the median and the highest of its series (each series' mean in a
 * bucket of the run's time line), bucket by bucket (analyze/fleet_envelopes.h
 * computes them). A fleet's html then reads a few thousand rows, not every
 * node's points. */
#ifndef TP_STORE_ENVELOPES_H
#define TP_STORE_ENVELOPES_H

#include <stdbool.h>
#include <stddef.h>

#include "store/reader.h"

#define TP_SCHEMA_SUMMARY_ENVELOPE                                                          \
    "CREATE TABLE IF NOT EXISTS summary_envelope (metric TEXT NOT NULL, lines INTEGER NOT " \
    "NULL, x REAL NOT NULL, low REAL NOT NULL, median REAL NOT NULL, high REAL NOT NULL);"

/* One metric's envelope: over `lines` series, n points at x (seconds since
 * the run's start, a bucket's middle). */
typedef struct tp_envelope_rows {
    const char *metric;
    size_t lines;
    const double *x, *low, *median, *high;
    size_t n;
} tp_envelope_rows;

/* Writes the envelopes into the run file at path (one being made: a merge's
 * output), replacing any, and sets meta envelopes = 1; false (reason in err)
 * when it can't. */
bool tp_envelopes_write(const char *path, const tp_envelope_rows *rows, size_t n, char *err,
                        size_t cap);

/* Whether run stores envelopes (meta envelopes = 1). */
bool tp_envelopes_stored(const tp_run *run);

/* Calls fn with each stored metric's envelope, in the order written; the
 * arrays live until fn returns. */
typedef bool (*tp_envelope_fn)(void *ctx, const tp_envelope_rows *rows);
bool tp_stored_envelopes(tp_run *run, tp_envelope_fn fn, void *ctx, char *err, size_t cap);

#endif
