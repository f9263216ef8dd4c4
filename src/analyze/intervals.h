/* intervals.h: time spans and their union, the one implementation the
 * analysis has (ranks' categories, timings' runs of steps).
 *
 * A span [a, b) in nanoseconds carries a key (a rank, or 0 where one list
 * holds one thing); lists grow by doubling. */
#ifndef TP_ANALYZE_INTERVALS_H
#define TP_ANALYZE_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_span {
    int key;
    int64_t a, b; /* ns */
} tp_span;

typedef struct tp_spans {
    tp_span *v;
    size_t n, cap;
} tp_spans;

void tp_spans_push(tp_spans *s, int key, int64_t a, int64_t b);

/* Sorts s by (key, start) and merges the spans of a key that touch or
 * overlap, so that each key's spans are disjoint and increasing. */
void tp_spans_merge(tp_spans *s);

/* Nanoseconds covered by the union of the k lists' spans (keys aside);
 * tmp is scratch, reused between calls. */
int64_t tp_spans_union_ns(tp_spans *const *lists, size_t k, tp_spans *tmp);

void tp_spans_free(tp_spans *s);

#endif
