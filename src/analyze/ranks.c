/* ranks.c: per-rank work, waiting and stragglers by interval union. */
#include "analyze/ranks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "analyze/intervals.h"
#include "core/phases.h"
#include "analyze/rank_gpu.h"
#include "analyze/step_kinds.h"
#include "core/stats.h"
#include "store/reader_stream.h"
#include "util/labels.h"
#include "util/ns_math.h"
#include "util/grow.h"
#include "core/run_keys.h"

enum { CAT_COMM, CAT_INPUT, CAT_COMPUTE, NCAT };

typedef struct rank_acc {
    tp_rank_row row;
    int visible_thread;  /* a thread of its with CUDA_VISIBLE_DEVICES, -1 none */
    int device_thread;   /* a thread of its whose process told its GPU's UUID, -1 none */
    int64_t t0, t1;      /* window, ns: its first measured step's start, its last one's end */
    tp_time_spans steps; /* its measured steps within the window, merged */
    tp_time_spans cat[NCAT];
    tp_time_spans backward; /* its backward passes, also in cat[CAT_COMPUTE] */
} rank_acc;

typedef struct ranks_ctx {
    int64_t from_ns, to_ns; /* the steps compared: those begun and ended within */
    tp_run_thread *threads; /* by id */
    size_t nthreads;
    rank_acc *acc; /* by rank */
    size_t nacc;
    int *thread_acc; /* per thread index: its rank_acc, -1 when none */
} ranks_ctx;

/* Seconds covered by the union of the given lists' spans; tmp is scratch. */
static double union_s(tp_time_spans *const *lists, size_t k, tp_time_spans *tmp)
{
    return (double)tp_spans_union_ns(lists, k, tmp) / 1e9;
}

static int category(const char *name)
{
    switch (tp_phase_kind_of(name)) {
    case TP_PHASE_KIND_COMM: return CAT_COMM;
    case TP_PHASE_KIND_INPUT: return CAT_INPUT;
    case TP_PHASE_KIND_COMPUTE: return CAT_COMPUTE;
    default: return -1;
    }
}

