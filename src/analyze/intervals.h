/* intervals.h: time spans and their union, the one implementation the
 * analysis has (ranks' categories, timings' runs of steps). A span is
 * [a, b) in nanoseconds; lists grow by doubling. */
#ifndef TP_ANALYZE_INTERVALS_H
#define TP_ANALYZE_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_time_span {
    int64_t a, b; /* ns */
} tp_time_span;

typedef struct tp_time_spans {
    tp_time_span *v;
    size_t n, cap;
} tp_time_spans;

void tp_spans_push(tp_time_spans *s, int64_t a, int64_t b);

/* Sorts s by start and merges the spans that touch or overlap, so that its
 * spans are disjoint and increasing. */
void tp_spans_merge(tp_time_spans *s);

/* s less every span of cut, merged (both are merged first); tmp is
 * scratch, and its storage may trade places with s's. */
void tp_spans_subtract(tp_time_spans *s, tp_time_spans *cut, tp_time_spans *tmp);

/* In a merged s: the first span that ends after t (s->n when none does). */
size_t tp_spans_first_after(const tp_time_spans *s, int64_t t);

/* Nanoseconds covered by the union of the k lists' spans; tmp is scratch,
 * reused between calls (the lists are left as they were). */
int64_t tp_spans_union_ns(tp_time_spans *const *lists, size_t k, tp_time_spans *tmp);

void tp_spans_free(tp_time_spans *s);

/* The first index in v[0..n) (ascending) whose value is >= t (n if none). */
size_t tp_first_at_or_after(const int64_t *v, size_t n, int64_t t);

#endif
