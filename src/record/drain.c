/* drain.c: turning training threads' rings into regions, steps and epochs. */
#include "record/drain.h"

#include <errno.h>
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
#include <sys/un.h>
#include <unistd.h>

#include "ring.h"

#define DRAIN_PERIOD_MS 10
#define MAX_CONNS       1024
#define OPEN_MAX        64

typedef struct open_region {
    uint32_t name; /* the ring's own name id */
    uint64_t start;
} open_region;

typedef struct drain_ring {
    tp_ring_header *h;
    size_t bytes;
    int conn;        /* index of the connection that sent it */
    uint32_t thread; /* the sink's thread id */
    uint32_t *names; /* ring name id -> sink name id */
    uint32_t names_cap;
    open_region open[OPEN_MAX];
    uint32_t depth;
} drain_ring;

/* A rank a process gave itself (TP_EV_RANK), for its rings not mapped yet. */
typedef struct conn_rank {
    bool set;
    int32_t rank, local_rank, world_size;
} conn_rank;

struct tp_drain {
    tp_sink *sink;
    char dir[64];
    char path[100];
    int listen_fd;
    int wake_fd; /* eventfd: tp_drain_stop ends the thread's poll at once */
    int conns[MAX_CONNS];
    conn_rank ranks[MAX_CONNS]; /* by connection */
    size_t nconns;
    drain_ring *rings;
    size_t nrings, rings_cap;
    pthread_t thread;
    bool started;
    atomic_bool stop;
};

/* ---- events -------------------------------------------------------------- */

/* Process conn told its rank: every thread of it takes it (those that sent
 * events before included), and so will its rings mapped later. */
static void set_process_rank(tp_drain *d, int conn, int32_t rank, uint64_t aux)
{
    conn_rank *c = &d->ranks[conn];
    *c = (conn_rank){true, rank, (int32_t)(uint32_t)aux, (int32_t)(uint32_t)(aux >> 32)};
    for (size_t i = 0; i < d->nrings; i++)
        if (d->rings[i].conn == conn)
            tp_sink_thread_rank(d->sink, d->rings[i].thread, c->rank, c->local_rank, c->world_size);
}

static void map_name(tp_drain *d, drain_ring *r, uint32_t local, const char *text)
{
    if (local >= r->names_cap) {
        uint32_t ncap = local + 64;
        uint32_t *n = realloc(r->names, ncap * sizeof *n);
        if (!n)
            return;
        memset(n + r->names_cap, 0, (ncap - r->names_cap) * sizeof *n);
        r->names = n;
        r->names_cap = ncap;
    }
    r->names[local] = tp_sink_name(d->sink, text);
}

static uint32_t global_name(const drain_ring *r, uint32_t local)
{
    return local < r->names_cap ? r->names[local] : 0;
}

/* Closes the innermost open region with this name, and any opened after it
 * whose end was lost to a full ring. */
static void close_region(tp_drain *d, drain_ring *r, uint32_t local, uint64_t t)
{
    for (uint32_t k = r->depth; k-- > 0;) {
        if (r->open[k].name != local)
            continue;
        uint32_t name = global_name(r, local);
        if (name)
            tp_sink_interval(d->sink, r->thread, name, k, r->open[k].start, t);
        r->depth = k;
        return;
    }
}

/* Consumes everything the producer has published. */
static void drain_ring_events(tp_drain *d, drain_ring *r)
{
    tp_ring_header *h = r->h;
    tp_event *slots = tp_ring_slots(h);
    uint32_t mask = h->capacity - 1;
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
    if (head - tail > h->capacity)
        return; /* corrupt ring: never trust it */
    while (tail < head) {
        tp_event e = slots[tail & mask];
        tail++;
        switch (e.kind) {
        case TP_EV_NAME: {
            char text[TP_NAME_MAX + 1];
            size_t len = e.aux > TP_NAME_MAX ? TP_NAME_MAX : (size_t)e.aux;
            size_t chunks = (len + sizeof(tp_event) - 1) / sizeof(tp_event);
            if (tail + chunks > head)
                break;
            for (size_t i = 0; i < chunks; i++) {
                size_t off = i * sizeof(tp_event);
                size_t n = len - off < sizeof(tp_event) ? len - off : sizeof(tp_event);
                memcpy(text + off, &slots[(tail + i) & mask], n);
            }
            text[len] = '\0';
            tail += chunks;
            map_name(d, r, e.name_id, text);
            break;
        }
        case TP_EV_BEGIN:
            if (r->depth < OPEN_MAX)
                r->open[r->depth++] = (open_region){e.name_id, e.t_ns};
            break;
        case TP_EV_END: close_region(d, r, e.name_id, e.t_ns); break;
        case TP_EV_STEP: tp_sink_mark(d->sink, r->thread, TP_MARK_STEP, e.t_ns, 0); break;
        case TP_EV_STEP_END: tp_sink_mark(d->sink, r->thread, TP_MARK_STEP_END, e.t_ns, 0); break;
        case TP_EV_EPOCH: tp_sink_mark(d->sink, r->thread, TP_MARK_EPOCH, e.t_ns, e.value); break;
        case TP_EV_SAMPLES:
            tp_sink_mark(d->sink, r->thread, TP_MARK_SAMPLES, e.t_ns, e.value);
            break;
        case TP_EV_RANK: set_process_rank(d, r->conn, (int32_t)e.value, e.aux); break;
        case TP_EV_DEVICE: {
            uint32_t name = global_name(r, e.name_id);
            if (name && e.value >= 0)
                tp_sink_device_span(d->sink, r->thread, name, e.t_ns, (uint64_t)e.value);
            break;
        }
        default: break;
        }
    }
    atomic_store_explicit(&h->tail, tail, memory_order_release);
}

