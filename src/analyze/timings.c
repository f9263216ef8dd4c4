/* timings.c: timings tables from regions and step/epoch marks. */
#include "analyze/timings.h"
#include "store/reader_ops.h"

#include "core/stall_rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "analyze/in_steps.h"
#include "analyze/intervals.h"
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

/* A compile region of a thread, and the latest end of the thread's compile
 * regions up to it (in start order). */
typedef struct compile_span {
    int64_t thread, a, b, max_b;
} compile_span;

/* The run's compile regions, in (thread, start) order. */
typedef struct compile_list {
    compile_span *v;
    size_t n, cap;
} compile_list;

static void add_compile(void *ctx, int64_t thread, const char *name, int depth, int64_t start_ns,
                        int64_t end_ns)
{
    (void)name;
    (void)depth;
    compile_list *c = ctx;
    c->v = tp_grow(c->v, c->n, &c->cap, sizeof *c->v);
    bool same = c->n && c->v[c->n - 1].thread == thread;
    int64_t before = same ? c->v[c->n - 1].max_b : INT64_MIN;
    c->v[c->n++] = (compile_span){thread, start_ns, end_ns, end_ns > before ? end_ns : before};
}

/* Whether one of thread's compile regions overlaps [a, b): the first that
 * starts at or after a starts before b, or one before it ends after a. Two
 * binary searches, so that a run that compiles in every step costs n log n. */
