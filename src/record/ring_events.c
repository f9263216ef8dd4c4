/* ring_events.c: reading one ring's events into the sink. */
#include "record/ring_events.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "facts.h"
#include "util/utf8.h"
#include "util/grow.h"

_Static_assert(TP_FRAME_TEXT_MAX >= TP_NAME_MAX, "one buffer holds a name's or a frame's text");

/* Maps the ring's name id local (1..TP_NAMES_MAX, checked by the caller)
 * to the sink's, the text made valid UTF-8 whatever the ring held. */
static void map_name(tp_ring_reader *r, tp_sink *sink, uint32_t local, const char *text)
{
    if (local >= r->names_cap) {
        size_t old = r->names_cap, ncap = r->names_cap;
        uint32_t *n = tp_grow_try(r->names, local, &ncap, sizeof *n);
        if (!n) {
            tp_sink_lost(sink, TP_LOST_OTHER, 1); /* its regions are skipped as unnamed */
            return;
        }
        memset(n + old, 0, (ncap - old) * sizeof *n);
        r->names = n;
        r->names_cap = (uint32_t)ncap;
    }
    char clean[TP_NAME_MAX * 4 + 1]; /* each byte may become 4 (\xNN) */
    tp_text_escape(clean, sizeof clean, text);
    uint32_t id = tp_sink_name(sink, clean);
    r->names[local] = id ? id : TP_RING_NAME_LOST;
}

/* Maps the ring's frame id local (1..TP_FRAMES_MAX, checked by the caller)
 * to the sink's. */
static void map_frame(tp_ring_reader *r, tp_sink *sink, uint32_t local, const char *text)
{
    if (local >= r->frames_cap) {
        size_t old = r->frames_cap, ncap = r->frames_cap;
        uint32_t *n = tp_grow_try(r->frames, local, &ncap, sizeof *n);
        if (!n) {
            tp_sink_lost(sink, TP_LOST_OTHER, 1);
            return;
        }
        memset(n + old, 0, (ncap - old) * sizeof *n);
        r->frames = n;
        r->frames_cap = (uint32_t)ncap;
    }
    /* "function\nfile": each part one line of plain text, the newline between */
    char clean[TP_FRAME_TEXT_MAX * 4 + 2], part[TP_FRAME_TEXT_MAX + 1];
    const char *nl = strchr(text, '\n');
    size_t head = nl ? (size_t)(nl - text) : strlen(text);
    snprintf(part, sizeof part, "%.*s", (int)(head < TP_FRAME_TEXT_MAX ? head : TP_FRAME_TEXT_MAX),
             text);
    tp_text_escape(clean, sizeof clean / 2, part);
    if (nl) {
        size_t len = strlen(clean);
        clean[len++] = '\n';
        tp_text_escape(clean + len, sizeof clean - len, nl + 1);
    }
    r->frames[local] = tp_sink_frame(sink, clean);
}

/* The sink's name for the ring's id local: 0 when the ring never named it
 * (its regions are skipped), TP_RING_NAME_LOST when memory ran out. */
static uint32_t sink_name(const tp_ring_reader *r, uint32_t local)
{
    return local < r->names_cap ? r->names[local] : 0;
}

/* A TP_EV_DEVICE event: a region's device time, its name the ring's. */
static void device_span(tp_ring_reader *r, tp_sink *sink, const tp_event *e)
{
    uint32_t name = sink_name(r, e->name_id);
    if (name && e->value >= 0)
        tp_sink_device_span(sink, r->thread, name == TP_RING_NAME_LOST ? 0 : name, e->t_ns,
                            (uint64_t)e->value);
}

/* A TP_EV_DEVICE_MEMORY event: figure e->name_id's value into its series,
 * made on first use; an unknown figure or a negative value is skipped. */
