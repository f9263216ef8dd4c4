/* test_ops.c: capture windows' plan (when the recorder asks for one), the
 * reading of a window a process sends (record/ops_plan.c,
 * record/ops_blob.c), and GPU kernels' names as the tables show them
 * (render/kernel_names.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "record/ops_blob.h"
#include "record/ops_plan.h"
#include "record/ops_relay.h"
#include "render/kernel_names.h"

#define MS  1000000LL
#define MIN (60LL * 1000 * MS)

static tp_ops_options defaults(void)
{
    tp_ops_options o;
    tp_ops_options_default(&o);
    return o;
}

/* n steps of step_ns each, one a period, the count going on from *count. */
static void run_steps(tp_ops_plan *p, uint64_t *count, int n, int64_t step_ns, int64_t *now)
{
    for (int i = 0; i < n; i++) {
        ++*count;
        *now += step_ns;
        tp_ops_plan_steps(p, *count, 1, step_ns, step_ns, *now);
    }
}

static void test_the_first_window_follows_the_warm_up(void **state)
{
    (void)state;
    tp_ops_options o = defaults();
    tp_ops_plan p;
    tp_ops_plan_init(&p, &o);
    tp_ops_request q;
    assert_true(tp_ops_plan_tick(&p, 0, &q));
    assert_int_equal(q.seq, 1);
    assert_int_equal(q.reason, TP_OPS_SCHEDULE);
    assert_int_equal(q.first_step, 11);
    assert_int_equal(q.steps, 5);
    assert_false(tp_ops_plan_tick(&p, 1, &q)); /* published once */
    o.off = true;
    tp_ops_plan_init(&p, &o);
    assert_false(tp_ops_plan_tick(&p, 0, &q));
    assert_false(tp_ops_plan_demand(&p, 0, &q));
}

static void test_a_slow_step_asks_for_the_next_steps_once_in_ten_minutes(void **state)
{
    (void)state;
    tp_ops_options o = defaults();
    o.every_ns = 0;
    tp_ops_plan p;
    tp_ops_plan_init(&p, &o);
    tp_ops_request q;
    tp_ops_plan_tick(&p, 0, &q);
    uint64_t count = 0;
    int64_t now = 0;
    run_steps(&p, &count, 10, 100 * MS, &now);
    /* the window's steps (11-15) and its stop's (16) are slow: not counted */
    run_steps(&p, &count, 6, 1000 * MS, &now);
    assert_false(tp_ops_plan_tick(&p, now, &q));
    run_steps(&p, &count, 30, 100 * MS, &now);
    assert_int_equal(tp_ops_plan_median_ns(&p), 100 * MS);
    ++count, now += 400 * MS; /* 4 times the median */
    tp_ops_plan_steps(&p, count, 1, 400 * MS, 400 * MS, now);
    assert_true(tp_ops_plan_tick(&p, now, &q));
    assert_int_equal(q.reason, TP_OPS_SLOW);
    assert_int_equal(q.first_step, count + 1);
    run_steps(&p, &count, 10, 100 * MS, &now);
    ++count, now += 500 * MS; /* slow again, but within 10 minutes */
    tp_ops_plan_steps(&p, count, 1, 500 * MS, 500 * MS, now);
    assert_false(tp_ops_plan_tick(&p, now, &q));
    now += 11 * MIN;
    ++count;
    tp_ops_plan_steps(&p, count, 1, 500 * MS, 500 * MS, now);
    assert_true(tp_ops_plan_tick(&p, now, &q));
    assert_int_equal(q.reason, TP_OPS_SLOW);
    /* a slow step's 3x is not reached at 2x */
    tp_ops_plan_init(&p, &o);
    count = 0, now = 0;
    tp_ops_plan_tick(&p, 0, &q);
    run_steps(&p, &count, 50, 100 * MS, &now);
    ++count, now += 11 * MIN;
    tp_ops_plan_steps(&p, count, 1, 200 * MS, 200 * MS, now);
    assert_false(tp_ops_plan_tick(&p, now, &q));
}