static int thread_index(const ranks_ctx *c, int64_t id)
{
    size_t lo = 0, hi = c->nthreads;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->threads[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nthreads && c->threads[lo].id == id ? (int)lo : -1;
}

static void add_region(void *ctx, int64_t thread, const char *name, int depth, int64_t start_ns,
                       int64_t end_ns)
{
    (void)depth;
    ranks_ctx *c = ctx;
    int cat = category(name), ti = thread_index(c, thread);
    if (cat < 0 || ti < 0 || c->thread_acc[ti] < 0)
        return;
    rank_acc *r = &c->acc[c->thread_acc[ti]];
    bool backward = strcmp(name, TP_PHASE_BACKWARD) == 0;
    const tp_time_spans *s = &r->steps;
    for (size_t i = tp_spans_first_after(s, start_ns); i < s->n && s->v[i].a < end_ns; i++) {
        int64_t a = start_ns > s->v[i].a ? start_ns : s->v[i].a;
        int64_t b = end_ns < s->v[i].b ? end_ns : s->v[i].b;
        if (b > a)
            tp_spans_push(&r->cat[cat], a, b);
        if (b > a && backward)
            tp_spans_push(&r->backward, a, b);
    }
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The tails of r's backward passes that only wait for communication: from
 * the last collective that starts inside a pass to the pass's end. DDP
 * launches a bucket's all-reduce as soon as its gradients are ready, the
 * last bucket's when the autograd engine is done; what follows in backward
 * is the wait for the collectives. On gloo they run on a thread of their
 * own, so their spans lie under backward's (and train_batch's) and would
 * count as hidden by compute that isn't running. */
static void backward_waits(const rank_acc *r, tp_time_spans *waits)
{
    waits->n = 0;
    const tp_time_spans *R = &r->cat[CAT_COMM];
    if (!R->n || !r->backward.n)
        return;
    int64_t *starts = tp_xmalloc(R->n * sizeof *starts);
    for (size_t i = 0; i < R->n; i++)
        starts[i] = R->v[i].a;
    qsort(starts, R->n, sizeof *starts, cmp_i64);
    for (size_t k = 0; k < r->backward.n; k++) {
        int64_t b0 = r->backward.v[k].a, b1 = r->backward.v[k].b;
        size_t lo = tp_first_at_or_after(starts, R->n, b1); /* the last before it: lo - 1 */
        if (lo > 0 && starts[lo - 1] >= b0)
            tp_spans_push(waits, starts[lo - 1], b1);
    }
    free(starts);
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* Local ranks where no rank of an agent had one in its environment
 * (torch.multiprocessing.spawn sets none): when that agent's ranks are one
 * contiguous block r0..r0+n-1, as every launcher places them, each one's place
 * in it (rank - r0), which is also the GPU it drives in the usual one GPU per
 * rank. Agents with some local ranks known, or gaps, keep -1. */
static void infer_local_ranks(ranks_ctx *c)
{
    int *ranks = tp_xmalloc(c->nacc * sizeof *ranks);
    for (size_t i = 0; i < c->nacc; i++) {
        int64_t agent = c->acc[i].row.agent_id;
        size_t n = 0;
        bool known = false, first = true;
        for (size_t k = 0; k < c->nacc; k++) {
            if (c->acc[k].row.agent_id != agent)
                continue;
            first = first && k >= i; /* agent not seen before i */
            known = known || c->acc[k].row.local_rank >= 0;
            ranks[n++] = c->acc[k].row.rank;
        }
        if (!first || known)
            continue;
        qsort(ranks, n, sizeof *ranks, cmp_int);
        if (ranks[n - 1] - ranks[0] != (int)n - 1) /* a gap or a rank twice */
            continue;
        for (size_t k = i; k < c->nacc; k++)
            if (c->acc[k].row.agent_id == agent)
                c->acc[k].row.local_rank = c->acc[k].row.rank - ranks[0];
    }
    free(ranks);
}

/* r's steps: of a thread's closed steps v[0..n), those begun and ended
 * within [from_ns, to_ns]; the steady ones among them measured (where none
 * is, the warm-up's; where none is either, all of them), their merged spans
 * into r->steps, and r's window from the first one's start to the last
 * one's end (the GPU's figures over it: not over a compiling warm-up). */
static void take_steps(const ranks_ctx *c, rank_acc *r, const tp_closed_step *v, size_t n,
                       const unsigned char *kinds)
{
    size_t count[TP_STEP_STALLED + 1] = {0}, closed = 0;
    r->steps.n = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].a >= c->from_ns && v[i].b <= c->to_ns)
            count[kinds[i]]++, closed++;
    int kind = count[TP_STEP_STEADY] ? TP_STEP_STEADY : count[TP_STEP_WARMUP] ? TP_STEP_WARMUP : -1;
    for (size_t i = 0; i < n; i++)
        if (v[i].a >= c->from_ns && v[i].b <= c->to_ns && (kind < 0 || kinds[i] == kind))
            tp_spans_push(&r->steps, v[i].a, v[i].b);
    r->row.steps = closed;
    r->row.measured_steps = r->steps.n;
    tp_spans_merge(&r->steps);
    if (r->steps.n)
        r->t0 = r->steps.v[0].a, r->t1 = r->steps.v[r->steps.n - 1].b;
}

/* Each rank's window and steps, from its marks, which come in (rank,
 * thread, time) order: one run per thread. A rank's steps are those of its
 * thread that closed the most steps begun and ended within [from_ns,
 * to_ns], from the first to the last (its window); only the steady ones
 * among them are measured (step_kinds.h, as the timings time them: not the
 * warm-up's, the capture windows', the stalled ones), and not the
 * evaluations, checkpoints and epochs' ends between them, which one rank
 * may spend alone while the others wait. Kinds are told over all of a
 * thread's steps, so that a window of the run measures those the whole run
 * would. */
