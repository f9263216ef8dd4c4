/* intervals.c: time spans and their union. */
#include "analyze/intervals.h"

#include <stdlib.h>

#include "util/grow.h"
#include "util/ns_math.h"

void tp_spans_push(tp_spans *s, int key, int64_t a, int64_t b)
{
    s->v = tp_grow(s->v, s->n, &s->cap, sizeof *s->v);
    s->v[s->n++] = (tp_span){key, a, b};
}

static int cmp_span(const void *x, const void *y)
{
    const tp_span *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->a > b->a) - (a->a < b->a);
}

void tp_spans_merge(tp_spans *s)
{
    if (!s->n)
        return;
    qsort(s->v, s->n, sizeof *s->v, cmp_span);
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->v[i].key == s->v[k].key && s->v[i].a <= s->v[k].b) {
            if (s->v[i].b > s->v[k].b)
                s->v[k].b = s->v[i].b;
        } else {
            s->v[++k] = s->v[i];
        }
    }
    s->n = k + 1;
}

int64_t tp_spans_union_ns(tp_spans *const *lists, size_t k, tp_spans *tmp)
{
    tmp->n = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < lists[i]->n; j++)
            tp_spans_push(tmp, 0, lists[i]->v[j].a, lists[i]->v[j].b);
    tp_spans_merge(tmp);
    int64_t total = 0;
    for (size_t i = 0; i < tmp->n; i++)
        total = tp_ns_add(total, tp_ns_sub(tmp->v[i].b, tmp->v[i].a));
    return total;
}

void tp_spans_free(tp_spans *s)
{
    free(s->v);
    *s = (tp_spans){0};
}
