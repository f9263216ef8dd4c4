/* ops_relay.c: see ops_relay.h. */
#include "record/ops_relay.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "record/ops_blob.h"

struct tp_ops_relay {
    tp_ops_plan plan;
    int listen_fd;
    char path[128];
};

tp_ops_relay *tp_ops_relay_new(const char *dir, const tp_ops_options *options, char *err,
                               size_t cap)
{
    tp_ops_relay *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    tp_ops_plan_init(&r->plan, options);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(r->path, sizeof r->path, "%s/control.sock", dir) >= sizeof addr.sun_path) {
        snprintf(err, cap, "the socket directory's name is too long");
        r->listen_fd = -1;
        tp_ops_relay_free(r);
        return NULL;
    }
    memcpy(addr.sun_path, r->path, strlen(r->path) + 1);
    r->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(r->listen_fd, 16) != 0) {
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
        snprintf(reply, sizeof reply, "window %u %llu %u", q.reason,
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
    reader->new_steps = 0;
    reader->new_slowest_ns = reader->new_total_ns = 0;
}

bool tp_ops_relay_tick(tp_ops_relay *r, int64_t now_ns)
{
    tp_ops_request q;
    return r && tp_ops_plan_tick(&r->plan, now_ns, &q);
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

const char *tp_ops_relay_take(tp_sink *sink, int fd, int32_t pid,
                              uint32_t (*thread_of)(void *ctx, int32_t tid), void *ctx, char *why,
                              size_t cap)
{
    tp_ops_window *w = tp_ops_blob_read(fd, why, cap);
    close(fd);
    if (!w)
        return why;
    w->pid = pid;
    w->thread = thread_of ? thread_of(ctx, w->tid) : 0;
    tp_sink_ops_window(sink, w);
    return NULL;
}
