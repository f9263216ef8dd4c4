/* ops_relay.h: the recorder's side of capture windows (docs/ops.md).
 *
 * The relay holds the plan (record/ops_plan.h) and a control socket beside
 * the drain's (control.sock, in the same directory only the user can
 * open), where `trainprof capture` asks for a window and is told which
 * steps it will cover. The drain thread, every period: feeds the plan the
 * steps its rings saw end (tp_ops_relay_feed), lets it decide and passes a
 * new request into every ring's header (tp_ops_relay_tick, then
 * tp_ops_relay_publish for each ring, and for each ring mapped later), and
 * takes finished windows the processes send (tp_ops_relay_take). */
#ifndef TP_RECORD_OPS_RELAY_H
#define TP_RECORD_OPS_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"
#include "record/ops_plan.h"
#include "record/ring_events.h"
#include "ring.h"

typedef struct tp_ops_relay tp_ops_relay;

/* Listens on dir/control.sock; NULL with the reason in err. With
 * options->off it still answers (that windows are off). */
tp_ops_relay *tp_ops_relay_new(const char *dir, const tp_ops_options *options, char *err,
                               size_t cap);
void tp_ops_relay_free(tp_ops_relay *r);

/* The control socket's descriptor, for the drain's poll (-1: none). */
int tp_ops_relay_fd(const tp_ops_relay *r);
/* Answers the requests waiting on the control socket (never blocks). */
void tp_ops_relay_serve(tp_ops_relay *r, int64_t now_ns);
/* A demand from any thread (POST /capture): served at the next tick. */
void tp_ops_relay_ask(tp_ops_relay *r);

/* The steps a ring's thread ended since the last call go to the plan. */
void tp_ops_relay_feed(tp_ops_relay *r, tp_ring_reader *reader, int64_t now_ns);
/* True when the rings must take a new request (tp_ops_relay_publish). */
bool tp_ops_relay_tick(tp_ops_relay *r, int64_t now_ns);
/* Writes into the run file (meta TP_META_BACKOFF) that the plan backed off,
 * once, after the tick that decided it (tp_ops_plan_cost). */
void tp_ops_relay_say(tp_ops_relay *r, tp_sink *sink);

/* Writes the latest request into a ring's header (a no-op before any). */
void tp_ops_relay_publish(const tp_ops_relay *r, tp_ring_header *h);

/* Takes a window process pid sent in fd (closed here): read, checked and
 * passed to the sink with its times made the run's, on sink thread
 * `thread` (its step thread's, 0 unknown). Refused unread where the
 * process sent more windows than the requests published so far (one a
 * request, skipped ones too): a hostile process's unasked windows cost the
 * recorder nothing. NULL, or why it was refused. */
const char *tp_ops_relay_take(tp_ops_relay *r, tp_sink *sink, int fd, int32_t pid,
                              uint32_t (*thread_of)(void *ctx, int32_t tid), void *ctx, char *why,
                              size_t cap);

/* A process (pid) went away: where its step thread's ring header says it
 * began more windows (begun, the last at step count begun_step) than it
 * sent, it ended during the last (a SIGKILL, os._exit, the OOM killer)
 * unless its page counted the missing ones as not handed over (unsent, the
 * last of them begun at step count unsent_step: record/proc_page.h); a
 * window of the steps its ring (reader, thread tid) marked from the lost
 * one's first is passed to the sink with no events and a note saying how it
 * was lost, so that those steps are not counted as the training's own. */
void tp_ops_relay_lost(tp_ops_relay *r, tp_sink *sink, int32_t pid, const tp_ring_reader *reader,
                       int32_t tid, uint32_t begun, uint64_t begun_step, uint32_t unsent,
                       uint64_t unsent_step);

#endif
