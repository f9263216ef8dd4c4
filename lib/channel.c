/* channel.c: connecting training threads to the recorder (the cold path).
 *
 * `trainprof record` listens on a Unix socket in a directory only the user
 * can open and names it in TRAINPROF_SOCKET. A process connects once; each
 * thread that emits an event creates its own ring in a memfd and passes the
 * descriptor over that connection (SCM_RIGHTS). Nothing here waits on the
 * recorder for long: sends are non-blocking, the connection waits at most
 * TP_CONNECT_WAIT_S for room in a recorder's backlog (one that is out of
 * descriptors or hung), and if the recorder is gone the thread just stays
 * off. A thread whose ring could not be handed over (the recorder's socket
 * full: a recorder short of CPU) stays off too, and is counted in the
 * process's page (ring.h's tp_proc_page), which the recorder reads as the
 * process ends: nothing has to get through a full socket to count it.
 * After fork() the child forgets the parent's connection and
 * rings and attaches afresh on its first event: never two writers on a ring. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "names.h"
#include "thread_registry.h"
#include "thread_state.h"

_Thread_local tp_thread tp_self;

/* how long a process's connection waits for room in the recorder's backlog */
#define TP_CONNECT_WAIT_S 5

static pthread_mutex_t channel_lock = PTHREAD_MUTEX_INITIALIZER;
static int channel_fd = -1;
static int channel_state; /* 0 not tried, 1 connected, 2 off */
static pthread_key_t exit_key;
static int key_made;
/* the process's page, handed over with its connection (NULL: it could
 * not be); under channel_lock */
static tp_proc_page *proc_page;
/* set by tp_thread_set_rank; under channel_lock */
static int rank_set;
static int32_t set_rank, set_local_rank, set_world_size;

static void lock_for_fork(void) { pthread_mutex_lock(&channel_lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&channel_lock); }

/* In the child of a fork: the parent's connection and the forking thread's
 * ring belong to the parent. */
static void reset_in_child(void)
{
    if (channel_fd >= 0)
        close(channel_fd);
    channel_fd = -1;
    channel_state = 0;
    if (proc_page) /* the parent's */
        munmap(proc_page, TP_PROC_PAGE_BYTES);
    proc_page = NULL;
    tp_thread *t = &tp_self;
    tp_registry_clear();
    if (t->ring)
        munmap(t->ring, tp_ring_bytes(t->ring->capacity));
    free(t->defined);
    memset(t, 0, sizeof *t);
    pthread_mutex_unlock(&channel_lock);
}

/* Registered as the library loads, before any thread can hold channel_lock:
 * registered later (at the first connection, as it once was), a fork() in
 * one thread while another made the process's first connection gave the
 * child a lock nobody would release, and its first event waited forever (a
 * daemon forked by the training, whose stack sampler was attaching). */
__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(lock_for_fork, unlock_after_fork, reset_in_child);
}

/* At thread exit: drop this side's mapping; the recorder keeps its own. */
static void thread_exit(void *arg)
{
    tp_thread *t = arg;
    if (t->ring) {
        tp_registry_remove(t->ring);
        atomic_store_explicit(&t->ring->closed, 1, memory_order_release); /* after its last event */
        munmap(t->ring, tp_ring_bytes(t->ring->capacity));
    }
    free(t->defined);
    memset(t, 0, sizeof *t);
    t->state = TP_THREAD_OFF;
}

/* Where launchers (torchrun, Slurm, Open MPI, PMI) put a process's rank. */
static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        NULL};
static const char *const local_rank_vars[] = {"LOCAL_RANK", "SLURM_LOCALID",
                                              "OMPI_COMM_WORLD_LOCAL_RANK", NULL};
static const char *const world_size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                                              "PMI_SIZE", NULL};

/* The first of names that holds a whole number 0 to INT32_MAX, written in
 * full ("3", not "3x", "-7" or 99999999999, which atoi made 3, -7 and
 * 1215752191); fallback where none does. */
static int env_int(const char *const *names, int fallback)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 10)
            continue;
        long long n = strtoll(v, NULL, 10);
        if (n <= INT32_MAX)
            return (int)n;
    }
    return fallback;
}

static bool send_fd(const char *tag_text, int fd);

/* A memfd of bytes named name, sealed at its size (the recorder refuses one
 * it could be shrunk under), mapped shared; NULL when it can't be made. Its
 * descriptor in *fd, to hand over and close. */
