/* timings.c: timings tables from regions and step/epoch marks. */
#include "analyze/timings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "analyze/in_steps.h"
#include "analyze/intervals.h"
#include "analyze/step_kinds.h"
#include "store/reader_stream.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "util/oom.h"
#include "util/text_parse.h"
#include "core/run_keys.h"

typedef struct build_ctx {
    tp_timings *t;
    size_t rows_cap;
} build_ctx;

/* A closed step of a rank, or (once merged) a run of back-to-back steps. */

static void add_group(void *ctx, int rank, const char *name, double *durations, size_t n)
{
    build_ctx *b = ctx;
    tp_timings *t = b->t;
    t->rows = tp_grow(t->rows, t->nrows, &b->rows_cap, sizeof *t->rows);
    tp_timing_row *row = &t->rows[t->nrows++];
    memset(row, 0, sizeof *row);
    row->rank = rank;
    row->name = strdup(name);
    for (size_t i = 0; i < n; i++)
        row->total_s += durations[i];
    tp_stats_compute(durations, n, &row->stats);
    tp_stats_compute(NULL, 0, &row->device);
}

static int cmp_row_value(const void *x, const void *y)
{
    const tp_timing_row *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The device times of (rank, name) go to that row, made if there is none. */
static void add_device_group(void *ctx, int rank, const char *name, double *durations, size_t n)
{
    build_ctx *b = ctx;
    tp_timing_row *row = NULL;
    for (size_t i = 0; i < b->t->nrows && !row; i++)
        if (b->t->rows[i].rank == rank && strcmp(b->t->rows[i].name, name) == 0)
            row = &b->t->rows[i];
    if (!row) {
        add_group(ctx, rank, name, NULL, 0);
        row = &b->t->rows[b->t->nrows - 1];
    }
    for (size_t i = 0; i < n; i++)
        row->device_total_s += durations[i];
    tp_stats_compute(durations, n, &row->device);
}

/* An epoch's length in seconds from its ends in ns: a difference of integers,
 * so a merge that shifts every time by a node's offset leaves it unchanged. */
static double epoch_duration(int64_t start_ns, int64_t end_ns)
{
    return end_ns > start_ns ? (double)(end_ns - start_ns) / 1e9 : 0;
}

/* A rank's closed steps as rank_steps finds them: steady and warm-up apart. */
typedef struct step_set {
    double *durations;
    size_t n;
    int64_t samples, batches;
    tp_time_spans spans;
} step_set;

static void step_set_add(step_set *set, int64_t a, int64_t b, int64_t samples, int64_t batches)
{
    set->durations[set->n++] = (double)tp_ns_sub(b, a) / 1e9;
    set->samples = tp_ns_add(set->samples, samples);
    set->batches += batches;
    tp_time_spans *spans = &set->spans; /* one rank's */
    tp_time_span *last = spans->n ? &spans->v[spans->n - 1] : NULL;
    if (last && last->b == a)
        last->b = b; /* back to back: one run of steps */
    else
        tp_spans_push(spans, a, b);
}

static double sum(const double *v, size_t n)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i];
    return total;
}

/* A rank's step row from its steady steps (its warm-up and profiled ones
 * beside; every step warm: they are the steady ones), the spans of its
 * steady, profiled and warm-up steps added to rs; the sets freed. */
static void rank_step_row(tp_timings *t, int rank, step_set *steady, step_set *warm, step_set *prof,
                          size_t *steps_cap, tp_rank_spans *rs)
{
    if (!steady->n) { /* every step compiled: no steady state to set the warm-up apart from */
        step_set swap = *steady;
        *steady = *warm;
        *warm = swap;
    }
    if (steady->n) {
        t->steps = tp_grow(t->steps, t->nsteps, steps_cap, sizeof *t->steps);
        tp_step_row *st = &t->steps[t->nsteps++];
        *st = (tp_step_row){.rank = rank,
                            .total_s = sum(steady->durations, steady->n),
                            .samples = steady->samples,
                            .batches = steady->batches,
                            .warmup = warm->n,
                            .warmup_s = sum(warm->durations, warm->n),
                            .warmup_samples = warm->samples,
                            .warmup_batches = warm->batches,
                            .profiled = prof->n,
                            .profiled_s = sum(prof->durations, prof->n),
                            .profiled_samples = prof->samples,
                            .profiled_batches = prof->batches};
        tp_stats_compute(steady->durations, steady->n, &st->stats);
    }
    for (size_t i = 0; i < steady->spans.n; i++)
        tp_spans_push(&rs->spans, steady->spans.v[i].a, steady->spans.v[i].b);
    for (size_t i = 0; i < prof->spans.n; i++)
        tp_spans_push(&rs->prof_spans, prof->spans.v[i].a, prof->spans.v[i].b);
    for (size_t i = 0; i < warm->spans.n; i++)
        tp_spans_push(&rs->warm_spans, warm->spans.v[i].a, warm->spans.v[i].b);
    free(steady->durations);
    free(warm->durations);
    free(prof->durations);
    tp_spans_free(&prof->spans);
    tp_spans_free(&steady->spans);
    tp_spans_free(&warm->spans);
}

