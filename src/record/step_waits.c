/* step_waits.c: the step threads' run-queue delays and time on a CPU
 * (step_waits.h). */
#include "record/step_waits.h"

#include <stdio.h>
#include <stdlib.h>

#include "collect/counter.h"
#include "collect/schedstat.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"

typedef struct step_wait {
    int32_t tid;         /* the thread read last; 0: none yet */
    bool read_ok;        /* and whether that read succeeded */
    int32_t offered_tid; /* the most stepping thread offered this turn */
    uint64_t offered_steps;
    uint64_t wait_ns, on_cpu_ns, read_ns; /* its last reading, and when */
    uint32_t series, cpu_series;          /* 0: not made yet */
} step_wait;

struct tp_step_waits {
    tp_sysroot root;
    bool root_open;
    uint64_t period_ns;
    size_t slots;
    step_wait w[];
};

tp_step_waits *tp_step_waits_new(size_t slots, uint64_t period_ns)
{
    tp_step_waits *w = calloc(1, sizeof *w + slots * sizeof w->w[0]);
    if (!w)
        return NULL;
    w->slots = slots;
    w->period_ns = period_ns ? period_ns : TP_STEP_WAIT_PERIOD_NS;
    w->root_open = tp_sysroot_open(&w->root, tp_sysroot_default_path());
    return w;
}

void tp_step_waits_free(tp_step_waits *w)
{
    if (w && w->root_open)
        tp_sysroot_close(&w->root);
    free(w);
}

void tp_step_waits_offer(tp_step_waits *w, size_t slot, int32_t tid, uint64_t steps)
{
    if (!w || slot >= w->slots || steps == 0)
        return;
    step_wait *s = &w->w[slot];
    if (steps > s->offered_steps)
        s->offered_tid = tid, s->offered_steps = steps;
}

void tp_step_waits_read(tp_step_waits *w, tp_sink *sink, size_t slot, int32_t pid, uint64_t now_ns)
{
    if (!w || !w->root_open || slot >= w->slots)
        return;
    step_wait *s = &w->w[slot];
    int32_t tid = s->offered_tid;
    s->offered_tid = 0, s->offered_steps = 0;
    if (!tid || (tid == s->tid && now_ns - s->read_ns < w->period_ns))
        return; /* a failed read is tried again a period later, too */
    uint64_t wait_ns = 0, on_cpu_ns = 0, d, ran;
    bool read = tp_schedstat_thread(&w->root, pid, tid, &on_cpu_ns, &wait_ns);
    if (read && s->read_ok && s->tid == tid && now_ns > s->read_ns) {
        char labels[48];
        tp_labels_pid(labels, sizeof labels, (long)pid);
        double span = (double)(now_ns - s->read_ns);
        if (tp_counter_delta(s->wait_ns, wait_ns, &d)) {
            if (!s->series)
                s->series = tp_sink_series(sink, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, labels);
            if (s->series)
                tp_sink_sample(sink, s->series, now_ns, 100.0 * (double)d / span);
        }
        if (tp_counter_delta(s->on_cpu_ns, on_cpu_ns, &ran)) {
            if (!s->cpu_series)
                s->cpu_series = tp_sink_series(sink, TP_METRIC_STEP_THREAD_CPU_PERCENT, labels);
            if (s->cpu_series)
                tp_sink_sample(sink, s->cpu_series, now_ns, 100.0 * (double)ran / span);
        }
    }
    s->tid = tid, s->read_ok = read, s->wait_ns = wait_ns, s->on_cpu_ns = on_cpu_ns;
    s->read_ns = now_ns;
}

void tp_step_waits_reset(tp_step_waits *w, size_t slot)
{
    if (w && slot < w->slots)
        w->w[slot] = (step_wait){0};
}
