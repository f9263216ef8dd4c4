/* prom_exposition.c: see prom_exposition.h. */
#include "serve/prom_exposition.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/prom_format.h"
#include "trainprof_version.h"

typedef struct exposition {
    FILE *out;
    const char *agent, *host;
} exposition;

static void header(FILE *out, const char *name, const char *help, const char *type)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The agent label, then the rank label ("" when the process had no rank). */
static void rank_labels(FILE *out, const exposition *e, int32_t rank)
{
    fputs("{agent=\"", out);
    tp_prom_escape(out, e->agent);
    if (rank >= 0)
        fprintf(out, "\",rank=\"%d\"", (int)rank);
    else
        fputs("\",rank=\"\"", out);
}

/* The Prometheus form of each series of the view (known[i] false for
 * metrics the catalogue does not know, or series without a value). */
static tp_prom_metric *prom_forms(const tp_live_view *v, bool **known)
{
    tp_prom_metric *prom = calloc(v->nseries ? v->nseries : 1, sizeof *prom);
    *known = calloc(v->nseries ? v->nseries : 1, sizeof **known);
    if (!prom || !*known) {
        free(prom), free(*known);
        return NULL;
    }
    for (size_t i = 0; i < v->nseries; i++)
        (*known)[i] = v->series[i].metric && v->series[i].has_value &&
                      tp_prom_metric_of(v->series[i].metric, &prom[i]);
    return prom;
}

/* One family per metric name, in series order: every series of a name is
 * written under one HELP/TYPE header, as the format requires. A rate is
 * exposed as its integral (a counter), a gauge scaled to base units. */
static void render_series(const exposition *e, const tp_live_view *v)
{
    FILE *out = e->out;
    bool *known = NULL;
    tp_prom_metric *prom = prom_forms(v, &known);
    bool *done = calloc(v->nseries ? v->nseries : 1, sizeof *done);
    if (!prom || !done) {
        free(prom), free(known), free(done);
        return;
    }
    for (size_t i = 0; i < v->nseries; i++) {
        if (done[i] || !known[i])
            continue;
        const char *name = prom[i].name;
        header(out, name, prom[i].help, prom[i].kind == TP_PROM_COUNTER ? "counter" : "gauge");
        bool per_device = false;
        for (size_t j = i; j < v->nseries && !per_device; j++)
            per_device = known[j] && strcmp(v->series[j].labels, "{}") != 0 &&
                         strcmp(prom[j].name, name) == 0;
        for (size_t j = i; j < v->nseries; j++) {
            if (done[j] || !known[j] || strcmp(prom[j].name, name))
                continue;
            done[j] = true;
            char labels[256];
            tp_prom_labels(v->series[j].labels, labels, sizeof labels);
            if (per_device && !labels[0])
                continue; /* the total: sum() or avg() of the devices gives it */
            fprintf(out, "%s{agent=\"", name);
            tp_prom_escape(out, e->agent);
            fprintf(out, "\"%s%s} ", labels[0] ? "," : "", labels);
            tp_prom_value(out, prom[j].integrate ? v->series[j].integral
                                                 : v->series[j].latest * prom[j].scale);
            fputc('\n', out);
        }
    }
    free(prom), free(known), free(done);
}

/* One summary family (_sum and _count per rank and phase) over the phases;
 * device selects the device times, and only phases that have some. */
static void render_phases(const exposition *e, const tp_live_view *v, bool device)
{
    FILE *out = e->out;
    const char *family = device ? "trainprof_phase_device_seconds" : "trainprof_phase_seconds";
    bool any = false;
    for (size_t i = 0; i < v->nphases && !any; i++)
        any = device ? v->phases[i].device_count > 0 : v->phases[i].count > 0;
    if (!any)
        return;
    header(out, family,
           device ? "device (GPU) time of each timing's regions, measured by CUDA events on "
                    "their stream, per rank"
                  : "time spent in each timing (dataloader_next, train_batch, user regions, ...) "
                    "by closed regions, per rank",
           "summary");
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < v->nphases; i++) {
            const tp_live_phase_total *p = &v->phases[i];
            uint64_t count = device ? p->device_count : p->count;
            if (!count)
                continue;
            fprintf(out, "%s_%s", family, pass ? "count" : "sum");
            rank_labels(out, e, p->rank);
            fputs(",phase=\"", out);
            tp_prom_escape(out, tp_live_view_name(v, p->name));
            fputs("\"} ", out);
            tp_prom_value(out, pass ? (double)count : device ? p->device_seconds : p->seconds);
            fputc('\n', out);
        }
}

