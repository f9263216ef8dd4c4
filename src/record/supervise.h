/* supervise.h: what record does while its command runs and just after: it
 * waits for the command, passing the signals that ask it to stop on to it,
 * draws the status line and, with stack sampling off, asks the traced
 * processes for one stack of every thread as a stall begins; and once the
 * command has ended, it waits a while for the traced processes that outlived
 * it (a daemon the training started with setsid, a double fork) to end. */
#ifndef TP_RECORD_SUPERVISE_H
#define TP_RECORD_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "live/live_state.h"
#include "record/drain.h"
#include "record/stall_where.h"

/* The first signal that asked the run to stop (a scheduler's SIGTERM,
 * Ctrl-C), and when (ns since the start); signo 0 when none did. */
typedef struct stop_request {
    int signo;
    uint64_t t_ns;
} stop_request;

/* What supervise watches once a second in the live state (NULL: nothing):
 * it draws the status line from it (status_line); with stack sampling off
 * it asks the drain for one stack of every thread as each stall begins
 * (ask_stacks); and where something shows the stalls (the status line,
 * /metrics: places.path set), it says in it where each stalled rank was
 * last seen. tp_watch_end closes what the looks opened. */
typedef struct tp_watch {
    tp_live *live;
    bool status_line, ask_stacks;
    tp_drain *drain;
    bool stalled; /* the last look saw a stall */
    tp_stall_places places;
} tp_watch;

void tp_watch_end(tp_watch *w);

/* Waits for the command child, passing signals read from the signalfd sfd
 * on and looking at w once a second (none: w has nothing to watch); the
 * first signal to stop into *stop. Returns the waitpid status. */
int tp_supervise(pid_t child, int sfd, tp_watch *w, uint64_t start_ns, stop_request *stop);

/* After the command ended: waits while traced processes are still
 * connected to the drain, up to limit_s, drawing w's status line; a signal
 * to stop ends the wait at once (into *stop, as tp_supervise). Returns the
 * seconds waited. */
double tp_wait_for_outlivers(tp_drain *drain, int sfd, double limit_s, tp_watch *w,
                             uint64_t start_ns, stop_request *stop);

#endif
