/* export_ops.c: the capture windows in a Chrome/Perfetto trace (see
 * export.h): each window as a slice on a track of its process, its
 * operators and record_function ranges as nested slices on a track per
 * profiler thread, its kernels, copies and memsets on a track per GPU
 * stream, and a flow arrow from each launch (inside its operator) to the
 * kernel it launched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "render/export.h"
#include "render/report.h"
#include "store/reader_ops.h"
#include "util/json_writer.h"
#include "util/ns_math.h"

#define WINDOW_TID  1100000000LL /* the windows' own track */
#define OPS_TID     1200000000LL /* + the profiler's thread id */
#define STREAM_TID  1300000000LL /* + device * 100000 + stream */
#define FLOW_ID_MAX 1000000000LL /* flow ids: window id * this + correlation */

typedef struct ops_out {
    FILE *out;
    bool (*sep)(void *ctx); /* the trace's separator, false past its budget */
    void *ctx;
} ops_out;

static void name_track(ops_out *o, int pid, long long tid, const char *name)
{
    if (!o->sep(o->ctx))
        return;
    fprintf(o->out,
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%lld,\"args\":"
            "{\"name\":",
            pid, tid);
    json_write_escaped(o->out, name);
    fputs("}}", o->out);
}

static long long stream_tid(const tp_op_event *e)
{
    long long dev = e->device >= 0 && e->device < 1000 ? e->device : 999;
    long long stream = e->stream >= 0 && e->stream < 100000 ? e->stream : 99999;
    return STREAM_TID + dev * 100000 + stream;
}

static void slice(ops_out *o, const char *name, const char *cat, int pid, long long tid,
                  int64_t start, int64_t dur, const char *shapes)
{
    if (!o->sep(o->ctx))
        return;
    fputs("{\"ph\":\"X\",\"name\":", o->out);
    json_write_escaped(o->out, name);
    fprintf(o->out, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f", cat, pid,
            tid, (double)start / 1e3, (double)dur / 1e3);
    if (shapes) {
        fputs(",\"args\":{\"input_shapes\":", o->out);
        json_write_escaped(o->out, shapes);
        fputc('}', o->out);
    }
    fputc('}', o->out);
}

static void flow(ops_out *o, char ph, long long id, int pid, long long tid, int64_t t)
{
    if (!o->sep(o->ctx))
        return;
    fprintf(o->out,
            "{\"ph\":\"%c\",\"name\":\"launch\",\"cat\":\"launch\",\"id\":%lld,\"pid\":%d,"
            "\"tid\":%lld,\"ts\":%.3f%s}",
            ph, id, pid, tid, (double)t / 1e3, ph == 'f' ? ",\"bp\":\"e\"" : "");
}

static void window_events(ops_out *o, const tp_run_op_window *w, const tp_run_op_data *d)
{
    char label[160];
    snprintf(label, sizeof label, "capture window (%s)%s", tp_ops_reason_words(w->reason),
             w->skipped ? ": skipped" : "");
    /* a crafted file's times may be anything: the length saturates */
    slice(o, label, "capture", w->pid, WINDOW_TID, w->start_ns, tp_ns_sub(w->end_ns, w->start_ns),
          NULL);
    /* flows link a launch to its kernel by window id and correlation: only
     * where the id leaves room for them (a crafted window id may not) */
    bool flows = w->id >= 0 && w->id < INT64_MAX / FLOW_ID_MAX - 1;
    for (size_t i = 0; i < d->nevents; i++) {
        const tp_op_event *e = &d->events[i];
        const char *name = d->strings[e->name];
        const char *shapes = e->shapes != UINT32_MAX ? d->strings[e->shapes] : NULL;
        switch (e->kind) {
        case TP_OP_CPU:
        case TP_OP_RANGE:
        case TP_OP_RUNTIME:
            slice(o, name, e->kind == TP_OP_RUNTIME ? "cuda_runtime" : "operator", w->pid,
                  OPS_TID + e->thread, e->start_ns, e->dur_ns, shapes);
            if (flows && e->kind == TP_OP_RUNTIME && e->correlation > 0 &&
                e->correlation < FLOW_ID_MAX)
                flow(o, 's', w->id * FLOW_ID_MAX + e->correlation, w->pid, OPS_TID + e->thread,
                     e->start_ns);
            break;
        case TP_OP_KERNEL:
        case TP_OP_MEMCPY:
        case TP_OP_MEMSET:
            slice(o, name, "kernel", w->pid, stream_tid(e), e->start_ns, e->dur_ns, NULL);
            if (flows && e->correlation > 0 && e->correlation < FLOW_ID_MAX) /* its launch's */
                flow(o, 'f', w->id * FLOW_ID_MAX + e->correlation, w->pid, stream_tid(e),
                     e->start_ns);
            break;
        default: break;
        }
    }
}

/* Names the tracks a window's events use (once per process and track). */
static void name_tracks(ops_out *o, const tp_run_op_window *w, const tp_run_op_data *d)
{
    name_track(o, w->pid, WINDOW_TID, "capture windows (PyTorch's profiler)");
    long long named[64];
    size_t n = 0;
    for (size_t i = 0; i < d->nevents; i++) {
        const tp_op_event *e = &d->events[i];
        long long tid =
            e->kind == TP_OP_KERNEL || e->kind == TP_OP_MEMCPY || e->kind == TP_OP_MEMSET
                ? stream_tid(e)
            : e->kind == TP_OP_CPU || e->kind == TP_OP_RANGE || e->kind == TP_OP_RUNTIME
                ? OPS_TID + e->thread
                : -1;
        bool seen = tid < 0;
        for (size_t k = 0; k < n && !seen; k++)
            seen = named[k] == tid;
        if (seen || n == 64)
            continue;
        named[n++] = tid;
        char label[96];
        if (tid >= STREAM_TID)
            snprintf(label, sizeof label, "GPU %d, stream %lld", e->device, (long long)e->stream);
        else
            snprintf(label, sizeof label, "operators (profiler thread %u)", e->thread);
        name_track(o, w->pid, tid, label);
    }
}

bool tp_export_chrome_ops(FILE *out, tp_run *run, bool (*sep)(void *ctx), void *ctx, char *err,
                          size_t cap)
{
    tp_run_op_window *w;
    size_t n;
    if (!tp_run_op_windows(run, &w, &n, err, cap))
        return false;
    ops_out o = {out, sep, ctx};
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        tp_run_op_data d;
        ok = tp_run_op_data_load(run, &w[i], &d, err, cap);
        if (ok) {
            name_tracks(&o, &w[i], &d);
            window_events(&o, &w[i], &d);
        }
        tp_run_op_data_free(&d);
    }
    tp_run_op_windows_free(w, n);
    return ok;
}
