/* ops.c: see ops.h. */
#include "analyze/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_own.h"
#include "analyze/ops_idle.h"
#include "analyze/ops_lookup.h"
#include "analyze/ops_timeline.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "util/oom.h"

/* A piece of the step thread's time with one innermost region. */
typedef struct segment {
    int64_t t0, t1;
    const char *phase; /* interned; "" none */
} segment;

/* What the windows add up to, while they are read. */
typedef struct builder {
    tp_ops_facts *f;
    tp_name_table keys; /* "rank\x1fphase\x1fname" and the like: the rows' ids */
    size_t ops_cap, kernels_cap, idle_cap, phases_cap, busy_cap, windows_cap;
    /* rows by key id - 1, of the table they belong to (-1: another's) */
    long *row_of;
    size_t row_of_cap;
    /* the step thread's stack samples over a GPU window's steps, and what
     * they say of its idle gaps */
    const tp_run_op_sample *samples;
    size_t nsamples;
    tp_ops_idle idle_functions;
} builder;

static const char *intern(tp_ops_facts *f, const char *text)
{
    uint32_t id = tp_name_table_find(&f->texts, text);
    if (!id) {
        char *own = tp_xstrdup(text);
        if (!tp_name_table_reserve(&f->texts))
            tp_out_of_memory();
        id = tp_name_table_add(&f->texts, text, own);
    }
    return f->texts.texts[id - 1];
}

/* The row index of a key (made with make() the first time). */
static long row_for(builder *b, const char *kind, int rank, const char *a, const char *c,
                    long (*make)(builder *b))
{
    size_t len = strlen(kind) + strlen(a) + strlen(c) + 32;
    char *key = tp_xmalloc(len);
    snprintf(key, len, "%s\x1f%d\x1f%s\x1f%s", kind, rank, a, c);
    uint32_t id = tp_name_table_find(&b->keys, key);
    if (!id) {
        if (!tp_name_table_reserve(&b->keys))
            tp_out_of_memory();
        id = tp_name_table_add(&b->keys, key, key);
        size_t old = b->row_of_cap;
        if (id > b->row_of_cap) {
            b->row_of = tp_grow(b->row_of, id - 1, &b->row_of_cap, sizeof *b->row_of);
            for (size_t i = old; i < b->row_of_cap; i++)
                b->row_of[i] = -1;
        }
        b->row_of[id - 1] = make(b);
    } else {
        free(key);
    }
    return b->row_of[id - 1];
}

static long new_op(builder *b)
{
    b->f->ops = tp_grow(b->f->ops, b->f->nops, &b->ops_cap, sizeof *b->f->ops);
    memset(&b->f->ops[b->f->nops], 0, sizeof *b->f->ops);
    return (long)b->f->nops++;
}

static long new_kernel(builder *b)
{
    b->f->kernels = tp_grow(b->f->kernels, b->f->nkernels, &b->kernels_cap, sizeof *b->f->kernels);
    memset(&b->f->kernels[b->f->nkernels], 0, sizeof *b->f->kernels);
    return (long)b->f->nkernels++;
}

static long new_idle(builder *b)
{
    b->f->idle = tp_grow(b->f->idle, b->f->nidle, &b->idle_cap, sizeof *b->f->idle);
    memset(&b->f->idle[b->f->nidle], 0, sizeof *b->f->idle);
    return (long)b->f->nidle++;
}

static long new_phase(builder *b)
{
    b->f->phases = tp_grow(b->f->phases, b->f->nphases, &b->phases_cap, sizeof *b->f->phases);
    memset(&b->f->phases[b->f->nphases], 0, sizeof *b->f->phases);
    return (long)b->f->nphases++;
}

static long new_busy(builder *b)
{
    b->f->busy = tp_grow(b->f->busy, b->f->nbusy, &b->busy_cap, sizeof *b->f->busy);
    memset(&b->f->busy[b->f->nbusy], 0, sizeof *b->f->busy);
    return (long)b->f->nbusy++;
}