/* A rank's closed steps, in (thread, time) order, with the samples and
 * batches each counted. */
typedef struct closed_steps {
    tp_closed_step *v;
    int64_t *samples, *batches;
    size_t n;
} closed_steps;

/* The rank's closed steps c into its step row by their kinds (step_kinds.h),
 * their spans into rs; c freed. */
static void sort_steps(tp_timings *t, int rank, const tp_step_holds *holds, closed_steps *c,
                       double stall_s, size_t *steps_cap, tp_rank_spans *rs)
{
    step_set steady = {.durations = tp_xmalloc((c->n + 1) * sizeof(double))};
    step_set warm = {.durations = tp_xmalloc((c->n + 1) * sizeof(double))};
    step_set prof = {.durations = tp_xmalloc((c->n + 1) * sizeof(double))}; /* a window's */
    unsigned char *kinds = tp_xmalloc(c->n + 1);
    tp_step_kinds(holds, c->v, c->n, stall_s, kinds);
    for (size_t i = 0; i < c->n; i++) {
        step_set *set = kinds[i] == TP_STEP_STEADY     ? &steady
                        : kinds[i] == TP_STEP_WARMUP   ? &warm
                        : kinds[i] == TP_STEP_PROFILED ? &prof
                                                       : NULL;
        if (set)
            step_set_add(set, c->v[i].a, c->v[i].b, c->samples[i], c->batches[i]);
    }
    free(kinds);
    free(c->v);
    free(c->samples);
    free(c->batches);
    rank_step_row(t, rank, &steady, &warm, &prof, steps_cap, rs);
}

/* The epoch that mark m begins, as a new row of t->epochs: its index. */
static long open_epoch(tp_timings *t, size_t *epochs_cap, const tp_run_mark *m)
{
    t->epochs = tp_grow(t->epochs, t->nepochs, epochs_cap, sizeof *t->epochs);
    t->epochs[t->nepochs] = (tp_epoch_row){
        .rank = m->rank, .epoch = m->value, .start_s = (double)m->t_ns / 1e9, .energy_j = NAN};
    return (long)t->nepochs++;
}

/* Steps and epochs of the marks of one rank: marks[lo, hi), in (thread,
 * time) order. A step runs from one step mark to the next on its thread; an
 * epoch mark in between ends the run of steps (so the wait between the last
 * fetch of an epoch and the first of the next is not a step). An epoch lasts
 * from its mark to its thread's next epoch mark, or to its last step mark,
 * or to the end of the run. A step-end mark closes the open step as a step
 * mark would, and begins none: the time to the next step mark is no step's.
 * Samples marks (one per batch) count for the step they fall in, once that
 * step is closed, so samples/s is over the same steps as steps/s. Its
 * steps' kinds are step_kinds.h's: the warm-up's and the capture windows'
 * go to the epochs, not to the step figures or the spans (unless the rank
 * has no other step); a stalled one to neither. */
