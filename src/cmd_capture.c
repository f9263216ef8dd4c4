/* cmd_capture.c: `trainprof capture RUN.db|PID`: asks a live recording for
 * a capture window (docs/ops.md).
 *
 * The recording is found in the registry of live recordings (by its run
 * file, under any name, or by the recorder's pid); the request goes to its
 * control socket, whose answer says which steps the window will cover. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "commands.h"
#include "ops_window.h"
#include "record/registry.h"
#include "util/log.h"
#include "util/options.h"
#include "util/utf8.h"

static const char usage[] =
    "usage: trainprof capture RUN.db|PID\n"
    "       trainprof capture --list\n"
    "\n"
    "Asks a live recording (`trainprof record`, named by its run file or its\n"
    "pid) for a capture window: PyTorch's profiler over the next few steps of\n"
    "every traced process (record's --ops-steps, 5 by default). The report\n"
    "then shows the operators of those steps. --list prints the live\n"
    "recordings of this user, one a line: the recorder's pid, when it started\n"
    "(seconds since the epoch) and its run file, tab-separated.\n";

static void list_one(void *ctx, pid_t pid, const char *run_path, long long started)
{
    (void)ctx;
    char shown[4200];
    tp_text_escape(shown, sizeof shown, run_path); /* one line, whatever the name */
    printf("%d\t%lld\t%s\n", (int)pid, started, shown);
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* Sends "capture" to dir/control.sock; the answer into reply. */
static bool ask(const char *dir, char *reply, size_t cap, char *why, size_t wcap)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/control.sock", dir) >=
        sizeof addr.sun_path) {
        snprintf(why, wcap, "its socket's path is too long");
        return false;
    }
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    /* the receive timeout bounds the answer; the send timeout bounds
     * connect() too (a Unix socket's waits for room in a listen backlog
     * that a stopped or busy recorder does not drain) */
    struct timeval tv = {3, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        send(fd, "capture", 7, MSG_NOSIGNAL) != 7) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS)
            snprintf(why, wcap,
                     "its recorder took no request for 3 s (stopped, or busy): try again");
        else
            snprintf(why, wcap, "cannot reach its recorder (%s): %s", addr.sun_path,
                     strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    ssize_t n = recv(fd, reply, cap - 1, 0);
    close(fd);
    if (n <= 0) {
        snprintf(why, wcap, "its recorder did not answer (an older trainprof?)");
        return false;
    }
    reply[n] = '\0';
    return true;
}

/* A number of digits only (no sign, no space) at *p, at most max, into *out;
 * *p moved past it. */
static bool number_at(const char **p, unsigned long long max, unsigned long long *out)
{
    if (!isdigit((unsigned char)**p))
        return false;
    errno = 0;
    char *end;
    *out = strtoull(*p, &end, 10);
    *p = end;
    return errno == 0 && *out <= max;
}

/* The recorder's answer "window REASON FIRST_STEP STEPS", checked: a reason
 * it can give (TP_OPS_*), a first step a process's count can reach, 1 to
 * 100 steps (record's --ops-steps) that end within it. */
static bool parse_window(const char *reply, unsigned *reason, unsigned long long *first_step,
                         unsigned *steps)
{
    unsigned long long r, first, n;
    const char *p = reply;
    if (strncmp(p, "window ", 7) != 0)
        return false;
    p += 7;
    if (!number_at(&p, TP_OPS_SLOW, &r) || r < TP_OPS_SCHEDULE || *p++ != ' ' ||
        !number_at(&p, (unsigned long long)INT64_MAX - 100, &first) || *p++ != ' ' ||
        !number_at(&p, 100, &n) || n < 1 || *p != '\0')
        return false;
    *reason = (unsigned)r, *first_step = first, *steps = (unsigned)n;
    return true;
}

int cmd_capture(int argc, char **argv)
{
    bool list = false;
    const tp_option options[] = {
        TP_FLAG(0, "list", "list the live recordings instead", &list),
    };
    const tp_command cmd = {.name = "capture",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 0,
                            .max_operands = 1,
                            .operands = "a run file or a recorder's pid"};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    char why[600];
    if (list || first == argc) {
        if (!list) {
            tp_error("capture: name a run file or a recorder's pid (or --list)");
            return 2;
        }
        if (first != argc) {
            tp_error("capture: --list takes no run file");
            return 2;
        }
        if (!tp_registry_each(list_one, NULL, why, sizeof why)) {
            tp_error("capture: %s", why);
            return 2;
        }
        return fflush(stdout) == 0 ? 0 : 1;
    }
    const char *target = argv[first];
    struct stat sb;
    bool is_pid = all_digits(target) && stat(target, &sb) != 0;
    if (!is_pid && stat(target, &sb) != 0) {
        tp_error("capture: %s: %s", target, strerror(errno));
        return 2;
    }
    pid_t pid = 0;
    char dir[4200], reply[128];
    if (!tp_registry_find(is_pid ? NULL : target, is_pid ? (pid_t)atol(target) : 0, &pid, dir,
                          sizeof dir, why, sizeof why)) {
        if (why[0])
            tp_error("capture: %s", why);
        else if (is_pid)
            tp_error("capture: %s: no trainprof record of this user runs with that pid", target);
        else
            tp_error("capture: %s: no live recording writes it (a capture window is taken while "
                     "`trainprof record` runs)",
                     target);
        return 2;
    }
    if (!ask(dir, reply, sizeof reply, why, sizeof why)) {
        tp_error("capture: %s: %s", target, why);
        return 1;
    }
    unsigned reason = 0, steps = 0;
    unsigned long long first_step = 0;
    if (strcmp(reply, "off") == 0) {
        tp_error("capture: %s: the recording runs with --ops off: no capture windows", target);
        return 2;
    }
    if (!parse_window(reply, &reason, &first_step, &steps)) {
        char shown[64];
        tp_text_escape(shown, sizeof shown, reply);
        tp_error("capture: %s: its recorder answered nonsense (\"%s\"): not a trainprof record?",
                 target, shown);
        return 1;
    }
    const char *served = reason == TP_OPS_DEMAND ? "a capture window"
                         : reason == TP_OPS_SLOW ? "the window a slow step started"
                                                 : "the scheduled window";
    printf("trainprof: %s (recorder pid %d) takes %s over steps %llu-%llu of each process\n",
           target, (int)pid, served, first_step, first_step + steps - 1);
    return 0;
}
