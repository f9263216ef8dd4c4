/* ring_events.h: one training thread's ring events turned into the sink's
 * regions, marks and device times.
 *
 * The drain maps each ring and calls tp_ring_reader_consume every period;
 * this is the part of it that reads what the training process wrote, apart
 * from sockets and mappings so that a fuzzer can feed it anything
 * (tests/fuzz/fuzz_ring_events.c). The slots lie in memory the producer can
 * still write: each event is copied once and checked, name ids and lengths
 * are bounded, and a head that is not within one capacity ahead of the
 * reader's own tail breaks the ring. Nothing here trusts the ring header. */
#ifndef TP_RECORD_RING_EVENTS_H
#define TP_RECORD_RING_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"
#include "record/tsc_map.h"
#include "ring.h"
#include "stacks.h"
#include "trainprof.h"

#define TP_RING_OPEN_MAX    64  /* regions open at once on one thread */
#define TP_RING_LAST_FRAMES 3   /* frames of a sampler's last stack kept */
#define TP_RING_STEP_TIMES  256 /* step marks' times kept */
#define TP_RING_BATCH       64  /* closed regions handed to the sink at once */

typedef struct tp_open_region {
    uint32_t name; /* the ring's own name id */
    bool in_c;     /* opened by C code's call site (ring.h: TP_BEGIN_IN_C) */
    uint64_t start;
} tp_open_region;

/* What the reader keeps of one ring between periods. */
typedef struct tp_ring_reader {
    uint32_t capacity; /* slots, a power of two, copied once by the caller */
    uint64_t tail;     /* the next slot to read */
    uint32_t thread;   /* the sink's thread id; 0 when memory ran out */
    uint32_t *names;   /* ring name id -> sink name id (TP_RING_NAME_LOST) */
    uint32_t names_cap;
    uint32_t *frames; /* ring frame id -> sink frame id (0: lost) */
    uint32_t frames_cap;
    uint32_t frames_max; /* the highest frame id defined: the next is at most one more */
    tp_open_region open[TP_RING_OPEN_MAX];
    uint32_t depth;
    /* its process, as the kernel named it to the drain (0: unknown): the
     * process's own facts (exception.*, process.*) are stored under it */
    int32_t pid;
    /* a stack sampler's ring: the innermost frames (sink ids) and lines of
     * its last sample taken inside a region, which says where the process
     * was should it die */
    uint32_t last_frames[TP_RING_LAST_FRAMES];
    int32_t last_lines[TP_RING_LAST_FRAMES];
    uint32_t last_nframes;
    uint64_t steps; /* step marks it sent: the steps its thread began */
    /* the times of its last TP_RING_STEP_TIMES step marks: the mark that
     * made steps k at [k % TP_RING_STEP_TIMES] (a capture window lost with
     * its process is placed by them: ops_relay.h) */
    uint64_t step_ns[TP_RING_STEP_TIMES];
    uint64_t last_ns; /* its latest event's time: its process was alive then */
    /* the map of its thread's TSC stamps (NULL: none, such stamps read 0),
     * and the latest time one mapped to: one thread stamps in order, so a
     * stamp never maps before the one before it (a refresh of the map
     * between two reads of the ring moves it by nanoseconds) */
    const tp_tsc_map *clock;
    uint64_t tsc_last_ns;
    /* the steps that ended since the capture plan last took them
     * (record/ops_plan.h): how many, the slowest and all together (ns);
     * and when the open step began (0: none open) */
    uint64_t new_steps;
    int64_t new_slowest_ns, new_total_ns;
    /* regions closed since, and of them those C code opened: what the plan
     * weighs trainprof's cost by */
    uint64_t new_regions, new_c_regions;
    uint64_t step_began_ns;
    /* its GPU memory allocator's series (TP_DEVMEM_*, the sink's ids; 0 not
     * made yet), labelled by its process */
    uint32_t devmem_series[TP_DEVMEM_FIGURES];
} tp_ring_reader;

/* A ring name the sink had no memory for: its events are counted lost. */
#define TP_RING_NAME_LOST UINT32_MAX

/* Called for a TP_EV_RANK event: the process's rank, and aux (local rank |
 * world size << 32) as the ring carried them. */
typedef void (*tp_ring_rank_fn)(void *ctx, int32_t rank, uint64_t aux);

/* Reads the events from r->tail up to head out of slots (r->capacity of
 * them) into sink. Returns NULL, or why the ring broke the protocol (the
 * text in why, r->tail just after the event that broke it); the caller
 * retires a broken ring. */
const char *tp_ring_reader_consume(tp_ring_reader *r, tp_sink *sink, const tp_event *slots,
                                   uint64_t head, tp_ring_rank_fn on_rank, void *ctx, char *why,
                                   size_t cap);

/* Frees what the reader allocated (its name and frame maps). */
void tp_ring_reader_free(tp_ring_reader *r);

#endif