static bool compiled_in(const compile_list *c, int64_t thread, int64_t a, int64_t b)
{
    size_t lo = 0, hi = c->n; /* the first region of thread starting at or after a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].thread < thread || (c->v[mid].thread == thread && c->v[mid].a < a))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->n && c->v[lo].thread == thread && c->v[lo].a < b)
        return true;
    return lo > 0 && c->v[lo - 1].thread == thread && c->v[lo - 1].max_b > a;
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

/* The stall threshold of the steps of marks[lo, hi) (core/stall_rule.h):
 * from the median of every closed step (one step mark to the next on a
 * thread, no epoch mark between), or stall_after_s where the run set it. */
static double steps_stall_threshold(const tp_run_mark *m, size_t lo, size_t hi,
                                    double stall_after_s)
{
    if (stall_after_s > 0)
        return stall_after_s;
    double *d = tp_xmalloc((hi - lo + 1) * sizeof *d);
    size_t n = 0;
    long prev = -1;
    for (size_t i = lo; i < hi; i++) {
        if (i > lo && m[i].thread != m[i - 1].thread)
            prev = -1;
        if (m[i].kind == TP_MARK_SAMPLES)
            continue;
        if (prev >= 0 && m[i].kind != TP_MARK_EPOCH)
            d[n++] = (double)tp_ns_sub(m[i].t_ns, m[prev].t_ns) / 1e9;
        prev = m[i].kind == TP_MARK_STEP ? (long)i : -1;
    }
    tp_stats st;
    tp_stats_compute(d, n, &st);
    free(d);
    return tp_stall_threshold(0, n ? st.p50 : 0);
}

static int cmp_span(const void *a, const void *b)
{
    const compile_span *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return (x->a > y->a) - (x->a < y->a);
}

/* The capture windows that ran (analyze/ops.h), as spans of their step
 * threads in (thread, start) order. */
static bool capture_windows(tp_run *run, compile_list *out, char *err, size_t cap)
{
    tp_run_op_window *w;
    size_t n;
    if (!tp_run_op_windows(run, &w, &n, err, cap))
        return false;
    compile_span *v = tp_xmalloc((n + 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!w[i].skipped && w[i].thread)
            v[k++] = (compile_span){w[i].thread, w[i].start_ns, w[i].end_ns, w[i].end_ns};
    tp_run_op_windows_free(w, n);
    qsort(v, k, sizeof *v, cmp_span);
    for (size_t i = 1; i < k; i++) /* the latest end so far, as compiled_in expects */
        if (v[i].thread == v[i - 1].thread && v[i - 1].max_b > v[i].max_b)
            v[i].max_b = v[i - 1].max_b;
    *out = (compile_list){v, k, k};
    return true;
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

/* A closed step that no compilation nor capture window held, kept until the
 * rank's median says whether it is a slow first step (warm-up). */
typedef struct steady_step {
    int64_t thread, a, b, samples, batches;
    bool after_window; /* a capture window's step came before it on its thread */
} steady_step;

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The steps of v[0..n) into steady, but a thread's first ones that each took
 * more than TP_WARMUP_SLOW times the median, which go to warm (timings.h). */
static void settle_warmup(const steady_step *v, size_t n, step_set *steady, step_set *warm)
{
    double median = 0;
    if (n >= 3) {
        double *d = tp_xmalloc(n * sizeof *d);
        for (size_t i = 0; i < n; i++)
            d[i] = (double)tp_ns_sub(v[i].b, v[i].a) / 1e9;
        qsort(d, n, sizeof *d, cmp_double);
        median = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
        free(d);
    }
    size_t room = n / 10 > 1 ? n / 10 : 1;
    bool leading = false;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || v[i].thread != v[i - 1].thread)
            leading = true;
        double d = (double)tp_ns_sub(v[i].b, v[i].a) / 1e9;
        leading =
            leading && median > 0 && room > 0 && !v[i].after_window && d > TP_WARMUP_SLOW * median;
        room -= leading;
        step_set_add(leading ? warm : steady, v[i].a, v[i].b, v[i].samples, v[i].batches);
    }
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
 * step is closed, so samples/s is over the same steps as steps/s. A thread's
 * first steps are warm-up for as long as each overlaps one of its compile
 * regions, and then for as long as each is slow (settle_warmup); they go to
 * the epochs, not to the step figures or the spans (unless the rank has no
 * other step). */
static void rank_steps(tp_timings *t, const tp_run_mark *m, size_t lo, size_t hi, double run_s,
                       const compile_list *compiles, const compile_list *profiled,
                       size_t *steps_cap, size_t *epochs_cap, tp_rank_spans *rs,
                       double stall_after_s)
{
    /* a step that stalled (and went on) is a pause, not a step's time */
    double stall_s = steps_stall_threshold(m, lo, hi, stall_after_s);
    step_set steady = {.durations = malloc((hi - lo + 1) * sizeof(double))};
    step_set warm = {.durations = malloc((hi - lo + 1) * sizeof(double))};
    long epoch_row = -1;     /* the open epoch's row in t->epochs */
    long prev_step = -1;     /* index of the thread's previous step mark */
    int64_t epoch_start = 0; /* the open epoch's mark, ns */
    int64_t last_mark = -1;  /* time of the open epoch's last step mark, ns */
    int64_t run_ns = llround(run_s * 1e9);
    int64_t pending = 0, pending_batches = 0; /* of the open step */
    bool warming = true;                      /* the thread's steps so far all held a compilation */
    bool windowed = false;                    /* a capture window's step came on this thread */
    step_set prof = {.durations = malloc((hi - lo + 1) * sizeof(double))}; /* a window's */
    steady_step *cand = tp_xmalloc((hi - lo + 1) * sizeof *cand);
    size_t ncand = 0;
    for (size_t i = lo; i < hi; i++) {
        bool new_thread = i == lo || m[i].thread != m[i - 1].thread;
        if (new_thread)
            warming = true, windowed = false;
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
            int64_t a = m[prev_step].t_ns, b = m[i].t_ns;
            warming = warming && compiled_in(compiles, m[i].thread, a, b);
            /* a step a capture window ran in (or stopped in) is the profiler's */
            bool in_window = compiled_in(profiled, m[i].thread, a, b);
            /* a window's step is counted, and inside the steps, but timed in no figure */
            windowed = windowed || in_window;
            if (!in_window && !warming && (double)tp_ns_sub(b, a) / 1e9 <= stall_s)
                cand[ncand++] =
                    (steady_step){m[i].thread, a, b, pending, pending_batches, windowed};
            else if (warming || (double)tp_ns_sub(b, a) / 1e9 <= stall_s)
                step_set_add(in_window ? &prof : &warm, a, b, pending, pending_batches);
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
    settle_warmup(cand, ncand, &steady, &warm);
    free(cand);
    rank_step_row(t, m[lo].rank, &steady, &warm, &prof, steps_cap, rs);
}

bool tp_timing_is_pause(const char *name) { return tp_phase_kind_of(name) == TP_PHASE_KIND_PAUSE; }

/* Energy used during an epoch: the growth of every cumulative energy series
 * (each GPU, each RAPL domain, of every agent: the whole job's) between the
 * epoch's start and end. NaN when the run recorded no energy. */
static double epoch_energy(tp_run *run, const tp_epoch_row *e)
{
    double total = NAN;
    for (size_t i = 0; i < run->nseries; i++) {
        const tp_run_series *s = &run->series[i];
        if (strcmp(s->metric, TP_METRIC_GPU_ENERGY_JOULES) != 0 &&
            strcmp(s->metric, TP_METRIC_CPU_ENERGY_JOULES) != 0)
            continue;
        double a, b;
        int64_t t0 = tp_ns_of_s(e->start_s), t1 = tp_ns_of_s(e->start_s + e->duration_s);
        if (tp_run_series_value_at(run, s->id, t0, &a) &&
            tp_run_series_value_at(run, s->id, t1, &b) && b >= a)
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
    compile_list compiles = {0};
    static const char *const compile[] = {TP_PHASE_COMPILE};
    if (!tp_run_each_named_region(run, compile, 1, add_compile, &compiles, err, cap)) {
        free(marks);
        return false;
    }
    compile_list profiled = {0};
    if (!capture_windows(run, &profiled, err, cap)) {
        free(marks);
        free(compiles.v);
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
        rank_steps(out, marks, lo, hi, run_s, &compiles, &profiled, &steps_cap, &epochs_cap, rs,
                   stall_after_s);
        tp_spans_merge(&rs->spans);
        tp_spans_merge(&rs->prof_spans);
        tp_spans_merge(&rs->warm_spans);
        lo = hi;
    }
    free(marks);
    free(compiles.v);
    free(profiled.v);
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
