/* rapl.c: CPU package and DRAM energy from the powercap sysfs (RAPL).
 *
 * Zones are /sys/class/powercap/intel-rapl:N (packages) and
 * intel-rapl:N:M (subzones; "dram" is kept, "core" and "uncore" are inside the
 * package figure already). energy_uj wraps at max_energy_range_uj; it is
 * readable by root only on kernels >= 5.10 (CVE-2020-8694). The recorded
 * cpu_energy_joules is cumulative since the run started, per domain. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/counter.h"
#include "util/labels.h"
#include "util/text_parse.h"

#define RAPL_MAX_ZONES 32

typedef struct rapl_zone {
    tp_procfile energy;
    uint64_t max_range, prev_uj, total_uj;
    bool has_prev;
    uint32_t series;
} rapl_zone;

typedef struct rapl_collector {
    tp_collector base;
    tp_sink *sink;
    rapl_zone zones[RAPL_MAX_ZONES];
    size_t nzones;
} rapl_collector;

static void rapl_sample(tp_collector *base, uint64_t now_ns)
{
    (void)now_ns;
    rapl_collector *c = (rapl_collector *)base;
    for (size_t i = 0; i < c->nzones; i++) {
        rapl_zone *z = &c->zones[i];
        uint64_t uj, d;
        if (!tp_procfile_read(&z->energy))
            continue;
        uint64_t read_ns = tp_clock_mono_ns(); /* the read's own time: see gpu_nvml.c */
        const char *p = z->energy.buf;
        if (!tp_parse_u64(&p, z->energy.buf + z->energy.len, &uj))
            continue;
        if (z->has_prev) {
            /* A delta the counter can't explain is dropped, never negative. */
            if (!tp_counter_delta_range(z->prev_uj, uj, z->max_range, &d))
                d = 0;
            z->total_uj += d;
        }
        z->prev_uj = uj;
        z->has_prev = true;
        tp_sink_sample(c->sink, z->series, read_ns, (double)z->total_uj / 1e6);
    }
}

static void rapl_destroy(tp_collector *base)
{
    rapl_collector *c = (rapl_collector *)base;
    for (size_t i = 0; i < c->nzones; i++)
        tp_procfile_close(&c->zones[i].energy);
    free(c);
}

/* Adds one zone; returns the errno of a failed open, 0 on success or skip. */
static int add_zone(rapl_collector *c, const tp_sysroot *root, const char *zone)
{
    char rel[300], name[64], domain[96];
    snprintf(rel, sizeof rel, "/sys/class/powercap/%s/name", zone);
    if (!tp_sysroot_read_text(root, rel, name, sizeof name))
        return 0;
    bool sub = strchr(strchr(zone, ':') + 1, ':') != NULL;
    if (sub && strcmp(name, "dram") != 0)
        return 0;
    if (sub) {
        char parent[64], pname[64] = "package";
        snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(zone, ':') - zone), zone);
        snprintf(rel, sizeof rel, "/sys/class/powercap/%s/name", parent);
        tp_sysroot_read_text(root, rel, pname, sizeof pname);
        snprintf(domain, sizeof domain, "%s/%s", pname, name);
    } else {
        snprintf(domain, sizeof domain, "%s", name);
    }
    if (c->nzones >= RAPL_MAX_ZONES)
        return 0;
    rapl_zone *z = &c->zones[c->nzones];
    memset(z, 0, sizeof *z);
    snprintf(rel, sizeof rel, "/sys/class/powercap/%s/energy_uj", zone);
    errno = 0;
    if (!tp_procfile_open(&z->energy, root, rel) || !tp_procfile_read(&z->energy)) {
        int err = errno ? errno : EIO;
        tp_procfile_close(&z->energy);
        return err;
    }
    snprintf(rel, sizeof rel, "/sys/class/powercap/%s/max_energy_range_uj", zone);
    if (!tp_sysroot_read_u64(root, rel, &z->max_range))
        z->max_range = 0;
    char labels[TP_LABELS_MAX];
    tp_labels1(labels, sizeof labels, "domain", domain);
    z->series = tp_sink_series(c->sink, TP_METRIC_CPU_ENERGY_JOULES, labels);
    c->nzones++;
    return 0;
}

tp_collector *tp_rapl_collector_new(const tp_collect_env *env)
{
    int fd = tp_sysroot_openat(env->root, "/sys/class/powercap", O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        tp_collect_unavailable(env, "rapl", "/sys/class/powercap", err,
                               "no /sys/class/powercap (no RAPL on this machine)");
        return NULL;
    }
    rapl_collector *c = calloc(1, sizeof *c);
    if (!c) {
        closedir(d);
        return NULL;
    }
    c->sink = env->sink;
    int first_err = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "intel-rapl:", 11) != 0)
            continue;
        int err = add_zone(c, env->root, e->d_name);
        if (err && !first_err)
            first_err = err;
    }
    closedir(d);
    if (c->nzones == 0) {
        char reason[160];
        if (first_err == EACCES || first_err == EPERM)
            snprintf(reason, sizeof reason,
                     "permission denied reading energy_uj (root only on kernels >= 5.10)");
        else if (first_err)
            snprintf(reason, sizeof reason, "cannot read energy_uj: %s", strerror(first_err));
        else
            snprintf(reason, sizeof reason, "no intel-rapl zones under /sys/class/powercap");
        tp_sink_unavailable(env->sink, "rapl", reason);
        free(c);
        return NULL;
    }
    c->base.name = "rapl";
    c->base.sample = rapl_sample;
    c->base.destroy = rapl_destroy;
    return &c->base;
}
