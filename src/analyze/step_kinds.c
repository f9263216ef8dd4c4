/* step_kinds.c: steady, warm-up, profiled and stalled steps (step_kinds.h). */
#include "analyze/step_kinds.h"

#include <stdlib.h>

#include "core/phases.h"
#include "core/stall_rule.h"
#include "core/stats.h"
#include "store/reader_ops.h"
#include "store/reader_stream.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "util/oom.h"

static void add_compile(void *ctx, int64_t thread, const char *name, int depth, int64_t start_ns,
                        int64_t end_ns)
{
    (void)name;
    (void)depth;
    tp_step_holds *h = ctx;
    h->compiles = tp_grow(h->compiles, h->ncompiles, &h->compiles_cap, sizeof *h->compiles);
    bool same = h->ncompiles && h->compiles[h->ncompiles - 1].thread == thread;
    int64_t before = same ? h->compiles[h->ncompiles - 1].max_b : INT64_MIN;
    h->compiles[h->ncompiles++] =
        (tp_step_hold){thread, start_ns, end_ns, end_ns > before ? end_ns : before};
}

static int cmp_hold(const void *a, const void *b)
{
    const tp_step_hold *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return (x->a > y->a) - (x->a < y->a);
}

/* The capture windows that ran, as holds of their threads. */
static bool capture_windows(tp_run *run, tp_step_holds *h, char *err, size_t cap)
{
    tp_run_op_window *w;
    size_t n;
    if (!tp_run_op_windows(run, &w, &n, err, cap))
        return false;
    tp_step_hold *v = tp_xmalloc((n + 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!w[i].skipped && w[i].thread)
            v[k++] = (tp_step_hold){w[i].thread, w[i].start_ns, w[i].end_ns, w[i].end_ns};
    tp_run_op_windows_free(w, n);
    qsort(v, k, sizeof *v, cmp_hold);
    for (size_t i = 1; i < k; i++) /* the latest end so far, as held_in expects */
        if (v[i].thread == v[i - 1].thread && v[i - 1].max_b > v[i].max_b)
            v[i].max_b = v[i - 1].max_b;
    h->windows = v;
    h->nwindows = k;
    return true;
}

bool tp_step_holds_read(tp_run *run, tp_step_holds *h, char *err, size_t cap)
{
    *h = (tp_step_holds){0};
    static const char *const compile[] = {TP_PHASE_COMPILE};
    if (tp_run_each_named_region(run, compile, 1, add_compile, h, err, cap) &&
        capture_windows(run, h, err, cap))
        return true;
    tp_step_holds_free(h);
    return false;
}

void tp_step_holds_free(tp_step_holds *h)
{
    free(h->compiles);
    free(h->windows);
    *h = (tp_step_holds){0};
}

/* Whether one of thread's holds v[0..n) overlaps [a, b): the first that
 * starts at or after a starts before b, or one before it ends after a. Two
 * binary searches, so that a run that compiles in every step costs n log n. */
static bool held_in(const tp_step_hold *v, size_t n, int64_t thread, int64_t a, int64_t b)
{
    size_t lo = 0, hi = n; /* the first hold of thread starting at or after a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].thread < thread || (v[mid].thread == thread && v[mid].a < a))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && v[lo].thread == thread && v[lo].a < b)
        return true;
    return lo > 0 && v[lo - 1].thread == thread && v[lo - 1].max_b > a;
}

double tp_steps_stall_threshold(const tp_run_mark *m, size_t lo, size_t hi, double stall_after_s)
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

size_t tp_closed_steps(const tp_run_mark *m, size_t n, tp_closed_step *out)
{
    size_t k = 0;
    int64_t opened = 0;
    bool open = false;
    for (size_t i = 0; i < n; i++) {
        if (m[i].kind == TP_MARK_EPOCH)
            open = false;
        if (m[i].kind != TP_MARK_STEP && m[i].kind != TP_MARK_STEP_END)
            continue;
        if (open)
            out[k++] = (tp_closed_step){m[i].thread, opened, m[i].t_ns};
        open = m[i].kind == TP_MARK_STEP;
        opened = m[i].t_ns;
    }
    return k;
}

static double seconds(const tp_closed_step *s) { return (double)tp_ns_sub(s->b, s->a) / 1e9; }

/* Of the steps left steady so far (kinds[i] == TP_STEP_STEADY), a thread's
 * first ones that each took more than TP_WARMUP_SLOW times their median go
 * to the warm-up (at most a tenth of them, none after a window's step:
 * after_window[i]). */
static void settle_warmup(const tp_closed_step *v, size_t n, const bool *after_window,
                          unsigned char *kinds)
{
    double *d = tp_xmalloc((n + 1) * sizeof *d);
    size_t nsteady = 0;
    for (size_t i = 0; i < n; i++)
        if (kinds[i] == TP_STEP_STEADY)
            d[nsteady++] = seconds(&v[i]);
    tp_stats st; /* by selection, not a sort: the timings and the ranks each tell a rank's */
    tp_stats_compute(d, nsteady, &st);
    double median = nsteady >= 3 ? st.p50 : 0;
    free(d);
    size_t room = nsteady / 10 > 1 ? nsteady / 10 : 1;
    bool leading = false;
    const tp_closed_step *prev = NULL; /* the previous steady step */
    for (size_t i = 0; i < n; i++) {
        if (kinds[i] != TP_STEP_STEADY)
            continue;
        if (!prev || prev->thread != v[i].thread)
            leading = true;
        prev = &v[i];
        leading = leading && median > 0 && room > 0 && !after_window[i] &&
                  seconds(&v[i]) > TP_WARMUP_SLOW * median;
        room -= leading;
        if (leading)
            kinds[i] = TP_STEP_WARMUP;
    }
}

void tp_step_kinds(const tp_step_holds *h, const tp_closed_step *v, size_t n, double stall_s,
                   unsigned char *kinds)
{
    bool *after_window = tp_xmalloc((n + 1) * sizeof *after_window);
    bool warming = true;   /* the thread's steps so far all held a compilation */
    bool windowed = false; /* a capture window's step came on this thread */
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || v[i].thread != v[i - 1].thread)
            warming = true, windowed = false;
        warming = warming && held_in(h->compiles, h->ncompiles, v[i].thread, v[i].a, v[i].b);
        bool in_window = held_in(h->windows, h->nwindows, v[i].thread, v[i].a, v[i].b);
        windowed = windowed || in_window;
        after_window[i] = windowed;
        if (warming)
            kinds[i] = in_window ? TP_STEP_PROFILED : TP_STEP_WARMUP;
        else if (seconds(&v[i]) > stall_s)
            kinds[i] = TP_STEP_STALLED;
        else
            kinds[i] = in_window ? TP_STEP_PROFILED : TP_STEP_STEADY;
    }
    settle_warmup(v, n, after_window, kinds);
    free(after_window);
}
