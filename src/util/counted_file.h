/* counted_file.h: a stream that counts what goes through it.
 *
 * Exports bound their output (export --max-bytes): the exporter writes to a
 * counting stream over the real one and looks at the count before each
 * event. */
#ifndef TP_UTIL_COUNTED_FILE_H
#define TP_UTIL_COUNTED_FILE_H

#include <stdint.h>
#include <stdio.h>

/* A stream writing through to under, adding every byte written to
 * *written; fclose flushes it and leaves under open. NULL when it can't be
 * made. */
FILE *tp_counted_file(FILE *under, uint64_t *written);

#endif
