/* process_ends.h: the traced processes that ended while the recorder ran:
 * when, and how, where the kernel still says.
 *
 * The drain calls tp_process_ends_note when a process's connection closes
 * (the process exited: its descriptors closed). Its exit status is read from
 * its zombie (/proc/PID/stat, field 52) while its parent has not reaped it;
 * a process still on its way out is looked at again every drain period, up
 * to TP_END_STATUS_TRIES times. What is found goes into the run's metadata:
 * proc.PID.end_ns (since the run's start), where it was (proc.PID.step,
 * proc.PID.phase and proc.PID.stack) and proc.PID.status ("exit N" or
 * "signal N"); a parent that reaped it at once leaves no status; and
 * proc.PID.oom_kills when the kernel's OOM killer killed since the previous
 * end (in the recorder's cgroup where it counts them, else on the host). At most
 * TP_ENDS_MAX processes are written. Drain thread only. */
#ifndef TP_RECORD_PROCESS_ENDS_H
#define TP_RECORD_PROCESS_ENDS_H

#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"

#define TP_ENDS_MAX         1024
#define TP_END_STATUS_TRIES 30
#define TP_ENDS_PENDING     64

typedef struct tp_process_ends {
    struct tp_pending_end {
        int32_t pid;
        int tries;
    } pending[TP_ENDS_PENDING];
    size_t npending;
    size_t written;
    uint64_t untold;     /* ends past TP_ENDS_MAX */
    long long oom_kills; /* the OOM killer's kills at the last look, -1 unknown */
} tp_process_ends;

/* Takes the OOM killer's count to compare each end with. */
void tp_process_ends_init(tp_process_ends *e);

/* Process pid ended in its step steps (the step marks its busiest thread
 * sent; 0 none), inside region phase (its training thread's innermost open,
 * "" none) with stack its sampler's last stack inside a region ("": none):
 * written as proc.PID.step, proc.PID.phase and proc.PID.stack. */
void tp_process_ends_note(tp_process_ends *e, tp_sink *sink, int32_t pid, const char *phase,
                          const char *stack, uint64_t steps);
void tp_process_ends_check(tp_process_ends *e, tp_sink *sink);

/* The exit status of process pid while it is a zombie: "signal N" or "exit
 * N" into out. False while it runs or exits, and once it is gone. */
bool tp_zombie_status(int32_t pid, char *out, size_t cap);

#endif
