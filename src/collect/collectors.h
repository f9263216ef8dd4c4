/* collectors.h: the set of collectors one recording runs. */
#ifndef TP_COLLECT_COLLECTORS_H
#define TP_COLLECT_COLLECTORS_H

#include <stddef.h>

#include "collect/collector.h"

#define TP_MAX_COLLECTORS 16

typedef struct tp_collector_set {
    tp_collector *items[TP_MAX_COLLECTORS];
    size_t len;
} tp_collector_set;

typedef enum tp_collector_scope {
    TP_COLLECT_HOST = 1,    /* /proc and /sys sources of the host */
    TP_COLLECT_DEVICES = 2, /* NVML and RAPL */
    TP_COLLECT_ALL = 3,
} tp_collector_scope;

/* Creates every collector in scope whose source is available; the others are
 * recorded as unavailable in env->sink. Also records the cgroup limits. */
void tp_collectors_open(tp_collector_set *set, const tp_collect_env *env, tp_collector_scope scope);

/* One tick: every collector samples at now_ns. */
void tp_collectors_sample(tp_collector_set *set, uint64_t now_ns);

void tp_collectors_close(tp_collector_set *set);

#endif