static void test_a_demand_takes_the_step_after_next_unless_a_window_is_due(void **state)
{
    (void)state;
    tp_ops_options o = defaults();
    tp_ops_plan p;
    tp_ops_plan_init(&p, &o);
    tp_ops_request q;
    tp_ops_plan_tick(&p, 0, &q);
    uint64_t count = 0;
    int64_t now = 0;
    run_steps(&p, &count, 5, 10 * MS, &now);
    assert_true(tp_ops_plan_demand(&p, now, &q)); /* the scheduled window at 11 serves it */
    assert_int_equal(q.reason, TP_OPS_SCHEDULE);
    assert_int_equal(q.first_step, 11);
    run_steps(&p, &count, 40, 10 * MS, &now);
    assert_true(tp_ops_plan_demand(&p, now, &q));
    assert_int_equal(q.reason, TP_OPS_DEMAND);
    assert_int_equal(q.first_step, 47);
    tp_ops_plan_ask(&p); /* from another thread: served at the tick, by the same window */
    assert_true(tp_ops_plan_tick(&p, now, &q));
    assert_int_equal(q.first_step, 47);
    assert_int_equal(q.seq, 2);
}

static void test_the_schedule_repeats_by_steps_rounded_to_1_2_5(void **state)
{
    (void)state;
    assert_int_equal(tp_ops_period_steps(30 * MIN, 100 * MS, 20), 20000); /* 18000 */
    assert_int_equal(tp_ops_period_steps(30 * MIN, 130 * MS, 20), 10000); /* 13846 */
    assert_int_equal(tp_ops_period_steps(30 * MIN, 500 * MS, 20), 5000);  /* 3600 */
    assert_int_equal(tp_ops_period_steps(30 * MIN, 10 * MIN, 20), 20);    /* at least */
    assert_int_equal(tp_ops_period_steps(0, 100 * MS, 20), 0);
    tp_ops_options o = defaults();
    o.every_ns = 10 * 1000 * MS; /* 10 s: 100 steps of 100 ms */
    tp_ops_plan p;
    tp_ops_plan_init(&p, &o);
    tp_ops_request q;
    tp_ops_plan_tick(&p, 0, &q);
    uint64_t count = 0;
    int64_t now = 0;
    uint64_t firsts[3];
    int n = 0;
    for (int i = 0; i < 400 && n < 3; i++) {
        run_steps(&p, &count, 1, 100 * MS, &now);
        if (tp_ops_plan_tick(&p, now, &q))
            firsts[n++] = q.first_step;
    }
    assert_int_equal(n, 3);
    assert_int_equal(firsts[0], 111);
    assert_int_equal(firsts[1], 211);
    assert_int_equal(firsts[2], 311);
}

/* trainprof's own cost, estimated live: regions at TP_OPS_REGION_COST_NS
 * each (TP_OPS_C_REGION_COST_NS those C code opened) over the steps' time; over TP_OPS_BUDGET the
 * plan backs off for good (no slow-step window); a window's cost only after a minute of steps. */
