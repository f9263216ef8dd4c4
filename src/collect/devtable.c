/* devtable.c: name-keyed device state for counter-based collectors. */
#include "collect/devtable.h"

#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/counter.h"
#include "util/grow.h"
#include "util/labels.h"

tp_dev *tp_devtable_get(tp_devtable *t, const char *name, size_t name_len, bool *created)
{
    if (name_len >= TP_DEV_NAME)
        name_len = TP_DEV_NAME - 1;
    for (size_t i = 0; i < t->len; i++) {
        if (strlen(t->items[i].name) == name_len && memcmp(t->items[i].name, name, name_len) == 0) {
            *created = false;
            return &t->items[i];
        }
    }
    tp_dev *n = tp_grow_try(t->items, t->len, &t->cap, sizeof *n);
    if (!n)
        return NULL;
    t->items = n;
    tp_dev *d = &t->items[t->len++];
    memset(d, 0, sizeof *d);
    memcpy(d->name, name, name_len);
    d->name[name_len] = '\0';
    *created = true;
    return d;
}

void tp_devtable_begin_round(tp_devtable *t)
{
    for (size_t i = 0; i < t->len; i++)
        t->items[i].seen = false;
}

bool tp_devtable_update(tp_dev *d, const uint64_t cur[TP_DEV_COUNTERS], uint64_t now_ns,
                        uint64_t delta[TP_DEV_COUNTERS], uint64_t *dt_ns)
{
    bool ok = d->has_prev && now_ns > d->prev_ns;
    for (int i = 0; ok && i < TP_DEV_COUNTERS; i++)
        ok = tp_counter_delta(d->prev[i], cur[i], &delta[i]);
    if (ok)
        *dt_ns = now_ns - d->prev_ns;
    memcpy(d->prev, cur, sizeof d->prev);
    d->prev_ns = now_ns;
    d->has_prev = true;
    d->seen = true;
    return ok;
}

void tp_devtable_end_round(tp_devtable *t)
{
    for (size_t i = 0; i < t->len; i++)
        if (!t->items[i].seen)
            t->items[i].has_prev = false;
}

void tp_devtable_free(tp_devtable *t)
{
    free(t->items);
    t->items = NULL;
    t->len = t->cap = 0;
}

void tp_dev_register(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m)
{
    char labels[TP_LABELS_MAX];
    tp_labels1(labels, sizeof labels, m->label_key, d->name);
    for (int i = 0; i < m->count; i++)
        d->series[i] = tp_sink_series(sink, m->names[i], labels);
}

void tp_dev_set_link(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m, double bytes_per_s)
{
    char labels[TP_LABELS_MAX];
    tp_labels1(labels, sizeof labels, m->label_key, d->name);
    d->link_series = tp_sink_series(sink, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S, labels);
    d->link_bytes_per_s = bytes_per_s;
}

void tp_dev_feed(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m,
                 const uint64_t cur[TP_DEV_COUNTERS], uint64_t now_ns,
                 uint64_t sum[TP_DEV_COUNTERS])
{
    uint64_t delta[TP_DEV_COUNTERS], dt;
    if (!tp_devtable_update(d, cur, now_ns, delta, &dt))
        return;
    for (int i = 0; i < m->count; i++) {
        double v = tp_rate_per_s(delta[i], dt) * m->scale[i];
        tp_sink_sample(sink, d->series[i], now_ns,
                       m->most[i] > 0 && v > m->most[i] ? m->most[i] : v);
        sum[i] += delta[i];
    }
    if (d->link_bytes_per_s > 0)
        tp_sink_sample(sink, d->link_series, now_ns, d->link_bytes_per_s);
}

int tp_dev_totals(const tp_dev_metrics *m) { return m->totals ? m->totals : m->count; }

void tp_dev_emit_totals(tp_sink *sink, const uint32_t series[TP_DEV_COUNTERS],
                        const tp_dev_metrics *m, const uint64_t sum[TP_DEV_COUNTERS],
                        uint64_t dt_ns, uint64_t now_ns)
{
    if (!dt_ns)
        return;
    for (int i = 0; i < tp_dev_totals(m); i++)
        tp_sink_sample(sink, series[i], now_ns, tp_rate_per_s(sum[i], dt_ns) * m->scale[i]);
}
