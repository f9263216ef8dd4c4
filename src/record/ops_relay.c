/* ops_relay.c: see ops_relay.h. */
#include "record/ops_relay.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/run_keys.h"
#include "record/ops_blob.h"
#include "util/fd_passing.h"

/* The windows each process sent, by pid (an open hash, TP_OPS_PROCESSES_MAX
 * slots): a process answers each request the recorder published with one
 * window at most, so a process that sends more than the requests so far
 * sends what nobody asked for. */
#define TP_OPS_PROCESSES_MAX 4096
typedef struct sent_windows {
    int32_t pid; /* 0: empty */
    uint32_t windows;
} sent_windows;

struct tp_ops_relay {
    tp_ops_plan plan;
    int listen_fd;
    char path[128];
    sent_windows sent[TP_OPS_PROCESSES_MAX];
    size_t nsent;
    bool backoff_unsaid; /* the plan backed off: the run file is to be told */
};

/* pid's entry (made where there is room), NULL where the table is full. */
static sent_windows *sent_of(tp_ops_relay *r, int32_t pid)
{
    size_t i = ((uint32_t)pid * 0x9E3779B1u) % TP_OPS_PROCESSES_MAX;
    for (size_t k = 0; k < TP_OPS_PROCESSES_MAX; k++, i = (i + 1) % TP_OPS_PROCESSES_MAX) {
        if (r->sent[i].pid == pid)
            return &r->sent[i];
        if (r->sent[i].pid == 0) {
            if (r->nsent + 1 >= TP_OPS_PROCESSES_MAX)
                return NULL;
            r->nsent++;
            r->sent[i].pid = pid;
            return &r->sent[i];
        }
    }
    return NULL;
}

tp_ops_relay *tp_ops_relay_new(const char *dir, const tp_ops_options *options, char *err,
                               size_t cap)
{
    tp_ops_relay *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    tp_ops_plan_init(&r->plan, options);
    if ((size_t)snprintf(r->path, sizeof r->path, "%s/control.sock", dir) >= sizeof r->path) {
        snprintf(err, cap, "the socket directory's name is too long");
        r->listen_fd = -1;
        tp_ops_relay_free(r);
        return NULL;
    }
    if ((r->listen_fd = tp_listen_seqpacket(r->path, 16)) < 0) {
        snprintf(err, cap, "cannot listen on %s: %s", r->path, strerror(errno));
        tp_ops_relay_free(r);
        return NULL;
    }
    return r;
}

void tp_ops_relay_free(tp_ops_relay *r)
{
    if (!r)
        return;
    if (r->listen_fd >= 0) {
        close(r->listen_fd);
        unlink(r->path);
    }
    free(r);
}

int tp_ops_relay_fd(const tp_ops_relay *r) { return r ? r->listen_fd : -1; }

void tp_ops_relay_ask(tp_ops_relay *r)
{
    if (r)
        tp_ops_plan_ask(&r->plan);
}

/* One request on a control connection: "capture" is answered with
 * "window REASON FIRST STEPS" (or "off"); anything else with "unknown".
 * The connection must be the user's own (the directory is, too). */
