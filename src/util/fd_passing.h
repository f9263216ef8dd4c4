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

#endif