static void rank_steps(tp_timings *t, const tp_run_mark *m, size_t lo, size_t hi, double run_s,
                       const tp_step_holds *holds, size_t *steps_cap, size_t *epochs_cap,
                       tp_rank_spans *rs, double stall_after_s)
{
    closed_steps c = {.v = tp_xmalloc((hi - lo + 1) * sizeof *c.v),
                      .samples = tp_xmalloc((hi - lo + 1) * sizeof *c.samples),
                      .batches = tp_xmalloc((hi - lo + 1) * sizeof *c.batches)};
    long epoch_row = -1;     /* the open epoch's row in t->epochs */
    long prev_step = -1;     /* index of the thread's previous step mark */
    int64_t epoch_start = 0; /* the open epoch's mark, ns */
    int64_t last_mark = -1;  /* time of the open epoch's last step mark, ns */
    int64_t run_ns = llround(run_s * 1e9);
    int64_t pending = 0, pending_batches = 0; /* of the open step */
    for (size_t i = lo; i < hi; i++) {
        bool new_thread = i == lo || m[i].thread != m[i - 1].thread;
        if (new_thread || (m[i].kind == TP_MARK_EPOCH)) {
            if (epoch_row >= 0) {
                int64_t end = !new_thread && (m[i].kind == TP_MARK_EPOCH) ? m[i].t_ns
                              : last_mark >= 0                            ? last_mark
                                                                          : run_ns;
                t->epochs[epoch_row].duration_s = epoch_duration(epoch_start, end);
            }
            prev_step = -1;
            epoch_row = -1;
            last_mark = -1;
            pending = pending_batches = 0;
        }
        if ((m[i].kind == TP_MARK_EPOCH)) {
            epoch_row = open_epoch(t, epochs_cap, &m[i]);
            epoch_start = m[i].t_ns;
            continue;
        }
        if (m[i].kind == TP_MARK_SAMPLES) {
            pending = tp_ns_add(pending, m[i].value); /* counts once its step is closed */
            pending_batches++;
            continue;
        }
        if (prev_step >= 0) {
            c.samples[c.n] = pending;
            c.batches[c.n] = pending_batches;
            c.v[c.n++] = (tp_closed_step){m[i].thread, m[prev_step].t_ns, m[i].t_ns};
            if (epoch_row >= 0) {
                t->epochs[epoch_row].steps++;
                t->epochs[epoch_row].samples = tp_ns_add(t->epochs[epoch_row].samples, pending);
                t->epochs[epoch_row].batches += pending_batches;
            }
        }
        pending = pending_batches = 0;
        if (m[i].kind == TP_MARK_STEP_END) {
            if (prev_step >= 0)
                last_mark = m[i].t_ns;
            prev_step = -1;
            continue;
        }
        prev_step = (long)i;
        last_mark = m[i].t_ns;
    }
    if (epoch_row >= 0) {
        t->epochs[epoch_row].duration_s =
            epoch_duration(epoch_start, last_mark >= 0 ? last_mark : run_ns);
    }
    /* a step that stalled (and went on) is a pause, not a step's time */
    sort_steps(t, m[lo].rank, holds, &c, tp_steps_stall_threshold(m, lo, hi, stall_after_s),
               steps_cap, rs);
}

bool tp_timing_is_pause(const char *name) { return tp_phase_kind_of(name) == TP_PHASE_KIND_PAUSE; }

/* Energy used during an epoch: the growth of every cumulative energy series
 * (each GPU, each RAPL domain, of every agent: the whole job's) between the
 * epoch's start and end, of the series sampled around both (or within a
 * sampling interval of them). NaN when the run recorded no energy there. */
static double epoch_energy(tp_run *run, const tp_epoch_row *e)
{
    const char *interval = tp_run_meta_get(run, TP_META_INTERVAL_S);
    double interval_s = interval ? strtod(interval, NULL) : 0;
    int64_t slack = tp_ns_of_s(interval_s > 0 && interval_s < 3600 ? interval_s : 1.0);
    double total = NAN;
    for (size_t i = 0; i < run->nseries; i++) {
        const tp_run_series *s = &run->series[i];
        if (strcmp(s->metric, TP_METRIC_GPU_ENERGY_JOULES) != 0 &&
            strcmp(s->metric, TP_METRIC_CPU_ENERGY_JOULES) != 0)
            continue;
        double a, b;
        int64_t t0 = tp_ns_of_s(e->start_s), t1 = tp_ns_of_s(e->start_s + e->duration_s);
        if (tp_run_series_counter_at(run, s->id, t0, slack, &a) &&
            tp_run_series_counter_at(run, s->id, t1, slack, &b) && b >= a)
            total = (isnan(total) ? 0 : total) + (b - a);
    }
    return total;
}

