/* step_phases.c: per-step phase breakdown for the step-time plot. */
#include "analyze/step_phases.h"

#include <stdlib.h>
#include <string.h>

#include "store/reader_stream.h"

const char *const tp_step_phase_names[TP_STEP_PHASES] = {
    "dataloader_next", "to_device",      "train_batch", "step_lr_schedulers",
    "from_device",     "reduce_metrics", "other",
};

typedef struct step_ctx {
    const int64_t *start, *end; /* steps [start[i], end[i]) in time order */
    size_t nsteps, cursor;
    double *phase; /* nsteps * TP_STEP_PHASES, seconds */
} step_ctx;

static int phase_index(const char *name)
{
    for (int i = 0; i < TP_STEP_PHASES - 1; i++)
        if (strcmp(tp_step_phase_names[i], name) == 0)
            return i;
    return -1;
}

/* Regions arrive in start order: advance to the step holding the start. */
static void add_region(void *ctx, int64_t thread, const char *name, int depth, int64_t start,
                       int64_t end)
{
    (void)thread, (void)depth;
    step_ctx *c = ctx;
    int p = phase_index(name);
    if (p < 0)
        return;
    while (c->cursor < c->nsteps && c->end[c->cursor] <= start)
        c->cursor++;
    if (c->cursor < c->nsteps && start >= c->start[c->cursor])
        c->phase[c->cursor * TP_STEP_PHASES + (size_t)p] += (double)(end - start) / 1e9;
}

bool tp_step_phases_build(tp_run *run, int rank, size_t max_groups, tp_step_phases *out, char *err,
                          size_t cap)
{
    memset(out, 0, sizeof *out);
    tp_run_mark *m;
    size_t n;
    if (!tp_run_marks(run, &m, &n, err, cap))
        return false;
    /* the rank's thread with the most step marks */
    int64_t thread = -1;
    size_t best = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, steps = 0;
        while (j < n && m[j].thread == m[i].thread) {
            steps += m[j].kind == TP_RUN_MARK_STEP;
            j++;
        }
        if (m[i].rank == rank && steps > best) {
            best = steps;
            thread = m[i].thread;
        }
        i = j;
    }
    int64_t *start = malloc((best + 1) * sizeof *start), *end = malloc((best + 1) * sizeof *end);
    size_t ns = 0;
    int64_t prev = -1;
    for (size_t i = 0; i < n; i++) {
        if (m[i].thread != thread || m[i].kind == TP_RUN_MARK_SAMPLES)
            continue;
        if (m[i].kind == TP_RUN_MARK_EPOCH) {
            prev = -1;
            continue;
        }
        if (prev >= 0) {
            start[ns] = prev;
            end[ns++] = m[i].t_ns;
        }
        prev = m[i].t_ns;
    }
    free(m);
    step_ctx c = {start, end, ns, 0, calloc(ns * TP_STEP_PHASES + 1, sizeof(double))};
    bool ok = thread < 0 || tp_run_each_thread_region(run, thread, add_region, &c, err, cap);
    if (ok && ns) {
        size_t per = (ns + max_groups - 1) / max_groups;
        out->nsteps = ns;
        out->ngroups = (ns + per - 1) / per;
        out->first_step = calloc(out->ngroups, sizeof(double));
        out->values = calloc(out->ngroups * TP_STEP_PHASES, sizeof(double));
        for (size_t s = 0; s < ns; s++) {
            double *ph = &c.phase[s * TP_STEP_PHASES], known = 0;
            for (int p = 0; p < TP_STEP_PHASES - 1; p++)
                known += ph[p];
            double total = (double)(end[s] - start[s]) / 1e9;
            ph[TP_STEP_PHASES - 1] = total > known ? total - known : 0;
            size_t g = s / per;
            size_t in_group = g + 1 == out->ngroups ? ns - g * per : per;
            out->first_step[g] = (double)(g * per);
            for (int p = 0; p < TP_STEP_PHASES; p++)
                out->values[g * TP_STEP_PHASES + (size_t)p] += ph[p] / (double)in_group;
        }
    }
    free(c.phase);
    free(start);
    free(end);
    return ok;
}

void tp_step_phases_free(tp_step_phases *p)
{
    free(p->first_step);
    free(p->values);
    memset(p, 0, sizeof *p);
}