static void *sealed_map(const char *name, size_t bytes, int *fd)
{
    *fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (*fd < 0)
        return NULL;
    void *p = NULL;
    if (ftruncate(*fd, (off_t)bytes) == 0 &&
        fcntl(*fd, F_ADD_SEALS, TP_RING_SEALS | F_SEAL_SEAL) == 0)
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED || !p) {
        close(*fd);
        *fd = -1;
        return NULL;
    }
    return p;
}

/* Hands map's memfd (fd, closed here) to the recorder with tag: map, or
 * NULL (map let go: bytes of it) where it could not be handed over. Caller
 * holds channel_lock and a connection. */
static void *hand_over(const char *tag, int fd, void *map, size_t bytes)
{
    bool sent = send_fd(tag, fd);
    close(fd);
    if (!sent) {
        munmap(map, bytes);
        return NULL;
    }
    return map;
}

/* The process's page, handed over as its connection's first message (the
 * socket empty: it fits); NULL where it could not be made (no memfd: no
 * ring could be either). Caller holds channel_lock and a connection. */
static tp_proc_page *hand_over_proc_page(void)
{
    int fd;
    tp_proc_page *p = sealed_map("trainprof-proc", TP_PROC_PAGE_BYTES, &fd);
    if (!p)
        return NULL;
    p->magic = TP_PROC_MAGIC;
    p->version = TP_PROC_VERSION;
    return hand_over("proc", fd, p, TP_PROC_PAGE_BYTES);
}

/* Connects the process once; caller holds channel_lock. */
static int connect_process(void)
{
    if (channel_state)
        return channel_state == 1;
    channel_state = 2;
    const char *path = getenv("TRAINPROF_SOCKET");
    if (!path || !*path || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return 0;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    /* a Unix socket's connect waits for the backlog as long as a send may
     * (af_unix: sock_sndtimeo); sends never wait (MSG_DONTWAIT). Refused
     * (a sandbox), the connect waits as it always did. */
    struct timeval wait = {TP_CONNECT_WAIT_S, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return 0;
    }
    channel_fd = fd;
    channel_state = 1;
    tp_clock_choose(); /* before this process's first ring: how its events are stamped */
    proc_page = hand_over_proc_page(); /* the recorder may have ended meanwhile: then off */
    if (!key_made)
        key_made = pthread_key_create(&exit_key, thread_exit) == 0;
    return channel_state == 1;
}

static uint32_t ring_slots(void)
{
    const char *v = getenv("TRAINPROF_RING_SLOTS");
    long n = v ? atol(v) : 0;
    uint32_t slots = TP_RING_SLOTS_DEFAULT;
    if (n >= TP_RING_SLOTS_MIN && n <= TP_RING_SLOTS_MAX)
        for (slots = TP_RING_SLOTS_MIN; slots < (uint32_t)n; slots *= 2)
            ;
    return slots;
}

/* Passes fd to the recorder over the process's connection with an 8-byte
 * tag ("ring", "ops"); never waits. Where the recorder has ended, the
 * connection is closed and the process stays off. Caller holds channel_lock
 * and a connection. */
static bool send_fd(const char *tag_text, int fd)
{
    char tag[8] = {0};
    strncpy(tag, tag_text, sizeof tag - 1);
    struct iovec iov = {tag, sizeof tag};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(channel_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof tag)
        return true;
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) {
        int saved_errno = errno; /* the recorder ended: later threads stay off at once */
        close(channel_fd);
        channel_fd = -1;
        channel_state = 2;
        errno = saved_errno;
    }
    return false;
}

void tp_channel_window_unsent(uint64_t first_step)
{
    pthread_mutex_lock(&channel_lock);
    if (proc_page) { /* the recorder reads it as the process ends */
        atomic_store_explicit(&proc_page->windows_unsent_step, first_step, memory_order_relaxed);
        atomic_fetch_add_explicit(&proc_page->windows_unsent, 1, memory_order_release);
    }
    pthread_mutex_unlock(&channel_lock);
}

bool tp_channel_send_fd(const char *tag, int fd)
{
    pthread_mutex_lock(&channel_lock);
    bool sent = connect_process() && send_fd(tag, fd);
    pthread_mutex_unlock(&channel_lock);
    return sent;
}

/* Makes a ring in a memfd, sealed at its size (the recorder refuses one it
 * could be shrunk under), and hands its descriptor to the recorder. */
