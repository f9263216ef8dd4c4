/* live_state.c: see live_state.h. */
#include "live/live_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stall_rule.h"
#include "stacks.h"
#include "util/grow.h"

/* The last seconds of one phase name (all ranks). */
typedef struct window_name {
    uint32_t name;
    double busy[TP_LIVE_BUCKETS];
    double device[TP_LIVE_BUCKETS];    /* by their regions' host start */
    bool device_seen[TP_LIVE_BUCKETS]; /* any device time, even 0 ns */
} window_name;

struct tp_live {
    pthread_mutex_t lock;
    double interval_s;
    tp_live_series *series; /* by series id - 1, owning their texts */
    uint64_t *last_t;       /* the time of each series' latest sample, for the integral */
    size_t nseries, cap_series, cap_last_t;
    char **names; /* by name id - 1 */
    size_t nnames, cap_names;
    int32_t *thread_rank; /* by thread id - 1 */
    uint64_t *thread_dropped;
    size_t nthreads, cap_threads, cap_thread_dropped;
    tp_live_phase_total phases[TP_LIVE_MAX_PHASES];
    size_t nphases;
    size_t last_phase; /* the last phase found: runs of one phase are common */
    tp_live_rank ranks[TP_LIVE_MAX_RANKS];
    size_t nranks;
    /* the window: bucket b holds second bucket_sec[b] */
    int64_t newest_sec;
    int64_t bucket_sec[TP_LIVE_BUCKETS];
    double steps[TP_LIVE_BUCKETS], samples[TP_LIVE_BUCKETS], batches[TP_LIVE_BUCKETS];
    window_name window[TP_LIVE_NAMES];
    size_t nwindow;
    uint64_t now_ns;              /* the latest time any batch held */
    double stall_after_s;         /* record --stall-after, 0 for the rule's own */
    uint64_t events_not_recorded; /* by the recorder, so far */
};

tp_live *tp_live_new(double interval_s)
{
    tp_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    l->interval_s = interval_s;
    l->newest_sec = -1;
    for (int b = 0; b < TP_LIVE_BUCKETS; b++)
        l->bucket_sec[b] = -1;
    return l;
}

void tp_live_free(tp_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nseries; i++) {
        free((char *)l->series[i].metric);
        free((char *)l->series[i].labels);
    }
    free(l->last_t);
    for (size_t i = 0; i < l->nnames; i++)
        free(l->names[i]);
    free(l->names);
    free(l->series);
    free(l->thread_rank);
    free(l->thread_dropped);
    for (size_t i = 0; i < l->nranks; i++)
        free(l->ranks[i].where);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* ---- the window ---- */

/* The bucket of second sec, cleared if it held an older second; -1 when sec
 * is older than what the window keeps. */
static int window_bucket(tp_live *l, int64_t sec)
{
    if (sec < 0 || sec + TP_LIVE_WINDOW < l->newest_sec)
        return -1;
    int b = (int)(sec % TP_LIVE_BUCKETS);
    if (l->bucket_sec[b] > sec)
        return -1;
    if (l->bucket_sec[b] < sec) {
        l->bucket_sec[b] = sec;
        l->steps[b] = l->samples[b] = l->batches[b] = 0;
        for (size_t n = 0; n < l->nwindow; n++) {
            l->window[n].busy[b] = l->window[n].device[b] = 0;
            l->window[n].device_seen[b] = false;
        }
    }
    if (sec > l->newest_sec)
        l->newest_sec = sec;
    return b;
}

/* The window's slot of a name; NULL beyond TP_LIVE_NAMES names. */
static window_name *window_slot(tp_live *l, uint32_t name)
{
    for (size_t n = 0; n < l->nwindow; n++)
        if (l->window[n].name == name)
            return &l->window[n];
    if (l->nwindow == TP_LIVE_NAMES)
        return NULL;
    window_name *w = &l->window[l->nwindow++];
    memset(w, 0, sizeof *w);
    w->name = name;
    return w;
}

static void window_busy(tp_live *l, const tp_interval *v)
{
    int b = window_bucket(l, (int64_t)(v->end_ns / 1000000000));
    window_name *w = b >= 0 ? window_slot(l, v->name) : NULL;
    if (w)
        w->busy[b] += (double)(v->end_ns - v->start_ns) / 1e9;
}

static void window_device(tp_live *l, const tp_device_span *d)
{
    int b = window_bucket(l, (int64_t)(d->start_ns / 1000000000));
    window_name *w = b >= 0 ? window_slot(l, d->name) : NULL;
    if (w) {
        w->device[b] += (double)d->device_ns / 1e9;
        w->device_seen[b] = true;
    }
}

