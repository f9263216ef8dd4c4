/* ring_seed.c: a seed for fuzz_ring_events from a real ring.
 * usage: ring_seed OUT PROGRAM ARGS...
 *
 * Plays the recorder's side of the channel for PROGRAM (an instrumented
 * program: emit_events): listens on a Unix socket named in
 * TRAINPROF_SOCKET, takes the first ring it sends, waits for it to exit and
 * writes that ring's events as one round of fuzz_ring_events' input, with
 * the smallest capacity byte that holds them (at most 1024 events). */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

extern char **environ;

static int fail(const char *what)
{
    perror(what);
    return 1;
}

/* The first ring sent on conn (what comes before it, the process's page,
 * let go), or -1. */
static int receive_ring(int conn)
{
    for (;;) {
        char tag[8] = {0};
        struct iovec iov = {tag, sizeof tag};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof control.buf};
        if (recvmsg(conn, &msg, 0) <= 0)
            return -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        int fd = -1;
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
        if (fd >= 0 && strncmp(tag, "ring", sizeof tag) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ring_seed OUT PROGRAM ARGS...\n");
        return 2;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "/tmp/ring_seed-%d", (int)getpid());
    int listener = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(listener, 4) != 0)
        return fail("listen");
    setenv("TRAINPROF_SOCKET", addr.sun_path, 1);
    pid_t child;
    if (posix_spawn(&child, argv[2], NULL, NULL, argv + 2, environ) != 0)
        return fail(argv[2]);
    int conn = accept(listener, NULL, NULL);
    int fd = conn >= 0 ? receive_ring(conn) : -1;
    int status;
    waitpid(child, &status, 0);
    unlink(addr.sun_path);
    if (fd < 0)
        return fail("no ring received");
    tp_ring_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.capacity == 0)
        return fail("ring header");
    uint64_t head = atomic_load(&h.head);
    uint32_t n = head < 1024 && head <= h.capacity ? (uint32_t)head : 0;
    if (!n)
        return fail("ring empty, wrapped or over 1024 events");
    uint8_t cap_byte = 0;
    while ((8u << cap_byte) < n)
        cap_byte++;
    tp_event *events = malloc(n * sizeof *events);
    if (!events ||
        pread(fd, events, n * sizeof *events, TP_RING_HEADER_SIZE) != (ssize_t)(n * sizeof *events))
        return fail("ring slots");
    FILE *out = fopen(argv[1], "wb");
    uint8_t count[2] = {(uint8_t)(n & 0xff), (uint8_t)(n >> 8)};
    if (!out || fwrite(&cap_byte, 1, 1, out) != 1 || fwrite(count, 2, 1, out) != 1 ||
        fwrite(events, sizeof *events, n, out) != n || fclose(out) != 0)
        return fail(argv[1]);
    free(events);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
