/* in_steps.c: see in_steps.h. */
#include "analyze/in_steps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/reader_stream.h"
#include "util/ns_math.h"

typedef struct in_steps_ctx {
    const tp_rank_spans_list *spans;
    tp_run_thread *threads; /* sorted by id */
    size_t nthreads;
    tp_timing_row **rows; /* sorted by (rank, name) */
    size_t nrows;
    int64_t *ns;      /* per entry of rows */
    int64_t *prof_ns; /* per entry of rows: inside the windows' steps */
    int64_t *warm_ns; /* per entry of rows: inside the warm-up steps */
} in_steps_ctx;

static int cmp_thread_id(const void *key, const void *elem)
{
    int64_t id = *(const int64_t *)key, other = ((const tp_run_thread *)elem)->id;
    return (id > other) - (id < other);
}

static int cmp_row(const void *x, const void *y)
{
    const tp_timing_row *a = *(tp_timing_row *const *)x, *b = *(tp_timing_row *const *)y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int cmp_rank_spans(const void *key, const void *elem)
{
    int rank = *(const int *)key, other = ((const tp_rank_spans *)elem)->rank;
    return (rank > other) - (rank < other);
}

/* How much of [start, end) the spans s cover. */
static int64_t overlap(const tp_time_spans *s, int64_t start_ns, int64_t end_ns)
{
    int64_t inside = 0;
    for (size_t i = tp_spans_first_after(s, start_ns); i < s->n && s->v[i].a < end_ns; i++) {
        int64_t a = start_ns > s->v[i].a ? start_ns : s->v[i].a;
        int64_t b = end_ns < s->v[i].b ? end_ns : s->v[i].b;
        inside = tp_ns_add(inside, b > a ? tp_ns_sub(b, a) : 0);
    }
    return inside;
}

/* Adds the part of one region that lies inside its rank's steps. */
static void add_in_steps(void *ctx, int64_t thread, const char *name, int depth, int64_t start_ns,
                         int64_t end_ns)
{
    (void)depth;
    in_steps_ctx *c = ctx;
    const tp_run_thread *th =
        bsearch(&thread, c->threads, c->nthreads, sizeof *c->threads, cmp_thread_id);
    if (!th)
        return;
    const tp_rank_spans *rs =
        bsearch(&th->rank, c->spans->v, c->spans->n, sizeof *c->spans->v, cmp_rank_spans);
    if (!rs)
        return;
    int64_t inside = overlap(&rs->spans, start_ns, end_ns);
    int64_t in_prof = overlap(&rs->prof_spans, start_ns, end_ns);
    int64_t in_warm = overlap(&rs->warm_spans, start_ns, end_ns);
    if (!inside && !in_prof && !in_warm)
        return;
    tp_timing_row key = {.rank = th->rank, .name = (char *)name}, *kp = &key;
    tp_timing_row **row = bsearch(&kp, c->rows, c->nrows, sizeof *c->rows, cmp_row);
    if (row) {
        c->ns[row - c->rows] = tp_ns_add(c->ns[row - c->rows], inside);
        c->prof_ns[row - c->rows] = tp_ns_add(c->prof_ns[row - c->rows], in_prof);
        c->warm_ns[row - c->rows] = tp_ns_add(c->warm_ns[row - c->rows], in_warm);
    }
}

bool tp_measure_in_steps(tp_run *run, tp_timings *t, const tp_rank_spans_list *spans, char *err,
                         size_t cap)
{
    size_t nspans = 0;
    for (size_t i = 0; i < spans->n; i++)
        nspans += spans->v[i].spans.n + spans->v[i].prof_spans.n + spans->v[i].warm_spans.n;
    for (size_t i = 0; i < t->nrows; i++) {
        bool stepped = false;
        for (size_t s = 0; s < t->nsteps && !stepped; s++)
            stepped = t->steps[s].rank == t->rows[i].rank;
        t->rows[i].in_steps_s = stepped ? 0 : t->rows[i].total_s;
    }
    if (!nspans || !t->nrows)
        return true;
    in_steps_ctx c = {spans,
                      NULL,
                      0,
                      calloc(t->nrows, sizeof *c.rows),
                      t->nrows,
                      calloc(t->nrows, sizeof *c.ns),
                      calloc(t->nrows, sizeof *c.prof_ns),
                      calloc(t->nrows, sizeof *c.warm_ns)};
    bool ok = c.rows && c.ns && c.prof_ns && c.warm_ns &&
              tp_run_threads(run, &c.threads, &c.nthreads, err, cap);
    if (ok) {
        for (size_t i = 0; i < t->nrows; i++)
            c.rows[i] = &t->rows[i];
        qsort(c.rows, c.nrows, sizeof *c.rows, cmp_row);
        ok = tp_run_each_region(run, add_in_steps, &c, err, cap);
    }
    for (size_t i = 0; ok && i < c.nrows; i++) {
        if (c.ns[i])
            c.rows[i]->in_steps_s = (double)c.ns[i] / 1e9;
        c.rows[i]->in_profiled_s = (double)c.prof_ns[i] / 1e9;
        c.rows[i]->in_warmup_s = (double)c.warm_ns[i] / 1e9;
    }
    free(c.threads);
    free(c.rows);
    free(c.ns);
    free(c.prof_ns);
    free(c.warm_ns);
    return ok;
}

void tp_rank_spans_list_free(tp_rank_spans_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        tp_spans_free(&l->v[i].spans);
        tp_spans_free(&l->v[i].prof_spans);
        tp_spans_free(&l->v[i].warm_spans);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