static void window_mark(tp_live *l, const tp_mark *m)
{
    int b = window_bucket(l, (int64_t)(m->t_ns / 1000000000));
    if (b < 0)
        return;
    if (m->kind == TP_MARK_STEP)
        l->steps[b] += 1;
    else if (m->kind == TP_MARK_SAMPLES) {
        l->samples[b] += m->value > 0 ? (double)m->value : 0;
        l->batches[b] += 1;
    }
}

static int busiest_first(const void *a, const void *b)
{
    double x = ((const tp_live_window_phase *)a)->share;
    double y = ((const tp_live_window_phase *)b)->share;
    return (x < y) - (x > y);
}

void tp_live_window_at(tp_live *l, uint64_t now_ns, tp_live_window *out)
{
    memset(out, 0, sizeof *out);
    int64_t now_sec = (int64_t)(now_ns / 1000000000), oldest = now_sec - TP_LIVE_WINDOW;
    double seconds = now_sec < TP_LIVE_WINDOW ? (double)now_sec : TP_LIVE_WINDOW;
    if (seconds <= 0)
        return;
    tp_live_window_phase all[TP_LIVE_NAMES];
    double batches = 0;
    pthread_mutex_lock(&l->lock);
    size_t n = l->nwindow;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = l->window[i].name;
        const char *text = id >= 1 && id <= l->nnames && l->names[id - 1] ? l->names[id - 1] : "?";
        snprintf(all[i].name, sizeof all[i].name, "%s", text);
        all[i].share = all[i].device_share = 0;
        all[i].has_device = false;
    }
    for (int b = 0; b < TP_LIVE_BUCKETS; b++) {
        if (l->bucket_sec[b] < oldest || l->bucket_sec[b] >= now_sec)
            continue;
        out->steps_per_s += l->steps[b];
        out->samples_per_s += l->samples[b];
        batches += l->batches[b];
        for (size_t i = 0; i < n; i++) {
            all[i].share += l->window[i].busy[b];
            all[i].device_share += l->window[i].device[b];
            all[i].has_device |= l->window[i].device_seen[b];
        }
    }
    pthread_mutex_unlock(&l->lock);
    out->batches_per_step = out->steps_per_s > 0 ? batches / out->steps_per_s : 0;
    out->steps_per_s /= seconds;
    out->samples_per_s /= seconds;
    for (size_t i = 0; i < n; i++) {
        all[i].share /= seconds;
        all[i].device_share /= seconds;
    }
    qsort(all, n, sizeof *all, busiest_first);
    for (size_t i = 0; i < n && out->nphases < TP_LIVE_PHASES; i++)
        if (all[i].share > 0 || all[i].has_device)
            out->phases[out->nphases++] = all[i];
}

/* ---- running totals ---- */

static tp_live_rank *rank_entry(tp_live *l, int32_t rank)
{
    for (size_t i = 0; i < l->nranks; i++)
        if (l->ranks[i].rank == rank)
            return &l->ranks[i];
    if (l->nranks == TP_LIVE_MAX_RANKS)
        return NULL;
    tp_live_rank *r = &l->ranks[l->nranks++];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->epoch = -1;
    return r;
}

/* The phase of (rank, name): an open-addressing search would pay off only far
 * beyond the handful of phases a training has, so a recently-used cache in
 * front of a linear search serves the drain's event rate. */
static tp_live_phase_total *phase_entry(tp_live *l, int32_t rank, uint32_t name)
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
    tp_live_phase_total *p = &l->phases[l->last_phase = l->nphases++];
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
            if (!(p = tp_grow_try(l->last_t, l->nseries, &l->cap_last_t, sizeof *l->last_t)))
                break;
            l->last_t = p;
            memset(&l->series[l->nseries], 0, sizeof *l->series);
            l->last_t[l->nseries] = 0;
        }
        if (l->nseries < d->id)
            continue; /* out of memory: this series stays off the live view */
        tp_live_series *s = &l->series[d->id - 1];
        free((char *)s->metric);
        free((char *)s->labels);
        s->metric = strdup(d->metric);
        s->labels = strdup(d->labels);
        if (!s->metric || !s->labels) {
            free((char *)s->metric), free((char *)s->labels);
            s->metric = s->labels = NULL;
        }
    }
    for (size_t i = 0; i < b->samples.len; i++) {
        const tp_sample *x = &b->samples.items[i];
        if (x->t_ns > l->now_ns) /* a sample of any series says how late it is */
            l->now_ns = x->t_ns;
        if (x->series == 0 || x->series > l->nseries || !l->series[x->series - 1].metric)
            continue;
        tp_live_series *s = &l->series[x->series - 1];
        uint64_t *last_t = &l->last_t[x->series - 1];
        double dt = s->has_value ? ((double)x->t_ns - (double)*last_t) / 1e9 : l->interval_s;
        s->integral += x->value * (dt > 0 ? dt : 0);
        s->latest = x->value;
        s->has_value = true;
        *last_t = x->t_ns;
    }
}