static void rank_windows(ranks_ctx *c, const tp_run_mark *marks, size_t nmarks,
                         const tp_step_holds *holds, double stall_after_s)
{
    size_t longest = 0; /* a thread's marks at most: room for its steps */
    for (size_t i = 0, j = 0; i < nmarks; i = j) {
        while (j < nmarks && marks[j].thread == marks[i].thread && marks[j].rank == marks[i].rank)
            j++;
        longest = j - i > longest ? j - i : longest;
    }
    tp_closed_step *v = tp_xmalloc((longest + 1) * sizeof *v);
    unsigned char *kinds = tp_xmalloc(longest + 1);
    double stall_s = 0;
    for (size_t i = 0, rank_end = 0; i < nmarks;) {
        if (i >= rank_end) { /* a rank's first thread: its stall threshold, as the timings' */
            while (rank_end < nmarks && marks[rank_end].rank == marks[i].rank)
                rank_end++;
            stall_s = tp_steps_stall_threshold(marks, i, rank_end, stall_after_s);
        }
        size_t j = i;
        while (j < rank_end && marks[j].thread == marks[i].thread)
            j++; /* within a rank: the runs counted above */
        size_t n = tp_closed_steps(&marks[i], j - i, v), closed = 0;
        for (size_t k = 0; k < n; k++)
            closed += v[k].a >= c->from_ns && v[k].b <= c->to_ns;
        int ti = thread_index(c, marks[i].thread);
        rank_acc *r = ti >= 0 && c->thread_acc[ti] >= 0 ? &c->acc[c->thread_acc[ti]] : NULL;
        if (r && closed > r->row.steps) {
            tp_step_kinds(holds, v, n, stall_s, kinds);
            take_steps(c, r, v, n, kinds);
        }
        i = j;
    }
    free(v);
    free(kinds);
}

/* One accumulator per distinct rank >= 0, with the window of the thread of
 * that rank that marked the most steps, and the GPU it drove. */
static void make_ranks(const tp_run *run, ranks_ctx *c, const tp_run_mark *marks, size_t nmarks,
                       const tp_step_holds *holds)
{
    c->thread_acc = tp_xmalloc(c->nthreads * sizeof *c->thread_acc);
    c->acc = tp_xcalloc(c->nthreads, sizeof *c->acc);
    for (size_t i = 0; i < c->nthreads; i++) {
        const tp_run_thread *t = &c->threads[i];
        c->thread_acc[i] = -1;
        if (t->rank < 0)
            continue;
        size_t k = 0;
        while (k < c->nacc && c->acc[k].row.rank != t->rank)
            k++;
        if (k == c->nacc) {
            c->nacc++;
            c->acc[k].row.rank = t->rank;
            c->acc[k].row.local_rank = t->local_rank;
            c->acc[k].row.agent_id = t->agent_id;
            c->acc[k].visible_thread = -1;
            c->acc[k].device_thread = -1;
        }
        if (t->cuda_visible_set && c->acc[k].visible_thread < 0)
            c->acc[k].visible_thread = (int)i;
        if (t->device_uuid[0] && c->acc[k].device_thread < 0)
            c->acc[k].device_thread = (int)i;
        c->thread_acc[i] = (int)k;
    }
    rank_windows(c, marks, nmarks, holds, run->settings.stall_after_s);
    infer_local_ranks(c);
    for (size_t k = 0; k < c->nacc; k++) {
        const rank_acc *a = &c->acc[k];
        const tp_run_thread *t = a->visible_thread >= 0 ? &c->threads[a->visible_thread] : NULL;
        int by_uuid =
            a->device_thread >= 0
                ? tp_gpu_by_uuid(run, a->row.agent_id, c->threads[a->device_thread].device_uuid)
                : -1;
        c->acc[k].row.gpu = by_uuid >= 0 ? by_uuid
                                         : tp_rank_gpu(run, a->row.agent_id, t != NULL,
                                                       t ? t->cuda_visible : "", a->row.local_rank);
    }
}

static void gpu_means(tp_run *run, rank_acc *a)
{
    char labels[TP_LABELS_MAX], num[16];
    snprintf(num, sizeof num, "%d", a->row.gpu);
    tp_labels1(labels, sizeof labels, TP_LABEL_GPU, num);
    double v;
    a->row.gpu_util_percent = a->row.gpu_sm_clock_mhz = a->row.gpu_slowdown_share = NAN;
    a->row.gpu_slowdown_reasons = 0;
    if (a->row.gpu < 0)
        return;
    uint32_t bits;
    if (tp_run_agent_bits_between(run, a->row.agent_id, TP_METRIC_GPU_CLOCK_EVENT_REASONS, labels,
                                  a->t0, a->t1, TP_GPU_REASONS_SLOWDOWN, &bits, &v))
        a->row.gpu_slowdown_reasons = bits, a->row.gpu_slowdown_share = v;
    if (tp_run_agent_mean_between(run, a->row.agent_id, TP_METRIC_GPU_UTIL_PERCENT, labels, a->t0,
                                  a->t1, &v))
        a->row.gpu_util_percent = v;
    if (tp_run_agent_mean_between(run, a->row.agent_id, TP_METRIC_GPU_SM_CLOCK_MHZ, labels, a->t0,
                                  a->t1, &v))
        a->row.gpu_sm_clock_mhz = v;
}