static void device_memory(tp_ring_reader *r, tp_sink *sink, const tp_event *e)
{
    static const char *const metric[TP_DEVMEM_FIGURES] = {
        [TP_DEVMEM_ALLOCATED] = TP_METRIC_CUDA_ALLOCATED_BYTES,
        [TP_DEVMEM_RESERVED] = TP_METRIC_CUDA_RESERVED_BYTES,
        [TP_DEVMEM_PEAK_ALLOCATED] = TP_METRIC_CUDA_PEAK_ALLOCATED_BYTES,
        [TP_DEVMEM_PEAK_RESERVED] = TP_METRIC_CUDA_PEAK_RESERVED_BYTES,
        [TP_DEVMEM_CAPACITY] = TP_METRIC_CUDA_CAPACITY_BYTES,
        [TP_DEVMEM_ALLOC_RETRIES] = TP_METRIC_CUDA_ALLOC_RETRIES,
        [TP_DEVMEM_OOMS] = TP_METRIC_CUDA_OOMS,
    };
    if (e->name_id >= TP_DEVMEM_FIGURES || e->value < 0)
        return;
    uint32_t *series = &r->devmem_series[e->name_id];
    if (*series == 0) {
        char labels[48];
        tp_labels_pid(labels, sizeof labels, (long)r->pid);
        *series = tp_sink_series(sink, metric[e->name_id], labels);
        if (*series == 0)
            return; /* out of memory: the sink counted it */
    }
    tp_sink_sample(sink, *series, e->t_ns, (double)e->value);
}

/* Regions closed in one read and not handed to the sink yet (their times
 * CLOCK_MONOTONIC): handed over when full, before a mark, and at the end. */
typedef struct region_batch {
    tp_interval v[TP_RING_BATCH];
    uint32_t n;
} region_batch;

static void hand_over(region_batch *b, tp_sink *sink)
{
    if (b->n)
        tp_sink_intervals(sink, b->v, b->n);
    b->n = 0;
}

/* Closes the innermost open region with this name, and any opened after it
 * whose end was lost to a full ring: into the batch. */
static void close_region(tp_ring_reader *r, region_batch *b, tp_sink *sink, uint32_t local,
                         uint64_t t)
{
    for (uint32_t k = r->depth; k-- > 0;) {
        if (r->open[k].name != local)
            continue;
        uint32_t name = sink_name(r, local);
        if (name) { /* a lost name reaches the sink as 0: counted lost there */
            if (b->n == TP_RING_BATCH)
                hand_over(b, sink);
            b->v[b->n++] = (tp_interval){r->thread, name == TP_RING_NAME_LOST ? 0 : name, k,
                                         r->open[k].start, t};
        }
        r->depth = k;
        r->new_regions++;
        if (r->open[k].in_c)
            r->new_c_regions++;
        return;
    }
}

/* A step's or epoch's mark, after the regions closed before it (the live
 * view splits the regions by the marks as they come). */
static void mark(const tp_ring_reader *r, region_batch *b, tp_sink *sink, uint32_t kind, uint64_t t,
                 int64_t value)
{
    hand_over(b, sink);
    tp_sink_mark(sink, r->thread, kind, t, value);
}

/* Copies the payload of an event (len bytes in the slots from tail) out of
 * the ring into out (room for len bytes). */
static void copy_payload(const tp_ring_reader *r, const tp_event *slots, uint64_t tail, size_t len,
                         void *out)
{
    uint32_t mask = r->capacity - 1;
    for (size_t off = 0; off < len; off += sizeof(tp_event)) {
        size_t n = len - off < sizeof(tp_event) ? len - off : sizeof(tp_event);
        memcpy((char *)out + off, &slots[(tail + off / sizeof(tp_event)) & mask], n);
    }
}

/* The open step (if any) ended at t_ns: counted for the capture plan. */
static void step_ended(tp_ring_reader *r, uint64_t t_ns)
{
    if (r->step_began_ns && t_ns >= r->step_began_ns) {
        uint64_t span = t_ns - r->step_began_ns; /* bounded: the ring's times are the process's */
        int64_t d = span > (1ULL << 50) ? (int64_t)(1ULL << 50) : (int64_t)span;
        r->new_steps++;
        r->new_total_ns = r->new_total_ns > INT64_MAX - d ? INT64_MAX : r->new_total_ns + d;
        if (d > r->new_slowest_ns)
            r->new_slowest_ns = d;
    }
    r->step_began_ns = 0;
}

