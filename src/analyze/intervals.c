/* intervals.c: time spans and their union. */
#include "analyze/intervals.h"

#include <stdlib.h>

#include "util/grow.h"
#include "util/ns_math.h"

void tp_spans_push(tp_time_spans *s, int64_t a, int64_t b)
{
    s->v = tp_grow(s->v, s->n, &s->cap, sizeof *s->v);
    s->v[s->n++] = (tp_time_span){a, b};
}

static int cmp_start(const void *x, const void *y)
{
    const tp_time_span *a = x, *b = y;
    return (a->a > b->a) - (a->a < b->a);
}

void tp_spans_merge(tp_time_spans *s)
{
    if (!s->n)
        return;
    qsort(s->v, s->n, sizeof *s->v, cmp_start);
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->v[i].a <= s->v[k].b) {
            if (s->v[i].b > s->v[k].b)
                s->v[k].b = s->v[i].b;
        } else {
            s->v[++k] = s->v[i];
        }
    }
    s->n = k + 1;
}

void tp_spans_subtract(tp_time_spans *s, tp_time_spans *cut, tp_time_spans *tmp)
{
    tp_spans_merge(s);
    tp_spans_merge(cut);
    tmp->n = 0;
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        int64_t a = s->v[i].a, b = s->v[i].b;
        while (j < cut->n && cut->v[j].b <= a) /* cuts wholly before this span */
            j++;
        for (size_t k = j; k < cut->n && cut->v[k].a < b; k++) {
            if (cut->v[k].a > a)
                tp_spans_push(tmp, a, cut->v[k].a);
            if (cut->v[k].b > a)
                a = cut->v[k].b;
        }
        if (b > a)
            tp_spans_push(tmp, a, b);
    }
    tp_time_spans swap = *s;
    *s = *tmp;
    *tmp = swap;
}

size_t tp_spans_first_after(const tp_time_spans *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].b <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t tp_spans_union_ns(tp_time_spans *const *lists, size_t k, tp_time_spans *tmp)
{
    tmp->n = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < lists[i]->n; j++)
            tp_spans_push(tmp, lists[i]->v[j].a, lists[i]->v[j].b);
    if (tmp->n == 0)
        return 0;
    /* sorted by start, one pass: a run of touching or overlapping spans at
     * a time (tp_spans_merge's rule, without writing the runs back) */
    qsort(tmp->v, tmp->n, sizeof *tmp->v, cmp_start);
    int64_t total = 0, a = tmp->v[0].a, b = tmp->v[0].b;
    for (size_t i = 1; i < tmp->n; i++) {
        if (tmp->v[i].a > b) {
            total = tp_ns_add(total, tp_ns_sub(b, a));
            a = tmp->v[i].a;
        }
        if (tmp->v[i].b > b)
            b = tmp->v[i].b;
    }
    return tp_ns_add(total, tp_ns_sub(b, a));
}

void tp_spans_free(tp_time_spans *s)
{
    free(s->v);
    *s = (tp_time_spans){0};
}

size_t tp_first_at_or_after(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
