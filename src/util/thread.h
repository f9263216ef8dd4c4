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

#endif
