/* name_table.c: region names and their ids, found by hash. */
#include "core/name_table.h"

#include <stdlib.h>

#include "util/grow.h"

static const char *text_of(const void *owner, uint32_t id)
{
    return ((const tp_name_table *)owner)->texts[id - 1];
}

uint32_t tp_name_table_find(const tp_name_table *t, const char *text)
{
    return tp_name_index_find(&t->index, text, text_of, t);
}

bool tp_name_table_reserve(tp_name_table *t)
{
    char **p = tp_grow_try(t->texts, t->len, &t->cap, sizeof *t->texts);
    if (!p)
        return false;
    t->texts = p;
    return tp_name_index_reserve(&t->index, (uint32_t)t->len, text_of, t);
}

uint32_t tp_name_table_add(tp_name_table *t, const char *text, char *own)
{
    t->texts[t->len++] = own;
    uint32_t id = (uint32_t)t->len;
    *tp_name_index_slot(&t->index, text, text_of, t) = id;
    return id;
}

void tp_name_table_free(tp_name_table *t)
{
    for (size_t i = 0; i < t->len; i++)
        free(t->texts[i]);
    free(t->texts);
    free(t->index.slots);
    *t = (tp_name_table){0};
}
