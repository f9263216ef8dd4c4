/* test_hostile.c: training processes that attack the recorder through their
 * rings (the hostile_ring program), each beside a well-behaved one
 * (emit_events): the recorder's drain, in this process so that the
 * sanitizers watch it, must survive, record the well-behaved process in
 * full, and name the hostile one's pid among the unavailable sources. And
 * the recorder's sink when memory runs out (a real address-space limit). */
#include <spawn.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sanitized.h"
#include "record/drain.h"

extern char **environ;

static pid_t spawn(const char *env_var, const char *arg)
{
    const char *program = getenv(env_var);
    if (!program)
        fail_msg("%s is not set (run the tests through meson test)", env_var);
    char *argv[] = {(char *)program, (char *)arg, NULL};
    pid_t pid;
    if (posix_spawn(&pid, program, NULL, NULL, argv, environ) != 0)
        fail_msg("cannot run %s", program);
    return pid;
}

static int status_of(pid_t pid)
{
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static size_t intervals_named(const tp_batch *b, const char *text, uint32_t depth)
{
    uint32_t id = 0;
    for (size_t i = 0; i < b->names.len && !id; i++)
        if (strcmp(b->names.items[i].text, text) == 0)
            id = b->names.items[i].id;
    size_t n = 0;
    for (size_t i = 0; id && i < b->intervals.len; i++)
        n += b->intervals.items[i].name == id && b->intervals.items[i].depth == depth;
    return n;
}

/* Plays mode beside the well-behaved "nested" scenario, with a recorder's
 * sink and drain of their own; returns what the sink took once the drain
 * stopped, and the hostile pid. */
static void play(const char *mode, tp_batch *b, pid_t *hostile)
{
    char err[256];
    tp_sink *sink = tp_sink_new(0);
    tp_drain *drain = tp_drain_start(sink, NULL, 0, err, sizeof err);
    if (!drain)
        fail_msg("drain: %s", err);
    setenv("TRAINPROF_SOCKET", tp_drain_socket_path(drain), 1);
    *hostile = spawn("HOSTILE_RING", mode);
    pid_t good = spawn("EMIT_EVENTS", "nested");
    assert_int_equal(status_of(good), 0);
    assert_int_equal(status_of(*hostile), 0);
    tp_drain_stop(drain);
    tp_sink_close(sink); /* what is said at the end, too */
    cap_take(sink, b);
    tp_sink_free(sink);
    /* the well-behaved process, in full */
    assert_int_equal(intervals_named(b, "outer", 0), 10);
    assert_int_equal(intervals_named(b, "inner", 1), 10);
    size_t steps = 0;
    for (size_t i = 0; i < b->marks.len; i++)
        steps += b->marks.items[i].kind == TP_MARK_STEP;
    assert_int_equal(steps, 11);
}

/* Whether the sink took an unavailable source for pid whose reason says
 * text. */
static bool named(const tp_batch *b, pid_t pid, const char *text)
{
    char source[64];
    snprintf(source, sizeof source, "timings of pid %d", (int)pid);
    return cap_unavailable(b, source, text);
}

static void test_a_capacity_rewritten_after_the_handover(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("capacity", &b, &pid);
    assert_int_equal(intervals_named(&b, "hostile", 0), 20); /* before it broke the ring */
    assert_true(named(&b, pid, "ring's head went to"));
    tp_batch_free(&b);
}

static void test_an_unsealed_ring_cut_to_nothing(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("truncate", &b, &pid);
    assert_true(named(&b, pid, "not sealed"));
    tp_batch_free(&b);
}

static void test_name_ids_out_of_bounds(void **state)
{
    (void)state;
    const char *modes[] = {"name_wrap", "name_huge"};
    for (int m = 0; m < 2; m++) {
        tp_batch b = {0};
        pid_t pid;
        play(modes[m], &b, &pid);
        assert_int_equal(intervals_named(&b, "hostile", 0), 20);
        assert_int_equal(intervals_named(&b, "evil", 0), 0);
        assert_true(named(&b, pid, "named region id"));
        tp_batch_free(&b);
    }
}

static void test_a_sparse_terabyte_claiming_2_31_slots(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("sparse", &b, &pid);
    assert_true(named(&b, pid, "capacity out of bounds"));
    tp_batch_free(&b);
}

static void test_a_rewritten_tail_loses_nothing(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("tail", &b, &pid);
    assert_int_equal(intervals_named(&b, "hostile", 0), 200);
    assert_int_equal(b.unavailable.len, 0);
    tp_batch_free(&b);
}

static void test_a_frame_id_that_jumps(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("frame_jump", &b, &pid);
    assert_int_equal(intervals_named(&b, "hostile", 0), 20);
    assert_true(named(&b, pid, "defined frame 4194304 after frame 1"));
    tp_batch_free(&b);
}

static void test_facts_of_too_many_keys(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("facts", &b, &pid);
    size_t kept = 0;
    for (size_t i = 0; i < b.meta.len; i++)
        kept += strncmp(b.meta.items[i].key, "fact.flood.", 11) == 0;
    assert_int_equal(kept, TP_SINK_FACT_KEYS_MAX);
    assert_true(cap_unavailable(&b, "facts", "1976 facts the training told were not kept"));
    tp_batch_free(&b);
}

static void test_more_rings_than_a_process_may_hold(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("rings", &b, &pid);
    assert_int_equal(intervals_named(&b, "hostile", 0), 20);
    assert_true(named(&b, pid, "more than 4096 threads' rings open at once"));
    assert_true(cap_unavailable(&b, "timings of some threads", "105 threads' rings went beyond"));
    tp_batch_free(&b);
}

static void test_a_process_page_read_at_the_end_and_a_second_refused(void **state)
{
    (void)state;
    tp_batch b = {0};
    pid_t pid;
    play("proc", &b, &pid);
    assert_int_equal(intervals_named(&b, "hostile", 0), 20); /* its rings go on */
    assert_true(named(&b, pid, "it sent a second process page"));
    /* what the first page said as the process ended: 9, not the 7 it said
     * first, nor 10 with the refused page's */
    assert_true(cap_unavailable(&b, "timings", "9 threads of the training could not hand"));
    char windows[64];
    snprintf(windows, sizeof windows, "capture windows of pid %d", (int)pid);
    assert_true(cap_unavailable(&b, windows, "2 capture windows could not be handed over"));
    tp_batch_free(&b);
}

/* What the memory test's child saw: items given to the sink, taken from
 * it, and counted lost. */
typedef struct oom_tally {
    uint64_t samples_sent, samples_taken, events_sent, events_taken;
    uint64_t lost[TP_LOST_KINDS];
    uint32_t late_series, late_name; /* made after memory ran out: 0 or valid */
    bool consistent;                 /* every taken row's series, thread and name exist */
} oom_tally;

static void take_and_count(tp_sink *sink, tp_batch *b, oom_tally *t, uint32_t *series_known,
                           uint32_t *names_known)
{
    tp_sink_take(sink, b);
    for (size_t i = 0; i < b->series.len; i++)
        *series_known =
            b->series.items[i].id > *series_known ? b->series.items[i].id : *series_known;
    for (size_t i = 0; i < b->names.len; i++)
        *names_known = b->names.items[i].id > *names_known ? b->names.items[i].id : *names_known;
    for (size_t i = 0; i < b->samples.len; i++)
        t->consistent &=
            b->samples.items[i].series >= 1 && b->samples.items[i].series <= *series_known;
    for (size_t i = 0; i < b->intervals.len; i++)
        t->consistent &= b->intervals.items[i].thread == 1 && b->intervals.items[i].name >= 1 &&
                         b->intervals.items[i].name <= *names_known;
    t->samples_taken += b->samples.len;
    t->events_taken += b->intervals.len + b->marks.len;
    tp_batch_clear(b);
}

/* The child: a sink fed under an address-space limit a few MiB above what
 * the process holds, until memory runs out for samples and events. */
static void oom_child(int out)
{
    oom_tally t = {.consistent = true};
    tp_sink *sink = tp_sink_new(0);
    tp_batch b = {0};
    uint32_t series_known = 0, names_known = 0;
    uint32_t series = tp_sink_series(sink, "cpu_util_percent", "{}");
    uint32_t thread = tp_sink_thread(sink, &(tp_thread_info){.pid = 1, .tid = 1, .rank = -1});
    uint32_t name = tp_sink_name(sink, "train_batch");
    take_and_count(sink, &b, &t, &series_known, &names_known);
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lu", &pages) != 1)
        _exit(3);
    fclose(f);
    uint64_t held = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
    struct rlimit lim = {held + (16u << 20), held + (16u << 20)};
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        _exit(4);
    for (uint64_t i = 0; i < (64u << 20) && !(t.lost[TP_LOST_SAMPLES] && t.lost[TP_LOST_EVENTS]);
         i++) {
        tp_sink_sample(sink, series, i, 1.0);
        tp_sink_interval(sink, thread, name, 0, i, i + 1);
        tp_sink_mark(sink, thread, TP_MARK_STEP, i, 0);
        t.samples_sent++;
        t.events_sent += 2;
        tp_sink_losses(sink, t.lost);
    }
    /* while the sink is full: a new series and name fail or are whole */
    t.late_series = tp_sink_series(sink, "host_mem_used_bytes", "{}");
    t.late_name = tp_sink_name(sink, "a name never seen before");
    tp_sink_sample(sink, t.late_series, 1, 1.0);
    t.samples_sent++;
    take_and_count(sink, &b, &t, &series_known, &names_known);
    tp_sink_losses(sink, t.lost);
    tp_batch_free(&b);
    tp_sink_free(sink);
    _exit(write(out, &t, sizeof t) == (ssize_t)sizeof t ? 0 : 5);
}

/* Out of memory costs items, each counted, never the recorder: no abort,
 * and what was taken plus what was lost is what was sent. (The sanitizers
 * reserve terabytes of address space: under them this test is skipped.) */
static void test_memory_running_out_costs_data_not_the_recorder(void **state)
{
    (void)state;
#if TP_TEST_SANITIZED
    skip();
#endif
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        oom_child(fds[1]);
    }
    close(fds[1]);
    oom_tally t;
    ssize_t n = read(fds[0], &t, sizeof t);
    close(fds[0]);
    assert_int_equal(status_of(child), 0);
    assert_int_equal(n, sizeof t);
    assert_true(t.lost[TP_LOST_SAMPLES] > 0);
    assert_true(t.lost[TP_LOST_EVENTS] > 0);
    assert_true(t.consistent);
    assert_true(t.samples_taken + t.lost[TP_LOST_SAMPLES] == t.samples_sent);
    assert_true(t.events_taken + t.lost[TP_LOST_EVENTS] == t.events_sent);
    assert_true(t.samples_taken > 100000); /* 16 MiB held a good many before */
    if (!t.late_series || !t.late_name)
        assert_true(t.lost[TP_LOST_OTHER] >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_capacity_rewritten_after_the_handover),
        cmocka_unit_test(test_an_unsealed_ring_cut_to_nothing),
        cmocka_unit_test(test_name_ids_out_of_bounds),
        cmocka_unit_test(test_a_sparse_terabyte_claiming_2_31_slots),
        cmocka_unit_test(test_a_rewritten_tail_loses_nothing),
        cmocka_unit_test(test_a_frame_id_that_jumps),
        cmocka_unit_test(test_facts_of_too_many_keys),
        cmocka_unit_test(test_more_rings_than_a_process_may_hold),
        cmocka_unit_test(test_a_process_page_read_at_the_end_and_a_second_refused),
        cmocka_unit_test(test_memory_running_out_costs_data_not_the_recorder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
