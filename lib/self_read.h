/* self_read.h: reading this process's own memory where it may be gone.
 *
 * The stack sampler reads other threads' frames, and their rings, while
 * those threads run and exit: a pointer may name memory unmapped a moment
 * ago. A plain load would crash the training; these reads fail cleanly
 * instead. Through a pipe: write() from an unreadable address says EFAULT,
 * and write and read are calls no sandbox can take from a process that
 * lives (a seccomp filter the training adds while a round of reads is under
 * way can't kill it at the next read, as one that kills process_vm_readv
 * did), and cheaper than process_vm_readv on ourselves, the way left where
 * a filter refuses pipes. One reader per thread that reads (the pipe is its
 * state).
 *
 * A seccomp filter may kill or trap a process that calls either: the
 * reading thread first asks tp_self_read_check, which learns from a probe
 * that cannot be fatal which way reads may go in this process, and every
 * reader follows it. */
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
 * when src is NULL and n > 0, or when tp_self_read_check found no way).
 * Never blocks, never faults. */
bool tp_self_read(tp_self_reader *r, void *dst, const void *src, size_t n);

/* How reads may go in this process. */
typedef enum {
    TP_SELF_READ_PIPE, /* a pipe (no filter, or one that lets pipes be) */
    TP_SELF_READ_VM,   /* process_vm_readv only: a filter refuses or kills pipes */
    TP_SELF_READ_NONE, /* neither: no read is tried */
} tp_self_read_way;

/* The calling thread's seccomp state as last probed. */
typedef struct tp_self_read_guard {
    int status_fd; /* /proc/thread-self/status of the thread that checks; -1 */
    int mode; /* its Seccomp: field (0 none, 1 strict, 2 filter; -1 unreadable, -2 not read yet) */
    int filters;     /* its Seccomp_filters: field (Linux 5.9 on; -1 where absent) */
    unsigned checks; /* checks since the status file was last read */
    tp_self_read_way way;
    const char *why; /* for TP_SELF_READ_NONE: a fixed sentence, the same in every process */
} tp_self_read_guard;

void tp_self_read_guard_init(tp_self_read_guard *g);
void tp_self_read_guard_close(tp_self_read_guard *g);

/* The status file is read once in this many checks (a second at 100 Hz):
 * a filter added while another was already set is seen within that. */
#define TP_SELF_READ_RECHECK 100

/* Which way the calling thread's reads may go, and every reader of the
 * process with them: without a seccomp filter, the pipe; with one,
 * what a probe found, taken anew whenever the thread's filters changed
 * since (a filter added later, TSYNC'd onto this thread: the mode's change
 * is seen at once, prctl(PR_GET_SECCOMP); a further filter's within
 * TP_SELF_READ_RECHECK checks, from the status file). The probe is a
 * child sharing this memory (clone, no signal at its end, reaped here with
 * __WALL so that the training's own waits never see it) that tries the
 * pipe, then process_vm_readv on itself; a filter that kills or traps
 * kills only the child, the process made undumpable meanwhile so that no
 * core dump (which would take the training with it on kernels before 5.16)
 * is written. The training gets no signal. Call from the reading thread
 * before each round of reads: one prctl, a pread of its status file now
 * and then, a probe only where the filters changed. */
tp_self_read_way tp_self_read_check(tp_self_read_guard *g);

#endif
