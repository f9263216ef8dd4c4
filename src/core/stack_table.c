/* stack_table.c: see stack_table.h. */
#include "core/stack_table.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

static uint32_t hash(uint32_t parent, uint32_t frame, int32_t line)
{
    uint64_t h = ((uint64_t)parent * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)frame * 0xC2B2AE3D27D4EB4Full) ^ ((uint64_t)(uint32_t)line << 17);
    return (uint32_t)(h ^ h >> 29);
}

static bool same(const tp_stack_node_key *k, uint32_t parent, uint32_t frame, int32_t line)
{
    return k->parent == parent && k->frame == frame && k->line == line;
}

/* Doubles the index; false when memory ran out (the index as it was). */
static bool grow_index(tp_stack_table *t)
{
    uint32_t size = t->size ? t->size * 2 : 1024;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots)
        return false;
    for (size_t id = 1; id <= t->len; id++) {
        const tp_stack_node_key *k = &t->nodes[id - 1];
        uint32_t i = hash(k->parent, k->frame, k->line) & (size - 1);
        while (slots[i])
            i = (i + 1) & (size - 1);
        slots[i] = (uint32_t)id;
    }
    free(t->slots);
    t->slots = slots;
    t->size = size;
    return true;
}

uint32_t tp_stack_table_node(tp_stack_table *t, uint32_t parent, uint32_t frame, int32_t line,
                             bool *made)
{
    *made = false;
    if ((t->len + 1) * 2 > t->size && !grow_index(t))
        return 0;
    uint32_t i = hash(parent, frame, line) & (t->size - 1);
    for (; t->slots[i]; i = (i + 1) & (t->size - 1))
        if (same(&t->nodes[t->slots[i] - 1], parent, frame, line))
            return t->slots[i];
    if (t->len >= TP_STACK_NODES_MAX)
        return 0;
    void *p = tp_grow_try(t->nodes, t->len, &t->cap, sizeof *t->nodes);
    if (!p)
        return 0;
    t->nodes = p;
    t->nodes[t->len++] = (tp_stack_node_key){parent, frame, line};
    t->slots[i] = (uint32_t)t->len;
    *made = true;
    return (uint32_t)t->len;
}

void tp_stack_table_free(tp_stack_table *t)
{
    free(t->nodes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
