/* schedstat.h: the run-queue delay of a process or a thread, from
 * /proc/PID/schedstat or /proc/PID/task/TID/schedstat ("on-CPU ns, waiting
 * ns, timeslices"): the nanoseconds it was runnable but waited for a CPU. A
 * kernel built without schedstats has no such file. */
#ifndef TP_COLLECT_SCHEDSTAT_H
#define TP_COLLECT_SCHEDSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/sysroot.h"

/* The nanoseconds on a CPU and waiting of a schedstat file's text (len
 * bytes); false where it does not start with two numbers. */
bool tp_schedstat_parse(const char *buf, size_t len, uint64_t *on_cpu_ns, uint64_t *wait_ns);

/* Thread tid of process pid's nanoseconds on a CPU and waiting for one,
 * its file under root opened, read and closed; false where it can't be read
 * (the thread is gone, or is not pid's). */
bool tp_schedstat_thread(const tp_sysroot *root, int pid, int tid, uint64_t *on_cpu_ns,
                         uint64_t *wait_ns);

#endif
