/* pressure.c: pressure stall information from /proc/pressure.
 *
 * Each file has "some" and "full" lines ending in total=<microseconds stalled>.
 * The percentage is the growth of that total over the real time between two
 * reads, which is exact for any interval (the kernel's avg10 is a 10 s
 * exponential average and would smear short stalls). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/counter.h"
#include "util/text_parse.h"

typedef struct psi_line {
    const char *file_key; /* "cpu", "io", "memory" */
    const char *kind;     /* "some" or "full" */
    const char *metric;
} psi_line;

static const psi_line psi_lines[] = {
    {"cpu", "some", TP_METRIC_PRESSURE_CPU_SOME_PERCENT},
    {"io", "some", TP_METRIC_PRESSURE_IO_SOME_PERCENT},
    {"io", "full", TP_METRIC_PRESSURE_IO_FULL_PERCENT},
    {"memory", "some", TP_METRIC_PRESSURE_MEMORY_SOME_PERCENT},
    {"memory", "full", TP_METRIC_PRESSURE_MEMORY_FULL_PERCENT},
};
#define PSI_N (sizeof psi_lines / sizeof psi_lines[0])

typedef struct pressure_collector {
    tp_collector base;
    tp_sink *sink;
    tp_procfile files[3]; /* cpu, io, memory */
    uint32_t series[PSI_N];
    uint64_t prev_total[PSI_N];
    bool has_prev[PSI_N];
    uint64_t prev_ns;
} pressure_collector;

static const char *const psi_files[3] = {"cpu", "io", "memory"};

/* Finds "<kind> ... total=N" in the file's text. */
static bool find_total(const tp_procfile *pf, const char *kind, uint64_t *total)
{
    const char *p = pf->buf, *end = p + pf->len;
    size_t klen = strlen(kind);
    for (; p < end; p = tp_next_line(p, end)) {
        const char *line_end = tp_next_line(p, end);
        if ((size_t)(line_end - p) <= klen || memcmp(p, kind, klen) != 0)
            continue;
        for (const char *q = p; q + 6 <= line_end; q++) {
            if (memcmp(q, "total=", 6) == 0) {
                const char *v = q + 6;
                return tp_parse_u64(&v, line_end, total);
            }
        }
    }
    return false;
}

static void pressure_sample(tp_collector *base, uint64_t now_ns)
{
    pressure_collector *c = (pressure_collector *)base;
    bool read_ok[3];
    for (int f = 0; f < 3; f++)
        read_ok[f] = c->files[f].fd >= 0 && tp_procfile_read(&c->files[f]);
    uint64_t dt_us = c->prev_ns && now_ns > c->prev_ns ? (now_ns - c->prev_ns) / 1000 : 0;
    for (size_t i = 0; i < PSI_N; i++) {
        int f = 0;
        while (strcmp(psi_files[f], psi_lines[i].file_key) != 0)
            f++;
        uint64_t total, d;
        if (!read_ok[f] || !find_total(&c->files[f], psi_lines[i].kind, &total)) {
            c->has_prev[i] = false;
            continue;
        }
        if (c->has_prev[i] && dt_us && tp_counter_delta(c->prev_total[i], total, &d)) {
            double pct = 100.0 * (double)d / (double)dt_us;
            tp_sink_sample(c->sink, c->series[i], now_ns, pct > 100.0 ? 100.0 : pct);
        }
        c->prev_total[i] = total;
        c->has_prev[i] = true;
    }
    c->prev_ns = now_ns;
}

static void pressure_destroy(tp_collector *base)
{
    pressure_collector *c = (pressure_collector *)base;
    for (int f = 0; f < 3; f++)
        tp_procfile_close(&c->files[f]);
    free(c);
}

tp_collector *tp_pressure_collector_new(const tp_collect_env *env)
{
    pressure_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    int opened = 0;
    int err = 0;
    for (int f = 0; f < 3; f++) {
        char rel[64] = "/proc/pressure/";
        strcat(rel, psi_files[f]);
        bool ok = tp_procfile_open(&c->files[f], env->root, rel);
        opened += ok;
        err = ok ? err : errno;
    }
    if (opened == 0) {
        tp_collect_unavailable(env, "pressure", "/proc/pressure", err,
                               "no /proc/pressure (kernel without PSI, or psi=0)");
        free(c);
        return NULL;
    }
    c->base.name = "pressure";
    c->base.sample = pressure_sample;
    c->base.destroy = pressure_destroy;
    c->sink = env->sink;
    for (size_t i = 0; i < PSI_N; i++)
        c->series[i] = tp_sink_series(env->sink, psi_lines[i].metric, "{}");
    return &c->base;
}