/* A process's own fact (text, its key key_len bytes) under its pid; with
 * its exception, when the process said it (proc.PID.raised_ns, since the
 * run's start): a rank whose collective failed because another raised dies
 * first by its connection, after by its exception. */
static void process_fact(const tp_ring_reader *r, tp_sink *sink, const tp_event *e,
                         const char *text, size_t key_len)
{
    char key[TP_FACT_KEY_MAX + 32];
    snprintf(key, sizeof key, "proc.%d.%.*s", (int)r->pid, (int)key_len, text);
    tp_sink_fact(sink, true, key, text + key_len + 1);
    uint64_t start = tp_sink_start_ns(sink);
    if (key_len == sizeof TP_FACT_EXCEPTION_TYPE - 1 &&
        memcmp(text, TP_FACT_EXCEPTION_TYPE, key_len) == 0 && e->t_ns > start) {
        char at[24];
        snprintf(key, sizeof key, "proc.%d." TP_META_PROC_RAISED_NS, (int)r->pid);
        snprintf(at, sizeof at, "%llu", (unsigned long long)(e->t_ns - start));
        tp_sink_fact(sink, true, key, at);
    }
}

/* A well-formed fact (text, NUL-terminated, its key key_len bytes of it)
 * where its key says: a process's GPU, the stacks it could not give, its
 * own end's facts under its pid, the rest as the run's meta. */
static void take_fact(const tp_ring_reader *r, tp_sink *sink, const tp_event *e, const char *text,
                      size_t key_len)
{
    const char *value = text + key_len + 1;
    if (key_len == sizeof TP_FACT_DEVICE - 1 &&
        memcmp(text, TP_FACT_DEVICE, key_len) == 0) { /* the process's, not the run's */
        tp_sink_thread_device(sink, r->thread, value);
        return;
    }
    if (key_len == sizeof TP_FACT_STACKS_UNAVAILABLE - 1 &&
        memcmp(text, TP_FACT_STACKS_UNAVAILABLE, key_len) == 0) {
        /* said by every process the filter covers: one row (the sink's) */
        tp_sink_unavailable(sink, TP_UNAVAILABLE_STACKS, value);
        return;
    }
    if (tp_fact_of_process(text, key_len)) { /* stored under its pid */
        if (r->pid > 0)
            process_fact(r, sink, e, text, key_len);
        return;
    }
    char key[TP_FACT_KEY_MAX + 32];
    snprintf(key, sizeof key, TP_META_FACT "%.*s", (int)key_len, text);
    tp_sink_fact(sink, false, key, value);
}

/* A TP_EV_STACK event e and its n frames (in the slots from tail) into the
 * sink. */
static void stack_event(tp_ring_reader *r, tp_sink *sink, const tp_event *e, const tp_event *slots,
                        uint64_t tail, uint32_t n)
{
    tp_stack_ref refs[TP_STACK_DEPTH_MAX];
    copy_payload(r, slots, tail, n * sizeof *refs, refs);
    uint32_t frames[TP_STACK_DEPTH_MAX];
    int32_t lines[TP_STACK_DEPTH_MAX];
    for (uint32_t i = 0; i < n; i++) {
        frames[i] = refs[i].frame < r->frames_cap ? r->frames[refs[i].frame] : 0;
        lines[i] = refs[i].line > 0 ? refs[i].line : 0;
    }
    uint32_t phase = sink_name(r, e->name_id);
    uint32_t state = (e->aux & TP_STACK_ON_CPU ? TP_STACK_STATE_ON_CPU : 0) |
                     (e->aux & TP_STACK_STATE ? TP_STACK_STATE_KNOWN : 0) |
                     (e->aux & TP_STACK_TRUNCATED ? TP_STACK_STATE_TRUNCATED : 0) |
                     (e->aux & TP_STACK_OWN ? TP_STACK_STATE_OWN : 0);
    if ((e->aux & TP_STACK_BLOCKED) && (e->aux & TP_STACK_STATE) && !(e->aux & TP_STACK_ON_CPU))
        state |= TP_STACK_STATE_BLOCKED; /* a ring's word held to what can be */
    int32_t tid = e->value > 0 && e->value <= INT32_MAX ? (int32_t)e->value : 0;
    tp_sink_stack(sink, r->thread, e->t_ns, tid, phase == TP_RING_NAME_LOST ? 0 : phase, state,
                  frames, lines, n);
    if (phase && phase != TP_RING_NAME_LOST && n) { /* where it was, should it die */
        r->last_nframes = n < TP_RING_LAST_FRAMES ? n : TP_RING_LAST_FRAMES;
        memcpy(r->last_frames, frames, r->last_nframes * sizeof *frames);
        memcpy(r->last_lines, lines, r->last_nframes * sizeof *lines);
    }
}

