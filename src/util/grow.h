/* grow.h: growing a heap array by doubling. */
#ifndef TP_UTIL_GROW_H
#define TP_UTIL_GROW_H

#include <stddef.h>
#include <stdlib.h>

#include "util/oom.h"

/* Returns items grown (if needed) so that index n fits; *cap is in elements
 * of size sz. NULL, with items still valid and *cap as it was, when memory
 * ran out: for the recorder's threads, where running out costs data, never
 * the run. */
static inline void *tp_grow_try(void *items, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return items;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = ncap > n && ncap <= (size_t)-1 / sz ? realloc(items, ncap * sz) : NULL;
    if (p)
        *cap = ncap;
    return p;
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
