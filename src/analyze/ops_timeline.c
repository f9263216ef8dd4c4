/* ops_timeline.c: see ops_timeline.h. */
#include "analyze/ops_timeline.h"

#include <stdio.h>
#include <string.h>

#include "util/oom.h"

/* The lane named label (made when new; the last lane when all are taken). */
static int lane_of(tp_ops_facts *f, const char *label,
                   const char *(*intern)(tp_ops_facts *, const char *))
{
    const char *name = intern(f, label);
    for (size_t i = 0; i < f->nlanes; i++)
        if (f->lanes[i] == name)
            return (int)i;
    if (f->nlanes == sizeof f->lanes / sizeof *f->lanes)
        return (int)f->nlanes - 1;
    f->lanes[f->nlanes] = name;
    return (int)f->nlanes++;
}

static void box(tp_ops_facts *f, int lane, const char *name, int64_t a, int64_t z, int64_t t0,
                int64_t t1)
{
    if (f->nboxes >= TP_OPS_BOXES_MAX || z <= t0 || a >= t1)
        return;
    a = a < t0 ? t0 : a;
    z = z > t1 ? t1 : z;
    f->boxes[f->nboxes++] =
        (struct tp_ops_box){lane, name, (double)(a - t0) / 1e9, (double)(z - t0) / 1e9};
}

void tp_ops_timeline_take(tp_ops_facts *f, const tp_run_op_data *d, int64_t t0, int64_t t1,
                          const char *(*intern)(tp_ops_facts *f, const char *text))
{
    if (f->boxes || t1 <= t0)
        return;
    f->boxes = tp_xmalloc(TP_OPS_BOXES_MAX * sizeof *f->boxes);
    f->step_s = (double)(t1 - t0) / 1e9;
    for (int depth = 0; depth <= 2; depth++) /* a lane per level: they nest */
        for (size_t i = 0; i < d->nregions; i++)
            if (d->regions[i].depth == depth && d->regions[i].end_ns > t0 &&
                d->regions[i].start_ns < t1) {
                char label[64];
                snprintf(label, sizeof label, "host: regions, level %d", depth + 1);
                box(f, lane_of(f, label, intern), intern(f, d->regions[i].name),
                    d->regions[i].start_ns, d->regions[i].end_ns, t0, t1);
            }
    /* each profiler thread's outermost operators: those no earlier one of
     * its thread still encloses */
    uint32_t threads[8];
    int64_t open_until[8];
    size_t nt = 0;
    for (size_t i = 0; i < d->nevents; i++) {
        const tp_op_event *e = &d->events[i];
        char label[64];
        if (e->kind == TP_OP_CPU || e->kind == TP_OP_RANGE) {
            size_t k = 0;
            while (k < nt && threads[k] != e->thread)
                k++;
            if (k == nt) {
                if (nt == 8)
                    continue;
                threads[nt] = e->thread, open_until[nt++] = INT64_MIN;
            }
            if (e->start_ns < open_until[k])
                continue;
            open_until[k] = e->start_ns + e->dur_ns;
            snprintf(label, sizeof label, "host: operators (profiler thread %u)", e->thread);
            box(f, lane_of(f, label, intern), intern(f, d->strings[e->name]), e->start_ns,
                e->start_ns + e->dur_ns, t0, t1);
        } else if (e->kind == TP_OP_KERNEL || e->kind == TP_OP_MEMCPY || e->kind == TP_OP_MEMSET) {
            snprintf(label, sizeof label, "GPU %d: stream %lld", e->device, (long long)e->stream);
            box(f, lane_of(f, label, intern), intern(f, d->strings[e->name]), e->start_ns,
                e->start_ns + e->dur_ns, t0, t1);
        }
    }
}
