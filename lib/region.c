/* region.c: the hot path: region begin/end, steps and epochs.
 *
 * An event costs a thread-local test, a clock read (vDSO, no system call) and
 * a release store of our position; the consumer's position is loaded only
 * when the room last seen runs out (tp_thread_has_room). The
 * first event of a thread attaches it (cold path, channel.c); the first use
 * of a name in a thread sends its text once (cold path). */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "names.h"
#include "thread_state.h"
#include "trainprof.h"

#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Fills the next slot without publishing it (the caller checked for room). */
static inline void put(tp_thread *t, uint64_t t_ns, uint32_t kind, uint32_t id, int64_t value,
                       uint64_t aux)
{
    tp_ring_header *h = t->ring;
    tp_event *e = &tp_ring_slots(h)[t->head & (h->capacity - 1)];
    e->t_ns = t_ns;
    e->kind = kind;
    e->name_id = id;
    e->value = value;
    e->aux = aux;
    t->head++;
}

/* Writes one event at t_ns; drops (and counts) it when the ring is full. */
static inline void push_at(tp_thread *t, uint64_t t_ns, uint32_t kind, uint32_t id, int64_t value)
{
    tp_ring_header *h = t->ring;
    if (UNLIKELY(!tp_thread_has_room(t, 1)))
        return;
    put(t, t_ns, kind, id, value, 0);
    atomic_store_explicit(&h->head, t->head, memory_order_release);
}

static inline void push(tp_thread *t, uint32_t kind, uint32_t id, int64_t value)
{
    push_at(t, tp_clock_stamp(), kind, id, value);
}

/* Keeps the innermost open region readable by the recorder (for a stack
 * sampler that attributes its samples to phases): after an end, the region
 * now innermost (a begin stores its own id, begin_on). */
static inline void publish_open(tp_thread *t)
{
    uint32_t top = t->depth ? t->stack[(t->depth > TP_STACK_MAX ? TP_STACK_MAX : t->depth) - 1] : 0;
    atomic_store_explicit(&t->ring->open_name, top, memory_order_relaxed);
}

static inline void begin_on(tp_thread *t, uint32_t id, int64_t in_c)
{
    if (!tp_thread_ready(t) || id == 0)
        return;
    if (UNLIKELY(!tp_thread_name_defined(t, id)))
        tp_thread_define_name(t, id);
    push(t, TP_EV_BEGIN, id, in_c);
    if (t->depth < TP_STACK_MAX) { /* deeper ones leave the innermost kept as it is */
        t->stack[t->depth] = id;
        atomic_store_explicit(&t->ring->open_name, id, memory_order_relaxed);
    }
    t->depth++;
}

static inline void end_on(tp_thread *t, uint32_t id)
{
    if (!tp_thread_ready(t) || id == 0)
        return;
    push(t, TP_EV_END, id, 0);
    if (t->depth)
        t->depth--;
    publish_open(t);
}

void tp_begin(uint32_t id) { begin_on(tp_self_ptr(), id, 0); }

int tp_own_work(int on)
{
    tp_thread *t = tp_self_ptr();
    if (t->state != TP_THREAD_ACTIVE) /* never attaches: a region's event will */
        return 0;
    int was = (int)atomic_load_explicit(&t->ring->in_own_work, memory_order_relaxed);
    if (was != on)
        atomic_store_explicit(&t->ring->in_own_work, (uint32_t)(on != 0), memory_order_relaxed);
    return was;
}

void tp_end(uint32_t id) { end_on(tp_self_ptr(), id); }

/* For events with times of their own (the caller's): sends id's name if this
 * ring has not had it, then checks that n slots fit (else drops and counts).
 * The caller then put()s n events and publishes them with publish(). */
static inline int reserve(tp_thread *t, uint32_t id, uint32_t n)
{
    if (UNLIKELY(!tp_thread_name_defined(t, id)))
        tp_thread_define_name(t, id);
    return LIKELY(tp_thread_has_room(t, n));
}

static inline void publish(tp_thread *t)
{
    atomic_store_explicit(&t->ring->head, t->head, memory_order_release);
}

void tp_span(uint32_t id, uint64_t start_ns, uint64_t end_ns)
{
    tp_thread *t = tp_self_ptr();
    if (!tp_thread_ready(t) || id == 0 || end_ns < start_ns || !reserve(t, id, 2))
        return;
    /* begin and end published together: the recorder pairs them as one
     * region nested in whatever this thread has open */
    put(t, start_ns, TP_EV_BEGIN, id, 0, 0);
    put(t, end_ns, TP_EV_END, id, 0, 0);
    publish(t);
}

