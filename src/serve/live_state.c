/* live_state.c: see live_state.h. */
#include "serve/live_state.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/prom_format.h"
#include "trainprof_version.h"
#include "util/grow.h"

typedef struct live_series {
    bool known; /* the catalogue knows its metric */
    tp_prom_metric prom;
    char labels[256]; /* Prometheus label text, without agent */
    bool has_value;
    double value;    /* latest (scaled) value, or the integral for rates */
    uint64_t last_t; /* time of the latest sample, for integration */
} live_series;

typedef struct live_phase {
    int32_t rank;
    uint32_t name; /* sink name id; 0 = "(other)" */
    uint64_t count;
    double seconds;
    uint64_t device_count; /* device (CUDA event) times of the phase's regions */
    double device_seconds;
} live_phase;

typedef struct live_rank {
    int32_t rank;
    uint64_t steps, samples, batches, epochs, dropped;
    int64_t epoch; /* the latest epoch mark's value, -1 before one */
} live_rank;

struct tp_live {
    pthread_mutex_t lock;
    char *agent, *host;
    double interval_s;
    live_series *series; /* indexed by sink series id - 1 */
    size_t nseries, cap_series;
    char **names; /* indexed by sink name id - 1 */
    size_t nnames, cap_names;
    int32_t *thread_rank; /* indexed by sink thread id - 1 */
    uint64_t *thread_dropped;
    size_t nthreads, cap_threads, cap_thread_dropped;
    live_phase phases[TP_LIVE_MAX_PHASES];
    size_t nphases;
    size_t last_phase; /* the last phase found: runs of one phase are common */
    live_rank ranks[TP_LIVE_MAX_RANKS];
    size_t nranks;
};

tp_live *tp_live_new(const char *agent, const char *host, double interval_s)
{
    tp_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    l->agent = strdup(agent ? agent : "");
    l->host = strdup(host ? host : "");
    l->interval_s = interval_s;
    return l;
}

void tp_live_free(tp_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nnames; i++)
        free(l->names[i]);
    free(l->names);
    free(l->series);
    free(l->thread_rank);
    free(l->thread_dropped);
    free(l->agent);
    free(l->host);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static live_rank *rank_entry(tp_live *l, int32_t rank)
{
    for (size_t i = 0; i < l->nranks; i++)
        if (l->ranks[i].rank == rank)
            return &l->ranks[i];
    if (l->nranks == TP_LIVE_MAX_RANKS)
        return NULL;
    live_rank *r = &l->ranks[l->nranks++];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->epoch = -1;
    return r;
}

/* The phase of (rank, name): an open-addressing search would pay off only far
 * beyond the handful of phases a training has, so a recently-used cache in
 * front of a linear search serves the drain's event rate. */
static live_phase *phase_entry(tp_live *l, int32_t rank, uint32_t name)
{
    size_t hint = l->last_phase;
    if (hint < l->nphases && l->phases[hint].rank == rank && l->phases[hint].name == name)
        return &l->phases[hint];
    for (size_t i = 0; i < l->nphases; i++)
        if (l->phases[i].rank == rank && l->phases[i].name == name)
            return &l->phases[l->last_phase = i];
    if (l->nphases >= TP_LIVE_MAX_PHASES - 1 && name != 0)
        return phase_entry(l, rank, 0);
    if (l->nphases == TP_LIVE_MAX_PHASES)
        return NULL;
    live_phase *p = &l->phases[l->last_phase = l->nphases++];
    memset(p, 0, sizeof *p);
    p->rank = rank, p->name = name;
    return p;
}

static int32_t rank_of_thread(const tp_live *l, uint32_t thread)
{
    return thread >= 1 && thread <= l->nthreads ? l->thread_rank[thread - 1] : -1;
}

static void apply_series(tp_live *l, const tp_batch *b)
{
    for (size_t i = 0; i < b->series.len; i++) {
        const tp_series_def *d = &b->series.items[i];
        for (void *p; l->nseries < d->id; l->nseries++) {
            if (!(p = tp_grow_try(l->series, l->nseries, &l->cap_series, sizeof *l->series)))
                break;
            l->series = p;
            memset(&l->series[l->nseries], 0, sizeof *l->series);
        }
        if (l->nseries < d->id)
            continue; /* out of memory: this series stays off the live view */
        live_series *s = &l->series[d->id - 1];
        s->known = tp_prom_metric_of(d->metric, &s->prom);
        tp_prom_labels(d->labels, s->labels, sizeof s->labels);
    }
    for (size_t i = 0; i < b->samples.len; i++) {
        const tp_sample *x = &b->samples.items[i];
        if (x->series == 0 || x->series > l->nseries)
            continue;
        live_series *s = &l->series[x->series - 1];
        if (!s->known)
            continue;
        if (s->prom.integrate) {
            double dt = s->has_value ? (double)(x->t_ns - s->last_t) / 1e9 : l->interval_s;
            s->value += x->value * (dt > 0 ? dt : 0);
        } else {
            s->value = x->value * s->prom.scale;
        }
        s->has_value = true;
        s->last_t = x->t_ns;
    }
}