/* ---- the step thread's time, by innermost region --------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The step thread's [t0, t1) cut where its innermost region changes. */
static segment *flatten(tp_ops_facts *f, const tp_run_op_data *d, int64_t t0, int64_t t1, size_t *n)
{
    int64_t *cuts = tp_xmalloc((2 * d->nregions + 2) * sizeof *cuts);
    size_t nc = 0;
    cuts[nc++] = t0;
    cuts[nc++] = t1;
    for (size_t i = 0; i < d->nregions; i++) {
        if (d->regions[i].start_ns > t0 && d->regions[i].start_ns < t1)
            cuts[nc++] = d->regions[i].start_ns;
        if (d->regions[i].end_ns > t0 && d->regions[i].end_ns < t1)
            cuts[nc++] = d->regions[i].end_ns;
    }
    qsort(cuts, nc, sizeof *cuts, cmp_i64);
    segment *s = tp_xmalloc(nc * sizeof *s);
    *n = 0;
    for (size_t k = 0; k + 1 < nc; k++) {
        if (cuts[k] == cuts[k + 1])
            continue;
        int64_t mid = cuts[k] + (cuts[k + 1] - cuts[k]) / 2;
        const char *phase = "";
        int depth = -1;
        for (size_t i = 0; i < d->nregions && d->regions[i].start_ns <= mid; i++)
            if (d->regions[i].end_ns > mid && d->regions[i].depth > depth)
                depth = d->regions[i].depth, phase = d->regions[i].name;
        phase = intern(f, phase);
        if (*n && s[*n - 1].phase == phase && s[*n - 1].t1 == cuts[k])
            s[*n - 1].t1 = cuts[k + 1];
        else
            s[(*n)++] = (segment){cuts[k], cuts[k + 1], phase};
    }
    free(cuts);
    return s;
}

/* The innermost region of the step thread at t ("" outside every one). */
static const char *phase_at(const segment *s, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].t1 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && s[lo].t0 <= t ? s[lo].phase : "";
}

/* ---- one window ------------------------------------------------------------ */

static bool is_aten(const char *name) { return strncmp(name, "aten::", 6) == 0; }

/* The profiler's own rows among the CPU events: CUPTI's buffer requests and
 * the records Kineto could not type. Nobody's operator: left out of the
 * tables (the Chrome export keeps them). */
static bool profilers_own(const char *name)
{
    return strcmp(name, "Activity Buffer Request") == 0 || strcmp(name, "INVALID") == 0;
}
static bool is_cpu(const tp_op_event *e) { return e->kind == TP_OP_CPU || e->kind == TP_OP_RANGE; }
static bool is_device(const tp_op_event *e)
{
    return e->kind == TP_OP_KERNEL || e->kind == TP_OP_MEMCPY || e->kind == TP_OP_MEMSET;
}

static double secs(int64_t ns) { return (double)ns / 1e9; }

/* The device activities within [t0, t1), merged: busy time; the gaps go
 * to the idle rows by the step thread's region then. */
static void device_busy(builder *b, int rank, const tp_run_op_data *d, int64_t t0, int64_t t1,
                        const segment *seg, size_t nseg)
{
    int64_t(*iv)[2] = tp_xmalloc((d->nevents + 1) * sizeof *iv);
    size_t n = 0;
    for (size_t i = 0; i < d->nevents; i++) {
        const tp_op_event *e = &d->events[i];
        int64_t a = e->start_ns, z = e->start_ns + e->dur_ns;
        if (!is_device(e) || z <= t0 || a >= t1)
            continue;
        iv[n][0] = a < t0 ? t0 : a;
        iv[n][1] = z > t1 ? t1 : z;
        n++;
    }
    if (!n) {
        free(iv);
        return;
    }
    qsort(iv, n, sizeof *iv, cmp_i64); /* by start (the first member) */
    int64_t busy = 0, cursor = t0;
    size_t k = 0;
    for (size_t i = 0; i <= n; i++) {
        int64_t a = i < n ? iv[i][0] : t1, z = i < n ? iv[i][1] : t1;
        if (a > cursor) { /* a gap [cursor, a): split by the step thread's regions */
            for (; k < nseg && seg[k].t1 <= cursor; k++)
                ;
            for (size_t j = k; j < nseg && seg[j].t0 < a; j++) {
                int64_t g0 = seg[j].t0 > cursor ? seg[j].t0 : cursor;
                int64_t g1 = seg[j].t1 < a ? seg[j].t1 : a;
                if (g1 > g0) {
                    long r = row_for(b, "idle", rank, seg[j].phase, "", new_idle);
                    b->f->idle[r].rank = rank;
                    b->f->idle[r].phase = seg[j].phase;
                    b->f->idle[r].idle_s += secs(g1 - g0);
                    tp_ops_idle_note(&b->idle_functions, (size_t)r, b->samples, b->nsamples, g0,
                                     g1);
                }
            }
        }
        if (z > cursor) {
            busy += z - (a > cursor ? a : cursor);
            cursor = z;
        }
    }
    long r = row_for(b, "busy", rank, "", "", new_busy);
    b->f->busy[r].rank = rank;
    b->f->busy[r].span_s += secs(t1 - t0);
    b->f->busy[r].busy_s += secs(busy);
    free(iv);
}