/* Rows, steps and epochs from the regions and marks. */
bool tp_timings_from_rows(tp_run *run, double run_s, tp_timings *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    build_ctx b = {out, 0};
    if (!tp_run_each_region_group(run, add_group, &b, err, cap))
        return false;
    size_t host_rows = out->nrows;
    if (!tp_run_each_device_group(run, add_device_group, &b, err, cap))
        return false;
    if (out->nrows > host_rows) /* device times whose regions were lost: keep (rank, name) order */
        qsort(out->rows, out->nrows, sizeof *out->rows, cmp_row_value);
    tp_run_mark *marks;
    size_t n;
    if (!tp_run_marks(run, &marks, &n, err, cap))
        return false;
    double stall_after_s = run->settings.stall_after_s;
    tp_step_holds holds;
    if (!tp_step_holds_read(run, &holds, err, cap)) {
        free(marks);
        return false;
    }
    size_t steps_cap = 0, epochs_cap = 0;
    tp_rank_spans_list spans = {0};
    for (size_t lo = 0; lo < n;) { /* marks are by rank: one rank at a time */
        size_t hi = lo;
        while (hi < n && marks[hi].rank == marks[lo].rank)
            hi++;
        spans.v = tp_grow(spans.v, spans.n, &spans.cap, sizeof *spans.v);
        tp_rank_spans *rs = &spans.v[spans.n++];
        *rs = (tp_rank_spans){.rank = marks[lo].rank};
        rank_steps(out, marks, lo, hi, run_s, &holds, &steps_cap, &epochs_cap, rs, stall_after_s);
        tp_spans_merge(&rs->spans);
        tp_spans_merge(&rs->prof_spans);
        tp_spans_merge(&rs->warm_spans);
        lo = hi;
    }
    free(marks);
    tp_step_holds_free(&holds);
    bool ok = tp_measure_in_steps(run, out, &spans, err, cap);
    tp_rank_spans_list_free(&spans);
    return ok;
}

/* A rank's timed steps' total, for the shares (by rank, then total). */
typedef struct rank_total {
    int rank;
    double total_s;
} rank_total;

static int cmp_rank_total(const void *x, const void *y)
{
    const rank_total *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The energy of each epoch: the whole job's, measured over the lowest
 * rank's epoch of that number (the job runs its ranks' epochs together);
 * a rank's epoch with no such number of the lowest rank's is measured over
 * its own span. Each span is measured once, so that a job of many ranks
 * costs its epochs times its energy series, not its ranks times that. */
static void epochs_energy(tp_run *run, tp_timings *out)
{
    int lowest = 0;
    for (size_t e = 0; e < out->nepochs; e++)
        if (e == 0 || out->epochs[e].rank < lowest)
            lowest = out->epochs[e].rank;
    /* the lowest rank's epochs, measured; every other row looks among them
     * only (a few), not among every rank's rows */
    const tp_epoch_row **measured = tp_xmalloc((out->nepochs + 1) * sizeof *measured);
    size_t nm = 0;
    for (size_t e = 0; e < out->nepochs; e++)
        if (out->epochs[e].rank == lowest) {
            out->epochs[e].energy_j = epoch_energy(run, &out->epochs[e]);
            measured[nm++] = &out->epochs[e];
        }
    for (size_t e = 0; e < out->nepochs; e++) {
        tp_epoch_row *row = &out->epochs[e];
        if (row->rank == lowest)
            continue;
        size_t k = 0;
        while (k < nm && measured[k]->epoch != row->epoch)
            k++;
        row->energy_j = k < nm ? measured[k]->energy_j : epoch_energy(run, row);
    }
    free(measured);
}

/* The timing events every agent's recorder said it could not keep (a
 * value that is no count, of a crafted file, counts none). */
static int64_t events_not_recorded(const tp_run *run)
{
    int64_t sum = 0;
    for (size_t i = 0; i < run->nagents; i++) {
        const char *text =
            tp_run_agent_meta_get(run, run->agents[i].id, TP_META_EVENTS_NOT_RECORDED);
        uint64_t n = 0;
        const char *p = text;
        if (text && tp_parse_u64(&p, text + strlen(text), &n) && !*p &&
            n <= (uint64_t)INT64_MAX - (uint64_t)sum)
            sum += (int64_t)n;
    }
    return sum;
}

void tp_timings_finish(tp_run *run, double run_s, tp_timings *out)
{
    tp_timings_order(out);
    /* each rank's timed steps' total, found by rank (n log n in the ranks) */
    rank_total *totals = tp_xmalloc((out->nsteps + 1) * sizeof *totals);
    size_t nt = 0;
    for (size_t s = 0; s < out->nsteps; s++)
        if (out->steps[s].total_s > 0)
            totals[nt++] = (rank_total){out->steps[s].rank, out->steps[s].total_s};
    qsort(totals, nt, sizeof *totals, cmp_rank_total);
    for (size_t i = 0; i < out->nrows; i++) {
        out->rows[i].pause = tp_timing_is_pause(out->rows[i].name);
        rank_total key = {out->rows[i].rank, 0};
        const rank_total *found =
            nt ? bsearch(&key, totals, nt, sizeof *totals, cmp_rank_total) : NULL;
        double denom = found ? found->total_s : run_s; /* the timed steps' */
        out->rows[i].share = denom > 0 ? out->rows[i].in_steps_s / denom : 0;
    }
    free(totals);
    epochs_energy(run, out);
    tp_run_thread_totals(run, &out->threads, &out->dropped);
    out->not_recorded = events_not_recorded(run);
}
