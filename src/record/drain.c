/* drain.c: turning training threads' rings into regions, steps and epochs. */
#include "record/drain.h"
#include "record/ring_check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/drain_losses.h"
#include "record/ops_relay.h"
#include "record/proc_page.h"
#include "record/process_ends.h"
#include "record/ring_events.h"
#include "record/step_waits.h"
#include "clock.h"
#include "ring.h"
#include "util/fd_passing.h"
#include "util/utf8.h"
#include "util/thread.h"
#include "util/grow.h"

#define DRAIN_PERIOD_MS 10
#define MAX_CONNS       1024
/* The rings the recorder holds at once: of one process (its live threads
 * that made events), and in all. Each costs its maps of names and frames
 * besides its mapping. */
#define TP_RINGS_PER_PROCESS 4096u
#define TP_RINGS_MAX         65536u

/* A mapped ring. What the producer may still write (the header's head,
 * the slots) is read, never trusted: the capacity is the one copied when the
 * ring was accepted, the tail the reader's own (published to h->tail). */
typedef struct drain_ring {
    tp_ring_header *h;
    size_t bytes;
    tp_ring_reader reader;
    bool broken; /* broke the protocol: retired without a last drain */
    bool closed; /* its thread exited: retired after a last drain */
    int conn;    /* index of the connection that sent it */
    int32_t tid; /* its thread, as the header said when it was mapped */
} drain_ring;

/* A rank a process gave itself (TP_EV_RANK), for its rings not mapped yet. */
typedef struct conn_rank {
    bool set;
    int32_t rank, local_rank, world_size;
} conn_rank;

/* The process at the other end of a connection, from the kernel
 * (SO_PEERCRED), not from anything it wrote. */
typedef struct conn_peer {
    int32_t pid;
    bool misbehaved;    /* said once per process */
    tp_proc_page *page; /* the page it handed over (record/proc_page.h); NULL: none */
} conn_peer;

struct tp_drain {
    tp_sink *sink;
    char dir[64];
    char path[100];
    int listen_fd;
    int wake_fd; /* eventfd: tp_drain_stop ends the thread's poll at once */
    int conns[MAX_CONNS];
    conn_rank ranks[MAX_CONNS];   /* by connection */
    uint32_t rings_of[MAX_CONNS]; /* rings held, by connection */
    /* by connection: the sink threads of its rings let go (their threads
     * exited), which a rank the process learns later still reaches */
    struct gone_threads {
        uint32_t *ids;
        size_t n, cap;
    } gone[MAX_CONNS];
    conn_peer peers[MAX_CONNS]; /* by connection */
    size_t nconns;
    drain_ring *rings;
    size_t nrings, rings_cap;
    /* connections the drain could not take: accept failed (the last errno),
     * or MAX_CONNS were open; said in the run when it stops */
    tp_drain_losses losses;
    int reserve_fd;       /* held for the ring descriptors to come (read_conn) */
    int accept_rests;     /* periods left before the next accept */
    tp_process_ends ends; /* processes that ended, their exit statuses */
    pthread_t thread;
    bool started;
    atomic_bool stop;
    /* requests for one stack of every thread (tp_drain_want_stacks), and
     * the last one passed to the rings */
    atomic_uint stacks_wanted;
    unsigned stacks_passed;
    atomic_uint open_conns; /* processes connected now (tp_drain_open_processes) */
    tp_ops_relay *ops;      /* capture windows; NULL: none */
    tp_step_waits *waits;   /* the step threads' waits for a CPU; NULL: none */
    tp_tsc_map tsc;         /* the rings' TSC stamps to ns, anew each pass */
};

/* Process conn told its rank: every thread of it takes it (those that sent
 * events before included), and so will its rings mapped later. */
static void set_process_rank(tp_drain *d, int conn, int32_t rank, uint64_t aux)
{
    conn_rank *c = &d->ranks[conn];
    *c = (conn_rank){true, rank, (int32_t)(uint32_t)aux, (int32_t)(uint32_t)(aux >> 32)};
    for (size_t i = 0; i < d->nrings; i++)
        if (d->rings[i].conn == conn)
            tp_sink_thread_rank(d->sink, d->rings[i].reader.thread, c->rank, c->local_rank,
                                c->world_size);
    for (size_t i = 0; i < d->gone[conn].n; i++)
        tp_sink_thread_rank(d->sink, d->gone[conn].ids[i], c->rank, c->local_rank, c->world_size);
}

