/* fd_passing.h: receiving a descriptor passed over a Unix socket
 * (SCM_RIGHTS) with a short tag that says what it is. */
#ifndef TP_UTIL_FD_PASSING_H
#define TP_UTIL_FD_PASSING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One message from sock without waiting, as recvmsg returns it: > 0 a
 * message (its first cap bytes in tag, the rest of tag zeroed; the
 * descriptor it carried in *fd, close-on-exec, or -1: none, and *dropped
 * where the kernel had to drop one, MSG_CTRUNC), 0 the peer closed, < 0 none
 * (errno: EAGAIN, EINTR or the error). */
ssize_t tp_recv_tagged_fd(int sock, char *tag, size_t cap, int *fd, bool *dropped);

/* A non-blocking, close-on-exec SOCK_SEQPACKET socket listening at path
 * with backlog: its descriptor, or -1 with errno (ENAMETOOLONG: path does
 * not fit a socket address). */
int tp_listen_seqpacket(const char *path, int backlog);

/* How many peers' connections this process may hold at once under its
 * descriptor limit now, at most max: a quarter of the limit and 16 more
 * are left to its other descriptors (files it reads, its output, the
 * descriptors peers send). A process filled to its limit by connections
 * loses a passed descriptor whenever another thread's open takes the one
 * it let go for it (MSG_CTRUNC). At least 1. */
size_t tp_fd_room_for_peers(size_t max);

#endif