/* The caching allocator over the captured steps: its peak allocated bytes
 * (from the start's count and every allocation and free), and what was
 * reserved at the last step mark. */
static void memory_peak(const tp_run_op_window *w, const tp_run_op_data *d, int64_t t1,
                        tp_ops_window_fact *out)
{
    out->peak_allocated_bytes = out->reserved_bytes = NAN;
    if (!w->cuda || w->alloc_start < 0)
        return;
    double running = (double)w->alloc_start, peak = running;
    for (size_t i = 0; i < d->nevents && d->events[i].start_ns <= t1; i++) {
        const tp_op_event *e = &d->events[i];
        if (e->kind == TP_OP_MEMORY && e->device >= 0) {
            running += (double)e->value;
            if (running > peak)
                peak = running;
        } else if (e->kind == TP_OP_STEP && e->value >= 0) {
            out->reserved_bytes = (double)e->value;
        }
    }
    out->peak_allocated_bytes = peak;
}

/* The fact of window w that captured steps steps from t0 to t1 (ns), added. */
static tp_ops_window_fact *add_window(builder *b, const tp_run_op_window *w, size_t steps,
                                      int64_t t0, int64_t t1)
{
    tp_ops_facts *f = b->f;
    f->windows = tp_grow(f->windows, f->nwindows, &b->windows_cap, sizeof *f->windows);
    tp_ops_window_fact *wf = &f->windows[f->nwindows++];
    *wf = (tp_ops_window_fact){.rank = w->rank,
                               .pid = w->pid,
                               .reason = w->reason,
                               .first_step = w->first_step,
                               .steps = (int)steps,
                               .cuda = w->cuda,
                               .skipped = w->skipped,
                               .note = w->note ? intern(f, w->note) : NULL,
                               .start_s = secs(t0),
                               .end_s = secs(t1),
                               .events = w->events,
                               .dropped = w->dropped,
                               .device_memory_bytes =
                                   w->device_memory > 0 ? (double)w->device_memory : NAN};
    return wf;
}

/* The times of the window's step marks (at most max) into marks; how many. */
static size_t step_marks(const tp_run_op_data *d, int64_t *marks, size_t max)
{
    size_t nm = 0;
    for (size_t i = 0; i < d->nevents && nm < max; i++)
        if (d->events[i].kind == TP_OP_STEP)
            marks[nm++] = d->events[i].start_ns;
    return nm;
}

/* Each GPU activity of the captured steps (kernels, copies, memsets) with
 * the operator that launched it (m: launches by correlation; parent and
 * row: each event's enclosing operator and its fact's row, -1 none): its
 * kernel fact, and its device time to that operator and those enclosing it. */
static void kernels_of(builder *b, int rank, const tp_run_op_data *d, const tp_launch_map *m,
                       const long *parent, const long *row, int64_t t0, int64_t t1)
{
    tp_ops_facts *f = b->f;
    for (size_t i = 0; i < d->nevents; i++) {
        const tp_op_event *e = &d->events[i];
        if (!is_device(e))
            continue;
        long op = tp_launch_get(m, e->correlation); /* CUPTI gives it its launch's */
        bool launched_in = op >= 0 && row[op] >= 0;
        if (!launched_in && (op >= 0 || e->start_ns < t0 || e->start_ns >= t1))
            continue; /* another step's */
        const char *op_name = launched_in ? d->strings[d->events[op].name] : "";
        for (long up = op, depth = 0; up >= 0 && depth < 256; up = parent[up], depth++)
            if (row[up] >= 0)
                f->ops[row[up]].device_total_s += secs(e->dur_ns);
        long r = row_for(b, "kernel", rank, d->strings[e->name], op_name, new_kernel);
        tp_kernel_fact *k = &f->kernels[r];
        if (!k->name) {
            k->rank = rank;
            k->name = intern(f, d->strings[e->name]);
            k->op = intern(f, op_name);
            k->kind = (int)e->kind;
        }
        k->calls++;
        k->device_s += secs(e->dur_ns);
    }
}

