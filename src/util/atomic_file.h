/* atomic_file.h: writing an output file all or nothing.
 *
 * The content goes to PATH.tmp-PID, which is renamed over PATH only when the
 * writer succeeded; an existing PATH is refused unless force. Errors are one
 * line, printed through log.h. Returns 0, or 1 on failure. */
#ifndef TP_UTIL_ATOMIC_FILE_H
#define TP_UTIL_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef bool (*tp_file_writer)(FILE *out, void *ctx, char *err, size_t cap);

int tp_write_file_atomically(const char *what, const char *path, bool force, tp_file_writer fn,
                             void *ctx);

#endif
