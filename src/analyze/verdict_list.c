/* verdict_list.c: the list of verdicts the rules fill (tp_verdicts_add,
 * tp_verdicts_free) and the figure both the step rules and the machine rules
 * read (tp_verdicts_agent_cores): verdicts.h. */
#include <stdlib.h>
#include <string.h>

#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "util/grow.h"

tp_verdict *tp_verdicts_add(tp_verdicts *v, tp_verdict_kind kind)
{
    v->items = tp_grow(v->items, v->n, &v->cap, sizeof *v->items);
    tp_verdict *d = &v->items[v->n++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    return d;
}

double tp_verdicts_agent_cores(const tp_summary *s, int64_t agent)
{
    const char *meta = tp_run_agent_meta_get(s->run, agent, TP_META_CPU_COUNT);
    double cores = meta ? strtod(meta, NULL) : 0;
    if (cores >= 1)
        return cores;
    cores = 0; /* no cpu_count in its metadata: its per-core series */
    for (size_t i = 0; i < s->n; i++)
        cores += s->items[i].series->agent_id == agent &&
                 strcmp(s->items[i].series->metric, TP_METRIC_CPU_UTIL_PERCENT) == 0 &&
                 strcmp(s->items[i].series->labels, "{}") != 0;
    return cores;
}

void tp_verdicts_free(tp_verdicts *v)
{
    tp_gpu_memory_free(&v->gpu_memory);
    free(v->items);
    memset(v, 0, sizeof *v);
}