/* A process broke the protocol (or sent a ring or page the drain can't
 * take): what, and what it cost (NULL: the thread of a ring its events),
 * go into the run as an unavailable source naming its pid, once per
 * process, and the ring (if any) is retired at the next turn. */
static void misbehaved(tp_drain *d, int conn, drain_ring *r, const char *what, const char *cost)
{
    if (r)
        r->broken = true;
    conn_peer *p = &d->peers[conn];
    if (p->misbehaved)
        return;
    p->misbehaved = true;
    char source[64], reason[320];
    snprintf(source, sizeof source, "timings of pid %d", (int)p->pid);
    snprintf(reason, sizeof reason, "%s; %s", what,
             cost ? cost
                  : "that thread's events from then on were not recorded (the other processes' "
                    "were)");
    tp_sink_unavailable(d->sink, source, reason);
}

/* One of the drain's connections, for a callback. */
typedef struct conn_ctx {
    tp_drain *d;
    int conn;
} conn_ctx;

/* A TP_EV_RANK event read from one of conn's rings. */
static void on_rank(void *ctx, int32_t rank, uint64_t aux)
{
    conn_ctx *c = ctx;
    set_process_rank(c->d, c->conn, rank, aux);
}

/* Consumes everything the producer has published, and gives the slots back
 * (h->tail); a ring that broke the protocol is marked for retiring. */
static void drain_ring_events(tp_drain *d, drain_ring *r)
{
    if (r->broken)
        return;
    uint64_t head = atomic_load_explicit(&r->h->head, memory_order_acquire);
    conn_ctx ctx = {d, r->conn};
    char why[160];
    if (tp_ring_reader_consume(&r->reader, d->sink, tp_ring_slots(r->h), head, on_rank, &ctx, why,
                               sizeof why)) {
        misbehaved(d, r->conn, r, why, NULL);
        return;
    }
    atomic_store_explicit(&r->h->tail, r->reader.tail, memory_order_release);
}

/* Maps a ring received on connection conn; closes fd either way. Only the
 * capacity's slots are mapped, whatever the memfd's size. */
static void add_ring(tp_drain *d, int conn, int fd)
{
    tp_ring_header hdr;
    uint64_t bytes = 0;
    const char *why = tp_ring_refused(fd, &hdr, &bytes);
    tp_ring_header *h =
        why ? MAP_FAILED : mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED) {
        misbehaved(d, conn, NULL, why ? why : "its ring could not be mapped", NULL);
        return;
    }
    if (d->rings_of[conn] >= TP_RINGS_PER_PROCESS || d->nrings >= TP_RINGS_MAX) {
        munmap(h, (size_t)bytes); /* bounded: the recorder's memory is not the process's to take */
        d->losses.rings_refused++;
        char why_more[160];
        snprintf(why_more, sizeof why_more,
                 "it had more than %u threads' rings open at once (the recorder holds at most "
                 "%u a process, %u in all)",
                 d->rings_of[conn], TP_RINGS_PER_PROCESS, TP_RINGS_MAX);
        misbehaved(d, conn, NULL, why_more, NULL);
        return;
    }
    drain_ring *n = tp_grow_try(d->rings, d->nrings, &d->rings_cap, sizeof *n);
    if (!n) {
        munmap(h, (size_t)bytes);
        misbehaved(d, conn, NULL, "the recorder had no memory for its ring", NULL);
        return;
    }
    d->rings = n;
    drain_ring *r = &d->rings[d->nrings++];
    memset(r, 0, sizeof *r);
    r->h = h;
    r->bytes = (size_t)bytes;
    r->reader.capacity = hdr.capacity;
    r->reader.tail = 0; /* whatever the header says: nothing was read yet */
    r->reader.clock = &d->tsc;
    r->conn = conn;
    r->tid = hdr.tid;
    d->rings_of[conn]++;
    const conn_rank *c = &d->ranks[conn];
    tp_thread_info info = {0,
                           hdr.pid,
                           hdr.tid,
                           c->set ? c->rank : hdr.rank,
                           c->set ? c->local_rank : hdr.local_rank,
                           c->set ? c->world_size : hdr.world_size,
                           "",
                           0,
                           hdr.cuda_visible_devices_set != 0,
                           "",
                           ""};
    tp_ring_header_text(info.name, sizeof info.name, hdr.thread_name, sizeof hdr.thread_name);
    tp_ring_header_text(info.cuda_visible, sizeof info.cuda_visible, hdr.cuda_visible_devices,
                        sizeof hdr.cuda_visible_devices);
    r->reader.thread = tp_sink_thread(d->sink, &info);
    r->reader.pid = d->peers[conn].pid;
    tp_ops_relay_publish(d->ops, h); /* the capture window asked for so far */
}

