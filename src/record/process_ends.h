/* process_ends.h: the traced processes that ended while the recorder ran:
 * when, how (where the kernel still says), and where they were.
 *
 * The drain calls tp_process_ends_note when a process's connection closes
 * (the process exited: its descriptors closed). Its exit status is read from
 * its zombie (/proc/PID/stat, field 52) while its parent has not reaped it;
 * a process still on its way out is looked at again every drain period, up
 * to TP_END_STATUS_TRIES times. A process that exited with status 0 ended
 * cleanly: nothing is written of it, nor of one whose status nobody can
 * tell (its parent reaped it at once) that marked no step and had no region
 * open. Of any other end the run's metadata
 * gets proc.PID.end_ns and .alive_ns (since the run's start), proc.PID.status ("exit N" or
 * "signal N"; none when its parent reaped it at once), where it was
 * (proc.PID.step, .phase, .stack) and proc.PID.oom_kills when the kernel's
 * OOM killer killed since the previous end (in the recorder's cgroup where
 * it counts them, else on the host). At most TP_ENDS_MAX processes are
 * written. Drain thread only. */
#ifndef TP_RECORD_PROCESS_ENDS_H
#define TP_RECORD_PROCESS_ENDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"
#include "record/ring_events.h"

#define TP_ENDS_MAX         1024
#define TP_END_STATUS_TRIES 30
#define TP_ENDS_PENDING     64

/* One process's end, as the drain saw it. */
typedef struct tp_process_end {
    int32_t pid;
    uint64_t end_ns;     /* when the drain saw its connection close, since the run's start */
    uint64_t alive_ns;   /* its latest event's time, since the run's start; 0 none */
    uint64_t steps;      /* the step marks its busiest thread sent; 0 none */
    long long oom_kills; /* the OOM killer's kills since the previous end */
    char phase[200];     /* its training thread's innermost open region, "" none */
    char stack[400];     /* its sampler's last stack inside a region, "" none */
} tp_process_end;

typedef struct tp_process_ends {
    struct tp_pending_end {
        tp_process_end end;
        int tries;
    } pending[TP_ENDS_PENDING];
    size_t npending;
    size_t written;
    uint64_t untold;     /* ends past TP_ENDS_MAX */
    long long oom_kills; /* the OOM killer's kills at the last look, -1 unknown */
    char oom_file[512];  /* where they are counted ("" none), found once */
} tp_process_ends;

/* Finds where the OOM killer's kills are counted and takes the count. */
void tp_process_ends_init(tp_process_ends *e);

/* Where a process was as it ended, gathered from its rings one by one
 * (tp_process_end_see) and said in its end (tp_process_end_said): the
 * innermost region open on its ring with the most open (its training
 * thread's), its stack sampler's last stack inside a region, "function
 * (file:line) < ..." innermost first, the steps its busiest thread began
 * (the step it was in) and its latest event's time (alive_ns). The rings
 * must stay mapped until it is said. */
typedef struct tp_process_end_where {
    const tp_ring_reader *deepest, *sampled;
} tp_process_end_where;
void tp_process_end_see(tp_process_end *end, tp_process_end_where *w, const tp_ring_reader *r,
                        uint64_t start_ns);
void tp_process_end_said(tp_process_end *end, const tp_process_end_where *w, tp_sink *sink);

/* Process end->pid ended (end's times, phase, stack and steps as the drain
 * saw them; oom_kills is filled here). */
void tp_process_ends_note(tp_process_ends *e, tp_sink *sink, tp_process_end *end);
void tp_process_ends_check(tp_process_ends *e, tp_sink *sink);

/* The exit status of process pid while it is a zombie: "signal N" or "exit
 * N" into out (FOUND); NOT_YET while it still runs or exits; GONE once its
 * parent reaped it (or the kernel can't say). */
typedef enum { TP_ZOMBIE_FOUND, TP_ZOMBIE_NOT_YET, TP_ZOMBIE_GONE } tp_zombie;
tp_zombie tp_zombie_status(int32_t pid, char *out, size_t cap);

#endif
