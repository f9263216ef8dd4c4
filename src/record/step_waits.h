/* step_waits.h: how long each traced process's step thread waited for a
 * CPU, read by the recorder's drain thread from
 * /proc/PID/task/TID/schedstat (the run-queue delay) as soon as the thread
 * has marked a step, then once an interval, into
 * step_thread_cpu_wait_percent{pid}: the share of the time since the last
 * read, 100 = all of it; and from the same read the time it ran on a CPU,
 * into step_thread_cpu_percent{pid} (a step that took longer while its
 * thread ran throughout computed slower, or did more).
 *
 * The tree's proc_cpu_wait_percent sums every process's main thread, its
 * DataLoader workers' too: with several ranks or workers it says how much
 * waiting the tree did, not how much of a step was lost to it. A step is
 * its step thread's: the one of the process's rings that marked the most
 * steps. Nothing runs in the training: the recorder reads another process's
 * /proc; its pid is the kernel's (SO_PEERCRED), the tid the ring's header
 * (a number only, read under that pid's own task directory). A thread that
 * can't be read (gone, a kernel without schedstats) gets no sample. */
#ifndef TP_RECORD_STEP_WAITS_H
#define TP_RECORD_STEP_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"

#define TP_STEP_WAIT_PERIOD_NS 500000000ull /* record's default interval */

typedef struct tp_step_waits tp_step_waits;

/* For slots connections (the drain's), read every period_ns (0:
 * TP_STEP_WAIT_PERIOD_NS); NULL when out of memory (then every call below
 * does nothing). */
tp_step_waits *tp_step_waits_new(size_t slots, uint64_t period_ns);
void tp_step_waits_free(tp_step_waits *w);

/* At each drain turn, every ring, then every connection (below): slot's
 * thread tid has marked steps steps; the thread with the most is the one
 * read. */
void tp_step_waits_offer(tp_step_waits *w, size_t slot, int32_t tid, uint64_t steps);

/* Reads the step thread offered for slot (process pid, now_ns monotonic)
 * where it was never read, or a period ago: from its second reading on,
 * samples its wait into pid's series. Clears the offers. */
void tp_step_waits_read(tp_step_waits *w, tp_sink *sink, size_t slot, int32_t pid, uint64_t now_ns);

/* Slot was given to a new connection: its readings start afresh. */
void tp_step_waits_reset(tp_step_waits *w, size_t slot);

#endif
