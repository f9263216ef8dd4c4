/* grow.h: growing a heap array by doubling. */
#ifndef TP_UTIL_GROW_H
#define TP_UTIL_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* Returns items grown (if needed) so that index n fits; *cap is in elements
 * of size sz. Aborts on out-of-memory, which no caller could recover from. */
static inline void *tp_grow(void *items, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return items;
    *cap = *cap ? *cap * 2 : 16;
    void *p = realloc(items, *cap * sz);
    if (!p)
        abort();
    return p;
}

#endif