static void apply_names(tp_live *l, const tp_batch *b)
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
}

#define SAMPLER INT32_MIN /* thread_rank of a stack sampler's ring */

static void apply_threads(tp_live *l, const tp_batch *b)
{
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
            l->thread_rank[t->id - 1] =
                strncmp(t->name, TP_SAMPLER_THREAD_NAME, sizeof t->name) == 0 ? SAMPLER : t->rank;
        if (t->dropped > l->thread_dropped[t->id - 1]) {
            /* a stack sampler's drops are samples, no timing events (as the report has it) */
            int32_t rank = l->thread_rank[t->id - 1];
            tp_live_rank *r = rank == SAMPLER ? NULL : rank_entry(l, rank);
            if (r)
                r->dropped += t->dropped - l->thread_dropped[t->id - 1];
            l->thread_dropped[t->id - 1] = t->dropped;
        }
    }
}

/* A step-ish mark of rank r at t: the step it closes joins the recent ones. */
static void rank_step(tp_live_rank *r, uint32_t kind, uint64_t t)
{
    if (r->last_step_ns > 0 && t <= r->last_step_ns)
        return; /* seen already (top's seed, then its tail), or out of order */
    if (r->step_open && r->last_step_ns > 0) {
        r->recent[r->nrecent % TP_LIVE_RECENT_STEPS] = (double)(t - r->last_step_ns) / 1e9;
        r->nrecent++;
    }
    r->step_open = kind == TP_MARK_STEP;
    r->last_step_ns = t;
    if (t > r->last_progress_ns)
        r->last_progress_ns = t;
}

