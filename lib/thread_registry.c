/* thread_registry.c: see thread_registry.h; tp_thread_open_region of
 * stacks.h. */
#include "thread_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "stacks.h"

typedef struct entry {
    _Atomic int32_t tid; /* 0: free */
    _Atomic(tp_ring_header *) ring;
    _Atomic unsigned long pthread; /* pthread_self() of its thread */
} entry;

static entry registry[TP_REGISTRY_MAX];
static _Atomic uint32_t high_water; /* entries ever used: lookups stop there */

void tp_registry_add(tp_ring_header *ring)
{
    for (uint32_t i = 0; i < TP_REGISTRY_MAX; i++) {
        int32_t free_tid = 0;
        if (atomic_compare_exchange_strong(&registry[i].tid, &free_tid, -1)) {
            atomic_store(&registry[i].ring, ring);
            atomic_store(&registry[i].pthread, (unsigned long)pthread_self());
            atomic_store(&registry[i].tid, ring->tid);
            uint32_t hw = atomic_load(&high_water);
            while (hw < i + 1 && !atomic_compare_exchange_weak(&high_water, &hw, i + 1))
                ;
            return;
        }
    }
}

void tp_registry_remove(tp_ring_header *ring)
{
    uint32_t n = atomic_load(&high_water);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&registry[i].ring) == ring) {
            atomic_store(&registry[i].ring, NULL);
            atomic_store(&registry[i].tid, 0);
            return;
        }
}

void tp_registry_clear(void)
{
    for (uint32_t i = 0; i < TP_REGISTRY_MAX; i++) {
        atomic_store(&registry[i].ring, NULL);
        atomic_store(&registry[i].tid, 0);
    }
    atomic_store(&high_water, 0);
}

uint32_t tp_thread_open_region(tp_self_reader *r, int32_t tid, bool *own)
{
    uint32_t n = atomic_load(&high_water);
    *own = false;
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&registry[i].tid, memory_order_acquire) != tid)
            continue;
        tp_ring_header *h = atomic_load_explicit(&registry[i].ring, memory_order_acquire);
        uint32_t now[2] = {0, 0}; /* open_name, in_own_work: one read */
        int32_t ring_tid = 0;
        _Static_assert(offsetof(tp_ring_header, in_own_work) ==
                           offsetof(tp_ring_header, open_name) + sizeof(uint32_t),
                       "the two words the sampler reads at once");
        /* the ring is unmapped as its thread exits: reads that fail cleanly */
        if (!h || !tp_self_read(r, &ring_tid, &h->tid, sizeof ring_tid) || ring_tid != tid ||
            !tp_self_read(r, now, (const void *)&h->open_name, sizeof now))
            return 0;
        *own = now[1] != 0;
        return now[0];
    }
    return 0;
}

uint32_t tp_threads_stacks_wanted(tp_self_reader *r)
{
    uint32_t n = atomic_load(&high_water), most = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&registry[i].tid, memory_order_acquire) <= 0)
            continue;
        tp_ring_header *h = atomic_load_explicit(&registry[i].ring, memory_order_acquire);
        uint32_t wanted = 0;
        if (h && tp_self_read(r, &wanted, (const void *)&h->stacks_wanted, sizeof wanted) &&
            wanted > most)
            most = wanted;
    }
    return most;
}

bool tp_thread_has_ring(int32_t tid)
{
    uint32_t n = atomic_load(&high_water);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&registry[i].tid, memory_order_acquire) == tid)
            return tid > 0;
    return false;
}

int32_t tp_thread_tid_of(unsigned long pthread_id)
{
    uint32_t n = atomic_load(&high_water);
    for (uint32_t i = 0; i < n; i++) {
        int32_t tid = atomic_load_explicit(&registry[i].tid, memory_order_acquire);
        if (tid > 0 && atomic_load(&registry[i].pthread) == pthread_id)
            return tid;
    }
    return 0;
}