static void window_facts(builder *b, const tp_run_op_window *w, const tp_run_op_data *d)
{
    tp_ops_facts *f = b->f;
    int rank = w->rank;
    int64_t marks[1024];
    size_t nm = step_marks(d, marks, 1024);
    size_t steps = nm >= 2 ? nm - 1 : 0;
    if (w->steps > 0 && steps > (size_t)w->steps)
        steps = (size_t)w->steps; /* the mark after them only ended the profiler */
    if (!d->nevents && !w->skipped && w->steps > 0) { /* lost with its process: its steps */
        add_window(b, w, (size_t)w->steps, w->start_ns, w->end_ns);
        return;
    }
    tp_ops_window_fact *wf =
        add_window(b, w, steps, steps ? marks[0] : w->start_ns, steps ? marks[steps] : w->end_ns);
    if (!steps)
        return;
    int64_t t0 = marks[0], t1 = marks[steps];
    memory_peak(w, d, t1, wf);
    size_t nseg;
    segment *seg = flatten(f, d, t0, t1, &nseg);
    for (size_t k = 0; k < nseg; k++) {
        long r = row_for(b, "phase", rank, seg[k].phase, "", new_phase);
        f->phases[r] = (tp_ops_phase_time){rank, seg[k].phase,
                                           f->phases[r].time_s + secs(seg[k].t1 - seg[k].t0)};
    }
    size_t ne = d->nevents;
    long *parent = tp_xmalloc((ne + 1) * sizeof *parent), *row = tp_xmalloc((ne + 1) * sizeof *row);
    int64_t *child = calloc(ne + 1, sizeof *child);
    bool *under_aten = calloc(ne + 1, sizeof *under_aten);
    tp_launch_map m = {NULL, NULL, 64};
    while (m.cap < 2 * ne + 2)
        m.cap *= 2;
    m.keys = tp_xmalloc(m.cap * sizeof *m.keys);
    m.ops = tp_xmalloc(m.cap * sizeof *m.ops);
    if (!child || !under_aten)
        tp_out_of_memory();
    for (size_t i = 0; i < m.cap; i++)
        m.keys[i] = INT64_MIN;
    tp_thread_stacks stacks = {0};
    for (size_t i = 0; i < ne; i++) {
        const tp_op_event *e = &d->events[i];
        parent[i] = row[i] = -1;
        bool alloc = e->kind == TP_OP_MEMORY && e->device >= 0 && e->value > 0; /* on a GPU */
        if (!is_cpu(e) && e->kind != TP_OP_RUNTIME && !alloc)
            continue;
        tp_open_ops *s = tp_thread_stack_of(&stacks, e->thread);
        while (s->n &&
               d->events[s->v[s->n - 1]].start_ns + d->events[s->v[s->n - 1]].dur_ns <= e->start_ns)
            s->n--;
        long up = s->n ? s->v[s->n - 1] : -1;
        if (e->kind == TP_OP_RUNTIME) { /* a launch: its kernels are up's */
            tp_launch_put(&m, e->correlation, up);
            continue;
        }
        for (long u = up, depth = 0; alloc && u >= 0 && depth < 256; u = parent[u], depth++)
            if (row[u] >= 0) /* an allocation: up's, and those enclosing it */
                f->ops[row[u]].alloc_bytes += (double)e->value;
        if (alloc)
            continue;
        if (profilers_own(d->strings[e->name]))
            continue;
        parent[i] = up;
        under_aten[i] = up >= 0 && (under_aten[up] || is_aten(d->strings[d->events[up].name]));
        if (up >= 0)
            child[up] = tp_ns_add(child[up], e->dur_ns); /* saturating: a file says them */
        s->v = tp_grow(s->v, s->n, &s->cap, sizeof *s->v);
        s->v[s->n++] = (long)i;
        if (e->start_ns < t0 || e->start_ns >= t1)
            continue; /* outside the captured steps: it only encloses */
        const char *name = d->strings[e->name];
        const char *phase = phase_at(seg, nseg, e->start_ns);
        long r = row[i] = row_for(b, "op", rank, phase, name, new_op);
        tp_op_fact *o = &f->ops[r];
        if (!o->name) {
            o->rank = rank;
            o->phase = phase;
            o->name = intern(f, name);
            o->range = e->kind == TP_OP_RANGE;
        }
        o->calls++;
        o->cpu_total_s += secs(e->dur_ns);
        if (is_aten(name) && !under_aten[i])
            o->outer_s += secs(e->dur_ns);
    }
    for (size_t i = 0; i < ne; i++) /* self: its time less its children's */
        if (row[i] >= 0)
            f->ops[row[i]].cpu_self_s +=
                secs(d->events[i].dur_ns - child[i] > 0 ? d->events[i].dur_ns - child[i] : 0);
    kernels_of(b, rank, d, &m, parent, row, t0, t1);
    if (w->cuda)
        device_busy(b, rank, d, t0, t1, seg, nseg);
    tp_ops_timeline_take(f, d, marks[0], marks[1], intern); /* the first captured step */
    tp_thread_stacks_free(&stacks);
    free(m.keys);
    free(m.ops);
    free(parent);
    free(row);
    free(child);
    free(under_aten);
    free(seg);
}

