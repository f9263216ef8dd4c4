/* infiniband.c: InfiniBand port throughput from /sys/class/infiniband.
 *
 * NCCL over InfiniBand (RDMA) bypasses the kernel's network stack, so its
 * traffic never shows in /proc/net/dev. The port counters port_xmit_data and
 * port_rcv_data count it, in units of 4 bytes. Ports are recorded as
 * net_sent/recv_bytes_per_s with the label ib_port="DEVICE/PORT" and are kept
 * out of the interface total, which IPoIB traffic would otherwise count twice. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/devtable.h"
#include "util/text_parse.h"

#define IB_MAX_PORTS 64

typedef struct ib_port {
    tp_procfile xmit, rcv;
} ib_port;

typedef struct ib_collector {
    tp_collector base;
    tp_sink *sink;
    ib_port ports[IB_MAX_PORTS];
    tp_devtable devs; /* same order as ports */
    size_t nports;
} ib_collector;

static const tp_dev_metrics ib_metrics = {
    2,
    {TP_METRIC_NET_SENT_BYTES_PER_S, TP_METRIC_NET_RECV_BYTES_PER_S, NULL, NULL},
    {4, 4, 0, 0},
    "ib_port",
    0, /* unused: ports stay out of the interface totals */
    {0},
};

static bool read_counter(tp_procfile *pf, uint64_t *out)
{
    if (!tp_procfile_read(pf))
        return false;
    const char *p = pf->buf;
    return tp_parse_u64(&p, pf->buf + pf->len, out);
}

static void ib_sample(tp_collector *base, uint64_t now_ns)
{
    ib_collector *c = (ib_collector *)base;
    uint64_t unused[TP_DEV_COUNTERS] = {0};
    tp_devtable_begin_round(&c->devs);
    for (size_t i = 0; i < c->nports; i++) {
        uint64_t cur[TP_DEV_COUNTERS] = {0};
        if (read_counter(&c->ports[i].xmit, &cur[0]) && read_counter(&c->ports[i].rcv, &cur[1]))
            tp_dev_feed(c->sink, &c->devs.items[i], &ib_metrics, cur, now_ns, unused);
    }
    tp_devtable_end_round(&c->devs);
}

static void ib_destroy(tp_collector *base)
{
    ib_collector *c = (ib_collector *)base;
    for (size_t i = 0; i < c->nports; i++) {
        tp_procfile_close(&c->ports[i].xmit);
        tp_procfile_close(&c->ports[i].rcv);
    }
    tp_devtable_free(&c->devs);
    free(c);
}

static DIR *open_dir(const tp_sysroot *root, const char *rel)
{
    int fd = tp_sysroot_openat(root, rel, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d)
        close(fd);
    return d;
}

/* Adds every port of one HCA that has both data counters. */
static void add_ports(ib_collector *c, const tp_sysroot *root, const char *hca)
{
    char rel[512];
    snprintf(rel, sizeof rel, "/sys/class/infiniband/%s/ports", hca);
    DIR *d = open_dir(root, rel);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && c->nports < IB_MAX_PORTS) {
        if (e->d_name[0] == '.')
            continue;
        ib_port *port = &c->ports[c->nports];
        snprintf(rel, sizeof rel, "/sys/class/infiniband/%s/ports/%s/counters/port_xmit_data", hca,
                 e->d_name);
        if (!tp_procfile_open(&port->xmit, root, rel))
            continue;
        snprintf(rel, sizeof rel, "/sys/class/infiniband/%s/ports/%s/counters/port_rcv_data", hca,
                 e->d_name);
        if (!tp_procfile_open(&port->rcv, root, rel)) {
            tp_procfile_close(&port->xmit);
            continue;
        }
        char name[TP_DEV_NAME];
        snprintf(name, sizeof name, "%.40s/%.16s", hca, e->d_name);
        bool created;
        tp_dev *dev = tp_devtable_get(&c->devs, name, strlen(name), &created);
        if (!dev) {
            tp_procfile_close(&port->xmit);
            tp_procfile_close(&port->rcv);
            continue;
        }
        dev->counted = true;
        tp_dev_register(c->sink, dev, &ib_metrics);
        char text[64]; /* "100 Gb/sec (4X EDR)": the data rate each way */
        snprintf(rel, sizeof rel, "/sys/class/infiniband/%s/ports/%s/rate", hca, e->d_name);
        double gbps = tp_sysroot_read_text(root, rel, text, sizeof text) ? strtod(text, NULL) : 0;
        if (gbps > 0)
            tp_dev_set_link(c->sink, dev, &ib_metrics, gbps * 1e9 / 8);
        c->nports++;
    }
    closedir(d);
}

tp_collector *tp_infiniband_collector_new(const tp_collect_env *env)
{
    DIR *d = open_dir(env->root, "/sys/class/infiniband");
    if (!d) {
        tp_collect_unavailable(env, "infiniband", "/sys/class/infiniband", errno,
                               "no /sys/class/infiniband (no InfiniBand devices)");
        return NULL;
    }
    ib_collector *c = calloc(1, sizeof *c);
    if (!c) {
        closedir(d);
        return NULL;
    }
    c->sink = env->sink;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            add_ports(c, env->root, e->d_name);
    closedir(d);
    if (c->nports == 0) {
        tp_sink_unavailable(env->sink, "infiniband",
                            "no readable port counters under /sys/class/infiniband");
        free(c->devs.items);
        free(c);
        return NULL;
    }
    c->base.name = "infiniband";
    c->base.sample = ib_sample;
    c->base.destroy = ib_destroy;
    return &c->base;
}
