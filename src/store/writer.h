/* writer.h: writing a run file while recording.
 *
 * The file is created empty and stamped with the schema in one transaction,
 * then every batch taken from the sink is written in one transaction (WAL,
 * synchronous=NORMAL: a SIGKILLed recorder loses nothing it committed). At the
 * end, tp_writer_finish checkpoints the WAL into the main file and leaves a
 * single self-contained file. Only the writer thread uses a tp_writer. */
#ifndef TP_STORE_WRITER_H
#define TP_STORE_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/batch.h"

typedef struct tp_writer tp_writer;

/* Creates the run file at path. An existing file is refused unless force,
 * which replaces it (and its -wal and -shm). On failure returns NULL and puts
 * a one-line reason in err. */
tp_writer *tp_writer_create(const char *path, bool force, const char *agent, char *err, size_t cap);

/* Writes one batch in one transaction. False (reason in err) on failure. */
bool tp_writer_apply(tp_writer *w, const tp_batch *batch, char *err, size_t cap);

/* SQLite's message for the last batch that failed ("database or disk is
 * full"); empty before any. */
const char *tp_writer_error(const tp_writer *w);

/* Sets one metadata value at once (its own transaction). */
bool tp_writer_meta(tp_writer *w, const char *key, const char *value);

/* Sets n metadata values in one transaction: all or none. */
bool tp_writer_metas(tp_writer *w, const char *const *keys, const char *const *values, size_t n);

/* Adds one unavailable source at once (its own transaction): for what the
 * recorder learns after its last batch (memory that ran out). */
bool tp_writer_unavailable(tp_writer *w, const char *source, const char *reason);

/* How long tp_writer_finish waits for other connections to the file to let
 * go: `trainprof top` lets go of a recording within its refresh (1 s by
 * default) once the recording has left the registry. */
#define TP_WRITER_LET_GO_WAIT_MS 3000

/* Checkpoints, switches the file out of WAL mode and closes it: a file whole
 * on its own, copied without a -wal. The switch needs the file to itself:
 * where another connection has it open, it is tried again for up to
 * TP_WRITER_LET_GO_WAIT_MS. False where the file stayed in WAL mode (held
 * that long, or the switch failed: a full disk), its -wal beside it holding
 * rows the file alone lacks until a connection that writes closes it last. */
bool tp_writer_finish(tp_writer *w);

#endif
