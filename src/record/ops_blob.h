/* ops_blob.h: reading a capture window a training process sent
 * (trainprof/runtime/ops.py's blob, in a sealed memfd over its connection).
 *
 * The blob is the process's to write, so nothing in it is trusted: sizes,
 * counts and string indices are checked against the bytes there are, texts
 * are made valid UTF-8 with their control characters escaped, times must
 * be non-negative. The layout (little-endian):
 *   header  "TPOP", version 1, reason, steps, first_step (u64), tid (i32),
 *           flags, start_ns, end_ns (i64, CLOCK_MONOTONIC), nstrings,
 *           strings_bytes, nevents, dropped, device_memory, alloc_start (i64),
 *           note (string index, 0xffffffff none), skipped: 88 bytes
 *   strings nstrings times (u32 length, bytes), strings_bytes in all
 *   events  nevents times 72 bytes: kind, name, shapes, thread (u32),
 *           device (i32), 0 (u32), stream, start_ns, dur_ns, correlation,
 *           linked, value (i64) */
#ifndef TP_RECORD_OPS_BLOB_H
#define TP_RECORD_OPS_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/ops_window.h"

#define TP_OPS_BLOB_MAX     (256u << 20) /* the most a recorder reads of one window */
#define TP_OPS_HEADER_BYTES 88u
#define TP_OPS_EVENT_BYTES  72u
#define TP_OPS_TEXT_MAX     1000u /* a name's or shape's bytes kept, escaped */
/* A window's events and strings at most (the sender's bound on events is
 * the same; its strings are the distinct names and shapes of those): what a
 * window costs the recorder and the run file stays bounded whatever a
 * process sends (a blob of zero-length strings was 16.7 M of them). */
#define TP_OPS_EVENTS_MAX  500000u
#define TP_OPS_STRINGS_MAX 200000u

/* Parses len bytes into a new window (the caller frees it with
 * tp_ops_window_free); NULL with the reason in why when they are not one.
 * Times stay as sent (CLOCK_MONOTONIC). */
tp_ops_window *tp_ops_blob_parse(const uint8_t *buf, size_t len, char *why, size_t cap);

/* Reads a blob from fd (its size bounded by TP_OPS_BLOB_MAX) and parses
 * it; NULL with the reason in why. */
tp_ops_window *tp_ops_blob_read(int fd, char *why, size_t cap);

#endif