/* The sink thread of process conn's thread tid (0: none of its rings). */
static uint32_t thread_of_tid(void *ctx, int32_t tid)
{
    const conn_ctx *c = ctx;
    for (const drain_ring *r = c->d->rings; r < c->d->rings + c->d->nrings; r++)
        if (r->conn == c->conn && r->tid == tid)
            return r->reader.thread;
    return 0;
}

/* A capture window process conn sent (fd: its memfd, closed here). */
static void take_window(tp_drain *d, int conn, int fd)
{
    char why[160];
    conn_ctx ctx = {d, conn};
    if (!d->ops)
        close(fd);
    else if (tp_ops_relay_take(d->ops, d->sink, fd, d->peers[conn].pid, thread_of_tid, &ctx, why,
                               sizeof why))
        misbehaved(d, conn, NULL, why, NULL);
}

/* Drains a ring a last time, records its drops, and unmaps it. */
static void retire_ring(tp_drain *d, size_t i)
{
    drain_ring *r = &d->rings[i];
    drain_ring_events(d, r);
    tp_sink_thread_dropped(d->sink, r->reader.thread,
                           atomic_load_explicit(&r->h->dropped, memory_order_relaxed));
    munmap(r->h, r->bytes);
    struct gone_threads *g = &d->gone[r->conn];
    if (r->closed && r->reader.thread) { /* its process lives on: a rank may come */
        uint32_t *ids = tp_grow_try(g->ids, g->n, &g->cap, sizeof *ids);
        if (ids) {
            g->ids = ids;
            g->ids[g->n++] = r->reader.thread;
        }
    }
    tp_ring_reader_free(&r->reader);
    if (d->rings_of[r->conn])
        d->rings_of[r->conn]--;
    d->rings[i] = d->rings[--d->nrings];
}

/* A connection's record of its let-go threads, once it has closed. */
static void forget_gone(tp_drain *d, int conn)
{
    free(d->gone[conn].ids);
    d->gone[conn] = (struct gone_threads){NULL, 0, 0};
}

/* Reads ring descriptors from a connection; false when it has closed. A
 * descriptor is kept in reserve and let go just before each read, so that a
 * recorder at its descriptor limit still has room for the ring it receives;
 * one the kernel had to drop (MSG_CTRUNC) is counted. */
static bool read_conn(tp_drain *d, int conn)
{
    for (;;) {
        if (d->reserve_fd >= 0)
            close(d->reserve_fd);
        d->reserve_fd = -1;
        char tag[8];
        int fd;
        bool dropped;
        ssize_t n = tp_recv_tagged_fd(d->conns[conn], tag, sizeof tag, &fd, &dropped);
        int saved = errno;
        const char *why = NULL;
        if (n > 0 && fd >= 0 && strncmp(tag, "ops", sizeof tag) == 0)
            take_window(d, conn, fd);
        else if (n > 0 && fd >= 0 && strncmp(tag, "proc", sizeof tag) == 0)
            why = tp_proc_page_map(&d->peers[conn].page, fd);
        else if (n > 0 && fd >= 0)
            add_ring(d, conn, fd);
        d->losses.rings_dropped += dropped;
        if (why) /* its rings go on */
            misbehaved(d, conn, NULL, why,
                       "its threads that could not hand their ring over were counted by "
                       "its first page, or not at all");
        d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (n == 0)
            return false;
        if (n < 0)
            return saved == EAGAIN || saved == EINTR;
    }
}

