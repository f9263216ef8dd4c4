/* supervise.c: see supervise.h. */
#include "record/supervise.h"

#include <poll.h>
#include <stdint.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "record/child.h"
#include "record/status_line.h"

static void look(tp_watch *w, uint64_t start_ns, double mem_total)
{
    int32_t rank;
    double seconds;
    bool stalled = tp_live_worst_stall(w->live, 0, &rank, &seconds);
    if (stalled && !w->stalled && w->ask_stacks)
        tp_drain_want_stacks(w->drain);
    char where[900] = "";
    if (w->places.path)
        tp_stall_places_refresh(&w->places, w->live, 0, stalled ? rank : INT32_MIN, where,
                                sizeof where);
    w->stalled = stalled;
    if (w->status_line)
        tp_status_line_draw(stderr, w->live, (double)(tp_clock_mono_ns() - start_ns) / 1e9,
                            mem_total, where);
}

void tp_watch_end(tp_watch *w) { tp_stall_places_close(&w->places); }

int tp_supervise(pid_t child, int sfd, tp_watch *w, uint64_t start_ns, stop_request *stop)
{
    double mem_total = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    bool watching = w->live != NULL;
    for (;;) {
        struct pollfd pfd = {sfd, POLLIN, 0};
        int n = poll(&pfd, 1, watching ? 1000 : -1);
        if (watching)
            look(w, start_ns, mem_total);
        if (n <= 0)
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo != SIGCHLD) {
            if (!stop->signo) /* SIGINT, SIGTERM, SIGHUP or SIGQUIT: the run is asked to end */
                *stop = (stop_request){(int)si.ssi_signo, tp_clock_mono_ns() - start_ns};
            if (!tp_signal_from_terminal(si.ssi_code))
                kill(child, (int)si.ssi_signo);
            continue;
        }
        int wstatus;
        pid_t r = waitpid(child, &wstatus, WNOHANG);
        if (r == child && (WIFEXITED(wstatus) || WIFSIGNALED(wstatus)))
            return wstatus;
    }
}

double tp_wait_for_outlivers(tp_drain *drain, int sfd, double limit_s, tp_watch *w,
                             uint64_t start_ns, stop_request *stop)
{
    double mem_total = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    uint64_t began = tp_clock_mono_ns(), last_look = began;
    while (tp_drain_open_processes(drain) > 0) {
        uint64_t now = tp_clock_mono_ns();
        if ((double)(now - began) / 1e9 >= limit_s)
            break;
        if (w->live && now - last_look >= 1000000000u) {
            look(w, start_ns, mem_total);
            last_look = now;
        }
        struct pollfd pfd = {sfd, POLLIN, 0};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si || si.ssi_signo == SIGCHLD)
            continue; /* reaped elsewhere: not the command's any more */
        if (!stop->signo)
            *stop = (stop_request){(int)si.ssi_signo, tp_clock_mono_ns() - start_ns};
        break; /* asked to stop: no more waiting */
    }
    return (double)(tp_clock_mono_ns() - began) / 1e9;
}