/* Rank k's step thread's wait for a CPU over its window: the mean of
 * step_thread_cpu_wait_percent of the first of its processes that has the
 * series (NaN: none has, a run recorded before it). */
static void step_thread_wait(tp_run *run, const ranks_ctx *c, size_t k)
{
    rank_acc *a = &c->acc[k];
    a->row.cpu_wait_percent = NAN;
    for (size_t i = 0; i < c->nthreads; i++) {
        char labels[48];
        double v;
        if (c->thread_acc[i] != (int)k) /* first: every rank passes over every thread */
            continue;
        tp_labels_pid(labels, sizeof labels, (long)c->threads[i].pid);
        if (!tp_run_series_find(run, a->row.agent_id, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
                                labels))
            continue;
        if (tp_run_agent_mean_between(run, a->row.agent_id, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
                                      labels, a->t0, a->t1, &v))
            a->row.cpu_wait_percent = v;
        return;
    }
}

/* Communication's device time over a rank's window (collectives on CUDA:
 * NCCL returns at once, so the host's comm spans are launches), and the part
 * of it exposed to compute: of the collectives launched during a backward
 * pass, the last one's (from its bucket's gradients being ready to the end
 * of every collective queued before it: what runs after the pass's compute
 * ended, and the optimizer step waits for); every collective launched
 * outside a backward pass whole. */
static void device_comm(tp_run *run, rank_acc *a)
{
    tp_device_row *rows;
    size_t n;
    tp_run_rank_device_rows(run, a->row.agent_id, a->row.rank, TP_PHASE_REDUCE_METRICS, a->t0,
                            a->t1, &rows, &n);
    int64_t total = 0, exposed = 0;
    size_t b = 0; /* backward spans are in time order, as rows are */
    for (size_t i = 0; i < n; i++) {
        total += rows[i].device_ns;
        while (b < a->backward.n && a->backward.v[b].b < rows[i].start_ns)
            b++;
        bool in_backward = b < a->backward.n && a->backward.v[b].a <= rows[i].start_ns;
        bool last_of_it = !in_backward || i + 1 == n || rows[i + 1].start_ns > a->backward.v[b].b;
        if (last_of_it)
            exposed += rows[i].device_ns;
    }
    free(rows);
    a->row.comm_device_s = (double)total / 1e9;
    a->row.comm_device_exposed_s = (double)exposed / 1e9;
}

/* Splits each rank's window into its parts. */
static void measure(tp_run *run, ranks_ctx *c, tp_ranks *out)
{
    tp_time_spans tmp = {0}, waits = {0};
    out->rows = tp_xcalloc(c->nacc, sizeof *out->rows);
    for (size_t k = 0; k < c->nacc; k++) {
        rank_acc *a = &c->acc[k];
        if (!a->row.steps)
            continue;
        tp_time_spans *R = &a->cat[CAT_COMM], *I = &a->cat[CAT_INPUT], *T = &a->cat[CAT_COMPUTE];
        backward_waits(a, &waits);
        if (waits.n) /* waiting in backward is no compute: communication shows */
            tp_spans_subtract(T, &waits, &tmp);
        tp_time_spans *ri[] = {R, I}, *rit[] = {R, I, T}, *rt[] = {R, T};
        double comm = union_s(&R, 1, &tmp), with_input = union_s(ri, 2, &tmp);
        double all = union_s(rit, 3, &tmp), compute_only = union_s(&T, 1, &tmp);
        a->row.t0_ns = a->t0;
        a->row.t1_ns = a->t1;
        tp_time_spans *S = &a->steps;
        a->row.window_s = union_s(&S, 1, &tmp); /* its steps' time, the gaps left out */
        a->row.comm_s = comm;
        a->row.input_s = with_input - comm;
        a->row.compute_s = all - with_input;
        a->row.other_s = a->row.window_s - all;
        /* the four parts' sum, as a stored row gives it back (store/
         * summary_tables.c): a window a rounding apart made the median step
         * of the stored ranks differ from the rows' in its last bit */
        a->row.window_s = a->row.input_s + a->row.compute_s + a->row.comm_s + a->row.other_s;
        a->row.comm_overlap_s = comm + compute_only - union_s(rt, 2, &tmp);
        if (a->row.comm_overlap_s < 1e-12) /* none: rounding of the three sums */
            a->row.comm_overlap_s = 0;
        gpu_means(run, a);
        device_comm(run, a);
        step_thread_wait(run, c, k);
        out->rows[out->n++] = a->row;
    }
    tp_spans_free(&tmp);
    tp_spans_free(&waits);
}

