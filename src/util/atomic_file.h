/* atomic_file.h: writing an output file all or nothing.
 *
 * The content goes to a temporary file made exclusively (O_EXCL, a random
 * name) beside PATH, renamed over PATH only when the writer succeeded: a
 * name planted there by someone else is never followed. PATH is refused when
 * it exists (unless force), is a directory, or is one of the command's
 * inputs (the same file by device and inode, under whatever name). Errors
 * are one line, printed through log.h. SIGINT, SIGTERM or SIGHUP while it
 * is written (their handlers the default) remove the temporary file before
 * they end the process; so does an exit. Returns 0; 2 for an output refused
 * before anything was written (bad input, as every command's); 1 when
 * writing failed. */
#ifndef TP_UTIL_ATOMIC_FILE_H
#define TP_UTIL_ATOMIC_FILE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef bool (*tp_file_writer)(FILE *out, void *ctx, char *err, size_t cap);

int tp_write_file_atomically(const char *what, const char *path, bool force,
                             const char *const *inputs, size_t ninputs, tp_file_writer fn,
                             void *ctx);

/* An output written under a temporary name beside it, for writers that
 * need a path of their own (SQLite): made exclusively (O_EXCL, a random
 * name, mode 0666 less the umask), and removed by SIGINT, SIGTERM or SIGHUP
 * (their handlers the default) or an exit, until it is ended. One at a
 * time. */
typedef struct {
    char tmp[4200];          /* its name, "" once ended */
    struct sigaction old[3]; /* the stop signals' handlers before it */
} tp_pending_output;

/* Makes path's temporary file: its descriptor (the caller closes it), or -1
 * with errno set (ENAMETOOLONG for a path too long) and nothing made. */
int tp_pending_output_open(tp_pending_output *p, const char *path);

/* Renames the temporary file over path (when keep), or removes it, and gives
 * the stop signals their handlers back. False, with errno set, when the
 * rename failed (the temporary file removed). */
bool tp_pending_output_end(tp_pending_output *p, const char *path, bool keep);

/* 2 after a one-line error when path can't be an output (it is a
 * directory, exists without force, or is one of inputs), else 0. */
int tp_output_refused(const char *what, const char *path, bool force, const char *const *inputs,
                      size_t ninputs);

#endif