static void apply_events(tp_live *l, const tp_batch *b)
{
    for (size_t i = 0; i < b->intervals.len; i++) {
        const tp_interval *v = &b->intervals.items[i];
        int32_t rank = rank_of_thread(l, v->thread);
        tp_live_phase_total *p = phase_entry(l, rank, v->name);
        if (p) {
            p->count++;
            p->seconds += (double)(v->end_ns - v->start_ns) / 1e9;
        }
        window_busy(l, v);
        tp_live_rank *r = rank_entry(l, rank);
        if (r && v->end_ns > r->last_progress_ns)
            r->last_progress_ns = v->end_ns;
        if (v->end_ns > l->now_ns)
            l->now_ns = v->end_ns;
    }
    for (size_t i = 0; i < b->device_spans.len; i++) {
        const tp_device_span *d = &b->device_spans.items[i];
        tp_live_phase_total *p = phase_entry(l, rank_of_thread(l, d->thread), d->name);
        if (p) {
            p->device_count++;
            p->device_seconds += (double)d->device_ns / 1e9;
        }
        window_device(l, d);
    }
    for (size_t i = 0; i < b->marks.len; i++) {
        const tp_mark *m = &b->marks.items[i];
        window_mark(l, m);
        if (m->t_ns > l->now_ns)
            l->now_ns = m->t_ns;
        tp_live_rank *r = rank_entry(l, rank_of_thread(l, m->thread));
        if (!r)
            continue;
        if (m->kind == TP_MARK_STEP || m->kind == TP_MARK_STEP_END)
            rank_step(r, m->kind, m->t_ns);
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
    apply_names(l, b);
    apply_threads(l, b);
    apply_events(l, b);
    pthread_mutex_unlock(&l->lock);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void tp_live_rank_progress(const tp_live_rank *r, uint64_t now_ns, double stall_after_s,
                           tp_live_progress *out)
{
    double recent[TP_LIVE_RECENT_STEPS], median = 0;
    size_t n = r->nrecent < TP_LIVE_RECENT_STEPS ? r->nrecent : TP_LIVE_RECENT_STEPS;
    memcpy(recent, r->recent, n * sizeof *recent);
    qsort(recent, n, sizeof *recent, cmp_double);
    if (n)
        median = n % 2 ? recent[n / 2] : (recent[n / 2 - 1] + recent[n / 2]) / 2;
    out->since_step_s =
        r->last_step_ns && now_ns > r->last_step_ns ? (double)(now_ns - r->last_step_ns) / 1e9 : 0;
    out->since_progress_s = r->last_progress_ns && now_ns > r->last_progress_ns
                                ? (double)(now_ns - r->last_progress_ns) / 1e9
                                : 0;
    out->threshold_s = tp_stall_threshold(stall_after_s, n ? median : 0);
    out->stalled = r->step_open && out->since_progress_s > out->threshold_s;
}

void tp_live_set_stall_after(tp_live *l, double seconds)
{
    pthread_mutex_lock(&l->lock);
    l->stall_after_s = seconds;
    pthread_mutex_unlock(&l->lock);
}

void tp_live_set_events_not_recorded(tp_live *l, uint64_t n)
{
    pthread_mutex_lock(&l->lock);
    l->events_not_recorded = n;
    pthread_mutex_unlock(&l->lock);
}

void tp_live_seed_steps(tp_live *l, int32_t rank, const uint64_t *t_ns, const uint32_t *kinds,
                        size_t n)
{
    pthread_mutex_lock(&l->lock);
    tp_live_rank *r = rank_entry(l, rank);
    for (size_t i = 0; r && i < n; i++)
        rank_step(r, kinds[i], t_ns[i]);
    pthread_mutex_unlock(&l->lock);
}

bool tp_live_worst_stall(tp_live *l, uint64_t now_ns, int32_t *rank, double *seconds)
{
    pthread_mutex_lock(&l->lock);
    bool any = false;
    uint64_t now = now_ns > l->now_ns ? now_ns : l->now_ns;
    for (size_t i = 0; i < l->nranks; i++) {
        tp_live_progress p;
        tp_live_rank_progress(&l->ranks[i], now, l->stall_after_s, &p);
        if (p.stalled && (!any || p.since_progress_s > *seconds)) {
            any = true;
            *rank = l->ranks[i].rank;
            *seconds = p.since_progress_s;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return any;
}

size_t tp_live_stalled_ranks(tp_live *l, uint64_t now_ns, int32_t *out, size_t max)
{
    pthread_mutex_lock(&l->lock);
    size_t n = 0;
    uint64_t now = now_ns > l->now_ns ? now_ns : l->now_ns;
    for (size_t i = 0; i < l->nranks; i++) {
        tp_live_progress p;
        tp_live_rank_progress(&l->ranks[i], now, l->stall_after_s, &p);
        if (p.stalled && n++ < max)
            out[n - 1] = l->ranks[i].rank;
    }
    pthread_mutex_unlock(&l->lock);
    return n;
}

void tp_live_set_where(tp_live *l, int32_t rank, const char *where, const char *doing)
{
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->nranks; i++) {
        tp_live_rank *r = &l->ranks[i];
        if (r->rank != rank)
            continue;
        free(r->where);
        r->where = where ? strdup(where) : NULL; /* out of memory: not said */
        snprintf(r->doing, sizeof r->doing, "%s", where && doing ? doing : "");
        break;
    }
    pthread_mutex_unlock(&l->lock);
}

uint64_t tp_live_now(tp_live *l)
{
    pthread_mutex_lock(&l->lock);
    uint64_t now = l->now_ns;
    pthread_mutex_unlock(&l->lock);
    return now;
}

/* ---- reading ---- */

static const tp_live_series *find_series(const tp_live *l, const char *metric, const char *labels)
{
    for (size_t i = 0; i < l->nseries; i++) {
        const tp_live_series *s = &l->series[i];
        if (s->metric && strcmp(s->metric, metric) == 0 && strcmp(s->labels, labels) == 0)
            return s;
    }
    return NULL;
}

bool tp_live_latest(tp_live *l, const char *metric, const char *labels, double *value)
{
    pthread_mutex_lock(&l->lock);
    const tp_live_series *s = find_series(l, metric, labels);
    bool ok = s && s->has_value;
    if (ok)
        *value = s->latest;
    pthread_mutex_unlock(&l->lock);
    return ok;
}

void tp_live_latest_each(tp_live *l, const char *metric, tp_live_latest_fn fn, void *ctx)
{
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->nseries; i++) {
        const tp_live_series *s = &l->series[i];
        if (s->metric && s->has_value && strcmp(s->metric, metric) == 0)
            fn(ctx, s->labels, s->latest);
    }
    pthread_mutex_unlock(&l->lock);
}

const char *tp_live_view_name(const tp_live_view *v, uint32_t name)
{
    return name >= 1 && name <= v->nnames && v->names[name - 1] ? v->names[name - 1] : "(other)";
}

void tp_live_read(tp_live *l, tp_live_read_fn fn, void *ctx)
{
    pthread_mutex_lock(&l->lock);
    tp_live_view v = {l->series,
                      l->nseries,
                      l->phases,
                      l->nphases,
                      l->ranks,
                      l->nranks,
                      (const char *const *)l->names,
                      l->nnames,
                      l->now_ns,
                      l->stall_after_s,
                      l->events_not_recorded};
    fn(ctx, &v);
    pthread_mutex_unlock(&l->lock);
}
