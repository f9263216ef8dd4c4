/* deaths.c: traced processes that died, and the run's stop (deaths.h). */
#include "analyze/deaths.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "util/ns_math.h"
#include "util/grow.h"
#include "util/oom.h"
#include "core/run_keys.h"
#include "analyze/run_facts.h"
#include "facts.h"

/* What the recorder wrote of one process's end (meta proc.PID.*). */
typedef struct proc_end {
    int64_t agent_id, pid;
    double end_s;               /* NaN: no end seen */
    double raised_s;            /* when it told its exception; NaN: none told */
    double alive_s;             /* its latest event's time; NaN: unknown */
    double oom_tried, oom_free; /* its GPU out-of-memory's figures; NaN: none told */
    const char *status, *python, *type, *message, *where, *oom, *phase, *stack, *step;
} proc_end;

typedef struct ends_list {
    proc_end *v;
    size_t n, cap;
} ends_list;

static proc_end *end_of(ends_list *l, int64_t agent, int64_t pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].agent_id == agent && l->v[i].pid == pid)
            return &l->v[i];
    l->v = tp_grow(l->v, l->n, &l->cap, sizeof *l->v);
    l->v[l->n] = (proc_end){.agent_id = agent,
                            .pid = pid,
                            .end_s = NAN,
                            .raised_s = NAN,
                            .alive_s = NAN,
                            .oom_tried = NAN,
                            .oom_free = NAN};
    return &l->v[l->n++];
}

/* A fact's count of bytes (a traced process wrote it: digits only), or NaN. */
static double bytes_of(const char *text)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    return end != text && *end == '\0' && v >= 0 && text[0] != '-' ? (double)v : NAN;
}

static void take_key(ends_list *l, const tp_run *run, int64_t agent, const char *key,
                     const char *value)
{
    if (strncmp(key, "proc.", 5) != 0)
        return;
    char *field;
    long long pid = strtoll(key + 5, &field, 10);
    if (pid <= 0 || *field != '.')
        return;
    field++;
    proc_end *e = end_of(l, agent, pid);
    if (strcmp(field, TP_META_PROC_END_NS) == 0)
        e->end_s = strtod(value, NULL) / 1e9 + tp_run_agent_shift_s(run, agent);
    else if (strcmp(field, TP_META_PROC_RAISED_NS) == 0)
        e->raised_s = strtod(value, NULL) / 1e9 + tp_run_agent_shift_s(run, agent);
    else if (strcmp(field, TP_META_PROC_ALIVE_NS) == 0)
        e->alive_s = strtod(value, NULL) / 1e9 + tp_run_agent_shift_s(run, agent);
    else if (strcmp(field, TP_META_PROC_STATUS) == 0)
        e->status = value;
    else if (strcmp(field, TP_FACT_PROCESS_EXIT) == 0)
        e->python = value;
    else if (strcmp(field, TP_FACT_EXCEPTION_TYPE) == 0)
        e->type = value;
    else if (strcmp(field, TP_FACT_EXCEPTION_MESSAGE) == 0)
        e->message = value;
    else if (strcmp(field, TP_FACT_EXCEPTION_WHERE) == 0)
        e->where = value;
    else if (strcmp(field, TP_FACT_EXCEPTION_OOM_TRIED) == 0)
        e->oom_tried = bytes_of(value);
    else if (strcmp(field, TP_FACT_EXCEPTION_OOM_FREE) == 0)
        e->oom_free = bytes_of(value);
    else if (strcmp(field, TP_META_PROC_OOM_KILLS) == 0)
        e->oom = value;
    else if (strcmp(field, TP_META_PROC_PHASE) == 0)
        e->phase = value;
    else if (strcmp(field, TP_META_PROC_STACK) == 0)
        e->stack = value;
    else if (strcmp(field, TP_META_PROC_STEP) == 0)
        e->step = value;
}

size_t tp_course_step_at(const tp_course *course, int rank, double t_s)
{
    const tp_rank_course *rc = tp_course_rank(course, rank);
    if (!rc)
        return 0;
    int64_t t = tp_ns_round_s(t_s);
    size_t lo = 0, hi = rc->n; /* closed steps begun at or before t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rc->a[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == rc->n && rc->open && rc->last_ns <= t)
        lo++; /* the step still open at the end */
    return lo;
}

/* Whether process e died (deaths.h), and how, into d. */
static bool died(const proc_end *e, const tp_run_process *p, double run_s, const tp_deaths *all,
                 tp_death *d)
{
    int sig = 0, status = -1;
    if (e->status && strncmp(e->status, "signal ", 7) == 0)
        sig = atoi(e->status + 7);
    else if (e->status && strncmp(e->status, "exit ", 5) == 0)
        status = atoi(e->status + 5);
    bool rank_process = p && !p->worker;
    /* only a Python process tells its shutdown: without that, an unknown end
     * of one that had no sampler (a C program, stacks off) says nothing */
    bool python = p && p->sampled;
    if (all->stop_signal && e->end_s >= all->stop_s)
        return false; /* the stop's doing (torchrun turns it into an exception) */
    if (e->type)
        d->how = TP_DEATH_EXCEPTION;
    else if (sig && e->oom && sig == SIGKILL)
        d->how = TP_DEATH_OOM;
    else if (sig)
        d->how = TP_DEATH_SIGNAL;
    else if (status > 0 && rank_process)
        d->how = TP_DEATH_EXIT;
    else if (!e->status && !e->python && rank_process && python &&
             (e->phase || e->end_s < run_s - TP_DEATH_EARLY_S))
        d->how = e->oom ? TP_DEATH_OOM : TP_DEATH_VANISHED;
    else
        return false;
    d->signal = sig;
    d->exit_status = status;
    return true;
}

