/* step_phases.c: per-step phase breakdown for the step-time plot. */
#include "analyze/step_phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/step_kinds.h"
#include "core/phases.h"
#include "store/reader_ops.h"
#include "store/reader_stream.h"

/* One rank's steps [start[i], end[i]) in time order, and the seconds of each
 * phase in each (nsteps * TP_STEP_PHASES). */
typedef struct rank_steps {
    int64_t thread; /* the rank's thread with the most step marks; -1: none */
    int64_t *start, *end;
    size_t *number; /* each step's number among all the thread's steps (profiled ones left out) */
    size_t nsteps;
    double *phase;
    unsigned *pauses; /* per step: the pauses that began in it or after it (bits) */
} rank_steps;

typedef struct step_ctx {
    rank_steps *ranks;
    size_t n;
    rank_steps **of_thread; /* by thread id (< nthreads): its rank's steps, or NULL */
    int64_t nthreads;
} step_ctx;

static int phase_index(const char *name)
{
    for (int i = 0; i < TP_STEP_PHASES - 1; i++)
        if (strcmp(tp_step_phase_names[i], name) == 0)
            return i;
    return -1;
}

/* Regions come in any order: the step holding a region's start is found by
 * binary search in its rank's steps. */
static int pause_index(const char *name)
{
    for (int i = 0; i < TP_PAUSE_NAMES; i++)
        if (strcmp(tp_pause_names[i], name) == 0)
            return i;
    return -1;
}

static void add_region(void *ctx, int64_t thread, const char *name, int depth, int64_t start,
                       int64_t end)
{
    (void)depth;
    step_ctx *c = ctx;
    rank_steps *r = thread >= 0 && thread < c->nthreads ? c->of_thread[thread] : NULL;
    int p = r ? phase_index(name) : -1, pause = r ? pause_index(name) : -1;
    if (p < 0 && pause < 0)
        return;
    size_t lo = 0, hi = r->nsteps; /* the first step starting after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->start[mid] <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pause >= 0 && lo > 0 && r->pauses) /* in or after step lo - 1, before the next */
        r->pauses[lo - 1] |= 1u << pause;
    else if (p >= 0 && lo > 0 && start < r->end[lo - 1])
        r->phase[(lo - 1) * TP_STEP_PHASES + (size_t)p] += ((double)end - (double)start) / 1e9;
}

/* The steps of rank from the marks (in rank, thread, time order): those of
 * its thread with the most step marks, one mark to the next, never across an
 * epoch mark, and none from a step-end mark. */
static void rank_steps_of(const tp_run_mark *m, size_t n, int rank, rank_steps *r)
{
    r->thread = -1;
    size_t best = 0, lo = 0, hi = 0; /* the chosen thread's marks: m[lo, hi) */
    for (size_t i = 0; i < n;) {
        size_t j = i, steps = 0;
        while (j < n && m[j].thread == m[i].thread && m[j].rank == m[i].rank) {
            steps += m[j].kind == TP_MARK_STEP;
            j++;
        }
        if (m[i].rank == rank && steps > best) {
            best = steps;
            r->thread = m[i].thread;
            lo = i, hi = j;
        }
        i = j;
    }
    tp_closed_step *v = malloc((hi - lo + 1) * sizeof *v);
    r->start = malloc((best + 1) * sizeof *r->start);
    r->end = malloc((best + 1) * sizeof *r->end);
    r->nsteps = 0;
    size_t nv = v ? tp_closed_steps(&m[lo], hi - lo, v) : 0;
    for (size_t i = 0; r->start && r->end && i < nv && i < best; i++) {
        r->start[r->nsteps] = v[i].a;
        r->end[r->nsteps++] = v[i].b;
    }
    free(v);
    r->number = malloc((r->nsteps + 1) * sizeof *r->number);
    for (size_t i = 0; r->number && i < r->nsteps; i++)
        r->number[i] = i;
}

/* Leaves out the steps a capture window ran in (PyTorch's profiler slowed
 * them: timings.h keeps them out of the figures too), keeping the others'
 * numbers; then makes room for their phases. */
static void drop_profiled(rank_steps *r, const tp_run_op_window *w, size_t nw)
{
    size_t kept = 0;
    for (size_t i = 0; r->start && r->end && r->number && i < r->nsteps; i++) {
        bool profiled = false;
        for (size_t k = 0; k < nw && !profiled; k++)
            profiled = !w[k].skipped && w[k].thread == r->thread && w[k].start_ns < r->end[i] &&
                       w[k].end_ns > r->start[i];
        if (profiled)
            continue;
        r->start[kept] = r->start[i];
        r->end[kept] = r->end[i];
        r->number[kept++] = r->number[i];
    }
    if (r->start && r->end && r->number)
        r->nsteps = kept;
    r->phase = calloc(r->nsteps * TP_STEP_PHASES + 1, sizeof(double));
    r->pauses = calloc(r->nsteps + 1, sizeof *r->pauses);
}

