/* thread.h: starting the recorder's own threads.
 *
 * A thread gets the stack it needs, not the 8 MiB default: under a
 * virtual-memory limit (ulimit -v) the recorder then still starts where
 * default stacks would not fit. */
#ifndef TP_UTIL_THREAD_H
#define TP_UTIL_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Stacks for threads that run only trainprof's code (the drain, the
 * /metrics watchdog) and for the writer, which runs SQLite's. Threads that
 * call a vendor's library (NVML) keep the default: its needs are unknown. */
#define TP_STACK_OWN_CODE (256u * 1024u)
#define TP_STACK_SQLITE   (1024u * 1024u)

/* Starts fn(arg) on a thread with a stack of stack_bytes (0: the default).
 * False, with errno set (EAGAIN: no memory or threads left), when it could
 * not start. */
bool tp_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, size_t stack_bytes);

/* Under a virtual-memory limit (a finite RLIMIT_AS), every thread of this
 * process allocates from one heap; call it before the first thread starts.
 * glibc gives each thread a heap of its own that reserves 64 MiB of address
 * space: under ulimit -v such heaps soon no longer fit, and a thread that
 * could not get one tries to make one again on every malloc (two failing
 * mmaps) and maps each allocation by itself (an mmap, and a munmap on free).
 * A recorder flooded with events spent 21 of its 25 s in the kernel so, a
 * core taken from the training it watched. Elsewhere nothing changes.
 * Returns whether it did (false: no limit, or no such setting here). */
bool tp_threads_share_one_heap_under_address_limit(void);

#endif
