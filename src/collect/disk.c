/* disk.c: disk IOPS and throughput per physical block device, from
 * /proc/diskstats.
 *
 * Only whole, physical disks are counted: a name must be in /sys/block (which
 * leaves partitions out) and /sys/block/NAME/device must exist (which leaves
 * out loop, ram, zram, device-mapper and md devices, whose I/O is already
 * counted on the disks under them). node_exporter excludes the same set by
 * name patterns; trainprof asks sysfs. Sectors in diskstats are 512 bytes.
 * A disk's busy share is the growth of its io_ticks (milliseconds with at
 * least one request in flight) over the interval, as iostat's %util, at
 * most 100 %. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/devtable.h"
#include "util/text_parse.h"

typedef struct disk_collector {
    tp_collector base;
    tp_sink *sink;
    const tp_sysroot *root;
    tp_procfile diskstats;
    tp_devtable devs;
    uint32_t total_series[TP_DEV_COUNTERS];
    uint64_t prev_round_ns;
} disk_collector;

static const tp_dev_metrics disk_metrics = {
    5,
    {TP_METRIC_DISK_READ_IOPS, TP_METRIC_DISK_WRITE_IOPS, TP_METRIC_DISK_READ_BYTES_PER_S,
     TP_METRIC_DISK_WRITE_BYTES_PER_S, TP_METRIC_DISK_BUSY_PERCENT},
    {1, 1, 512, 512, 0.1}, /* busy: milliseconds with I/O in flight per second -> percent */
    "device",
    4,                 /* no total of the busy shares */
    {0, 0, 0, 0, 100}, /* busy: at most all the time */
};

static bool is_physical_disk(const tp_sysroot *root, const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "/sys/block/%s/device", name);
    return tp_sysroot_exists(root, rel);
}

static void disk_sample(tp_collector *base, uint64_t now_ns)
{
    disk_collector *c = (disk_collector *)base;
    if (!tp_procfile_read(&c->diskstats))
        return;
    uint64_t sum[TP_DEV_COUNTERS] = {0};
    tp_devtable_begin_round(&c->devs);
    const char *p = c->diskstats.buf, *end = p + c->diskstats.len;
    for (; p < end; p = tp_next_line(p, end)) {
        const char *q = p, *name;
        size_t len;
        uint64_t major, minor, f[10];
        if (!tp_parse_u64(&q, end, &major) || !tp_parse_u64(&q, end, &minor) ||
            !tp_parse_word(&q, end, &name, &len))
            continue;
        int n = 0;
        while (n < 10 && tp_parse_u64(&q, end, &f[n]))
            n++;
        if (n < 10)
            continue; /* malformed or truncated line (every kernel since 2.6 has 11) */
        bool created;
        tp_dev *d = tp_devtable_get(&c->devs, name, len, &created);
        if (!d)
            continue;
        if (created) {
            d->counted = is_physical_disk(c->root, d->name);
            if (d->counted)
                tp_dev_register(c->sink, d, &disk_metrics);
        }
        if (!d->counted) {
            d->seen = true;
            continue;
        }
        /* reads completed, writes completed, sectors read, sectors written,
         * milliseconds spent with I/O in flight (iostat's %util) */
        const uint64_t cur[TP_DEV_COUNTERS] = {f[0], f[4], f[2], f[6], f[9]};
        tp_dev_feed(c->sink, d, &disk_metrics, cur, now_ns, sum);
    }
    tp_devtable_end_round(&c->devs);
    if (c->prev_round_ns)
        tp_dev_emit_totals(c->sink, c->total_series, &disk_metrics, sum, now_ns - c->prev_round_ns,
                           now_ns);
    c->prev_round_ns = now_ns;
}

static void disk_destroy(tp_collector *base)
{
    disk_collector *c = (disk_collector *)base;
    tp_procfile_close(&c->diskstats);
    tp_devtable_free(&c->devs);
    free(c);
}

tp_collector *tp_disk_collector_new(const tp_collect_env *env)
{
    disk_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!tp_procfile_open(&c->diskstats, env->root, "/proc/diskstats")) {
        tp_collect_unavailable(env, "disk", "/proc/diskstats", errno, "no /proc/diskstats");
        free(c);
        return NULL;
    }
    c->base.name = "disk";
    c->base.sample = disk_sample;
    c->base.destroy = disk_destroy;
    c->sink = env->sink;
    c->root = env->root;
    for (int i = 0; i < tp_dev_totals(&disk_metrics); i++)
        c->total_series[i] = tp_sink_series(env->sink, disk_metrics.names[i], "{}");
    return &c->base;
}
