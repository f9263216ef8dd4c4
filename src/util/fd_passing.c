/* fd_passing.c: see fd_passing.h. */
#include "util/fd_passing.h"

#include <string.h>
#include <sys/socket.h>

ssize_t tp_recv_tagged_fd(int sock, char *tag, size_t cap, int *fd, bool *dropped)
{
    memset(tag, 0, cap);
    *fd = -1;
    *dropped = false;
    struct iovec iov = {tag, cap};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0)
        return n;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(sizeof(int)))
        memcpy(fd, CMSG_DATA(c), sizeof *fd);
    else
        *dropped = (msg.msg_flags & MSG_CTRUNC) != 0;
    return n;
}