/* ---- rings and connections ----------------------------------------------- */

/* Maps a ring received on connection conn; closes fd either way. */
static void add_ring(tp_drain *d, int conn, int fd)
{
    struct stat sb;
    tp_ring_header *h = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= TP_RING_HEADER_SIZE)
        h = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED)
        return;
    uint32_t cap = h->capacity;
    if (h->magic != TP_RING_MAGIC || h->version != TP_RING_VERSION || cap == 0 ||
        (cap & (cap - 1)) || tp_ring_bytes(cap) > (uint64_t)sb.st_size) {
        munmap(h, (size_t)sb.st_size);
        return;
    }
    if (d->nrings == d->rings_cap) {
        size_t ncap = d->rings_cap ? d->rings_cap * 2 : 16;
        drain_ring *n = realloc(d->rings, ncap * sizeof *n);
        if (!n) {
            munmap(h, (size_t)sb.st_size);
            return;
        }
        d->rings = n;
        d->rings_cap = ncap;
    }
    drain_ring *r = &d->rings[d->nrings++];
    memset(r, 0, sizeof *r);
    r->h = h;
    r->bytes = (size_t)sb.st_size;
    r->conn = conn;
    const conn_rank *c = &d->ranks[conn];
    tp_thread_info info = {0,
                           h->pid,
                           h->tid,
                           c->set ? c->rank : h->rank,
                           c->set ? c->local_rank : h->local_rank,
                           c->set ? c->world_size : h->world_size,
                           "",
                           0,
                           h->cuda_visible_devices_set != 0,
                           ""};
    memcpy(info.name, h->thread_name, sizeof info.name - 1);
    _Static_assert(sizeof info.cuda_visible == sizeof h->cuda_visible_devices, "same size");
    memcpy(info.cuda_visible, h->cuda_visible_devices, sizeof info.cuda_visible - 1);
    r->thread = tp_sink_thread(d->sink, &info);
}

/* Drains a ring a last time, records its drops, and unmaps it. */
static void retire_ring(tp_drain *d, size_t i)
{
    drain_ring *r = &d->rings[i];
    drain_ring_events(d, r);
    tp_sink_thread_dropped(d->sink, r->thread,
                           atomic_load_explicit(&r->h->dropped, memory_order_relaxed));
    munmap(r->h, r->bytes);
    free(r->names);
    d->rings[i] = d->rings[--d->nrings];
}

/* Reads ring descriptors from a connection; false when it has closed. */
static bool read_conn(tp_drain *d, int conn)
{
    for (;;) {
        char tag[8];
        struct iovec iov = {tag, sizeof tag};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof control.buf};
        ssize_t n = recvmsg(d->conns[conn], &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
            add_ring(d, conn, fd);
        }
    }
}

/* A process went away: its rings are drained one last time and unmapped. */
static void close_conn(tp_drain *d, int conn)
{
    for (size_t i = d->nrings; i-- > 0;)
        if (d->rings[i].conn == conn)
            retire_ring(d, i);
    close(d->conns[conn]);
    d->conns[conn] = -1;
}

static void *drain_main(void *arg)
{
    tp_drain *d = arg;
    struct pollfd pfd[MAX_CONNS + 2];
    while (!atomic_load(&d->stop)) {
        pfd[0] = (struct pollfd){d->listen_fd, POLLIN, 0};
        pfd[1] = (struct pollfd){d->wake_fd, POLLIN, 0};
        for (size_t i = 0; i < d->nconns; i++)
            pfd[i + 2] = (struct pollfd){d->conns[i], POLLIN, 0};
        size_t polled = d->nconns; /* accept below may add one not in pfd */
        /* rings fill without a sound, so they are drained every period; with
         * none mapped, only a connection, a message or the stop can matter */
        int n = poll(pfd, polled + 2, d->nrings ? DRAIN_PERIOD_MS : -1);
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            int c = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            size_t slot = 0;
            while (slot < d->nconns && d->conns[slot] >= 0) /* reuse closed slots */
                slot++;
            if (c >= 0 && slot < MAX_CONNS) {
                d->conns[slot] = c;
                d->ranks[slot] = (conn_rank){0};
                if (slot == d->nconns)
                    d->nconns++;
            } else if (c >= 0) {
                close(c);
            }
        }
        for (size_t i = 0; n > 0 && i < polled; i++)
            if (d->conns[i] >= 0 && pfd[i + 2].revents && !read_conn(d, (int)i))
                close_conn(d, (int)i);
        for (size_t i = 0; i < d->nrings; i++)
            drain_ring_events(d, &d->rings[i]);
    }
    return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

tp_drain *tp_drain_start(tp_sink *sink, char *err, size_t cap)
{
    tp_drain *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->sink = sink;
    d->listen_fd = -1;
    d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
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
        free(d);
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s/events.sock", d->dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", d->path);
    d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(d->listen_fd, 128) != 0) {
        snprintf(err, cap, "cannot listen on %s: %s", d->path, strerror(errno));
        tp_drain_stop(d);
        return NULL;
    }
    d->started = pthread_create(&d->thread, NULL, drain_main, d) == 0;
    if (!d->started) {
        snprintf(err, cap, "cannot start the drain thread");
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
    for (size_t i = 0; i < d->nconns; i++)
        if (d->conns[i] >= 0)
            read_conn(d, (int)i); /* rings sent just before the end */
    while (d->nrings)
        retire_ring(d, d->nrings - 1);
    for (size_t i = 0; i < d->nconns; i++)
        if (d->conns[i] >= 0)
            close(d->conns[i]);
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    close(d->wake_fd);
    unlink(d->path);
    rmdir(d->dir);
    free(d->rings);
    free(d);
}