static int cmp_rank(const void *x, const void *y)
{
    const tp_rank_row *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

bool tp_ranks_from_rows(tp_run *run, tp_ranks *out, char *err, size_t cap)
{
    return tp_ranks_from_rows_between(run, INT64_MIN, INT64_MAX, out, err, cap);
}

bool tp_ranks_from_rows_between(tp_run *run, int64_t from_ns, int64_t to_ns, tp_ranks *out,
                                char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    ranks_ctx c = {.from_ns = from_ns, .to_ns = to_ns};
    tp_run_mark *marks = NULL;
    size_t nmarks = 0;
    tp_step_holds holds = {0};
    bool ok = tp_run_threads(run, &c.threads, &c.nthreads, err, cap) &&
              tp_run_marks(run, &marks, &nmarks, err, cap) &&
              tp_step_holds_read(run, &holds, err, cap);
    if (ok)
        make_ranks(run, &c, marks, nmarks, &holds);
    tp_step_holds_free(&holds);
    size_t with_steps = 0;
    for (size_t k = 0; ok && k < c.nacc; k++)
        with_steps += c.acc[k].row.steps > 0;
    if (ok && with_steps >= 1) {
        ok = tp_run_each_region(run, add_region, &c, err, cap);
        if (ok) {
            measure(run, &c, out);
            qsort(out->rows, out->n, sizeof *out->rows, cmp_rank);
            tp_ranks_compare(out);
        }
    }
    for (size_t k = 0; k < c.nacc; k++) {
        for (int j = 0; j < NCAT; j++)
            tp_spans_free(&c.acc[k].cat[j]);
        tp_spans_free(&c.acc[k].backward);
        tp_spans_free(&c.acc[k].steps);
    }
    free(c.acc);
    free(c.thread_acc);
    free(c.threads);
    free(marks);
    if (!ok)
        tp_ranks_free(out);
    return ok;
}

bool tp_ranks_latest_from_rows(tp_run *run, const tp_regimes *regimes, size_t min_ranks,
                               tp_ranks *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    const tp_regime *g = tp_regimes_latest(regimes, regimes->rank);
    if (!g || !isfinite(g->t0_s) || !isfinite(g->t1_s) || g->t1_s <= g->t0_s)
        return true;
    /* the regime's times are its first step's mark and its last one's end,
     * in seconds: a microsecond's slack keeps them in after the rounding */
    const int64_t slack = 1000;
    if (!tp_ranks_from_rows_between(run, tp_ns_round_s(g->t0_s) - slack,
                                    tp_ns_round_s(g->t1_s) + slack, out, err, cap))
        return false;
    if (out->n < min_ranks || !out->n)
        tp_ranks_free(out);
    return true;
}

void tp_ranks_pace_cause(const tp_ranks *whole, const tp_ranks *latest, tp_regime *g)
{
    const tp_rank_row *now = NULL;
    for (size_t i = 0; i < latest->n; i++)
        if (latest->rows[i].straggler && (!now || latest->rows[i].excess > now->excess))
            now = &latest->rows[i];
    const tp_rank_row *all = now ? tp_ranks_find(whole, now->rank) : NULL;
    if (!all || all->measured_steps <= now->measured_steps)
        return;
    double steps = (double)(all->measured_steps - now->measured_steps);
    double before = (all->input_s + all->compute_s - now->input_s - now->compute_s) / steps;
    double after = tp_rank_own_per_step(now);
    if (!(before >= 0) || !(after >= 1.5 * before) || !isfinite(after))
        return;
    size_t at = g->ncauses && g->causes[0].kind == TP_CAUSE_PHASE ? 1 : 0;
    size_t n = g->ncauses < TP_REGIME_CAUSES ? g->ncauses + 1 : TP_REGIME_CAUSES;
    memmove(&g->causes[at + 1], &g->causes[at], (n - 1 - at) * sizeof g->causes[0]);
    g->causes[at] = (tp_regime_cause){.kind = TP_CAUSE_STRAGGLER,
                                      .rank = now->rank,
                                      .workers = now->cause.input, /* its part above the median */
                                      .before = before,
                                      .after = after,
                                      .median_after = latest->median_own_s};
    g->ncauses = n;
}
