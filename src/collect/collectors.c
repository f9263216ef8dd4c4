/* collectors.c: creating, ticking and closing the collectors of a run. */
#include "collect/collectors.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef tp_collector *(*collector_ctor)(const tp_collect_env *env);

static void add(tp_collector_set *set, collector_ctor ctor, const tp_collect_env *env)
{
    tp_collector *c = ctor(env);
    if (c && set->len < TP_MAX_COLLECTORS)
        set->items[set->len++] = c;
    else if (c)
        c->destroy(c);
}

void tp_collectors_open(tp_collector_set *set, const tp_collect_env *env, tp_collector_scope scope)
{
    set->len = 0;
    if (scope & TP_COLLECT_HOST) {
        add(set, tp_cpu_collector_new, env);
        add(set, tp_mem_collector_new, env);
        add(set, tp_disk_collector_new, env);
        add(set, tp_net_collector_new, env);
        add(set, tp_infiniband_collector_new, env);
        add(set, tp_pressure_collector_new, env);
        if (env->target_pid > 0)
            add(set, tp_proc_tree_collector_new, env);
        tp_cgroup_record_limits(env);
    }
    if (scope & TP_COLLECT_DEVICES) {
        add(set, tp_nvml_collector_new, env);
        add(set, tp_rapl_collector_new, env);
    }
}

void tp_collectors_sample(tp_collector_set *set, uint64_t now_ns)
{
    for (size_t i = 0; i < set->len; i++)
        set->items[i]->sample(set->items[i], now_ns);
}

void tp_collectors_close(tp_collector_set *set)
{
    for (size_t i = 0; i < set->len; i++)
        set->items[i]->destroy(set->items[i]);
    set->len = 0;
}