static void render_timings(const exposition *e, const tp_live_view *v)
{
    FILE *out = e->out;
    render_phases(e, v, false);
    render_phases(e, v, true);
    if (!v->nranks)
        return;
    static const struct {
        const char *name, *help;
    } families[] = {
        {"trainprof_steps_total", "training steps completed (step marks), per rank"},
        {"trainprof_samples_total", "samples in the steps' batches, per rank"},
        {"trainprof_batches_total",
         "batches (micro-batches) fetched for the steps, per rank: over trainprof_steps_total, "
         "micro-batches per step"},
        {"trainprof_epochs_total", "epoch marks seen, per rank"},
        {"trainprof_dropped_events_total", "timing events dropped on full buffers, per rank"},
    };
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        header(out, families[f].name, families[f].help, "counter");
        for (size_t i = 0; i < v->nranks; i++) {
            const tp_live_rank *r = &v->ranks[i];
            uint64_t n[] = {r->steps, r->samples, r->batches, r->epochs, r->dropped};
            fputs(families[f].name, out);
            rank_labels(out, e, r->rank);
            fprintf(out, "} %llu\n", (unsigned long long)n[f]);
        }
    }
    header(out, "trainprof_epoch", "the latest epoch mark's number, per rank", "gauge");
    for (size_t i = 0; i < v->nranks; i++) {
        fputs("trainprof_epoch", out);
        rank_labels(out, e, v->ranks[i].rank);
        fprintf(out, "} %lld\n", (long long)v->ranks[i].epoch);
    }
    header(out, "trainprof_seconds_since_step",
           "seconds since the rank's latest step mark (0 before its first), per rank", "gauge");
    for (size_t i = 0; i < v->nranks; i++) {
        tp_live_progress p;
        tp_live_rank_progress(&v->ranks[i], v->now_ns, v->stall_after_s, &p);
        fputs("trainprof_seconds_since_step", out);
        rank_labels(out, e, v->ranks[i].rank);
        fputs("} ", out);
        tp_prom_value(out, p.since_step_s);
        fputc('\n', out);
    }
    header(out, "trainprof_stalled",
           "1 while the rank has a step open and no progress (step mark, region closed) for "
           "longer than its stall threshold (record --stall-after, else 10 median steps and at "
           "least 30 s), else 0; per rank",
           "gauge");
    for (size_t i = 0; i < v->nranks; i++) {
        tp_live_progress p;
        tp_live_rank_progress(&v->ranks[i], v->now_ns, v->stall_after_s, &p);
        fputs("trainprof_stalled", out);
        rank_labels(out, e, v->ranks[i].rank);
        fprintf(out, "} %d\n", p.stalled ? 1 : 0);
    }
    header(out, "trainprof_stall_where",
           "1 for each stalled rank whose stack the recorder sampled: where it was last seen "
           "(where: its frame outside the standard library, calling the innermost one; doing: "
           "on_cpu, waiting, waiting_on_storage or empty, unknown)",
           "gauge");
    for (size_t i = 0; i < v->nranks; i++) {
        tp_live_progress p;
        tp_live_rank_progress(&v->ranks[i], v->now_ns, v->stall_after_s, &p);
        if (!p.stalled || !v->ranks[i].where)
            continue;
        fputs("trainprof_stall_where", out);
        rank_labels(out, e, v->ranks[i].rank);
        fputs(",where=\"", out);
        tp_prom_escape(out, v->ranks[i].where);
        fputs("\",doing=\"", out);
        tp_prom_escape(out, v->ranks[i].doing);
        fputs("\"} 1\n", out);
    }
}

static void render(void *ctx, const tp_live_view *v)
{
    const exposition *e = ctx;
    FILE *out = e->out;
    header(out, "trainprof_info", "the recorder: its agent, host and version (value 1)", "gauge");
    fputs("trainprof_info{agent=\"", out);
    tp_prom_escape(out, e->agent);
    fputs("\",host=\"", out);
    tp_prom_escape(out, e->host);
    fputs("\",version=\"" TRAINPROF_VERSION "\"} 1\n", out);
    render_series(e, v);
    render_timings(e, v);
    header(out, "trainprof_events_not_recorded_total",
           "timing events the recorder could not keep: its memory ran out, or they came faster "
           "than its run file took them",
           "counter");
    fputs("trainprof_events_not_recorded_total{agent=\"", out);
    tp_prom_escape(out, e->agent);
    fprintf(out, "\"} %llu\n", (unsigned long long)v->events_not_recorded);
}

void tp_prom_expose(FILE *out, tp_live *l, const char *agent, const char *host)
{
    exposition e = {out, agent, host};
    tp_live_read(l, render, &e);
}