static void test_the_plan_backs_off_over_its_budget(void **state)
{
    (void)state;
    tp_ops_options o = defaults();
    tp_ops_plan p;
    tp_ops_plan_init(&p, &o);
    uint64_t count = 0;
    int64_t now = 0;
    for (int i = 0; i < 100; i++) { /* 1 ms steps, 45 regions each: 0.9 % */
        run_steps(&p, &count, 1, MS, &now);
        tp_ops_plan_regions(&p, 45, 0);
    }
    assert_false(tp_ops_plan_cost(&p, now));
    for (int i = 0; i < 100; i++) { /* now 105 a step: 1.5 % on average */
        run_steps(&p, &count, 1, MS, &now);
        tp_ops_plan_regions(&p, 105, 0);
    }
    /* the same regions opened by C code's call sites cost a quarter: 0.4 % */
    tp_ops_plan c;
    tp_ops_plan_init(&c, &o);
    uint64_t c_count = 0;
    int64_t c_now = 0;
    for (int i = 0; i < 200; i++) {
        run_steps(&c, &c_count, 1, MS, &c_now);
        tp_ops_plan_regions(&c, 105, 105);
    }
    assert_false(tp_ops_plan_cost(&c, c_now));
    assert_true(tp_ops_plan_cost(&p, now));
    assert_true(p.backoff.at_ns == now && !p.backoff.windows);
    assert_true(p.backoff.share > TP_OPS_BUDGET && p.backoff.share < 0.02);
    assert_true(p.o.on_slow == 0 && p.o.every_ns == 4 * o.every_ns);
    /* the latest request again, new to the processes, with the device times'
     * period: the same window (a process opens none for it) */
    assert_int_equal(p.current.reason & TP_OPS_REASON_MASK, TP_OPS_SCHEDULE);
    assert_int_equal(TP_OPS_DEVICE_EVERY_OF(p.current.reason), TP_OPS_DEVICE_EVERY);
    assert_false(p.published);
    tp_ops_request again;
    assert_true(tp_ops_plan_tick(&p, now, &again) && again.first_step == o.first_step);
    assert_false(tp_ops_plan_cost(&p, now)); /* once */
    tp_ops_plan_ask(&p);                     /* and every request after it carries the period */
    assert_true(tp_ops_plan_tick(&p, now, &again));
    assert_int_equal(again.reason & TP_OPS_REASON_MASK, TP_OPS_DEMAND);
    assert_int_equal(TP_OPS_DEVICE_EVERY_OF(again.reason), TP_OPS_DEVICE_EVERY);
    /* a window that took 2 s over 5 steps of 1 ms: judged only after a minute of steps */
    tp_ops_plan q;
    tp_ops_plan_init(&q, &o);
    count = 0, now = 0;
    run_steps(&q, &count, 10, MS, &now);
    run_steps(&q, &count, 1, 2000 * MS, &now); /* step 11: in the first window */
    run_steps(&q, &count, 100, MS, &now);
    assert_false(tp_ops_plan_cost(&q, now));
    run_steps(&q, &count, 60000, MS, &now); /* a minute on: 2 s of 62 */
    assert_true(tp_ops_plan_cost(&q, now));
    assert_true(q.backoff.windows);
}

/* A blob as trainprof/_ops.py writes it: strings "", "aten::mm", one event. */
static size_t make_blob(uint8_t *b, uint32_t nevents_claimed, uint32_t name)
{
    memset(b, 0, 512);
    memcpy(b, "TPOP", 4);
    uint32_t u[] = {1, 2, 5};
    memcpy(b + 4, u, sizeof u);
    uint64_t first = 20;
    memcpy(b + 16, &first, 8);
    int64_t start = 1000, end = 9000;
    memcpy(b + 32, &start, 8);
    memcpy(b + 40, &end, 8);
    const char *strings[] = {"", "aten::mm\xff"};
    size_t off = TP_OPS_HEADER_BYTES;
    for (int i = 0; i < 2; i++) {
        uint32_t len = (uint32_t)strlen(strings[i]);
        memcpy(b + off, &len, 4);
        memcpy(b + off + 4, strings[i], len);
        off += 4 + len;
    }
    uint32_t counts[] = {2, (uint32_t)(off - TP_OPS_HEADER_BYTES), nevents_claimed, 0};
    memcpy(b + 48, counts, sizeof counts);
    uint32_t note = UINT32_MAX;
    memcpy(b + 80, &note, 4);
    uint32_t ev[6] = {1, name, UINT32_MAX, 1, (uint32_t)-1, 0};
    memcpy(b + off, ev, sizeof ev);
    int64_t times[6] = {0, 2000, 500, 1, 0, 0};
    memcpy(b + off + 24, times, sizeof times);
    return off + TP_OPS_EVENT_BYTES;
}

static void test_a_window_is_read_and_a_crafted_one_refused(void **state)
{
    (void)state;
    uint8_t b[512];
    char why[200];
    size_t len = make_blob(b, 1, 1);
    tp_ops_window *w = tp_ops_blob_parse(b, len, why, sizeof why);
    assert_non_null(w);
    assert_int_equal(w->reason, 2);
    assert_int_equal(w->first_step, 20);
    assert_int_equal(w->nevents, 1);
    assert_string_equal(w->strings[w->events[0].name], "aten::mm\xef\xbf\xbd"); /* made UTF-8 */
    assert_int_equal(w->events[0].dur_ns, 500);
    tp_ops_window_free(w);
    assert_null(tp_ops_blob_parse(b, len - 1, why, sizeof why)); /* cut */
    len = make_blob(b, 2, 1);
    assert_null(tp_ops_blob_parse(b, len, why, sizeof why)); /* more events than bytes */
    len = make_blob(b, UINT32_MAX, 1);
    assert_null(tp_ops_blob_parse(b, len, why, sizeof why));
    len = make_blob(b, 1, 7); /* a string it does not have */
    assert_null(tp_ops_blob_parse(b, len, why, sizeof why));
    assert_non_null(strstr(why, "out of bounds"));
    len = make_blob(b, 1, 1);
    b[0] = 'X';
    assert_null(tp_ops_blob_parse(b, len, why, sizeof why));
}

