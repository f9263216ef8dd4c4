/* fuzz_ring_events.c: libFuzzer target for the drain's reading of a
 * training thread's ring (record/ring_events.c), the part of the recorder
 * that reads memory a training process writes.
 *
 * The input is a ring's life: its first byte picks the capacity (8 to 1024
 * slots), then each round is a 2-byte count n of events published (up to
 * the capacity plus 2, so a head past the protocol's bound comes up) and
 * n 32-byte events copied into the slots from the current head, wrapping;
 * after each round the reader consumes up to the new head, as the drain
 * does every period. Rounds go on until the input ends or the ring breaks
 * the protocol. Then what the sink took is checked: every region's name is
 * one the sink defined, every name valid UTF-8. A crash, a sanitizer
 * report, a leak or a failed check is a finding; a broken ring is not.
 *
 * The seed corpus is real: ring_seed records emit_events' rings. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/ring_events.h"
#include "core/sink.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_rank(void *ctx, int32_t rank, uint64_t aux)
{
    (void)rank, (void)aux;
    ++*(int *)ctx;
}

static void check(const tp_batch *b)
{
    uint32_t names = 0;
    for (size_t i = 0; i < b->names.len; i++) {
        const char *text = b->names.items[i].text;
        char clean[TP_NAME_MAX * 4 + 1]; /* a name's bytes may each become \xNN */
        tp_utf8_clean(clean, sizeof clean, text);
        if (strcmp(clean, text) != 0 || b->names.items[i].id != names + 1)
            abort();
        for (const unsigned char *p = (const unsigned char *)text; *p; p++)
            if (*p < 0x20 || *p == 0x7f) /* control characters come escaped */
                abort();
        names++;
    }
    for (size_t i = 0; i < b->intervals.len; i++) {
        const tp_interval *v = &b->intervals.items[i];
        if (v->name < 1 || v->name > names || v->thread != 1 || v->end_ns < v->start_ns ||
            v->depth >= TP_RING_OPEN_MAX)
            abort();
    }
    for (size_t i = 0; i < b->device_spans.len; i++)
        if (b->device_spans.items[i].name < 1 || b->device_spans.items[i].name > names)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t capacity = 8u << (data[0] % 8);
    tp_event *slots = calloc(capacity, sizeof *slots);
    tp_sink *sink = tp_sink_new(0);
    static tp_tsc_map clock; /* the drain's map: TSC stamps mapped, crafted or not */
    static bool clock_made;
    if (!clock_made)
        tp_tsc_map_init(&clock), clock_made = true;
    tp_ring_reader r = {.capacity = capacity, .clock = &clock};
    r.thread = tp_sink_thread(sink, &(tp_thread_info){.pid = 1, .tid = 1, .rank = -1});
    uint64_t head = 0;
    int ranks = 0;
    char why[160];
    size_t at = 1;
    while (at + 2 <= size) {
        uint32_t n = (uint32_t)(data[at] | data[at + 1] << 8) % (capacity + 3);
        at += 2;
        for (uint32_t i = 0; i < n && i < capacity; i++) {
            tp_event e = {0};
            size_t take = size - at < sizeof e ? size - at : sizeof e;
            memcpy(&e, data + at, take);
            at += take;
            slots[(head + i) & (capacity - 1)] = e;
        }
        head += n;
        if (tp_ring_reader_consume(&r, sink, slots, head, on_rank, &ranks, why, sizeof why))
            break; /* a broken ring: the drain retires it */
    }
    tp_batch b = {0};
    tp_sink_take(sink, &b);
    check(&b);
    tp_batch_free(&b);
    tp_ring_reader_free(&r);
    tp_sink_free(sink);
    free(slots);
    return 0;
}