static void apply_timings(tp_live *l, const tp_batch *b)
{
    for (size_t i = 0; i < b->names.len; i++) {
        const tp_name_def *d = &b->names.items[i];
        for (void *p; l->nnames < d->id; l->nnames++) {
            if (!(p = tp_grow_try(l->names, l->nnames, &l->cap_names, sizeof *l->names)))
                break;
            l->names = p;
            l->names[l->nnames] = NULL;
        }
        if (l->nnames < d->id)
            continue; /* out of memory: the name stays unknown to the live view */
        free(l->names[d->id - 1]);
        l->names[d->id - 1] = strdup(d->text);
    }
    for (size_t i = 0; i < b->threads.len; i++) {
        const tp_thread_info *t = &b->threads.items[i];
        for (void *p; l->nthreads < t->id; l->nthreads++) {
            if (!(p = tp_grow_try(l->thread_rank, l->nthreads, &l->cap_threads,
                                  sizeof *l->thread_rank)))
                break;
            l->thread_rank = p;
            if (!(p = tp_grow_try(l->thread_dropped, l->nthreads, &l->cap_thread_dropped,
                                  sizeof *l->thread_dropped)))
                break;
            l->thread_dropped = p;
            l->thread_rank[l->nthreads] = -1;
            l->thread_dropped[l->nthreads] = 0;
        }
        if (l->nthreads < t->id)
            continue;    /* out of memory: the thread counts for no rank live */
        if (t->pid != 0) /* the whole row: a new thread, or its rank or drops updated */
            l->thread_rank[t->id - 1] = t->rank;
        if (t->dropped > l->thread_dropped[t->id - 1]) {
            live_rank *r = rank_entry(l, l->thread_rank[t->id - 1]);
            if (r)
                r->dropped += t->dropped - l->thread_dropped[t->id - 1];
            l->thread_dropped[t->id - 1] = t->dropped;
        }
    }
    for (size_t i = 0; i < b->intervals.len; i++) {
        const tp_interval *v = &b->intervals.items[i];
        live_phase *p = phase_entry(l, rank_of_thread(l, v->thread), v->name);
        if (p) {
            p->count++;
            p->seconds += (double)(v->end_ns - v->start_ns) / 1e9;
        }
    }
    for (size_t i = 0; i < b->device_spans.len; i++) {
        const tp_device_span *d = &b->device_spans.items[i];
        live_phase *p = phase_entry(l, rank_of_thread(l, d->thread), d->name);
        if (p) {
            p->device_count++;
            p->device_seconds += (double)d->device_ns / 1e9;
        }
    }
    for (size_t i = 0; i < b->marks.len; i++) {
        const tp_mark *m = &b->marks.items[i];
        live_rank *r = rank_entry(l, rank_of_thread(l, m->thread));
        if (!r)
            continue;
        if (m->kind == TP_MARK_STEP)
            r->steps++;
        else if (m->kind == TP_MARK_SAMPLES) {
            r->samples += m->value > 0 ? (uint64_t)m->value : 0;
            r->batches++;
        } else if (m->kind == TP_MARK_EPOCH)
            r->epochs++, r->epoch = m->value;
    }
}

void tp_live_apply(tp_live *l, const tp_batch *b)
{
    pthread_mutex_lock(&l->lock);
    apply_series(l, b);
    apply_timings(l, b);
    pthread_mutex_unlock(&l->lock);
}

static void header(FILE *out, const char *name, const char *help, const char *type)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The agent label, then the rank label ("" when the process had no rank). */
static void rank_labels(FILE *out, const tp_live *l, int32_t rank)
{
    fputs("{agent=\"", out);
    tp_prom_escape(out, l->agent);
    if (rank >= 0)
        fprintf(out, "\",rank=\"%d\"", (int)rank);
    else
        fputs("\",rank=\"\"", out);
}

