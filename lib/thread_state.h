/* thread_state.h: what each training thread keeps about its own ring.
 *
 * Thread-local; only the owning thread touches it. `state` makes the hot
 * path's first test: TP_THREAD_ACTIVE goes straight to the ring, anything
 * else takes the cold path (attach once, or return). */
#ifndef TP_LIB_THREAD_STATE_H
#define TP_LIB_THREAD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

enum { TP_THREAD_UNKNOWN = 0, TP_THREAD_ACTIVE = 1, TP_THREAD_OFF = 2 };
#define TP_STACK_MAX 64

typedef struct tp_thread {
    int state;
    tp_ring_header *ring;
    uint64_t head;     /* the producer's copy of ring->head */
    uint64_t room_end; /* head may grow to this without a look at the tail */
    uint64_t *defined; /* bit per name id already sent through this ring */
    uint32_t defined_words;
    uint32_t depth; /* open regions, for the innermost-region slot */
    uint32_t stack[TP_STACK_MAX];
    char name[16]; /* set by tp_set_thread_name; empty: the system's thread name */
} tp_thread;

extern _Thread_local tp_thread tp_self;

/* This thread's state. Its address is computed once per call: in a shared
 * object a thread-local's address costs a __tls_get_addr call, and without
 * the empty asm the compiler recomputes it after every call it makes (seven
 * times in one tp_begin). */
static inline tp_thread *tp_self_ptr(void)
{
    tp_thread *t = &tp_self;
    __asm__("" : "+r"(t));
    return t;
}

/* Cold path: connects this thread to the recorder if there is one. True when
 * the thread is now active. */
int tp_thread_attach(tp_thread *t);

/* Whether the thread's events reach a recorder, attaching it on first use. */
static inline int tp_thread_ready(tp_thread *t)
{
    return __builtin_expect(t->state == TP_THREAD_ACTIVE, 1) || tp_thread_attach(t);
}

/* Producer: true when n more slots fit, else counts one dropped event. The
 * consumer's tail only grows, so the room seen at its last load still holds:
 * the tail's cache line (which the recorder writes) is read only when the
 * head reaches that room, about once a ring's worth of events. */
static inline bool tp_thread_has_room(tp_thread *t, uint32_t n)
{
    if (__builtin_expect(t->head + n <= t->room_end, 1))
        return true;
    tp_ring_header *h = t->ring;
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    t->room_end = tail + h->capacity;
    return tp_ring_has_room(h, t->head, n);
}

/* Whether name id's text went through this thread's ring already. */
static inline int tp_thread_name_defined(const tp_thread *t, uint32_t id)
{
    return id / 64 < t->defined_words && (t->defined[id / 64] >> (id % 64) & 1);
}

/* Cold path: the rank, local rank and world size the process's later rings
 * carry, instead of the ones its environment gives; a negative local rank or
 * world size is replaced by the environment's (-1 where it has none). */
void tp_thread_set_rank(int32_t rank, int32_t *local_rank, int32_t *world_size);

/* Writes head and then payload (len bytes) into the slots after it, and
 * publishes them; false when the ring has no room for all (the event then
 * counts as dropped). The caller checked that the thread is active. */
bool tp_thread_send(tp_thread *t, const tp_event *head, const void *payload, size_t len);

/* Cold path: hands fd (kept by the caller) to the recorder with an 8-byte
 * tag over the process's connection, connecting it first if need be;
 * false when no recorder took it. */
bool tp_channel_send_fd(const char *tag, int fd);

/* Cold path: one more capture window that could not be handed over (it
 * began at step count first_step), counted in the process's page (ring.h's
 * tp_proc_page). */
void tp_channel_window_unsent(uint64_t first_step);

/* Cold path: sends name id's text through the thread's ring. */
void tp_thread_define_name(tp_thread *t, uint32_t id);

#endif
