/* writer_thread.h: the thread that owns the run file while recording.
 *
 * It takes whatever the sink holds at least once a second and writes it in
 * one transaction. If writing fails (disk full, file removed), it warns once,
 * keeps draining the sink so memory stays bounded, and the training goes on;
 * the file keeps what was written, and from then on gets each batch's small
 * rows only (metadata, so the command's end and exit status) with when and
 * why writing failed, as soon as there is room for them again.
 * With a live state (for record's status line and --serve, and for
 * `trainprof serve`) each batch is applied to it as well; `trainprof serve`
 * has a live state and no run file. */
#ifndef TP_RECORD_WRITER_THREAD_H
#define TP_RECORD_WRITER_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/sink.h"
#include "live/live_state.h"
#include "store/writer.h"

typedef struct tp_writer_thread {
    pthread_t thread;
    tp_sink *sink;
    tp_writer *writer; /* NULL: no run file */
    tp_live *live;     /* NULL: no live state */
    bool started;
    bool failed;         /* a batch could not be written: only small rows since */
    bool failure_stored; /* meta write_failed_ns and write_failed are in the file */
    uint64_t written_ns; /* the file holds every row taken before (since the start) */
    char failed_reason[256];
    unsigned long batches;
} tp_writer_thread;

bool tp_writer_thread_start(tp_writer_thread *t, tp_sink *sink, tp_writer *writer, tp_live *live);

/* Joins the thread; the sink must be closed first so it drains and exits. */
void tp_writer_thread_join(tp_writer_thread *t);

#endif