/* A process went away (the drain saw it at now_ns, monotonic): its rings
 * are drained one last time, all of them before any is unmapped (a rank
 * event in one reaches the others' threads), where it was is noted, and
 * they are unmapped. */
static void close_conn(tp_drain *d, int conn, uint64_t now_ns)
{
    for (size_t i = 0; i < d->nrings; i++)
        if (d->rings[i].conn == conn)
            drain_ring_events(d, &d->rings[i]);
    uint64_t start = tp_sink_start_ns(d->sink);
    tp_process_end end = {.pid = d->peers[conn].pid, .end_ns = now_ns > start ? now_ns - start : 0};
    tp_process_end_where end_where = {0};
    for (size_t i = 0; i < d->nrings; i++)
        if (d->rings[i].conn == conn)
            tp_process_end_see(&end, &end_where, &d->rings[i].reader, start);
    tp_process_end_said(&end, &end_where, d->sink);
    const drain_ring *stepping = NULL; /* its step thread's: the ring with the most steps */
    for (size_t i = 0; i < d->nrings; i++)
        if (d->rings[i].conn == conn &&
            (!stepping || d->rings[i].reader.steps > stepping->reader.steps))
            stepping = &d->rings[i];
    /* its threads not recorded, its windows not sent */
    tp_windows_unsent unsent =
        tp_proc_page_release(&d->peers[conn].page, d->sink, d->peers[conn].pid);
    if (stepping && stepping->reader.steps && !stepping->broken)
        tp_ops_relay_lost(d->ops, d->sink, d->peers[conn].pid, &stepping->reader, stepping->tid,
                          atomic_load_explicit(&stepping->h->ops_begun, memory_order_acquire),
                          atomic_load_explicit(&stepping->h->ops_begun_step, memory_order_relaxed),
                          unsent.n, unsent.last_first_step);
    for (size_t i = d->nrings; i-- > 0;)
        if (d->rings[i].conn == conn)
            retire_ring(d, i);
    close(d->conns[conn]);
    d->conns[conn] = -1;
    forget_gone(d, conn);
    atomic_fetch_sub(&d->open_conns, 1);
    tp_process_ends_note(&d->ends, d->sink, &end);
}

/* Takes one connection waiting on the listening socket, if any: false when
 * there was none (or accept failed, counted; out of descriptors, or at the
 * room they leave for connections, the socket rests for 10 periods). Past
 * MAX_CONNS a connection is turned away, counted. */
static bool accept_one(tp_drain *d)
{
    int c = -1, why = EMFILE; /* at the room the limit leaves: as out of descriptors */
    if (atomic_load(&d->open_conns) < tp_fd_room_for_peers(MAX_CONNS)) {
        c = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        why = errno;
    } else if (poll(&(struct pollfd){d->listen_fd, POLLIN, 0}, 1, 0) != 1) {
        why = EAGAIN; /* none waits */
    }
    if (c < 0) {
        if (why != EAGAIN && why != EINTR && why != ECONNABORTED) {
            d->losses.accept_errno = why; /* EMFILE, ENFILE, ENOMEM */
            d->losses.accept_failures++;
            d->accept_rests = 10;
        }
        return false;
    }
    size_t slot = 0;
    while (slot < d->nconns && d->conns[slot] >= 0) /* reuse closed slots */
        slot++;
    if (slot >= MAX_CONNS) {
        close(c);
        d->losses.turned_away++;
        return true;
    }
    struct ucred cred = {0};
    socklen_t len = sizeof cred;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        cred.pid = 0;
    d->conns[slot] = c;
    atomic_fetch_add(&d->open_conns, 1);
    d->ranks[slot] = (conn_rank){0};
    tp_step_waits_reset(d->waits, slot);
    d->peers[slot] = (conn_peer){(int32_t)cred.pid, false, NULL};
    if (slot == d->nconns)
        d->nconns++;
    return true;
}

/* Closes the connections whose processes ended (the drain thread stopped):
 * false when none had. */
