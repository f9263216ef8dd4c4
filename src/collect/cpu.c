/* cpu.c: CPU utilization, total and per core, from /proc/stat, and the
 * machine's steal.
 *
 * Utilization is the share of jiffies that were neither idle nor iowait
 * between two reads (guest time is already inside user time and is not added
 * again). Cores that go offline simply stop producing samples. Steal (the
 * eighth column, where the kernel has one) is the share of jiffies the
 * hypervisor ran something else while this machine's CPUs had work: inside
 * the utilization, and said apart for the whole machine only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/counter.h"
#include "util/labels.h"
#include "util/text_parse.h"
#include "util/grow.h"

typedef struct cpu_times {
    uint64_t busy, total, steal;
    bool valid, has_steal;
} cpu_times;

typedef struct cpu_collector {
    tp_collector base;
    tp_sink *sink;
    tp_procfile stat;
    uint32_t total_series, steal_series; /* steal_series 0: not registered yet */
    cpu_times total_prev;
    cpu_times *core_prev;  /* indexed by core number */
    uint32_t *core_series; /* 0: not registered yet */
    size_t cores_cap;
    bool said_unreadable; /* the run was told once that the file held nothing to read */
} cpu_collector;

/* Parses the numbers after "cpu" or "cpuN" into busy and total jiffies. */
static bool parse_times(const char **p, const char *end, cpu_times *out)
{
    uint64_t v[8] = {0};
    int n = 0;
    while (n < 8 && tp_parse_u64(p, end, &v[n]))
        n++;
    if (n < 4)
        return false;
    uint64_t idle = v[3] + v[4]; /* idle + iowait */
    out->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    out->busy = out->total - idle;
    out->steal = v[7];
    out->has_steal = n >= 8;
    out->valid = true;
    return true;
}

/* Emits the machine's steal between prev and cur (the whole machine's
 * times), where both reads had the column: before emit_util moves the
 * baseline. */
static void emit_steal(cpu_collector *c, const cpu_times *prev, const cpu_times *cur,
                       uint64_t now_ns)
{
    uint64_t dsteal, dtotal;
    if (!prev->valid || !prev->has_steal || !cur->has_steal ||
        !tp_counter_delta(prev->total, cur->total, &dtotal) || dtotal == 0 ||
        !tp_counter_delta(prev->steal, cur->steal, &dsteal) || dsteal > dtotal)
        return;
    if (!c->steal_series)
        c->steal_series = tp_sink_series(c->sink, TP_METRIC_CPU_STEAL_PERCENT, "{}");
    tp_sink_sample(c->sink, c->steal_series, now_ns, 100.0 * (double)dsteal / (double)dtotal);
}

/* Emits the utilization between prev and cur, then makes cur the baseline. */
static void emit_util(cpu_collector *c, uint32_t series, cpu_times *prev, const cpu_times *cur,
                      uint64_t now_ns)
{
    uint64_t dbusy, dtotal;
    if (prev->valid && tp_counter_delta(prev->total, cur->total, &dtotal) && dtotal > 0 &&
        tp_counter_delta(prev->busy, cur->busy, &dbusy) && dbusy <= dtotal)
        tp_sink_sample(c->sink, series, now_ns, 100.0 * (double)dbusy / (double)dtotal);
    *prev = *cur;
}

static bool ensure_core(cpu_collector *c, size_t core)
{
    if (core < c->cores_cap)
        return true;
    if (core >= 65536)
        return false;
    size_t prev_cap = c->cores_cap, series_cap = c->cores_cap, old = c->cores_cap;
    cpu_times *np = tp_grow_try(c->core_prev, core, &prev_cap, sizeof *np);
    if (!np)
        return false;
    c->core_prev = np;
    uint32_t *ns = tp_reserve_try(c->core_series, prev_cap, &series_cap, sizeof *ns);
    if (!ns)
        return false; /* core_prev grew, its capacity not counted: grown again next time */
    c->core_series = ns;
    memset(np + old, 0, (prev_cap - old) * sizeof *np);
    memset(ns + old, 0, (prev_cap - old) * sizeof *ns);
    c->cores_cap = prev_cap;
    return true;
}

static void cpu_sample(tp_collector *base, uint64_t now_ns)
{
    cpu_collector *c = (cpu_collector *)base;
    bool read = tp_procfile_read(&c->stat), total = false;
    const char *p = c->stat.buf, *end = read ? p + c->stat.len : p;
    for (; p < end; p = tp_next_line(p, end)) {
        if (end - p < 3 || memcmp(p, "cpu", 3) != 0)
            continue;
        const char *q = p + 3;
        cpu_times cur;
        if (q < end && (*q == ' ' || *q == '\t')) {
            if (parse_times(&q, end, &cur)) {
                emit_steal(c, &c->total_prev, &cur, now_ns);
                emit_util(c, c->total_series, &c->total_prev, &cur, now_ns);
                total = true;
            }
            continue;
        }
        uint64_t core;
        if (!tp_parse_u64(&q, end, &core) || !ensure_core(c, (size_t)core) ||
            !parse_times(&q, end, &cur))
            continue;
        if (!c->core_series[core]) {
            char num[24], labels[TP_LABELS_MAX];
            snprintf(num, sizeof num, "%llu", (unsigned long long)core);
            tp_labels1(labels, sizeof labels, "cpu", num);
            c->core_series[core] = tp_sink_series(c->sink, TP_METRIC_CPU_UTIL_PERCENT, labels);
        }
        emit_util(c, c->core_series[core], &c->core_prev[core], &cur, now_ns);
    }
    if (!total && !c->said_unreadable) /* an empty or garbled file: say so once */
        tp_sink_unavailable(c->sink, "cpu",
                            "/proc/stat could not be read or held no cpu line: CPU use not "
                            "recorded while it does not");
    c->said_unreadable |= !total;
}

static void cpu_destroy(tp_collector *base)
{
    cpu_collector *c = (cpu_collector *)base;
    tp_procfile_close(&c->stat);
    free(c->core_prev);
    free(c->core_series);
    free(c);
}

tp_collector *tp_cpu_collector_new(const tp_collect_env *env)
{
    cpu_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!tp_procfile_open(&c->stat, env->root, "/proc/stat")) {
        tp_collect_unavailable(env, "cpu", "/proc/stat", errno, "no /proc/stat");
        free(c);
        return NULL;
    }
    c->base.name = "cpu";
    c->base.sample = cpu_sample;
    c->base.destroy = cpu_destroy;
    c->sink = env->sink;
    c->total_series = tp_sink_series(env->sink, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    return &c->base;
}
