/* hostile_ring.c: a training process that attacks the recorder through its
 * ring, as the hostile-process tests play it beside a well-behaved one. It
 * connects to TRAINPROF_SOCKET as libtrainprof does, but makes its ring
 * itself, then breaks the protocol one way:
 *
 *   capacity   rewrites its header's capacity to 2^31 after the handover, and
 *              publishes a head far past its ring
 *   truncate   sends an unsealed memfd, then truncates it to 0 bytes
 *   name_wrap  names a region with id 2^32 - 16 (a wrap in a grown table)
 *   name_huge  names a region with id 2^30 (4 GiB of table)
 *   sparse     a sealed, sparse 1 TiB memfd that claims 2^31 slots
 *   tail       rewrites the consumer's tail; its events must still arrive
 *   frame_jump defines frame 1, then frame 2^22 (a 16 MiB map, were it kept)
 *   facts      tells 3,000 facts of distinct keys
 *   rings      sends 4,200 rings at once (each thread's, as it were), all
 *              kept open
 *   rank       a header whose rank, local rank and world size are negative
 *              other than -1 (-7, INT32_MIN, -2)
 *   proc       hands a process page over that says 7 threads went
 *              unrecorded, then a second page (saying 1), then its ring;
 *              as it exits the first page says 9, and 2 capture windows
 *              not handed over
 *
 * The modes whose ring is accepted first send 20 well-formed regions named
 * "hostile" (those of `tail` keep coming: 200 in all). Each writes its pid to
 * stdout and exits 0 when the attack could be played. usage: hostile_ring MODE */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define SLOTS 64u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int connect_recorder(void)
{
    const char *path = getenv("TRAINPROF_SOCKET");
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (!path || fd < 0 || strlen(path) >= sizeof addr.sun_path)
        return -1;
    strcpy(addr.sun_path, path);
    return connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 ? fd : -1;
}

static int send_tagged_fd(int sock, int fd, const char *tag_text)
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
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof tag ? 0 : -1;
}

static int send_fd(int sock, int fd) { return send_tagged_fd(sock, fd, "ring"); }

/* A process page (lib/ring.h's tp_proc_page) saying n threads went
 * unrecorded, handed over; NULL where it could not be. */