static void answer(tp_ops_relay *r, int c, int64_t now_ns)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid())
        return;
    struct timeval tv = {0, 200000}; /* a client that sends nothing is let go */
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[32] = {0};
    ssize_t n = recv(c, req, sizeof req - 1, 0);
    char reply[96];
    tp_ops_request q;
    if (n <= 0 || strncmp(req, "capture", 7) != 0)
        snprintf(reply, sizeof reply, "unknown");
    else if (!tp_ops_plan_demand(&r->plan, now_ns, &q))
        snprintf(reply, sizeof reply, "off");
    else
        snprintf(reply, sizeof reply, "window %u %llu %u", q.reason & TP_OPS_REASON_MASK,
                 (unsigned long long)q.first_step, q.steps);
    send(c, reply, strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void tp_ops_relay_serve(tp_ops_relay *r, int64_t now_ns)
{
    if (!r)
        return;
    for (int i = 0; i < 16; i++) {
        int c = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            return;
        answer(r, c, now_ns);
        close(c);
    }
}

void tp_ops_relay_feed(tp_ops_relay *r, tp_ring_reader *reader, int64_t now_ns)
{
    if (!r || !reader->new_steps)
        return;
    tp_ops_plan_steps(&r->plan, reader->steps, reader->new_steps, reader->new_slowest_ns,
                      reader->new_total_ns, now_ns);
    tp_ops_plan_regions(&r->plan, reader->new_regions, reader->new_c_regions);
    reader->new_regions = reader->new_c_regions = 0;
    reader->new_steps = 0;
    reader->new_slowest_ns = reader->new_total_ns = 0;
}

bool tp_ops_relay_tick(tp_ops_relay *r, int64_t now_ns)
{
    tp_ops_request q;
    if (r && tp_ops_plan_cost(&r->plan, now_ns))
        r->backoff_unsaid = true;
    return r && tp_ops_plan_tick(&r->plan, now_ns, &q);
}

void tp_ops_relay_say(tp_ops_relay *r, tp_sink *sink)
{
    if (!r || !r->backoff_unsaid)
        return;
    r->backoff_unsaid = false;
    const tp_ops_backoff *b = &r->plan.backoff;
    uint64_t start = tp_sink_start_ns(sink);
    char value[160];
    snprintf(value, sizeof value, "%llu %llu %.6f %.1f %s %d",
             (unsigned long long)((uint64_t)b->at_ns > start ? (uint64_t)b->at_ns - start : 0),
             (unsigned long long)b->step, b->share, b->regions_per_step,
             b->windows ? "windows" : "regions", TP_OPS_DEVICE_EVERY);
    tp_sink_meta(sink, TP_META_BACKOFF, value);
}

void tp_ops_relay_publish(const tp_ops_relay *r, tp_ring_header *h)
{
    if (!r || !r->plan.current.seq)
        return;
    const tp_ops_request *q = &r->plan.current;
    atomic_store_explicit(&h->ops_first_step, q->first_step, memory_order_relaxed);
    atomic_store_explicit(&h->ops_steps, q->steps, memory_order_relaxed);
    atomic_store_explicit(&h->ops_reason, q->reason, memory_order_relaxed);
    atomic_store_explicit(&h->ops_seq, q->seq, memory_order_release);
}

/* A window of pid's step thread (reader, tid) from step count first_step,
 * with no events and note: its steps are profiled ones all the same. None
 * where its steps are no longer in the ring's times. */
static void lost_window(const tp_ops_relay *r, tp_sink *sink, int32_t pid,
                        const tp_ring_reader *reader, int32_t tid, uint64_t first_step,
                        const char *note)
{
    if (first_step == 0 || reader->steps < first_step ||
        reader->steps - first_step >= TP_RING_STEP_TIMES)
        return; /* begun too long ago to place */
    const tp_ops_request *q = &r->plan.current;
    uint64_t last = reader->steps < first_step + q->steps ? reader->steps : first_step + q->steps;
    tp_ops_window *w = calloc(1, sizeof *w);
    if (!w)
        return;
    *w = (tp_ops_window){
        .thread = reader->thread,
        .pid = pid,
        .tid = tid,
        .reason = q->reason & TP_OPS_REASON_MASK ? q->reason & TP_OPS_REASON_MASK : 1,
        .steps = (uint32_t)(last - first_step),
        .first_step = first_step,
        .start_ns = (int64_t)reader->step_ns[first_step % TP_RING_STEP_TIMES],
        .end_ns = (int64_t)(last > first_step ? reader->step_ns[last % TP_RING_STEP_TIMES]
                                              : reader->last_ns),
        .alloc_start = -1,
        .note = strdup(note)};
    if (w->end_ns < w->start_ns)
        w->end_ns = w->start_ns;
    tp_sink_ops_window(sink, w);
}

void tp_ops_relay_lost(tp_ops_relay *r, tp_sink *sink, int32_t pid, const tp_ring_reader *reader,
                       int32_t tid, uint32_t begun, uint64_t begun_step, uint32_t unsent,
                       uint64_t unsent_step)
{
    if (!r || !begun || pid <= 0 || !reader->thread)
        return;
    sent_windows *sent = sent_of(r, pid);
    if (!sent || sent->windows >= begun)
        return;                                   /* it sent every window it began */
    if ((uint64_t)sent->windows + unsent < begun) /* it ended during the last */
        lost_window(r, sink, pid, reader, tid, begun_step,
                    "the process ended during its capture window: PyTorch's profiler's events "
                    "were lost with it");
    else if (unsent)
        lost_window(r, sink, pid, reader, tid, unsent_step,
                    "its capture window could not be handed over to the recorder (its socket "
                    "full while it was short of CPU, or no memory for it): PyTorch's profiler's "
                    "events were lost");
    sent->windows = begun;
}

const char *tp_ops_relay_take(tp_ops_relay *r, tp_sink *sink, int fd, int32_t pid,
                              uint32_t (*thread_of)(void *ctx, int32_t tid), void *ctx, char *why,
                              size_t cap)
{
    sent_windows *sent = pid > 0 ? sent_of(r, pid) : NULL;
    if (!sent || sent->windows >= r->plan.current.seq) {
        close(fd);
        snprintf(why, cap, "it sent a capture window nobody asked for (%u windows for %u requests)",
                 sent ? sent->windows + 1 : 0, r->plan.current.seq);
        return why;
    }
    sent->windows++;
    tp_ops_window *w = tp_ops_blob_read(fd, why, cap);
    close(fd);
    if (!w)
        return why;
    w->pid = pid;
    w->thread = thread_of ? thread_of(ctx, w->tid) : 0;
    tp_sink_ops_window(sink, w);
    return NULL;
}
