/* live_state.h: the current values of a recording (or of `trainprof serve`),
 * kept for the Prometheus endpoint.
 *
 * The writer thread applies each batch it takes from the sink; the HTTP
 * thread renders the exposition text. One mutex guards both; applying is
 * proportional to the batch, rendering to the number of series and timing
 * phases. Memory is bounded: series are bounded by the machine's devices,
 * timing phases by TP_LIVE_MAX_PHASES (rank, name) pairs, beyond which they
 * are counted under the name "(other)"; ranks by TP_LIVE_MAX_RANKS. */
#ifndef TP_SERVE_LIVE_STATE_H
#define TP_SERVE_LIVE_STATE_H

#include <stdio.h>

#include "core/batch.h"

#define TP_LIVE_MAX_PHASES 4096
#define TP_LIVE_MAX_RANKS  1024

typedef struct tp_live tp_live;

/* agent and host label every metric. NULL on out-of-memory. */
tp_live *tp_live_new(const char *agent, const char *host, double interval_s);
void tp_live_free(tp_live *l);

/* Takes in what one batch of the sink holds (series, samples, threads, names,
 * intervals, marks). */
void tp_live_apply(tp_live *l, const tp_batch *b);

/* Writes the whole exposition (text format 0.0.4) to out. */
void tp_live_render(tp_live *l, FILE *out);

#endif
