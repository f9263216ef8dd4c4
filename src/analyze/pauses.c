/* pauses.c: the run's pause regions as spans to shade. */
#include "analyze/pauses.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/timings.h"
#include "store/reader_stream.h"
#include "util/grow.h"

typedef struct pause_ctx {
    tp_pauses *out;
    size_t cap;
} pause_ctx;

static void add_pause(void *ctx, int64_t thread, const char *name, int depth, int64_t start_ns,
                      int64_t end_ns)
{
    (void)thread;
    (void)depth;
    pause_ctx *c = ctx;
    const char *known = NULL;
    for (size_t i = 0; i < TP_PAUSE_NAMES && !known; i++)
        if (strcmp(name, tp_pause_names[i]) == 0)
            known = tp_pause_names[i];
    if (!known || end_ns < start_ns)
        return;
    c->out->spans = tp_grow(c->out->spans, c->out->n, &c->cap, sizeof *c->out->spans);
    c->out->spans[c->out->n++] = (tp_pause_span){known, start_ns, end_ns};
}

/* By name (the pointers into tp_pause_names), then start. */
static int cmp_name_start(const void *x, const void *y)
{
    const tp_pause_span *a = x, *b = y;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return (a->t0_ns > b->t0_ns) - (a->t0_ns < b->t0_ns);
}

static int cmp_start(const void *x, const void *y)
{
    const tp_pause_span *a = x, *b = y;
    return (a->t0_ns > b->t0_ns) - (a->t0_ns < b->t0_ns);
}

bool tp_pauses_build(tp_run *run, tp_pauses *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    pause_ctx c = {out, 0};
    if (!tp_run_each_named_region(run, tp_pause_names, TP_PAUSE_NAMES, add_pause, &c, err, cap)) {
        tp_pauses_free(out);
        return false;
    }
    if (!out->n)
        return true;
    qsort(out->spans, out->n, sizeof *out->spans, cmp_name_start);
    size_t k = 0;
    for (size_t i = 1; i < out->n; i++) {
        tp_pause_span *last = &out->spans[k];
        if (out->spans[i].name == last->name && out->spans[i].t0_ns <= last->t1_ns) {
            if (out->spans[i].t1_ns > last->t1_ns)
                last->t1_ns = out->spans[i].t1_ns;
        } else {
            out->spans[++k] = out->spans[i];
        }
    }
    out->n = k + 1;
    qsort(out->spans, out->n, sizeof *out->spans, cmp_start);
    return true;
}

void tp_pauses_free(tp_pauses *p)
{
    free(p->spans);
    memset(p, 0, sizeof *p);
}
