/* net.c: network throughput per interface and in total, from /proc/net/dev.
 *
 * Loopback is excluded. Each line is "  name: rx_bytes rx_packets errs drop
 * fifo frame compressed multicast tx_bytes ...". An interface whose link
 * speed sysfs knows also gets net_link_speed_bytes_per_s, so that the report
 * can say when traffic ran near it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/devtable.h"
#include "util/text_parse.h"

typedef struct net_collector {
    tp_collector base;
    tp_sink *sink;
    const tp_sysroot *root;
    tp_procfile dev;
    tp_devtable ifaces;
    uint32_t total_series[TP_DEV_COUNTERS];
    uint64_t prev_round_ns;
} net_collector;

static const tp_dev_metrics net_metrics = {
    2,
    {TP_METRIC_NET_SENT_BYTES_PER_S, TP_METRIC_NET_RECV_BYTES_PER_S, NULL, NULL},
    {1, 1, 0, 0},
    "interface",
    0, /* both metrics: the sum of the interfaces */
    {0},
};

/* The interface's link speed in bytes/s from /sys/class/net/NAME/speed (Mb/s),
 * read once when it appears; 0 when unknown (virtual NICs say -1 or refuse). */
static double link_speed(const tp_sysroot *root, const char *name)
{
    char rel[160], text[32];
    snprintf(rel, sizeof rel, "/sys/class/net/%.64s/speed", name);
    if (!tp_sysroot_read_text(root, rel, text, sizeof text))
        return 0;
    long mbps = strtol(text, NULL, 10);
    return mbps > 0 ? (double)mbps * 1e6 / 8 : 0;
}

static void net_sample(tp_collector *base, uint64_t now_ns)
{
    net_collector *c = (net_collector *)base;
    if (!tp_procfile_read(&c->dev))
        return;
    uint64_t sum[TP_DEV_COUNTERS] = {0};
    tp_devtable_begin_round(&c->ifaces);
    const char *p = c->dev.buf, *end = p + c->dev.len;
    for (; p < end; p = tp_next_line(p, end)) {
        const char *line_end = tp_next_line(p, end);
        const char *colon = memchr(p, ':', (size_t)(line_end - p));
        if (!colon)
            continue; /* the two header lines have no colon */
        const char *name = tp_skip_blanks(p, colon);
        size_t len = (size_t)(colon - name);
        const char *q = colon + 1;
        uint64_t f[9];
        int n = 0;
        while (n < 9 && tp_parse_u64(&q, line_end, &f[n]))
            n++;
        if (n < 9 || len == 0)
            continue;
        bool created;
        tp_dev *d = tp_devtable_get(&c->ifaces, name, len, &created);
        if (!d)
            continue;
        if (created) {
            d->counted = strcmp(d->name, "lo") != 0;
            if (d->counted) {
                tp_dev_register(c->sink, d, &net_metrics);
                double speed = link_speed(c->root, d->name);
                if (speed > 0)
                    tp_dev_set_link(c->sink, d, &net_metrics, speed);
            }
        }
        if (!d->counted) {
            d->seen = true;
            continue;
        }
        const uint64_t cur[TP_DEV_COUNTERS] = {f[8], f[0], 0, 0};
        tp_dev_feed(c->sink, d, &net_metrics, cur, now_ns, sum);
    }
    tp_devtable_end_round(&c->ifaces);
    if (c->prev_round_ns)
        tp_dev_emit_totals(c->sink, c->total_series, &net_metrics, sum, now_ns - c->prev_round_ns,
                           now_ns);
    c->prev_round_ns = now_ns;
}

static void net_destroy(tp_collector *base)
{
    net_collector *c = (net_collector *)base;
    tp_procfile_close(&c->dev);
    tp_devtable_free(&c->ifaces);
    free(c);
}

tp_collector *tp_net_collector_new(const tp_collect_env *env)
{
    net_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!tp_procfile_open(&c->dev, env->root, "/proc/net/dev")) {
        tp_collect_unavailable(env, "net", "/proc/net/dev", errno, "no /proc/net/dev");
        free(c);
        return NULL;
    }
    c->base.name = "net";
    c->base.sample = net_sample;
    c->base.destroy = net_destroy;
    c->sink = env->sink;
    c->root = env->root;
    for (int i = 0; i < net_metrics.count; i++)
        c->total_series[i] = tp_sink_series(env->sink, net_metrics.names[i], "{}");
    return &c->base;
}
