/* drain.h: the recorder's side of the timing-event channel.
 *
 * tp_drain_start makes a directory only the user can open, listens there on a
 * Unix socket (SOCK_SEQPACKET) and starts the drain thread. Training
 * processes find the socket through TRAINPROF_SOCKET (tp_drain_socket_path),
 * send one memfd per thread, and the drain thread maps each ring and turns
 * its events into closed regions, steps and epochs in the sink, every 10 ms.
 * tp_drain_stop drains everything one last time, records each thread's drop
 * count, and removes the socket and its directory. */
#ifndef TP_RECORD_DRAIN_H
#define TP_RECORD_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"
#include "record/ops_plan.h"

typedef struct tp_drain tp_drain;

/* NULL with a reason in err when the socket can't be made. ops: when to
 * ask for capture windows (record/ops_plan.h); NULL: never. interval_ns:
 * how often the step threads' waits for a CPU are read (step_waits.h; 0:
 * TP_STEP_WAIT_PERIOD_NS), the recording's sampling interval. */
tp_drain *tp_drain_start(tp_sink *sink, const tp_ops_options *ops, uint64_t interval_ns, char *err,
                         size_t cap);
const char *tp_drain_socket_path(const tp_drain *d);
void tp_drain_stop(tp_drain *d);

/* Asks every traced process for one stack of each of its threads (a stall
 * seen with stack sampling off): passed through the rings' stacks_wanted at
 * the drain's next turn; each process's sampler thread, standing by, serves
 * it within a second. From any thread; NULL: nothing. */
void tp_drain_want_stacks(tp_drain *d);

/* Asks for a capture window (POST /capture), from any thread: served at
 * the drain's next turn. NULL: nothing. */
void tp_drain_ask_capture(tp_drain *d);

/* The directory of the drain's sockets (events.sock, control.sock). */
const char *tp_drain_dir(const tp_drain *d);

/* How many traced processes are connected now (alive, as far as the drain
 * knows): what record waits on once the command has ended. From any
 * thread; NULL: 0. tp_drain_stop says which ones were still there. */
unsigned tp_drain_open_processes(const tp_drain *d);

#endif
