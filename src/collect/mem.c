/* mem.c: host memory and swap from /proc/meminfo. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "util/text_parse.h"

typedef struct mem_collector {
    tp_collector base;
    tp_sink *sink;
    tp_procfile meminfo;
    uint32_t used, available, swap_used;
    bool said_unreadable; /* the run was told once that the file held nothing to read */
} mem_collector;

enum { MEM_TOTAL, MEM_AVAILABLE, MEM_FREE, MEM_BUFFERS, MEM_CACHED, SWAP_TOTAL, SWAP_FREE, MEM_N };

static const char *const mem_keys[MEM_N] = {
    "MemTotal:", "MemAvailable:", "MemFree:", "Buffers:", "Cached:", "SwapTotal:", "SwapFree:",
};

static void mem_sample(tp_collector *base, uint64_t now_ns)
{
    mem_collector *c = (mem_collector *)base;
    bool read = tp_procfile_read(&c->meminfo);
    uint64_t kb[MEM_N];
    bool have[MEM_N] = {false};
    const char *p = c->meminfo.buf, *end = read ? p + c->meminfo.len : p;
    for (; p < end; p = tp_next_line(p, end)) {
        const char *word;
        size_t len;
        const char *q = p;
        if (!tp_parse_word(&q, end, &word, &len))
            continue;
        for (int k = 0; k < MEM_N; k++) {
            if (!have[k] && tp_word_is(word, len, mem_keys[k])) {
                have[k] = tp_parse_u64(&q, end, &kb[k]);
                break;
            }
        }
    }
    if (!have[MEM_TOTAL]) { /* an empty or garbled file: say so once, not nothing */
        if (!c->said_unreadable)
            tp_sink_unavailable(c->sink, "mem",
                                "/proc/meminfo could not be read or held no MemTotal: host "
                                "memory not recorded while it does not");
        c->said_unreadable = true;
        return;
    }
    /* Kernels before 3.14 have no MemAvailable: estimate it as psutil does. */
    uint64_t avail = have[MEM_AVAILABLE] ? kb[MEM_AVAILABLE]
                                         : (have[MEM_FREE] ? kb[MEM_FREE] : 0) +
                                               (have[MEM_BUFFERS] ? kb[MEM_BUFFERS] : 0) +
                                               (have[MEM_CACHED] ? kb[MEM_CACHED] : 0);
    if (avail > kb[MEM_TOTAL])
        avail = kb[MEM_TOTAL];
    tp_sink_sample(c->sink, c->available, now_ns, (double)avail * 1024.0);
    tp_sink_sample(c->sink, c->used, now_ns, (double)(kb[MEM_TOTAL] - avail) * 1024.0);
    if (have[SWAP_TOTAL] && have[SWAP_FREE] && kb[SWAP_FREE] <= kb[SWAP_TOTAL])
        tp_sink_sample(c->sink, c->swap_used, now_ns,
                       (double)(kb[SWAP_TOTAL] - kb[SWAP_FREE]) * 1024.0);
}

static void mem_destroy(tp_collector *base)
{
    mem_collector *c = (mem_collector *)base;
    tp_procfile_close(&c->meminfo);
    free(c);
}

tp_collector *tp_mem_collector_new(const tp_collect_env *env)
{
    mem_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!tp_procfile_open(&c->meminfo, env->root, "/proc/meminfo")) {
        tp_collect_unavailable(env, "mem", "/proc/meminfo", errno, "no /proc/meminfo");
        free(c);
        return NULL;
    }
    c->base.name = "mem";
    c->base.sample = mem_sample;
    c->base.destroy = mem_destroy;
    c->sink = env->sink;
    c->used = tp_sink_series(env->sink, TP_METRIC_HOST_MEM_USED_BYTES, "{}");
    c->available = tp_sink_series(env->sink, TP_METRIC_HOST_MEM_AVAILABLE_BYTES, "{}");
    c->swap_used = tp_sink_series(env->sink, TP_METRIC_SWAP_USED_BYTES, "{}");
    return &c->base;
}
