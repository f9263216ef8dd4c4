/* test_clock.c: the recorder's map of the training threads' TSC stamps
 * (record/tsc_map.h) against the monotonic clock it stands for, and a
 * ring's TSC stamps read in order whatever the map's refreshes did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "harness.h"
#include "record/ring_events.h"
#include "record/tsc_map.h"

#if defined(__x86_64__)
static uint64_t tsc_stamp(void) { return __rdtsc() | TP_TIME_TSC; }
#endif

static uint64_t gap(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* A stamp taken now maps to within 50 us of a monotonic read beside it
 * (the map's own error is nanoseconds; the rest is a busy machine's
 * preemption between the two reads), before and after a refresh, and later
 * stamps map later. */
static void test_a_tsc_stamp_maps_to_the_monotonic_clock(void **state)
{
    (void)state;
#if defined(__x86_64__)
    tp_tsc_map m;
    tp_tsc_map_init(&m);
    assert_true(m.ok && m.ns_per_tick > 0);
    for (int round = 0; round < 3; round++) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 20; i++) { /* the closest of 20 pairs of reads */
            uint64_t stamp = tsc_stamp(), ns = tp_clock_mono_ns();
            uint64_t d = gap(tp_tsc_map_ns(&m, stamp), ns);
            best = d < best ? d : best;
        }
        assert_true(best < 50000);
        uint64_t a = tsc_stamp(), b = a + 3000;
        assert_true(tp_tsc_map_ns(&m, b) > tp_tsc_map_ns(&m, a));
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
        tp_tsc_map_refresh(&m);
    }
#else
    skip();
#endif
}

/* A monotonic stamp passes as it is; a TSC stamp without a map reads 0; a
 * crafted one far away stays in the range times have. The map is made by
 * hand: where stamp 0 maps with a measured one depends on the TSC's origin
 * and on the rate two anchors 2 ms apart gave, which a busy machine can
 * put low enough to map it after the boot (it did once, under TSan beside
 * the Python tests: 2026-12-03). */
static void test_stamps_the_map_can_t_place(void **state)
{
    (void)state;
    assert_int_equal(tp_tsc_map_ns(NULL, 12345), 12345);
    assert_int_equal(tp_tsc_map_ns(NULL, 12345 | TP_TIME_TSC), 0);
    tp_tsc_map m = {.ok = true, .ns_per_tick = 0.5}; /* a 2 GHz TSC (exact in binary) */
    m.latest = m.next = (tp_tsc_anchor){.tsc = 10000000000ull, .ns = 3000000000ull};
    m.older = (tp_tsc_anchor){.tsc = 5000000000ull, .ns = 1000000000ull};
    uint64_t far = tp_tsc_map_ns(&m, UINT64_MAX); /* centuries on, in range */
    assert_true(far > m.latest.ns && far <= UINT64_MAX >> 1);
    assert_int_equal(tp_tsc_map_ns(&m, TP_TIME_TSC), 0); /* 2 s before the clock's start */
    assert_int_equal(tp_tsc_map_ns(&m, 4000000000ull | TP_TIME_TSC), 0); /* its start */
    assert_int_equal(tp_tsc_map_ns(&m, 6000000000ull | TP_TIME_TSC), 1000000000ull);
}

/* A ring whose region ends at a TSC stamp before its begin's (a map
 * refreshed between the two reads moves a stamp by nanoseconds; a crafted
 * ring by anything): the end maps to the begin's time, never before it. A
 * monotonic stamp in the same ring is left as it is. */
static void test_a_ring_s_tsc_stamps_map_in_order(void **state)
{
    (void)state;
    tp_tsc_map m;
    tp_tsc_map_init(&m);
    if (!m.ok) {
        skip();
        return;
    }
    uint64_t t = m.latest.tsc;
    tp_event slots[8] = {
        {.t_ns = t | TP_TIME_TSC, .kind = TP_EV_NAME, .name_id = 1, .aux = 5},
        {.t_ns = 0},
        {.t_ns = (t + 5000) | TP_TIME_TSC, .kind = TP_EV_BEGIN, .name_id = 1},
        {.t_ns = (t + 1000) | TP_TIME_TSC, .kind = TP_EV_END, .name_id = 1},
        {.t_ns = m.latest.ns + 1000000, .kind = TP_EV_BEGIN, .name_id = 1},
        {.t_ns = m.latest.ns + 2000000, .kind = TP_EV_END, .name_id = 1},
    };
    memcpy(&slots[1], "phase", 5);
    tp_sink *sink = tp_sink_new(0);
    tp_ring_reader r = {.capacity = 8, .clock = &m};
    r.thread = tp_sink_thread(sink, &(tp_thread_info){.pid = 1, .tid = 1, .rank = -1});
    char why[160];
    assert_null(tp_ring_reader_consume(&r, sink, slots, 6, NULL, NULL, why, sizeof why));
    tp_batch b = {0};
    tp_sink_take(sink, &b);
    assert_int_equal(b.intervals.len, 2);
    const tp_interval *tsc = &b.intervals.items[0], *mono = &b.intervals.items[1];
    assert_int_equal(tsc->start_ns, tp_tsc_map_ns(&m, (t + 5000) | TP_TIME_TSC));
    assert_int_equal(tsc->end_ns, tsc->start_ns);
    assert_true(mono->start_ns == m.latest.ns + 1000000 && mono->end_ns == m.latest.ns + 2000000);
    tp_batch_free(&b);
    tp_ring_reader_free(&r);
    tp_sink_free(sink);
}

/* The process stamps with the TSC where the kernel keeps time by it, and
 * not where TRAINPROF_TSC=0 says no. */
static void test_the_tsc_is_chosen_as_the_kernel_s_clock_and_the_variable_say(void **state)
{
    (void)state;
    char source[16] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (!fgets(source, sizeof source, f))
            source[0] = '\0';
        fclose(f);
    }
    unsetenv("TRAINPROF_TSC");
    tp_clock_choose();
#if defined(__x86_64__)
    assert_int_equal(tp_clock_tsc_on, strcmp(source, "tsc\n") == 0);
#else
    assert_int_equal(tp_clock_tsc_on, 0);
#endif
    setenv("TRAINPROF_TSC", "0", 1);
    tp_clock_choose();
    assert_int_equal(tp_clock_tsc_on, 0);
    assert_true(!(tp_clock_stamp() & TP_TIME_TSC));
    unsetenv("TRAINPROF_TSC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_tsc_stamp_maps_to_the_monotonic_clock),
        cmocka_unit_test(test_stamps_the_map_can_t_place),
        cmocka_unit_test(test_a_ring_s_tsc_stamps_map_in_order),
        cmocka_unit_test(test_the_tsc_is_chosen_as_the_kernel_s_clock_and_the_variable_say),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
