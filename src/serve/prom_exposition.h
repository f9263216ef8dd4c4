/* prom_exposition.h: the live state (live/live_state.h) as the Prometheus
 * text exposition (format 0.0.4) that /metrics answers with.
 *
 * trainprof_info names the recorder; every series with a value follows, a
 * rate as the counter it integrates to (serve/prom_format.h), then per rank
 * and phase the summaries trainprof_phase_seconds and
 * trainprof_phase_device_seconds, and per rank the step, sample, batch,
 * epoch and dropped-event counters. agent labels every metric. */
#ifndef TP_SERVE_PROM_EXPOSITION_H
#define TP_SERVE_PROM_EXPOSITION_H

#include <stdio.h>

#include "live/live_state.h"

void tp_prom_expose(FILE *out, tp_live *l, const char *agent, const char *host);

#endif
