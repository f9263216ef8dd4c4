/* deaths.c: traced processes that died, and the run's stop (deaths.h). */
#include "analyze/deaths.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "util/grow.h"
#include "util/oom.h"

/* What the recorder wrote of one process's end (meta proc.PID.*). */
typedef struct proc_end {
    int64_t agent_id, pid;
    double end_s; /* NaN: no end seen */
    const char *status, *python, *type, *message, *where, *oom;
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
    l->v[l->n] = (proc_end){.agent_id = agent, .pid = pid, .end_s = NAN};
    return &l->v[l->n++];
}

/* The seconds an agent's times are shifted by in a merged run: its start
 * after the run's. */
static double agent_offset_s(const tp_run *run, int64_t agent)
{
    const char *mine = tp_run_agent_meta_get(run, agent, "start_wall_ns");
    const char *run_start = tp_run_meta_get(run, "start_wall_ns");
    if (!run->nagent_meta || !mine || !run_start)
        return 0;
    return (strtod(mine, NULL) - strtod(run_start, NULL)) / 1e9;
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
    if (strcmp(field, "end_ns") == 0)
        e->end_s = strtod(value, NULL) / 1e9 + agent_offset_s(run, agent);
    else if (strcmp(field, "status") == 0)
        e->status = value;
    else if (strcmp(field, "process.exit") == 0)
        e->python = value;
    else if (strcmp(field, "exception.type") == 0)
        e->type = value;
    else if (strcmp(field, "exception.message") == 0)
        e->message = value;
    else if (strcmp(field, "exception.where") == 0)
        e->where = value;
    else if (strcmp(field, "oom_kills") == 0)
        e->oom = value;
}

size_t tp_course_step_at(const tp_course *course, int rank, double t_s)
{
    const tp_rank_course *rc = tp_course_rank(course, rank);
    if (!rc)
        return 0;
    int64_t t = llround(t_s * 1e9);
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
static bool died(const proc_end *e, const tp_run_process *p, const tp_deaths *all, tp_death *d)
{
    int sig = 0, status = -1;
    if (e->status && strncmp(e->status, "signal ", 7) == 0)
        sig = atoi(e->status + 7);
    else if (e->status && strncmp(e->status, "exit ", 5) == 0)
        status = atoi(e->status + 5);
    bool rank_process = p && !p->worker;
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
    else if (!e->status && !e->python && rank_process) /* kept if inside a region (below) */
        d->how = e->oom ? TP_DEATH_OOM : TP_DEATH_VANISHED;
    else
        return false;
    d->signal = sig;
    d->exit_status = status;
    return true;
}

/* The last sampled stack of each death's process: its latest run with a
 * region open, unless another came more than a second after it. */
typedef struct last_ctx {
    tp_deaths *d;
    double *latest, *latest_phase;
} last_ctx;

static void last_stack(void *ctx, const tp_stack_thread_run *r)
{
    last_ctx *c = ctx;
    double end = (double)(r->t_ns + r->span_ns) / 1e9;
    for (size_t i = 0; i < c->d->n; i++) {
        tp_death *d = &c->d->v[i];
        if (d->pid != r->pid || d->agent_id != r->agent_id || end > d->end_s + 0.5)
            continue;
        if (r->phase && end >= c->latest_phase[i]) {
            c->latest_phase[i] = end;
            free(d->phase);
            d->phase = tp_xstrdup(r->phase);
            d->node = r->node;
        } else if (end >= c->latest[i] && end > c->latest_phase[i] + 1) {
            free(d->phase);
            d->phase = NULL;
            d->node = r->node;
        }
        if (end > c->latest[i])
            c->latest[i] = end;
    }
}

static int by_end(const void *x, const void *y)
{
    const tp_death *a = x, *b = y;
    return (a->end_s > b->end_s) - (a->end_s < b->end_s);
}

bool tp_deaths_build(tp_run *run, const tp_course *course, double run_s, tp_deaths *out, char *err,
                     size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *stop = tp_run_meta_get(run, "stop_signal");
    const char *stop_ns = tp_run_meta_get(run, "stop_signal_ns");
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
                      .end_s = e->end_s};
        if (isnan(e->end_s) || !died(e, p, out, &d))
            continue;
        d.exception_type = e->type;
        d.exception_message = e->message;
        d.exception_where = e->where;
        d.step = tp_course_step_at(course, d.rank, d.end_s);
        double rss; /* a second before: the last sample may be of its exit */
        d.rss_bytes = tp_run_agent_value_at(run, d.agent_id, TP_METRIC_PROC_RSS_BYTES, "{}",
                                            llround((d.end_s - 1) * 1e9), &rss) &&
                              rss > 0
                          ? rss
                          : NAN;
        out->v = tp_grow(out->v, out->n, &vcap, sizeof *out->v);
        out->v[out->n++] = d;
    }
    free(ends.v);
    free(procs);
    qsort(out->v, out->n, sizeof *out->v, by_end);
    if (!out->n || !tp_run_has_stacks(run)) {
        for (size_t i = out->n; i-- > 0;) /* nothing says they were inside a region */
            if (out->v[i].how == TP_DEATH_VANISHED && out->v[i].end_s >= run_s - TP_DEATH_EARLY_S)
                out->v[i] = out->v[--out->n];
        return true;
    }
    if (!tp_run_stack_tree(run, &out->tree, err, cap))
        return false;
    last_ctx c = {out, tp_xcalloc(out->n, sizeof(double)), tp_xcalloc(out->n, sizeof(double))};
    double since = out->v[0].end_s - 5;
    bool ok = tp_run_each_stack_run_since(run, llround((since > 0 ? since : 0) * 1e9), last_stack,
                                          &c, err, cap);
    free(c.latest);
    free(c.latest_phase);
    /* a process that ended unseen, outside any region, near the end: a
     * script's os._exit after its training, not a death */
    for (size_t i = out->n; i-- > 0;) {
        tp_death *d = &out->v[i];
        if (d->how == TP_DEATH_VANISHED && !d->phase && d->end_s >= run_s - TP_DEATH_EARLY_S) {
            memmove(d, d + 1, (out->n - i - 1) * sizeof *d);
            out->n--;
        }
    }
    return ok;
}

void tp_deaths_free(tp_deaths *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].phase);
    free(d->v);
    tp_stack_tree_free(&d->tree);
    memset(d, 0, sizeof *d);
}