/* Names as CUPTI gave them on an H200 (torch 2.11): mangled, cut mangled
 * (the run file keeps 1,000 bytes), and whole signatures. */
/* A header and n zero-length strings, no event: what a hostile process
 * sent to make the recorder keep 16.7 M strings (64 MiB of them). */
static uint8_t *empty_strings_blob(uint32_t n, size_t *len)
{
    *len = TP_OPS_HEADER_BYTES + 4 * (size_t)n;
    uint8_t *b = calloc(1, *len);
    assert_non_null(b);
    memcpy(b, "TPOP", 4);
    uint32_t u[] = {1, 2, 5};
    memcpy(b + 4, u, sizeof u);
    int64_t start = 1000, end = 9000;
    memcpy(b + 32, &start, 8);
    memcpy(b + 40, &end, 8);
    uint32_t counts[] = {n, 4 * n, 0, 0};
    memcpy(b + 48, counts, sizeof counts);
    uint32_t note = UINT32_MAX;
    memcpy(b + 80, &note, 4);
    return b;
}

static void test_a_window_is_bounded_whatever_its_blob_claims(void **state)
{
    (void)state;
    char why[200];
    size_t len;
    uint8_t *b = empty_strings_blob(TP_OPS_STRINGS_MAX, &len);
    tp_ops_window *w = tp_ops_blob_parse(b, len, why, sizeof why);
    assert_non_null(w); /* at the bound: kept */
    tp_ops_window_free(w);
    free(b);
    b = empty_strings_blob(TP_OPS_STRINGS_MAX + 1, &len);
    assert_null(tp_ops_blob_parse(b, len, why, sizeof why));
    assert_non_null(strstr(why, "more events or strings"));
    free(b);
    /* a text of 1,000 control characters: 1,000 bytes kept once escaped, not 4,000 */
    b = empty_strings_blob(1, &len);
    b = realloc(b, len + 1000);
    assert_non_null(b);
    uint32_t counts[] = {1, 4 + 1000};
    memcpy(b + 48, counts, sizeof counts);
    uint32_t n = 1000;
    memcpy(b + TP_OPS_HEADER_BYTES, &n, 4);
    memset(b + TP_OPS_HEADER_BYTES + 4, 1, 1000);
    w = tp_ops_blob_parse(b, len + 1000, why, sizeof why);
    assert_non_null(w);
    assert_true(strlen(w->strings[0]) <= TP_OPS_TEXT_MAX &&
                strncmp(w->strings[0], "\\x01", 4) == 0);
    tp_ops_window_free(w);
    free(b);
    uint8_t small[512];
    len = make_blob(small, 1, 1);
    uint64_t first = UINT64_MAX; /* a count no process makes */
    memcpy(small + 16, &first, 8);
    assert_null(tp_ops_blob_parse(small, len, why, sizeof why));
}

/* A memfd holding a blob, as a process hands it over. */
static int blob_fd(void)
{
    uint8_t b[512];
    size_t len = make_blob(b, 1, 1);
    int fd = memfd_create("window", 0);
    assert_true(fd >= 0 && write(fd, b, len) == (ssize_t)len);
    return fd;
}

