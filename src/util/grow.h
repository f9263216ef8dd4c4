/* grow.h: growing a heap array by doubling. */
#ifndef TP_UTIL_GROW_H
#define TP_UTIL_GROW_H

#include <stddef.h>
#include <stdlib.h>

#include "util/oom.h"

/* The one way trainprof grows an array: by doubling, from 16 elements.
 * Returns items grown (if needed) to hold at least n elements; *cap is in
 * elements of size sz. NULL, with items still valid and *cap as it was, when
 * memory ran out: for the recorder's threads, where running out costs data,
 * never the run. New elements are not initialised. */
static inline void *tp_reserve_try(void *items, size_t n, size_t *cap, size_t sz)
{
    if (n <= *cap)
        return items;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < n && ncap <= (size_t)-1 / 2)
        ncap *= 2;
    void *p = ncap >= n && ncap <= (size_t)-1 / sz ? realloc(items, ncap * sz) : NULL;
    if (p)
        *cap = ncap;
    return p;
}

/* The same so that index n fits (one more element). */
static inline void *tp_grow_try(void *items, size_t n, size_t *cap, size_t sz)
{
    return tp_reserve_try(items, n + 1, cap, sz);
}

/* Returns items grown (if needed) so that index n fits; for the reading
 * commands, which stop with one line when memory runs out (util/oom.h). */
static inline void *tp_grow(void *items, size_t n, size_t *cap, size_t sz)
{
    void *p = tp_grow_try(items, n, cap, sz);
    if (!p)
        tp_out_of_memory();
    return p;
}

#endif
