/* stack_runs.c: see stack_runs.h. */
#include "core/stack_runs.h"

#include <stdlib.h>
#include <string.h>

static uint64_t key_of(uint32_t thread, int32_t tid)
{
    return (uint64_t)thread << 32 | (uint32_t)tid;
}

static size_t slot_of(const tp_stack_runs *r, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (r->cap - 1);
}

tp_stack_open_run *tp_stack_runs_find(tp_stack_runs *r, uint32_t thread, int32_t tid)
{
    uint64_t key = key_of(thread, tid);
    if (!r->cap || !key)
        return NULL;
    for (size_t i = slot_of(r, key);; i = (i + 1) & (r->cap - 1)) {
        if (r->slots[i].key == key)
            return &r->slots[i];
        if (!r->slots[i].key)
            return NULL;
    }
}

/* Twice the slots, every run moved over; false when memory ran out. */
static bool grow(tp_stack_runs *r)
{
    size_t cap = r->cap ? r->cap * 2 : 256;
    tp_stack_open_run *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    tp_stack_runs old = *r;
    r->slots = slots;
    r->cap = cap;
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].key)
            continue;
        size_t k = slot_of(r, old.slots[i].key);
        while (r->slots[k].key)
            k = (k + 1) & (cap - 1);
        r->slots[k] = old.slots[i];
    }
    free(old.slots);
    return true;
}

tp_stack_open_run *tp_stack_runs_open(tp_stack_runs *r, const tp_stack_sample *x)
{
    uint64_t key = key_of(x->thread, x->tid);
    if (!key)
        return NULL;
    tp_stack_open_run *o = tp_stack_runs_find(r, x->thread, x->tid);
    if (!o) {
        if ((r->len + 1) * 4 > r->cap * 3 && !grow(r)) /* at most three quarters full */
            return NULL;
        size_t k = slot_of(r, key);
        while (r->slots[k].key)
            k = (k + 1) & (r->cap - 1);
        o = &r->slots[k];
        o->key = key;
        r->len++;
    }
    o->run = *x;
    o->run.row = ++r->next_row;
    o->handed_count = 0;
    o->handed_ns = x->t_ns;
    return o;
}

bool tp_stack_run_grown(const tp_stack_open_run *o) { return o->run.count != o->handed_count; }

void tp_stack_run_handed(tp_stack_open_run *o)
{
    o->handed_count = o->run.count;
    o->handed_ns = o->run.t_ns + o->run.span_ns;
}

void tp_stack_runs_free(tp_stack_runs *r)
{
    free(r->slots);
    memset(r, 0, sizeof *r);
}