static tp_proc_page *hand_over_page(int sock, uint64_t n)
{
    int fd = memfd_create("hostile-proc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, TP_PROC_PAGE_BYTES) != 0 ||
        fcntl(fd, F_ADD_SEALS, TP_RING_SEALS) != 0)
        return NULL;
    tp_proc_page *p = mmap(NULL, TP_PROC_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    p->magic = TP_PROC_MAGIC;
    p->version = TP_PROC_VERSION;
    atomic_store(&p->threads_unrecorded, n);
    int sent = send_tagged_fd(sock, fd, "proc");
    close(fd);
    return sent == 0 ? p : NULL;
}

/* A ring of `slots` in a memfd of `bytes`, sealed unless told otherwise;
 * its header claims `claimed` slots. */
static tp_ring_header *make_ring(int *fd_out, uint64_t bytes, uint32_t claimed, int seal)
{
    int fd = memfd_create("hostile-ring", MFD_CLOEXEC | (seal ? MFD_ALLOW_SEALING : 0));
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
        return NULL;
    if (seal && fcntl(fd, F_ADD_SEALS, TP_RING_SEALS) != 0)
        return NULL;
    size_t mapped = (size_t)tp_ring_bytes(SLOTS);
    tp_ring_header *h = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return NULL;
    h->magic = TP_RING_MAGIC;
    h->version = TP_RING_VERSION;
    h->capacity = claimed;
    h->pid = (int32_t)getpid();
    h->tid = (int32_t)getpid();
    h->rank = h->local_rank = h->world_size = -1;
    strcpy(h->thread_name, "hostile");
    *fd_out = fd;
    return h;
}

static uint64_t head;

static void put(tp_ring_header *h, uint32_t kind, uint32_t name, uint64_t aux)
{
    tp_event *e = &tp_ring_slots(h)[head & (SLOTS - 1)];
    *e = (tp_event){now_ns(), kind, name, 0, aux};
    head++;
}

static void publish(tp_ring_header *h) { atomic_store(&h->head, head); }

/* Waits until the recorder has read everything published (or 2 s). */
static void drained(tp_ring_header *h)
{
    for (int i = 0; i < 2000 && atomic_load(&h->tail) < head; i++)
        usleep(1000);
}

/* id's name (5 bytes: "hostile" cut) and n regions of it, as libtrainprof
 * sends them, each batch read by the recorder before the next. */
static void regions(tp_ring_header *h, uint32_t id, int n, int named)
{
    if (named) {
        put(h, TP_EV_NAME, id, 7);
        memcpy(&tp_ring_slots(h)[head & (SLOTS - 1)], "hostile", 7);
        head++;
    }
    for (int i = 0; i < n; i++) {
        put(h, TP_EV_BEGIN, id, 0);
        put(h, TP_EV_END, id, 0);
        if (head % 16 == 0) {
            publish(h);
            drained(h);
        }
    }
    publish(h);
    drained(h);
}

/* A NAME event of id, text "evil", published. */
static void name(tp_ring_header *h, uint32_t id)
{
    put(h, TP_EV_NAME, id, 4);
    memcpy(&tp_ring_slots(h)[head & (SLOTS - 1)], "evil", 4);
    head++;
    publish(h);
    usleep(100000);
}

/* A text event (its header, then its text in slots), written ahead of the
 * reader: the caller publishes it, with room for it left in the ring. */
static void text_event_ahead(tp_ring_header *h, uint32_t kind, uint32_t id, const char *text)
{
    size_t len = strlen(text);
    put(h, kind, id, len);
    for (size_t off = 0; off < len; off += sizeof(tp_event)) {
        tp_event chunk;
        memset(&chunk, 0, sizeof chunk);
        memcpy(&chunk, text + off, len - off < sizeof chunk ? len - off : sizeof chunk);
        tp_ring_slots(h)[head & (SLOTS - 1)] = chunk;
        head++;
    }
}

/* An event of kind with id, its text in the slots after it (aux: the
 * length), published and read by the recorder before the next. */
static void text_event(tp_ring_header *h, uint32_t kind, uint32_t id, const char *text)
{
    text_event_ahead(h, kind, id, text);
    publish(h);
    drained(h);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *mode = argv[1];
    int sock = connect_recorder(), fd = -1;
    if (sock < 0)
        return 3;
    printf("%d\n", (int)getpid());
    fflush(stdout);
    tp_proc_page *page = NULL;
    if (strcmp(mode, "proc") == 0 &&
        (!(page = hand_over_page(sock, 7)) || !hand_over_page(sock, 1)))
        return 7;
    int seal = strcmp(mode, "truncate") != 0;
    int sparse = strcmp(mode, "sparse") == 0;
    uint64_t bytes = sparse ? 1ull << 40 : tp_ring_bytes(SLOTS);
    tp_ring_header *h = make_ring(&fd, bytes, sparse ? 1u << 31 : SLOTS, seal);
    if (h && strcmp(mode, "rank") == 0)
        h->rank = -7, h->local_rank = INT32_MIN, h->world_size = -2;
    if (!h || send_fd(sock, fd) != 0)
        return 4;
    if (!seal) { /* the recorder maps it now, before the cut, or never */
        usleep(100000);
        return ftruncate(fd, 0) == 0 ? (usleep(200000), 0) : 5;
    }
    if (sparse) {
        usleep(200000);
        return 0;
    }
    regions(h, 1, 20, 1);
    if (strcmp(mode, "capacity") == 0) {
        h->capacity = 1u << 31;
        head += 100000;
        publish(h);
    } else if (strcmp(mode, "name_wrap") == 0) {
        name(h, 0xfffffff0u);
    } else if (strcmp(mode, "name_huge") == 0) {
        name(h, 1u << 30);
    } else if (strcmp(mode, "frame_jump") == 0) {
        text_event(h, TP_EV_FRAME, 1, "f\nx.py");
        text_event(h, TP_EV_FRAME, 1u << 22, "g\nx.py");
    } else if (strcmp(mode, "facts") == 0) {
        for (int i = 0; i < 3000; i++) { /* 16 at a time: 32 of the ring's 64 slots */
            char fact[32];
            snprintf(fact, sizeof fact, "flood.key%d=1", i);
            text_event_ahead(h, TP_EV_FACT, 0, fact);
            if (i % 16 == 15 || i == 2999) {
                publish(h);
                drained(h);
            }
        }
    } else if (strcmp(mode, "rings") == 0) {
        for (int i = 0; i < 4200; i++) {
            int more = -1;
            if (!make_ring(&more, tp_ring_bytes(SLOTS), SLOTS, 1) || send_fd(sock, more) != 0)
                return 6;
            close(more); /* the recorder's mapping keeps it */
        }
        usleep(500000);
    } else if (strcmp(mode, "proc") == 0) {
        usleep(200000); /* the recorder has read 7 by now, were it to read it early */
        atomic_store(&page->threads_unrecorded, 9);
        atomic_store(&page->windows_unsent, 2);
    } else if (strcmp(mode, "tail") == 0) {
        for (int k = 0; k < 9; k++) { /* 180 more regions, the tail set ahead before each 20 */
            atomic_store(&h->tail, head + 1000);
            for (int i = 0; i < 20; i++) {
                put(h, TP_EV_BEGIN, 1, 0);
                put(h, TP_EV_END, 1, 0);
            }
            publish(h);
            /* room: the recorder, reading every 10 ms, publishes its own tail
             * (not the one set ahead) once it read these; a loaded machine
             * can keep it from that for more than the 50 ms once slept here,
             * and the next 40 events would have wrapped the 64 slots over
             * unread ones (40 of 200 arrived in one CI run) */
            for (int i = 0; i < 2000 && atomic_load(&h->tail) != head; i++)
                usleep(1000);
        }
    } else if (strcmp(mode, "rank") != 0) { /* its header was the attack */
        return 2;
    }
    usleep(200000); /* the recorder's drain runs every 10 ms */
    return 0;
}