/* Windows nobody asked for cost the recorder nothing: one a request a process. */
static void test_windows_nobody_asked_for_are_refused(void **state)
{
    (void)state;
    char err[256], why[200], *root = fx_root();
    tp_ops_options o = defaults();
    tp_ops_relay *r = tp_ops_relay_new(root, &o, err, sizeof err);
    assert_non_null(r);
    tp_sink *sink = tp_sink_new(0);
    /* the first scheduled window is asked for from the start: one each */
    assert_null(tp_ops_relay_take(r, sink, blob_fd(), 100, NULL, NULL, why, sizeof why));
    assert_null(tp_ops_relay_take(r, sink, blob_fd(), 200, NULL, NULL, why, sizeof why));
    assert_non_null(tp_ops_relay_take(r, sink, blob_fd(), 100, NULL, NULL, why, sizeof why));
    assert_non_null(strstr(why, "nobody asked for"));
    tp_ring_reader steps = {.steps = 100, .new_steps = 100, .new_total_ns = 100000000};
    tp_ops_relay_feed(r, &steps, 1000000000); /* past the first window: a demand is a new one */
    tp_ops_relay_ask(r);
    assert_true(tp_ops_relay_tick(r, 1000000000));
    assert_null(tp_ops_relay_take(r, sink, blob_fd(), 100, NULL, NULL, why, sizeof why));
    assert_non_null(tp_ops_relay_take(r, sink, blob_fd(), 100, NULL, NULL, why, sizeof why));
    tp_sink_free(sink);
    tp_ops_relay_free(r);
    free(root);
}

static void test_kernel_names_demangled_and_cut_where_they_stay_apart(void **state)
{
    (void)state;
    char out[1024];
#ifdef TP_HAVE_CXA_DEMANGLE
    tp_kernel_demangled(out, sizeof out, "_ZN2at6native13reduce_kernelILi512ELi1EEEvv");
    assert_string_equal(out, "void at::native::reduce_kernel<512, 1>()");
#endif
    /* cut mid-way: the outer name, its arguments elided */
    tp_kernel_demangled(
        out, sizeof out,
        "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_1");
    assert_string_equal(out, "cutlass__5x_cudnn::Kernel<...>");
    tp_kernel_demangled(out, sizeof out, "sm90_xmma_wgrad"); /* not mangled: as it is */
    assert_string_equal(out, "sm90_xmma_wgrad");
    tp_kernel_demangled(out, sizeof out, "_Z999999999999x"); /* a crafted length */
    assert_string_equal(out, "_Z999999999999x");
    const char *sig = "void at::native::(anonymous namespace)::max_pool_backward_nhwc<float, "
                      "float>(int, const float*, long)";
    tp_kernel_short(out, sizeof out, sig, true, 60);
    assert_string_equal(out, "at::native::max_pool_backward_nhwc");
    tp_kernel_short(out, sizeof out, sig, false, 60);
    assert_string_equal(out, "at::native::max_pool_backward_nhwc<float, float>");
    tp_kernel_short(out, sizeof out, sig, false, 20); /* its start and its end */
    assert_string_equal(out, "at::nati...t, float>");
    /* two kernels alike but for their template arguments keep them */
    const char *rows[] = {"void at::native::elementwise_kernel<128, 4, A>(int)",
                          "void at::native::elementwise_kernel<128, 4, B>(int)",
                          "void at::native::reduce_kernel<512, 1>(int)"};
    char column[3][160];
    tp_kernel_column(column, rows, 3, 60);
    assert_string_equal(column[0], "at::native::elementwise_kernel<128, 4, A>");
    assert_string_equal(column[1], "at::native::elementwise_kernel<128, 4, B>");
    assert_string_equal(column[2], "at::native::reduce_kernel");
    char huge[5000]; /* a crafted name: bounded, never read past */
    memset(huge, '<', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    tp_kernel_short(out, sizeof out, huge, true, 60);
    assert_true(strlen(out) <= 60);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_first_window_follows_the_warm_up),
        cmocka_unit_test(test_a_slow_step_asks_for_the_next_steps_once_in_ten_minutes),
        cmocka_unit_test(test_a_demand_takes_the_step_after_next_unless_a_window_is_due),
        cmocka_unit_test(test_the_schedule_repeats_by_steps_rounded_to_1_2_5),
        cmocka_unit_test(test_the_plan_backs_off_over_its_budget),
        cmocka_unit_test(test_a_window_is_read_and_a_crafted_one_refused),
        cmocka_unit_test(test_a_window_is_bounded_whatever_its_blob_claims),
        cmocka_unit_test(test_windows_nobody_asked_for_are_refused),
        cmocka_unit_test(test_kernel_names_demangled_and_cut_where_they_stay_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