static bool close_ended(tp_drain *d)
{
    bool any = false;
    d->accept_rests = 0;
    for (size_t i = 0; i < d->nconns; i++)
        if (d->conns[i] >= 0 && !read_conn(d, (int)i)) {
            close_conn(d, (int)i, tp_clock_mono_ns());
            any = true;
        }
    return any;
}

static void *drain_main(void *arg)
{
    tp_drain *d = arg;
    struct pollfd pfd[MAX_CONNS + 3];
    while (!atomic_load(&d->stop)) {
        /* while accept can't take a connection (out of descriptors), the
         * listening socket rests: it would wake every poll at once */
        bool resting = d->accept_rests > 0;
        d->accept_rests -= resting;
        pfd[0] = (struct pollfd){resting ? -1 : d->listen_fd, POLLIN, 0};
        pfd[1] = (struct pollfd){d->wake_fd, POLLIN, 0};
        for (size_t i = 0; i < d->nconns; i++)
            pfd[i + 2] = (struct pollfd){d->conns[i], POLLIN, 0};
        size_t polled = d->nconns; /* accept below may add one not in pfd */
        pfd[polled + 2] = (struct pollfd){tp_ops_relay_fd(d->ops), POLLIN, 0};
        /* rings fill without a sound, so they are drained every period; with
         * none mapped, only a connection, a message or the stop can matter */
        int n =
            poll(pfd, polled + 3, d->nrings || resting || d->ends.npending ? DRAIN_PERIOD_MS : -1);
        int64_t now = (int64_t)tp_clock_mono_ns();
        tp_tsc_map_refresh(&d->tsc);
        if (n > 0 && (pfd[0].revents & POLLIN))
            accept_one(d);
        for (size_t i = 0; n > 0 && i < polled; i++)
            if (d->conns[i] >= 0 && pfd[i + 2].revents && !read_conn(d, (int)i))
                close_conn(d, (int)i, (uint64_t)now);
        for (size_t i = 0; i < d->nrings; i++) {
            /* closed before this drain: every event it will ever hold is in */
            d->rings[i].closed =
                atomic_load_explicit(&d->rings[i].h->closed, memory_order_acquire) != 0;
            drain_ring_events(d, &d->rings[i]);
            tp_ops_relay_feed(d->ops, &d->rings[i].reader, now);
        }
        /* answered after the drain: every step begun before the request counts */
        if (n > 0 && (pfd[polled + 2].revents & POLLIN))
            tp_ops_relay_serve(d->ops, now);
        bool asked = tp_ops_relay_tick(d->ops, now);
        tp_ops_relay_say(d->ops, d->sink); /* a back-off over the budget, once */
        if (asked)                         /* a new capture window for every process */
            for (size_t i = 0; i < d->nrings; i++)
                if (!d->rings[i].broken)
                    tp_ops_relay_publish(d->ops, d->rings[i].h);
        unsigned wanted = atomic_load(&d->stacks_wanted);
        if (wanted != d->stacks_passed) { /* each process's sampler serves the new count */
            for (size_t i = 0; i < d->nrings; i++)
                if (!d->rings[i].broken)
                    atomic_store_explicit(&d->rings[i].h->stacks_wanted, wanted,
                                          memory_order_release);
            d->stacks_passed = wanted;
        }
        for (size_t i = 0; i < d->nrings; i++) /* each step thread's wait for a CPU */
            tp_step_waits_offer(d->waits, (size_t)d->rings[i].conn, d->rings[i].tid,
                                d->rings[i].reader.steps);
        for (size_t i = 0; i < d->nconns; i++)
            if (d->conns[i] >= 0)
                tp_step_waits_read(d->waits, d->sink, i, d->peers[i].pid, (uint64_t)now);
        for (size_t i = d->nrings; i-- > 0;)
            if (d->rings[i].broken || d->rings[i].closed)
                retire_ring(d, i);
        tp_process_ends_check(&d->ends, d->sink);
    }
    return NULL;
}

unsigned tp_drain_open_processes(const tp_drain *d)
{
    return d ? atomic_load(&((tp_drain *)d)->open_conns) : 0;
}

void tp_drain_ask_capture(tp_drain *d)
{
    if (d)
        tp_ops_relay_ask(d->ops);
}

