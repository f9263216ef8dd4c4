/* ops_lookup.c: see ops_lookup.h. */
#include "analyze/ops_lookup.h"

#include <stdlib.h>

#include "util/grow.h"
#include "util/oom.h"

void tp_launch_put(tp_launch_map *m, int64_t key, long op)
{
    size_t i = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL) & (m->cap - 1);
    while (m->keys[i] != INT64_MIN && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->ops[i] = op;
}

long tp_launch_get(const tp_launch_map *m, int64_t key)
{
    size_t i = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL) & (m->cap - 1);
    while (m->keys[i] != INT64_MIN) {
        if (m->keys[i] == key)
            return m->ops[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static size_t slot_of(const tp_thread_stacks *t, uint32_t thread)
{
    size_t i = (thread * 0x9E3779B1u) & (t->nslots - 1);
    while (t->slot[i] && t->v[t->slot[i] - 1].thread != thread)
        i = (i + 1) & (t->nslots - 1);
    return i;
}

tp_open_ops *tp_thread_stack_of(tp_thread_stacks *t, uint32_t thread)
{
    if (2 * (t->n + 1) > t->nslots) { /* at most half full */
        size_t nslots = t->nslots ? 2 * t->nslots : 64;
        free(t->slot);
        t->slot = calloc(nslots, sizeof *t->slot);
        if (!t->slot)
            tp_out_of_memory();
        t->nslots = nslots;
        for (size_t k = 0; k < t->n; k++)
            t->slot[slot_of(t, t->v[k].thread)] = (uint32_t)k + 1;
    }
    size_t i = slot_of(t, thread);
    if (!t->slot[i]) {
        t->v = tp_grow(t->v, t->n, &t->cap, sizeof *t->v);
        t->v[t->n] = (tp_open_ops){thread, NULL, 0, 0};
        t->slot[i] = (uint32_t)++t->n;
    }
    return &t->v[t->slot[i] - 1];
}

void tp_thread_stacks_free(tp_thread_stacks *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].v);
    free(t->v);
    free(t->slot);
}