/* An event's CLOCK_MONOTONIC time from its stamp: a TSC stamp mapped, and
 * never before the ring's TSC stamp before it; the ring's latest time
 * moved up to it. */
static uint64_t event_time(tp_ring_reader *r, uint64_t stamp)
{
    uint64_t ns = stamp;
    if (stamp & TP_TIME_TSC) {
        ns = tp_tsc_map_ns(r->clock, stamp);
        ns = r->tsc_last_ns = ns > r->tsc_last_ns ? ns : r->tsc_last_ns;
    }
    if (ns > r->last_ns)
        r->last_ns = ns;
    return ns;
}

/* tp_ring_reader_consume, its closed regions into b. */
static const char *consume(tp_ring_reader *r, region_batch *b, tp_sink *sink, const tp_event *slots,
                           uint64_t head, tp_ring_rank_fn on_rank, void *ctx, char *why, size_t cap)
{
    uint32_t mask = r->capacity - 1;
    uint64_t tail = r->tail;
    if (head < tail || head - tail > r->capacity) {
        snprintf(why, cap, "its ring's head went to %llu with %llu read, in a ring of %u slots",
                 (unsigned long long)head, (unsigned long long)tail, r->capacity);
        return why;
    }
    while (tail < head) {
        tp_event e = slots[tail & mask]; /* one copy: the producer may rewrite the slot */
        tail++;
        e.t_ns = event_time(r, e.t_ns);
        switch (e.kind) {
        case TP_EV_NAME:
        case TP_EV_FRAME: {
            bool frame = e.kind == TP_EV_FRAME;
            size_t max = frame ? TP_FRAME_TEXT_MAX : TP_NAME_MAX;
            uint32_t ids = frame ? TP_FRAMES_MAX : TP_NAMES_MAX;
            size_t len = e.aux > max ? max : (size_t)e.aux;
            size_t chunks = (len + sizeof(tp_event) - 1) / sizeof(tp_event);
            if (tail + chunks > head) /* its text isn't all published: a torn name */
                break;
            if (e.name_id == 0 || e.name_id > ids) {
                snprintf(why, cap, "its ring named %s id %u (at most %u)",
                         frame ? "frame" : "region", e.name_id, ids);
                r->tail = tail;
                return why;
            }
            /* a sampler gives frame ids one after another: a jump would make
             * the recorder hold a map as large as the id (16 MiB at 2^22) */
            if (frame && e.name_id > r->frames_max + 1) {
                snprintf(why, cap, "its ring defined frame %u after frame %u (ids go one by one)",
                         e.name_id, r->frames_max);
                r->tail = tail;
                return why;
            }
            if (frame && e.name_id > r->frames_max)
                r->frames_max = e.name_id;
            char text[TP_FRAME_TEXT_MAX + 1];
            copy_payload(r, slots, tail, len, text);
            text[len] = '\0';
            tail += chunks;
            if (frame)
                map_frame(r, sink, e.name_id, text);
            else
                map_name(r, sink, e.name_id, text);
            break;
        }
        case TP_EV_FACT: {
            size_t len = e.aux > TP_FACT_TEXT_MAX ? TP_FACT_TEXT_MAX + 1 : (size_t)e.aux;
            size_t chunks = (len + sizeof(tp_event) - 1) / sizeof(tp_event);
            if (tail + chunks > head) /* not all published yet */
                break;
            char text[TP_FACT_TEXT_MAX + 2];
            size_t key_len = 0;
            if (len <= TP_FACT_TEXT_MAX)
                copy_payload(r, slots, tail, len, text);
            if (len > TP_FACT_TEXT_MAX || !tp_fact_valid(text, len, &key_len)) {
                snprintf(why, cap, "its ring sent a malformed fact (%zu bytes)", len);
                r->tail = tail;
                return why;
            }
            text[len] = '\0';
            tail += chunks;
            take_fact(r, sink, &e, text, key_len);
            break;
        }
        case TP_EV_STACK: {
            if (e.aux & TP_STACK_REPEAT) { /* no frames: the thread's last sample again */
                uint64_t v = (uint64_t)e.value;
                int32_t tid = (int32_t)(uint32_t)v;
                if (tid > 0 && (v >> 32) > 0)
                    tp_sink_stack_repeat(sink, r->thread, e.t_ns, tid, (uint32_t)(v >> 32));
                break;
            }
            uint32_t n = (uint32_t)(e.aux & 0xffffffffu);
            if (n > TP_STACK_DEPTH_MAX) {
                snprintf(why, cap, "its ring sent a stack of %u frames (at most %u)", n,
                         TP_STACK_DEPTH_MAX);
                r->tail = tail;
                return why;
            }
            size_t chunks = (n * sizeof(tp_stack_ref) + sizeof(tp_event) - 1) / sizeof(tp_event);
            if (tail + chunks > head)
                break;
            stack_event(r, sink, &e, slots, tail, n);
            tail += chunks;
            break;
        }
        case TP_EV_BEGIN:
            if (r->depth < TP_RING_OPEN_MAX)
                r->open[r->depth++] = (tp_open_region){e.name_id, e.value == TP_BEGIN_IN_C, e.t_ns};
            break;
        case TP_EV_END: close_region(r, b, sink, e.name_id, e.t_ns); break;
        case TP_EV_STEP:
            mark(r, b, sink, TP_MARK_STEP, e.t_ns, 0);
            r->step_ns[++r->steps % TP_RING_STEP_TIMES] = e.t_ns; /* steps: its count */
            step_ended(r, e.t_ns);
            r->step_began_ns = e.t_ns;
            break;
        case TP_EV_STEP_END:
            mark(r, b, sink, TP_MARK_STEP_END, e.t_ns, 0);
            step_ended(r, e.t_ns);
            break;
        case TP_EV_EPOCH:
            mark(r, b, sink, TP_MARK_EPOCH, e.t_ns, e.value);
            r->step_began_ns = 0; /* a step does not span an epoch's boundary */
            break;
        case TP_EV_DEVICE_MEMORY: device_memory(r, sink, &e); break;
        case TP_EV_SAMPLES: mark(r, b, sink, TP_MARK_SAMPLES, e.t_ns, e.value); break;
        case TP_EV_RANK:
            if (on_rank)
                on_rank(ctx, (int32_t)e.value, e.aux);
            break;
        case TP_EV_DEVICE: device_span(r, sink, &e); break;
        default: break;
        }
    }
    r->tail = tail;
    return NULL;
}

const char *tp_ring_reader_consume(tp_ring_reader *r, tp_sink *sink, const tp_event *slots,
                                   uint64_t head, tp_ring_rank_fn on_rank, void *ctx, char *why,
                                   size_t cap)
{
    region_batch b;
    b.n = 0;
    const char *broken = consume(r, &b, sink, slots, head, on_rank, ctx, why, cap);
    hand_over(&b, sink);
    return broken;
}

void tp_ring_reader_free(tp_ring_reader *r)
{
    free(r->names);
    free(r->frames);
    r->names = r->frames = NULL;
    r->names_cap = r->frames_cap = 0;
}
