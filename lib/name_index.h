/* name_index.h: finding a name's id by hash, for tables whose ids run from
 * 1 and whose texts the owner keeps (libtrainprof's names, the recorder's
 * sink). Open addressing over ids (0: an empty slot), at most half full.
 * Header-only; not thread-safe (the owners hold their own lock). */
#ifndef TP_LIB_NAME_INDEX_H
#define TP_LIB_NAME_INDEX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The text of id (1..count) in the owner's table. */
typedef const char *(*tp_name_text_fn)(const void *owner, uint32_t id);

typedef struct tp_name_index {
    uint32_t *slots;
    uint32_t size; /* a power of two, or 0 before the first name */
} tp_name_index;

static inline uint32_t tp_name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot holding text's id, or the empty slot where it belongs; the index
 * must have a size. */
static inline uint32_t *tp_name_index_slot(const tp_name_index *x, const char *text,
                                           tp_name_text_fn text_of, const void *owner)
{
    uint32_t mask = x->size - 1;
    for (uint32_t i = tp_name_hash(text) & mask;; i = (i + 1) & mask)
        if (!x->slots[i] || strcmp(text_of(owner, x->slots[i]), text) == 0)
            return &x->slots[i];
}

/* text's id, 0 when it has none. */
static inline uint32_t tp_name_index_find(const tp_name_index *x, const char *text,
                                          tp_name_text_fn text_of, const void *owner)
{
    return x->size ? *tp_name_index_slot(x, text, text_of, owner) : 0;
}

/* Makes room for ids up to count + 1 (rehashing ids 1..count); false when
 * memory runs out (the index is left as it was). */
static inline bool tp_name_index_reserve(tp_name_index *x, uint32_t count, tp_name_text_fn text_of,
                                         const void *owner)
{
    if (2 * ((uint64_t)count + 1) <= x->size)
        return true;
    uint32_t size = x->size ? x->size * 2 : 128;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots)
        return false;
    free(x->slots);
    *x = (tp_name_index){slots, size};
    for (uint32_t id = 1; id <= count; id++)
        *tp_name_index_slot(x, text_of(owner, id), text_of, owner) = id;
    return true;
}

#endif