/* Whether d was asked to end (SIGTERM, SIGINT, SIGHUP: a launcher tearing
 * the other ranks down after one failed, or a user) rather than ended by
 * something of its own. */
static bool asked_to_end(const tp_death *d)
{
    return d->how == TP_DEATH_SIGNAL &&
           (d->signal == SIGTERM || d->signal == SIGINT || d->signal == SIGHUP);
}

/* When d is taken to have died (tp_deaths.v's order). An exception's when
 * it was raised (the connection closes later, after the interpreter's
 * shutdown). Any other's as early as it can have been: its last sign of
 * life, but no earlier than its end less how late the recorder may have
 * seen it. That is TP_DEATH_OWN_LATE_S for a death of its own (a signal
 * such as SIGKILL or SIGSEGV, the OOM killer, an exit, a vanishing): a
 * peer whose collective failed at the death raises after it, and a dying
 * process under load can close its recorder connection 50 ms and more
 * after its sockets to the peers. One asked to end is allowed
 * TP_DEATH_SEEN_LATE_S: it came after whatever made it be asked. */
static double earliest(const tp_death *d)
{
    if (d->how == TP_DEATH_EXCEPTION || d->died_s < d->end_s)
        return d->died_s;
    double seen = d->end_s - (asked_to_end(d) ? TP_DEATH_SEEN_LATE_S : TP_DEATH_OWN_LATE_S);
    return d->alive_s > seen && d->alive_s <= d->end_s ? d->alive_s : seen;
}

static int by_time(const void *x, const void *y)
{
    double a = earliest(x), b = earliest(y);
    return (a > b) - (a < b);
}

bool tp_deaths_build(tp_run *run, const tp_course *course, double run_s, tp_deaths *out, char *err,
                     size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *stop = tp_run_meta_get(run, TP_META_STOP_SIGNAL);
    const char *stop_ns = tp_run_meta_get(run, TP_META_STOP_SIGNAL_NS);
    if (stop && stop_ns) {
        out->stop_signal = stop;
        out->stop_s = strtod(stop_ns, NULL) / 1e9;
        out->stop_step = course->n ? tp_course_step_at(course, course->v[0].rank, out->stop_s) : 0;
    }
    ends_list ends = {0};
    if (run->nagent_meta)
        for (size_t i = 0; i < run->nagent_meta; i++)
            take_key(&ends, run, run->agent_meta[i].agent_id, run->agent_meta[i].key,
                     run->agent_meta[i].value);
    else
        for (size_t i = 0; i < run->nmeta; i++)
            take_key(&ends, run, run->nagents ? run->agents[0].id : 1, run->meta[i].key,
                     run->meta[i].value);
    if (!ends.n)
        return true;
    tp_run_process *procs;
    size_t nprocs;
    if (!tp_run_processes(run, &procs, &nprocs)) {
        free(ends.v);
        snprintf(err, cap, "%s: cannot read the processes", tp_run_file(run));
        return false;
    }
    size_t vcap = 0;
    for (size_t i = 0; i < ends.n; i++) {
        const proc_end *e = &ends.v[i];
        const tp_run_process *p = NULL;
        for (size_t k = 0; k < nprocs && !p; k++)
            if (procs[k].agent_id == e->agent_id && procs[k].pid == e->pid)
                p = &procs[k];
        tp_death d = {.agent_id = e->agent_id,
                      .pid = e->pid,
                      .rank = p ? p->rank : -1,
                      .worker = p && p->worker,
                      .end_s = e->end_s,
                      .alive_s = e->alive_s,
                      .died_s =
                          e->raised_s >= 0 && e->raised_s <= e->end_s ? e->raised_s : e->end_s};
        if (isnan(e->end_s) || !died(e, p, run_s, out, &d))
            continue;
        d.phase = e->phase;
        d.stack = e->stack;
        d.exception_type = e->type;
        d.exception_message = e->message;
        d.exception_where = e->where;
        d.oom_tried_bytes = e->oom_tried;
        d.oom_free_bytes = e->oom_free;
        d.after_script = e->python && (d.how == TP_DEATH_SIGNAL || d.how == TP_DEATH_OOM);
        long long step = e->step ? strtoll(e->step, NULL, 10) : 0;
        d.step = step > 0 ? (size_t)step : 0;
        d.rss_bytes = NAN; /* the summary's (its part TP_PART_COURSE) */
        out->v = tp_grow(out->v, out->n, &vcap, sizeof *out->v);
        out->v[out->n++] = d;
    }
    free(ends.v);
    free(procs);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, by_time);
    return true;
}

void tp_deaths_free(tp_deaths *d)
{
    free(d->v);
    memset(d, 0, sizeof *d);
}
