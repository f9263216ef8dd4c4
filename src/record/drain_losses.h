/* drain_losses.h: what the drain could not take, said as the run's
 * unavailable sources when it stops. */
#ifndef TP_RECORD_DRAIN_LOSSES_H
#define TP_RECORD_DRAIN_LOSSES_H

#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"

typedef struct tp_drain_losses {
    int accept_errno; /* the last failed accept's */
    uint64_t accept_failures, turned_away, rings_dropped, rings_refused;
} tp_drain_losses;

/* The counts, each as an unavailable source with the bounds it met. */
void tp_drain_losses_say(tp_sink *sink, const tp_drain_losses *l, int max_conns,
                         unsigned rings_per_process, unsigned rings_max);

/* The processes still connected at the end (alive: their events from then
 * on are not recorded): n of them, the first min(n, 8) pids in pids. */
void tp_drain_outlivers_say(tp_sink *sink, const int32_t *pids, size_t n);

#endif