void tp_device_time(uint32_t id, uint64_t host_start_ns, uint64_t device_ns)
{
    tp_thread *t = tp_self_ptr();
    if (!tp_thread_ready(t) || id == 0 || device_ns > INT64_MAX || !reserve(t, id, 1))
        return;
    put(t, host_start_ns, TP_EV_DEVICE, id, (int64_t)device_ns, 0);
    publish(t);
}

extern _Atomic uint64_t tp_steps_marked_count; /* ops_window.c */

void tp_step(void)
{
    atomic_fetch_add_explicit(&tp_steps_marked_count, 1, memory_order_relaxed);
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push(t, TP_EV_STEP, 0, 0);
}

void tp_step_at(uint64_t t_ns)
{
    atomic_fetch_add_explicit(&tp_steps_marked_count, 1, memory_order_relaxed);
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push_at(t, t_ns, TP_EV_STEP, 0, 0);
}

void tp_step_end_at(uint64_t t_ns)
{
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push_at(t, t_ns, TP_EV_STEP_END, 0, 0);
}

void tp_epoch(int64_t epoch)
{
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push(t, TP_EV_EPOCH, 0, epoch);
}

void tp_epoch_at(int64_t epoch, uint64_t t_ns)
{
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push_at(t, t_ns, TP_EV_EPOCH, 0, epoch);
}

void tp_set_rank(int32_t rank, int32_t local_rank, int32_t world_size)
{
    tp_thread_set_rank(rank, &local_rank, &world_size);
    tp_thread *t = tp_self_ptr();
    if (!tp_thread_ready(t) || !tp_thread_has_room(t, 1))
        return;
    put(t, tp_clock_stamp(), TP_EV_RANK, 0, rank,
        (uint64_t)(uint32_t)local_rank | (uint64_t)(uint32_t)world_size << 32);
    atomic_store_explicit(&t->ring->head, t->head, memory_order_release);
}

void tp_samples(int64_t n)
{
    tp_thread *t = tp_self_ptr();
    if (tp_thread_ready(t))
        push(t, TP_EV_SAMPLES, 0, n);
}

void tp_device_memory(const int64_t figures[TP_DEVMEM_FIGURES])
{
    tp_thread *t = tp_self_ptr();
    if (!tp_thread_ready(t) || !tp_thread_has_room(t, TP_DEVMEM_FIGURES))
        return;
    uint64_t now = tp_clock_stamp();
    for (uint32_t k = 0; k < TP_DEVMEM_FIGURES; k++)
        if (figures[k] >= 0)
            put(t, now, TP_EV_DEVICE_MEMORY, k, figures[k], 0);
    atomic_store_explicit(&t->ring->head, t->head, memory_order_release);
}

uint32_t tp_name_intern(const char *name) { return tp_names_intern(name); }

/* The site's id, interned on first use; sites may race: both get one id. */
static inline uint32_t site_id(tp_site *site)
{
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    if (UNLIKELY(id == 0)) {
        id = tp_names_intern(site->name);
        __atomic_store_n(&site->id, id, __ATOMIC_RELAXED);
    }
    return id;
}

void tp_region_begin(tp_site *site)
{
    tp_thread *t = tp_self_ptr();
    if (t->state != TP_THREAD_OFF)
        begin_on(t, site_id(site), TP_BEGIN_IN_C);
}

void tp_region_end(tp_site *site)
{
    tp_thread *t = tp_self_ptr();
    if (t->state != TP_THREAD_OFF)
        end_on(t, site_id(site));
}

void tp_set_thread_name(const char *name)
{
    tp_thread *t = tp_self_ptr();
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    if (t->state == TP_THREAD_ACTIVE) /* the recorder has read it already; keep it coherent */
        memcpy(t->ring->thread_name, t->name, sizeof t->name);
}

int tp_active(void) { return tp_thread_ready(tp_self_ptr()); }

uint64_t tp_dropped(void)
{
    tp_thread *t = tp_self_ptr();
    return t->state == TP_THREAD_ACTIVE
               ? atomic_load_explicit(&t->ring->dropped, memory_order_relaxed)
               : 0;
}
