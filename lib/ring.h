/* ring.h: the shared-memory event ring of one training thread.
 *
 * Layout shared by the producer (libtrainprof, inside the training) and the
 * consumer (the recorder's drain thread): a header page, then `capacity`
 * fixed-size event slots. Exactly one producer (the thread that owns the
 * ring) and one consumer. The producer publishes with a release store of
 * `head`, the consumer frees slots with a release store of `tail`. A full
 * ring drops the event and counts it; the producer never waits.
 *
 * A region name travels once per ring: a TP_EV_NAME event whose `aux` is the
 * name's length, followed by the name's bytes in as many slots as it needs.
 *
 * The consumer trusts nothing the producer can write after the handover: it
 * copies the header once (capacity, identity), keeps its own tail, bounds
 * every id and retires a ring that breaks these rules. */
#ifndef TP_LIB_RING_H
#define TP_LIB_RING_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TP_RING_MAGIC         0x47525054u /* "TPRG" */
#define TP_RING_VERSION       4u          /* 2: cuda_visible_devices; 3: ops_*; 4: ops_begun* */
#define TP_RING_SLOTS_DEFAULT 65536u      /* 2 MiB of events per thread */
#define TP_RING_SLOTS_MIN     64u
#define TP_RING_SLOTS_MAX     (1u << 24) /* 512 MiB: the most a recorder maps for one ring */
/* Region name ids a process may use (1..TP_NAMES_MAX; the last one stands
 * for every name beyond: "(other)"). A recorder retires a ring that names
 * more. */
#define TP_NAMES_MAX 65536u
/* The seals a ring's memfd must carry before it is handed over, so that its
 * producer can't shrink it under the recorder's mapping (SIGBUS) or grow it. */
#define TP_RING_SEALS       (F_SEAL_SHRINK | F_SEAL_GROW)
#define TP_NAME_MAX         200
#define TP_CUDA_VISIBLE_MAX 512 /* 8 GPU UUIDs and their commas take 327 */

/* A TP_EV_BEGIN's value where C code opened the region through its call
 * site (tp_region_begin, TP_SCOPE): a pair costs its thread tens of ns, not
 * the hundreds a binding's (Python's `with region`) does; what the recorder
 * weighs trainprof's cost by. */
#define TP_BEGIN_IN_C 1

enum tp_event_kind {
    TP_EV_BEGIN = 1,    /* a region opens: name_id; value: TP_BEGIN_IN_C or 0 */
    TP_EV_END = 2,      /* the innermost region closes: name_id */
    TP_EV_STEP = 3,     /* an explicit step boundary */
    TP_EV_EPOCH = 4,    /* an explicit epoch boundary: value = epoch number */
    TP_EV_NAME = 5,     /* name_id's text follows in the next slots; aux = length */
    TP_EV_SAMPLES = 6,  /* a batch of value samples was fetched for the current step */
    TP_EV_DEVICE = 7,   /* name_id's device time: value ns, for the region begun at t_ns */
    TP_EV_RANK = 8,     /* the process's rank: value; aux = local rank | world size << 32 */
    TP_EV_STEP_END = 9, /* the open step ended at t_ns, and no step begins there */
    TP_EV_FRAME = 10,   /* a Python frame's text follows (lib/stacks.h) */
    TP_EV_STACK = 11,   /* a sampled stack; its frames follow (lib/stacks.h) */
    TP_EV_FACT = 12,    /* "key=value" follows: what the script does (lib/facts.h); aux = length */
    /* the GPU memory allocator's figure name_id (trainprof.h's TP_DEVMEM_*): value */
    TP_EV_DEVICE_MEMORY = 13,
};

typedef struct tp_event {
    uint64_t t_ns; /* CLOCK_MONOTONIC ns, or the TSC marked TP_TIME_TSC (clock.h) */
    uint32_t kind;
    uint32_t name_id;
    int64_t value;
    uint64_t aux;
} tp_event;