/* One family per metric name, in series order: every series of a name is
 * written under one HELP/TYPE header, as the format requires. */
static void render_series(tp_live *l, FILE *out)
{
    bool *done = calloc(l->nseries ? l->nseries : 1, sizeof *done);
    if (!done)
        return;
    for (size_t i = 0; i < l->nseries; i++) {
        const live_series *s = &l->series[i];
        if (done[i] || !s->known || !s->has_value)
            continue;
        header(out, s->prom.name, s->prom.help,
               s->prom.kind == TP_PROM_COUNTER ? "counter" : "gauge");
        bool per_device = false;
        for (size_t j = i; j < l->nseries && !per_device; j++)
            per_device = l->series[j].known && l->series[j].labels[0] &&
                         strcmp(l->series[j].prom.name, s->prom.name) == 0;
        for (size_t j = i; j < l->nseries; j++) {
            const live_series *t = &l->series[j];
            if (done[j] || !t->known || !t->has_value || strcmp(t->prom.name, s->prom.name))
                continue;
            done[j] = true;
            if (per_device && !t->labels[0])
                continue; /* the total: sum() or avg() of the devices gives it */
            fprintf(out, "%s{agent=\"", t->prom.name);
            tp_prom_escape(out, l->agent);
            fprintf(out, "\"%s%s} ", t->labels[0] ? "," : "", t->labels);
            tp_prom_value(out, t->value);
            fputc('\n', out);
        }
    }
    free(done);
}

/* One summary family (_sum and _count per rank and phase) over the phases;
 * device selects the device times, and only phases that have some. */
static void render_phases(tp_live *l, FILE *out, bool device)
{
    const char *family = device ? "trainprof_phase_device_seconds" : "trainprof_phase_seconds";
    bool any = false;
    for (size_t i = 0; i < l->nphases && !any; i++)
        any = device ? l->phases[i].device_count > 0 : l->phases[i].count > 0;
    if (!any)
        return;
    header(out, family,
           device ? "device (GPU) time of each timing's regions, measured by CUDA events on "
                    "their stream, per rank"
                  : "time spent in each timing (dataloader_next, train_batch, user regions, ...) "
                    "by closed regions, per rank",
           "summary");
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < l->nphases; i++) {
            const live_phase *p = &l->phases[i];
            uint64_t count = device ? p->device_count : p->count;
            if (!count)
                continue;
            const char *name = p->name >= 1 && p->name <= l->nnames && l->names[p->name - 1]
                                   ? l->names[p->name - 1]
                                   : "(other)";
            fprintf(out, "%s_%s", family, pass ? "count" : "sum");
            rank_labels(out, l, p->rank);
            fputs(",phase=\"", out);
            tp_prom_escape(out, name);
            fputs("\"} ", out);
            tp_prom_value(out, pass ? (double)count : device ? p->device_seconds : p->seconds);
            fputc('\n', out);
        }
}

static void render_timings(tp_live *l, FILE *out)
{
    render_phases(l, out, false);
    render_phases(l, out, true);
    if (!l->nranks)
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
        for (size_t i = 0; i < l->nranks; i++) {
            const live_rank *r = &l->ranks[i];
            uint64_t v[] = {r->steps, r->samples, r->batches, r->epochs, r->dropped};
            fputs(families[f].name, out);
            rank_labels(out, l, r->rank);
            fprintf(out, "} %llu\n", (unsigned long long)v[f]);
        }
    }
    header(out, "trainprof_epoch", "the latest epoch mark's number, per rank", "gauge");
    for (size_t i = 0; i < l->nranks; i++) {
        fputs("trainprof_epoch", out);
        rank_labels(out, l, l->ranks[i].rank);
        fprintf(out, "} %lld\n", (long long)l->ranks[i].epoch);
    }
}

void tp_live_render(tp_live *l, FILE *out)
{
    pthread_mutex_lock(&l->lock);
    header(out, "trainprof_info", "the recorder: its agent, host and version (value 1)", "gauge");
    fputs("trainprof_info{agent=\"", out);
    tp_prom_escape(out, l->agent);
    fputs("\",host=\"", out);
    tp_prom_escape(out, l->host);
    fputs("\",version=\"" TRAINPROF_VERSION "\"} 1\n", out);
    render_series(l, out);
    render_timings(l, out);
    pthread_mutex_unlock(&l->lock);
}
