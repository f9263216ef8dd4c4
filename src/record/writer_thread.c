/* writer_thread.c: draining the sink into the run file. */
#include "record/writer_thread.h"

#include <stdio.h>

#include "clock.h"
#include "util/log.h"
#include "util/thread.h"

/* After a failed write: the batch's small rows (metadata, sources
 * unavailable, series, threads, names, GPUs), which keep the file's ids
 * whole and carry the command's exit status, without its samples,
 * regions, marks and device times. */
static tp_batch small_rows(const tp_batch *batch)
{
    tp_batch small = *batch;
    small.samples.len = 0;
    small.intervals.len = 0;
    small.marks.len = 0;
    small.device_spans.len = 0;
    return small;
}

/* Writes one batch, taken from the sink at taken_ns (since the run's
 * start): whole while writing works; once it has failed (a full disk, a
 * removed file), its small rows only, and, once they go in, up to when the
 * file holds every row and why writing failed (meta write_failed_ns and
 * write_failed), so that a disk that frees up again still gets the run's end. */
static void store(tp_writer_thread *t, const tp_batch *batch, uint64_t taken_ns)
{
    char err[512];
    if (!t->failed) {
        if (tp_writer_apply(t->writer, batch, err, sizeof err)) {
            t->written_ns = taken_ns;
            return;
        }
        t->failed = true;
        snprintf(t->failed_reason, sizeof t->failed_reason, "%s", tp_writer_error(t->writer));
        tp_warn("%s; the run file keeps what it has, the command goes on", err);
        return;
    }
    tp_batch small = small_rows(batch);
    if (!tp_writer_apply(t->writer, &small, err, sizeof err) || t->failure_stored)
        return;
    char ns[32];
    snprintf(ns, sizeof ns, "%llu", (unsigned long long)t->written_ns);
    t->failure_stored = tp_writer_meta(t->writer, "write_failed_ns", ns) &&
                        tp_writer_meta(t->writer, "write_failed", t->failed_reason);
}

static void *writer_main(void *arg)
{
    tp_writer_thread *t = arg;
    tp_batch batch = {0};
    /* the first batch (the run's start metadata) is written at once, so a
     * recorder killed in its first second still leaves a readable file */
    for (bool first = true; first || tp_sink_wait(t->sink, 1000); first = false) {
        uint64_t taken_ns = tp_clock_mono_ns() - tp_sink_start_ns(t->sink);
        tp_sink_take(t->sink, &batch);
        if (t->live) {
            tp_live_apply(t->live, &batch);
            tp_live_set_events_not_recorded(t->live, tp_sink_events_not_kept(t->sink));
        }
        if (t->writer)
            store(t, &batch, taken_ns);
        t->batches++;
        tp_batch_clear(&batch);
    }
    tp_batch_free(&batch);
    return NULL;
}

bool tp_writer_thread_start(tp_writer_thread *t, tp_sink *sink, tp_writer *writer, tp_live *live)
{
    *t = (tp_writer_thread){.sink = sink, .writer = writer, .live = live};
    t->started = tp_thread_start(&t->thread, writer_main, t, TP_STACK_SQLITE);
    return t->started;
}

void tp_writer_thread_join(tp_writer_thread *t)
{
    if (t->started)
        pthread_join(t->thread, NULL);
    t->started = false;
}