typedef struct tp_ring_header {
    uint32_t magic;
    uint32_t version;
    uint32_t capacity; /* slots, a power of two */
    int32_t pid;
    int32_t tid;
    int32_t rank, local_rank, world_size; /* -1 when unknown */
    char thread_name[16];
    /* the process's CUDA_VISIBLE_DEVICES when the ring was made (which GPUs,
     * in which order, its device ordinals name), cut to fit; unset: !set */
    int32_t cuda_visible_devices_set;
    char cuda_visible_devices[TP_CUDA_VISIBLE_MAX];
    _Alignas(64) _Atomic uint64_t head; /* next slot the producer writes */
    _Alignas(64) _Atomic uint64_t tail; /* next slot the consumer reads */
    _Alignas(64) _Atomic uint64_t dropped;
    _Atomic uint32_t open_name; /* innermost open region's name_id, 0 for none */
    /* 1 while the thread runs trainprof's own work in C (tp_own_work): read
     * by the process's stack sampler with open_name (one 8-byte read) */
    _Atomic uint32_t in_own_work;
    /* Written by the recorder, read by the process's stack sampler: how many
     * times it asked for one stack of every thread of the process (a stall
     * seen while stack sampling is off); each new count is served once.
     * The only field the recorder writes but the tail. */
    _Atomic uint32_t stacks_wanted;
    /* Set by the producer as its thread exits, after its last event: the
     * recorder drains the ring a last time and lets it go, so that the rings
     * it holds are those of live threads. */
    _Atomic uint32_t closed;
    /* Written by the recorder: the latest capture window it asks for
     * (lib/ops_window.h). The fields first, then ops_seq (release); a
     * process reads ops_seq (acquire) at each step it marks and, when it
     * changed, the fields: begin a window of ops_steps steps when its count
     * of steps reaches ops_first_step, for reason ops_reason. */
    _Atomic uint64_t ops_first_step;
    _Atomic uint32_t ops_steps;
    _Atomic uint32_t ops_reason;
    _Atomic uint32_t ops_seq;
    /* Written by the process at each capture window it begins on this
     * thread (tp_ops_begun): its step count then, and then (release) how
     * many it began. A process that ends with more begun than it sent lost
     * the last one with it (a SIGKILL): the recorder says so. */
    _Atomic uint64_t ops_begun_step;
    _Atomic uint32_t ops_begun;
} tp_ring_header;

#define TP_RING_HEADER_SIZE 4096u
_Static_assert(sizeof(tp_ring_header) <= TP_RING_HEADER_SIZE, "the header fits its page");

/* A process's own page: a sealed memfd (TP_RING_SEALS) of
 * TP_PROC_PAGE_BYTES handed over once, as its connection's first message
 * (tag "proc"), and kept mapped by the recorder while the connection lasts.
 * It carries what the process counts where no ring can: the threads whose
 * ring could not be handed over (the socket full: a recorder starved of
 * CPU; no memory for a ring), and the capture windows likewise, which the
 * recorder reads as the connection closes. Nothing has to reach the recorder when the count grows,
 * so a process that ends while its recorder is behind loses none of it (told through later rings
 * and once more at exit before: 1,254 of 5,000 threads were lost so, beside five CPU burners on two
 * cores). The recorder takes the count as the process's claim, saturating, and trusts nothing else
 * in it but its size. */
#define TP_PROC_MAGIC      0x43505054u /* "TPPC" */
#define TP_PROC_VERSION    1u
#define TP_PROC_PAGE_BYTES 4096u
typedef struct tp_proc_page {
    uint32_t magic;
    uint32_t version;
    _Atomic uint64_t threads_unrecorded;
    _Atomic uint32_t windows_unsent;
    /* the step count the last of them began at (its ring's ops_begun_step),
     * written before windows_unsent grows (release) */
    _Atomic uint64_t windows_unsent_step;
} tp_proc_page;
_Static_assert(sizeof(tp_proc_page) <= TP_PROC_PAGE_BYTES, "the process page fits its page");

static inline tp_event *tp_ring_slots(tp_ring_header *h)
{
    return (tp_event *)((char *)h + TP_RING_HEADER_SIZE);
}

static inline uint64_t tp_ring_bytes(uint32_t capacity)
{
    return TP_RING_HEADER_SIZE + (uint64_t)capacity * sizeof(tp_event);
}

/* Producer: true when n more slots fit; otherwise counts one dropped event
 * and returns false. The producer then writes slots head..head+n-1 (indices
 * masked with capacity-1) and publishes them with a release store of head. */
static inline bool tp_ring_has_room(tp_ring_header *h, uint64_t head, uint32_t n)
{
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    if (head - tail + n <= h->capacity)
        return true;
    atomic_store_explicit(&h->dropped, atomic_load_explicit(&h->dropped, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return false;
}

#endif
