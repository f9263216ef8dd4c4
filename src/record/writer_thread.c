/* writer_thread.c: draining the sink into the run file. */
#include "record/writer_thread.h"

#include "util/log.h"

static void *writer_main(void *arg)
{
    tp_writer_thread *t = arg;
    tp_batch batch = {0};
    char err[512];
    /* the first batch (the run's start metadata) is written at once, so a
     * recorder killed in its first second still leaves a readable file */
    for (bool first = true; first || tp_sink_wait(t->sink, 1000); first = false) {
        tp_sink_take(t->sink, &batch);
        if (t->live)
            tp_live_apply(t->live, &batch);
        if (t->writer && !t->failed && !tp_writer_apply(t->writer, &batch, err, sizeof err)) {
            t->failed = true;
            tp_warn("%s; recording stops here, the command goes on", err);
        }
        t->batches++;
        tp_batch_clear(&batch);
    }
    tp_batch_free(&batch);
    return NULL;
}

bool tp_writer_thread_start(tp_writer_thread *t, tp_sink *sink, tp_writer *writer, tp_live *live)
{
    t->live = live;
    t->sink = sink;
    t->writer = writer;
    t->failed = false;
    t->batches = 0;
    t->started = pthread_create(&t->thread, NULL, writer_main, t) == 0;
    return t->started;
}

void tp_writer_thread_join(tp_writer_thread *t)
{
    if (t->started)
        pthread_join(t->thread, NULL);
    t->started = false;
}
