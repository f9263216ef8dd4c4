/* drain_losses.c: see drain_losses.h. */
#include "record/drain_losses.h"

#include <stdio.h>
#include <string.h>

void tp_drain_outlivers_say(tp_sink *sink, const int32_t *pids, size_t n)
{
    char list[200] = "", reason[400];
    size_t len = 0;
    for (size_t i = 0; i < n && i < 8 && len < sizeof list; i++) {
        int k = snprintf(list + len, sizeof list - len, "%s%d", len ? ", " : "", (int)pids[i]);
        len = k > 0 ? len + (size_t)k : len;
    }
    if (!n)
        return;
    snprintf(reason, sizeof reason,
             "%zu traced process%s (pid %s%s) still ran when the recording ended (the command "
             "had ended, or record was asked to stop; record --wait-after-exit waits for them): "
             "%s events from then on were not recorded",
             n, n == 1 ? "" : "es", list, n > 8 ? ", ..." : "", n == 1 ? "its" : "their");
    tp_sink_unavailable(sink, "timings of processes that outlived the command", reason);
}

void tp_drain_losses_say(tp_sink *sink, const tp_drain_losses *l, int max_conns,
                         unsigned rings_per_process, unsigned rings_max)
{
    char reason[256];
    if (l->accept_failures) {
        snprintf(reason, sizeof reason,
                 "the recorder could not accept a process's connection at once %llu times (%s); "
                 "their events waited in their buffers, and any that overflowed them were "
                 "dropped, counted (raise ulimit -n)",
                 (unsigned long long)l->accept_failures, strerror(l->accept_errno));
        tp_sink_unavailable(sink, "timings of some processes", reason);
    }
    if (l->rings_dropped) {
        snprintf(reason, sizeof reason,
                 "%llu threads' rings reached the recorder when it had no descriptor left for "
                 "them; their timings were not recorded (raise ulimit -n)",
                 (unsigned long long)l->rings_dropped);
        tp_sink_unavailable(sink, "timings of some threads", reason);
    }
    if (l->rings_refused) {
        snprintf(reason, sizeof reason,
                 "%llu threads' rings went beyond what the recorder holds (%u of one process at "
                 "once, %u in all); their timings and stacks were not recorded",
                 (unsigned long long)l->rings_refused, rings_per_process, rings_max);
        tp_sink_unavailable(sink, "timings of some threads", reason);
    }
    if (l->turned_away) {
        snprintf(reason, sizeof reason,
                 "%llu processes connected while %d others were; their timings were not recorded",
                 (unsigned long long)l->turned_away, max_conns);
        tp_sink_unavailable(sink, "timings of some processes", reason);
    }
}