/* ---- order and the whole run ----------------------------------------------- */

static int cmp_ops(const void *a, const void *b)
{
    const tp_op_fact *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int c = strcmp(x->phase, y->phase);
    if (c)
        return c;
    if (x->device_total_s != y->device_total_s) /* on a GPU, its time first */
        return x->device_total_s > y->device_total_s ? -1 : 1;
    if (x->cpu_self_s != y->cpu_self_s)
        return x->cpu_self_s > y->cpu_self_s ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_kernels(const void *a, const void *b)
{
    const tp_kernel_fact *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->device_s != y->device_s)
        return x->device_s > y->device_s ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_idle(const void *a, const void *b)
{
    const tp_gpu_idle_fact *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->idle_s < y->idle_s) - (x->idle_s > y->idle_s);
}

bool tp_ops_facts_build(tp_run *run, tp_ops_facts *f, char *err, size_t cap)
{
    memset(f, 0, sizeof *f);
    tp_run_op_window *w;
    size_t n;
    if (!tp_run_op_windows(run, &w, &n, err, cap))
        return false;
    builder b = {.f = f};
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        tp_run_op_data d;
        tp_run_op_sample *samples = NULL;
        ok = tp_run_op_data_load(run, &w[i], &d, err, cap) &&
             (!w[i].cuda || tp_run_op_samples(run, w[i].pid, w[i].tid, w[i].start_ns, w[i].end_ns,
                                              &samples, &b.nsamples, err, cap));
        b.samples = samples;
        if (ok)
            window_facts(&b, &w[i], &d);
        free(samples);
        b.samples = NULL, b.nsamples = 0;
        tp_run_op_data_free(&d);
    }
    tp_stack_tree tree = {0};
    if (ok && b.idle_functions.n)
        ok = tp_stack_tree_load(run, &tree, err, cap);
    if (ok)
        tp_ops_idle_finish(&b.idle_functions, f, &tree, intern);
    free(b.idle_functions.v);
    tp_stack_tree_free(&tree);
    tp_run_op_windows_free(w, n);
    tp_name_table_free(&b.keys);
    free(b.row_of);
    if (!ok) {
        tp_ops_facts_free(f);
        return false;
    }
    if (f->nops)
        qsort(f->ops, f->nops, sizeof *f->ops, cmp_ops);
    if (f->nkernels)
        qsort(f->kernels, f->nkernels, sizeof *f->kernels, cmp_kernels);
    if (f->nidle)
        qsort(f->idle, f->nidle, sizeof *f->idle, cmp_idle);
    return true;
}

void tp_ops_facts_free(tp_ops_facts *f)
{
    free(f->windows);
    free(f->ops);
    free(f->kernels);
    free(f->idle);
    free(f->phases);
    free(f->busy);
    free(f->boxes);
    tp_name_table_free(&f->texts);
    memset(f, 0, sizeof *f);
}

double tp_ops_phase_time_s(const tp_ops_facts *f, int rank, const char *phase)
{
    for (size_t i = 0; i < f->nphases; i++)
        if (f->phases[i].rank == rank && strcmp(f->phases[i].phase, phase) == 0)
            return f->phases[i].time_s;
    return 0;
}

size_t tp_ops_top_outer(const tp_ops_facts *f, int rank, const char *phase, const tp_op_fact **out,
                        size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nops; i++) {
        const tp_op_fact *o = &f->ops[i];
        if (o->rank != rank || strcmp(o->phase, phase) != 0 || o->outer_s <= 0)
            continue;
        size_t at = n < max ? n++ : max; /* insertion by outer_s, most first */
        while (at > 0 && out[at - 1]->outer_s < o->outer_s) {
            if (at < max)
                out[at] = out[at - 1];
            at--;
        }
        if (at < max)
            out[at] = o;
    }
    return n;
}

size_t tp_ops_phases_by_time(const tp_ops_facts *f, int rank, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nops; i++) {
        const tp_op_fact *o = &f->ops[i];
        bool seen = o->rank != rank;
        for (size_t k = 0; k < n && !seen; k++)
            seen = out[k] == o->phase;
        if (!seen && n < max)
            out[n++] = o->phase;
    }
    for (size_t a = 1; a < n; a++) /* by time, most first (few phases: insertion) */
        for (size_t b = a; b > 0 && tp_ops_phase_time_s(f, rank, out[b - 1]) <
                                        tp_ops_phase_time_s(f, rank, out[b]);
             b--) {
            const char *t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}