static tp_ring_header *create_ring(void)
{
    uint32_t slots = ring_slots();
    size_t bytes = (size_t)tp_ring_bytes(slots);
    int fd;
    tp_ring_header *h = sealed_map("trainprof-ring", bytes, &fd);
    if (!h)
        return NULL;
    h->magic = TP_RING_MAGIC;
    h->version = TP_RING_VERSION;
    h->capacity = slots;
    h->pid = (int32_t)getpid();
    h->tid = (int32_t)gettid();
    h->rank = rank_set ? set_rank : env_int(rank_vars, -1);
    h->local_rank = rank_set ? set_local_rank : env_int(local_rank_vars, -1);
    h->world_size = rank_set ? set_world_size : env_int(world_size_vars, -1);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES"); /* once per thread, not per event */
    h->cuda_visible_devices_set = visible != NULL;
    if (visible)
        strncpy(h->cuda_visible_devices, visible, sizeof h->cuda_visible_devices - 1);
    if (tp_self.name[0])
        memcpy(h->thread_name, tp_self.name, sizeof h->thread_name);
    else
        pthread_getname_np(pthread_self(), h->thread_name, sizeof h->thread_name);
    return hand_over("ring", fd, h, bytes);
}

void tp_thread_set_rank(int32_t rank, int32_t *local_rank, int32_t *world_size)
{
    pthread_mutex_lock(&channel_lock);
    if (*local_rank < 0)
        *local_rank = env_int(local_rank_vars, -1);
    if (*world_size < 0)
        *world_size = env_int(world_size_vars, -1);
    rank_set = 1;
    set_rank = rank, set_local_rank = *local_rank, set_world_size = *world_size;
    pthread_mutex_unlock(&channel_lock);
}

int tp_thread_attach(tp_thread *t)
{
    if (t->state == TP_THREAD_OFF)
        return 0;
    int saved_errno = errno;
    pthread_mutex_lock(&channel_lock);
    bool connected = connect_process();
    tp_ring_header *h = connected ? create_ring() : NULL;
    if (!h) {
        if (connected && proc_page) /* the recorder reads it as the process ends */
            atomic_fetch_add_explicit(&proc_page->threads_unrecorded, 1, memory_order_relaxed);
        pthread_mutex_unlock(&channel_lock);
        errno = saved_errno;
        t->state = TP_THREAD_OFF;
        return 0;
    }
    t->ring = h;
    t->head = 0;
    t->room_end = 0;
    t->depth = 0;
    t->state = TP_THREAD_ACTIVE;
    pthread_mutex_unlock(&channel_lock);
    errno = saved_errno;
    tp_registry_add(h);
    if (key_made)
        pthread_setspecific(exit_key, t);
    return 1;
}

bool tp_thread_send(tp_thread *t, const tp_event *head, const void *payload, size_t len)
{
    uint32_t extra = (uint32_t)((len + sizeof(tp_event) - 1) / sizeof(tp_event));
    tp_ring_header *h = t->ring;
    if (!tp_thread_has_room(t, 1 + extra))
        return false;
    tp_event *slots = tp_ring_slots(h);
    uint32_t mask = h->capacity - 1;
    slots[t->head & mask] = *head;
    for (uint32_t i = 0; i < extra; i++) {
        tp_event *chunk = &slots[(t->head + 1 + i) & mask];
        size_t off = (size_t)i * sizeof(tp_event);
        size_t n = len - off < sizeof(tp_event) ? len - off : sizeof(tp_event);
        memcpy(chunk, (const char *)payload + off, n);
    }
    t->head += 1 + extra;
    atomic_store_explicit(&h->head, t->head, memory_order_release);
    return true;
}

void tp_thread_define_name(tp_thread *t, uint32_t id)
{
    uint32_t word = id / 64;
    if (word >= t->defined_words) {
        uint32_t n = word + 16;
        uint64_t *d = realloc(t->defined, n * sizeof *d);
        if (!d)
            return;
        memset(d + t->defined_words, 0, (n - t->defined_words) * sizeof *d);
        t->defined = d;
        t->defined_words = n;
    }
    char text[TP_NAME_MAX + 1];
    int len = tp_names_copy(id, text, sizeof text);
    if (len < 0)
        return;
    tp_event head = {0, TP_EV_NAME, id, 0, (uint64_t)len};
    if (tp_thread_send(t, &head, text, (size_t)len)) /* else tried again at its next event */
        t->defined[word] |= 1ULL << (id % 64);
}
