/* ops_idle.c: see ops_idle.h. */
#include "analyze/ops_idle.h"

#include <stdlib.h>

#include "analyze/stack_own.h"
#include "util/grow.h"

/* How many of a run's samples fall in [g0, g1). */
static int64_t samples_in(const tp_run_op_sample *s, int64_t g0, int64_t g1)
{
    if (s->count == 1 || s->span_ns == 0)
        return s->t_ns >= g0 && s->t_ns < g1 ? s->count : 0;
    double step = (double)s->span_ns / (double)(s->count - 1);
    /* sample k is at t + k * step: k in [ceil((g0 - t) / step), ceil((g1 - t) / step)) */
    double lo = (double)(g0 - s->t_ns) / step, hi = (double)(g1 - s->t_ns) / step;
    int64_t k0 = lo <= 0 ? 0 : (int64_t)lo + ((double)(int64_t)lo < lo);
    int64_t k1 = hi <= 0 ? 0 : (int64_t)hi + ((double)(int64_t)hi < hi);
    if (k1 > s->count)
        k1 = s->count;
    return k1 > k0 ? k1 - k0 : 0;
}

void tp_ops_idle_note(tp_ops_idle *acc, size_t row, const tp_run_op_sample *s, size_t n, int64_t g0,
                      int64_t g1)
{
    for (size_t i = 0; i < n && s[i].t_ns < g1; i++) {
        int64_t k = samples_in(&s[i], g0, g1);
        if (k <= 0)
            continue;
        size_t j = 0;
        while (j < acc->n && (acc->v[j].row != row || acc->v[j].node != s[i].node))
            j++;
        if (j == acc->n) {
            acc->v = tp_grow(acc->v, acc->n, &acc->cap, sizeof *acc->v);
            acc->v[acc->n++] = (struct tp_ops_idle_count){row, s[i].node, 0};
        }
        acc->v[j].samples += (uint64_t)k;
    }
}

static int by_row_then_node(const void *a, const void *b)
{
    const struct tp_ops_idle_count *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

void tp_ops_idle_finish(tp_ops_idle *acc, tp_ops_facts *f, const tp_stack_tree *tree,
                        const char *(*intern)(tp_ops_facts *f, const char *text))
{
    for (size_t j = 0; j < acc->n; j++)
        acc->v[j].node = tp_stack_outside_stdlib(tree, acc->v[j].node);
    if (acc->n)
        qsort(acc->v, acc->n, sizeof *acc->v, by_row_then_node);
    for (size_t j = 0; j < acc->n;) { /* each row's nodes, then the next row's */
        size_t r = acc->v[j].row;
        uint64_t all = 0, best = 0;
        uint32_t node = 0;
        while (j < acc->n && acc->v[j].row == r) {
            uint32_t at = acc->v[j].node;
            uint64_t samples = 0;
            for (; j < acc->n && acc->v[j].row == r && acc->v[j].node == at; j++)
                samples += acc->v[j].samples;
            all += samples;
            if (samples > best)
                best = samples, node = at;
        }
        if (r >= f->nidle || !node || node > tree->n)
            continue;
        uint32_t frame = tree->frame[node - 1];
        bool known = frame >= 1 && frame <= tree->nframes;
        f->idle[r].function = intern(f, known ? tree->function[frame - 1] : "?");
        f->idle[r].file = intern(f, known ? tree->file[frame - 1] : "?");
        f->idle[r].line = tree->line[node - 1];
        f->idle[r].function_share = (double)best / (double)all;
        f->idle[r].function_samples = best;
        f->idle[r].samples = all;
    }
    free(acc->v);
    *acc = (tp_ops_idle){0};
}
