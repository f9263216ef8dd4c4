/* sampler.h: the sampler thread of a recording.
 *
 * It opens the collectors (NVML init can take a second; it happens here, not
 * before the training starts), then ticks them every interval on absolute
 * deadlines, so the cadence does not drift with the cost of a tick. A tick
 * that falls behind skips ahead instead of bursting. */
#ifndef TP_RECORD_SAMPLER_H
#define TP_RECORD_SAMPLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect/collectors.h"

typedef struct tp_sampler {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    bool started;
    uint64_t interval_ns;
    tp_collect_env env;
    tp_collector_scope scope;
    tp_collector_set set;
    uint64_t ticks;
} tp_sampler;

/* Starts the thread; env must outlive the sampler. */
bool tp_sampler_start(tp_sampler *s, const tp_collect_env *env, tp_collector_scope scope,
                      uint64_t interval_ns);

#define TP_INTERVAL_MIN 0.05 /* seconds */
#define TP_INTERVAL_MAX 60.0

/* Stops after the tick in progress, joins, closes the collectors. */
void tp_sampler_stop(tp_sampler *s);

#endif