void tp_drain_want_stacks(tp_drain *d)
{
    if (d)
        atomic_fetch_add(&d->stacks_wanted, 1);
}

tp_drain *tp_drain_start(tp_sink *sink, const tp_ops_options *ops, uint64_t interval_ns, char *err,
                         size_t cap)
{
    tp_drain *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->sink = sink;
    tp_tsc_map_init(&d->tsc);
    tp_process_ends_init(&d->ends);
    d->listen_fd = -1;
    d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (d->wake_fd < 0) {
        snprintf(err, cap, "cannot make an eventfd: %s", strerror(errno));
        free(d);
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/trainprof-XXXXXX",
             tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(d->dir)) { /* mkdtemp makes it 0700 */
        snprintf(err, cap, "cannot make a socket directory: %s", strerror(errno));
        close(d->wake_fd);
        if (d->reserve_fd >= 0)
            close(d->reserve_fd);
        free(d);
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s/events.sock", d->dir);
    tp_ops_options off;
    tp_ops_options_default(&off);
    off.off = true;
    char ops_err[200]; /* without a control socket, no windows: the rest goes on */
    d->ops = tp_ops_relay_new(d->dir, ops ? ops : &off, ops_err, sizeof ops_err);
    d->waits = tp_step_waits_new(MAX_CONNS, interval_ns); /* NULL: none; the rest goes on */
    if ((d->listen_fd = tp_listen_seqpacket(d->path, 128)) < 0) {
        snprintf(err, cap, "cannot listen on %s: %s", d->path, strerror(errno));
        tp_drain_stop(d);
        return NULL;
    }
    d->started = tp_thread_start(&d->thread, drain_main, d, TP_STACK_OWN_CODE);
    if (!d->started) {
        snprintf(err, cap, "the recorder could not start its thread for them: %s", strerror(errno));
        tp_drain_stop(d);
        return NULL;
    }
    return d;
}

const char *tp_drain_socket_path(const tp_drain *d) { return d->path; }

void tp_drain_stop(tp_drain *d)
{
    if (!d)
        return;
    if (d->started) {
        atomic_store(&d->stop, true);
        uint64_t one = 1;
        ssize_t woke = write(d->wake_fd, &one, sizeof one); /* else the poll's timeout does */
        (void)woke;
        pthread_join(d->thread, NULL);
    }
    /* processes that connected and sent their rings (maybe ended, too)
     * before the drain thread took their connection: out of descriptors,
     * those that closed make room for them */
    d->accept_rests = 0;
    do
        while (d->listen_fd >= 0 && accept_one(d))
            ;
    while (d->accept_rests && close_ended(d));
    for (size_t i = 0; i < d->nconns; i++)
        if (d->conns[i] >= 0)
            read_conn(d, (int)i);          /* rings sent just before the end */
    for (size_t i = 0; i < d->nrings; i++) /* every event first: rank events reach all rings */
        drain_ring_events(d, &d->rings[i]);
    while (d->nrings)
        retire_ring(d, d->nrings - 1);
    tp_process_ends_check(&d->ends, d->sink);
    tp_drain_losses_say(d->sink, &d->losses, MAX_CONNS, TP_RINGS_PER_PROCESS, TP_RINGS_MAX);
    int32_t alive[8];
    size_t nalive = 0;
    for (size_t i = 0; i < d->nconns; i++)
        if (d->conns[i] >= 0 && nalive++ < 8)
            alive[nalive - 1] = d->peers[i].pid;
    tp_drain_outlivers_say(d->sink, alive, nalive);
    for (size_t i = 0; i < d->nconns; i++) {
        tp_proc_page_release(&d->peers[i].page, d->sink, d->peers[i].pid);
        if (d->conns[i] >= 0)
            close(d->conns[i]);
        forget_gone(d, (int)i);
    }
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    close(d->wake_fd);
    if (d->reserve_fd >= 0)
        close(d->reserve_fd);
    unlink(d->path);
    tp_ops_relay_free(d->ops);
    tp_step_waits_free(d->waits);
    rmdir(d->dir);
    free(d->rings);
    free(d);
}

const char *tp_drain_dir(const tp_drain *d) { return d->dir; }
