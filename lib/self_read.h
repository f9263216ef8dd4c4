/* self_read.h: reading this process's own memory where it may be gone.
 *
 * The stack sampler reads other threads' frames, and their rings, while
 * those threads run and exit: a pointer may name memory unmapped a moment
 * ago. A plain load would crash the training; these reads fail cleanly
 * instead. process_vm_readv on ourselves, which needs no rights over our
 * own process; where a sandbox refuses it (Docker's default seccomp profile
 * without CAP_SYS_PTRACE), a pipe: write() from an unreadable address says
 * EFAULT. One reader per thread that reads (the pipe is its state). */
#ifndef TP_LIB_SELF_READ_H
#define TP_LIB_SELF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct tp_self_reader {
    pid_t pid; /* the process it was made in */
    bool use_pipe;
    int pipe[2];
} tp_self_reader;

/* A reader for the calling process, with no pipe yet. */
void tp_self_reader_init(tp_self_reader *r);
/* Closes its pipe, if it made one. */
void tp_self_reader_close(tp_self_reader *r);

/* Copies n bytes at src to dst; false when any of them can't be read (or
 * when src is NULL and n > 0). Never blocks, never faults. */
bool tp_self_read(tp_self_reader *r, void *dst, const void *src, size_t n);

#endif