/* Averages a rank's steps after its first skip (all of them when it has
 * no more) in at most max_groups consecutive groups. */
static void group_steps(const rank_steps *r, size_t skip, size_t max_groups, tp_step_phases *out)
{
    if (!r->phase || !r->number)
        return;
    size_t warm = 0; /* the steps kept among the first skip */
    while (warm < r->nsteps && r->number[warm] < skip)
        warm++;
    skip = warm;
    if (skip >= r->nsteps)
        skip = 0;
    size_t ns = r->nsteps - skip;
    if (!ns)
        return;
    size_t per = (ns + max_groups - 1) / max_groups;
    out->nsteps = r->number[r->nsteps - 1] + 1;
    out->ngroups = (ns + per - 1) / per;
    out->first_step = calloc(out->ngroups, sizeof(double));
    out->values = calloc(out->ngroups * TP_STEP_PHASES, sizeof(double));
    out->pauses = calloc(out->ngroups, sizeof *out->pauses);
    out->start_s = calloc(out->ngroups, sizeof(double));
    out->end_s = calloc(out->ngroups, sizeof(double));
    for (size_t s = 0; out->pauses && r->pauses && s < skip; s++) /* the warm-up's: group 0's */
        out->pauses[0] |= r->pauses[s];
    for (size_t s = 0; s < ns; s++) {
        double *ph = &r->phase[(s + skip) * TP_STEP_PHASES], known = 0;
        for (int p = 0; p < TP_STEP_PHASES - 1; p++)
            known += ph[p];
        double total = ((double)r->end[s + skip] - (double)r->start[s + skip]) / 1e9;
        ph[TP_STEP_PHASES - 1] = total > known ? total - known : 0;
        size_t g = s / per;
        size_t in_group = g + 1 == out->ngroups ? ns - g * per : per;
        out->first_step[g] = (double)r->number[skip + g * per];
        if (out->start_s && s == g * per)
            out->start_s[g] = (double)r->start[s + skip] / 1e9;
        if (out->end_s)
            out->end_s[g] = (double)r->end[s + skip] / 1e9;
        if (out->pauses && r->pauses)
            out->pauses[g] |= r->pauses[s + skip];
        for (int p = 0; p < TP_STEP_PHASES; p++)
            out->values[g * TP_STEP_PHASES + (size_t)p] += ph[p] / (double)in_group;
    }
}

bool tp_step_phases_build(tp_run *run, const int *ranks, const size_t *skip, size_t n,
                          size_t max_groups, tp_step_phases *out, char *err, size_t cap)
{
    memset(out, 0, n * sizeof *out);
    tp_run_mark *m;
    size_t nm;
    if (!tp_run_marks(run, &m, &nm, err, cap))
        return false;
    step_ctx c = {calloc(n ? n : 1, sizeof *c.ranks), n, NULL, 0};
    for (size_t k = 0; c.ranks && k < n; k++) {
        rank_steps_of(m, nm, ranks[k], &c.ranks[k]);
        if (c.ranks[k].thread + 1 > c.nthreads)
            c.nthreads = c.ranks[k].thread + 1;
    }
    free(m);
    tp_run_op_window *w;
    size_t nw;
    if (!tp_run_op_windows(run, &w, &nw, err, cap)) {
        for (size_t k = 0; c.ranks && k < n; k++) {
            free(c.ranks[k].start);
            free(c.ranks[k].end);
            free(c.ranks[k].number);
        }
        free(c.ranks);
        return false;
    }
    for (size_t k = 0; c.ranks && k < n; k++)
        drop_profiled(&c.ranks[k], w, nw);
    tp_run_op_windows_free(w, nw);
    c.of_thread = calloc((size_t)c.nthreads + 1, sizeof *c.of_thread);
    for (size_t k = 0; c.of_thread && k < n; k++)
        if (c.ranks[k].thread >= 0)
            c.of_thread[c.ranks[k].thread] = &c.ranks[k];
    bool ok = c.ranks && c.of_thread &&
              (c.nthreads == 0 || tp_run_each_outer_region(run, add_region, &c, err, cap));
    if (!c.ranks || !c.of_thread)
        snprintf(err, cap, "%s: out of memory for the step phases", run->path);
    for (size_t k = 0; c.ranks && k < n; k++) {
        if (ok)
            group_steps(&c.ranks[k], skip ? skip[k] : 0, max_groups, &out[k]);
        free(c.ranks[k].phase);
        free(c.ranks[k].pauses);
        free(c.ranks[k].start);
        free(c.ranks[k].end);
        free(c.ranks[k].number);
    }
    free(c.ranks);
    free(c.of_thread);
    return ok;
}
