/* test_timings.c: libtrainprof's rings end to end through the recorder's
 * drain: regions, nesting, threads, steps and epochs, a full ring that drops
 * and counts without blocking, fork, and the no-recorder case. The drain runs
 * in this process, so TSan watches it and the sink; each scenario's producer
 * is the emit_events program, as a training would be. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "record/drain.h"
#include "trainprof.h"
#include "util/fd_passing.h"

extern char **environ;

static tp_sink *sink;
static tp_drain *drain;

static int setup(void **state)
{
    (void)state;
    char err[256];
    sink = tp_sink_new(0);
    drain = tp_drain_start(sink, NULL, 0, err, sizeof err);
    if (!drain)
        fail_msg("drain: %s", err);
    setenv("TRAINPROF_SOCKET", tp_drain_socket_path(drain), 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tp_drain_stop(drain);
    tp_sink_free(sink);
    return 0;
}

/* Runs the emit_events helper in mode and returns its exit status. A
 * separate program (not a fork of this multi-threaded test) is what a
 * training is, and what the sanitizers support. */
static int in_child(const char *mode)
{
    const char *helper = getenv("EMIT_EVENTS");
    if (!helper)
        fail_msg("EMIT_EVENTS is not set (run the tests through meson test)");
    char *argv[] = {(char *)helper, (char *)mode, NULL};
    pid_t pid;
    if (posix_spawn(&pid, helper, NULL, NULL, argv, environ) != 0)
        fail_msg("cannot run %s", helper);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Stops the drain (so everything is drained) and captures the sink. */
static void collect(tp_batch *b)
{
    tp_drain_stop(drain);
    cap_take(sink, b);
    char err[256];
    drain = tp_drain_start(sink, NULL, 0, err, sizeof err);
    assert_non_null(drain);
    setenv("TRAINPROF_SOCKET", tp_drain_socket_path(drain), 1);
}

static uint32_t name_id(const tp_batch *b, const char *text)
{
    for (size_t i = 0; i < b->names.len; i++)
        if (strcmp(b->names.items[i].text, text) == 0)
            return b->names.items[i].id;
    return 0;
}

static size_t intervals_named(const tp_batch *b, const char *text, uint32_t depth)
{
    uint32_t id = name_id(b, text);
    size_t n = 0;
    for (size_t i = 0; id && i < b->intervals.len; i++)
        n += b->intervals.items[i].name == id && b->intervals.items[i].depth == depth;
    return n;
}

static void test_nested_regions_steps_epochs(void **state)
{
    (void)state;
    assert_int_equal(in_child("nested"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(b.threads.len >= 1, 1);
    assert_int_equal(intervals_named(&b, "outer", 0), 10);
    assert_int_equal(intervals_named(&b, "inner", 1), 10);
    size_t steps = 0, epochs = 0;
    for (size_t i = 0; i < b.marks.len; i++) {
        steps += b.marks.items[i].kind == TP_MARK_STEP;
        epochs += b.marks.items[i].kind == TP_MARK_EPOCH;
    }
    assert_int_equal(steps, 11);
    assert_int_equal(epochs, 2);
    for (size_t i = 0; i < b.intervals.len; i++)
        assert_true(b.intervals.items[i].end_ns >= b.intervals.items[i].start_ns);
    tp_batch_free(&b);
}

static void test_spans_keep_their_times(void **state)
{
    (void)state;
    assert_int_equal(in_child("spans"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(intervals_named(&b, "comm", 1), 1); /* inside outer */
    assert_int_equal(intervals_named(&b, "comm", 0), 1); /* the reversed one is ignored */
    assert_int_equal(intervals_named(&b, "span_outer", 0), 1);
    uint32_t comm = name_id(&b, "comm");
    for (size_t i = 0; i < b.intervals.len; i++)
        if (b.intervals.items[i].name == comm)
            assert_int_equal(b.intervals.items[i].end_ns - b.intervals.items[i].start_ns, 2000);
    /* the late marks keep their times: one step, its end 2000 ns on, and
     * epoch 7 500 ns before the step */
    assert_int_equal(b.marks.len, 3);
    assert_int_equal(b.marks.items[0].kind, TP_MARK_STEP);
    assert_int_equal(b.marks.items[1].kind, TP_MARK_STEP_END);
    assert_int_equal(b.marks.items[1].t_ns - b.marks.items[0].t_ns, 2000);
    assert_int_equal(b.marks.items[2].kind, TP_MARK_EPOCH);
    assert_int_equal(b.marks.items[2].value, 7);
    assert_int_equal(b.marks.items[0].t_ns - b.marks.items[2].t_ns, 500);
    tp_batch_free(&b);
}

static void test_device_times_follow_their_regions(void **state)
{
    (void)state;
    assert_int_equal(in_child("device"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(intervals_named(&b, "kernel", 0), 2);
    assert_int_equal(b.device_spans.len, 3);
    uint32_t kernel = name_id(&b, "kernel"), copy = name_id(&b, "copy");
    assert_true(kernel && copy);
    for (size_t i = 0; i < 3; i++) {
        const tp_device_span *d = &b.device_spans.items[i];
        assert_int_equal(d->name, i < 2 ? kernel : copy);
        assert_int_equal(d->device_ns, (i + 1) * 1000000u);
    }
    /* each device time carries its region's host start */
    assert_true(b.device_spans.items[0].start_ns <= b.intervals.items[0].start_ns);
    assert_true(b.device_spans.items[1].start_ns > b.intervals.items[0].start_ns);
    assert_true(b.device_spans.items[2].start_ns == b.device_spans.items[1].start_ns);
    tp_batch_free(&b);
}

static void test_threads_get_their_own_rings(void **state)
{
    (void)state;
    assert_int_equal(in_child("threads"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(intervals_named(&b, "threaded", 0), 1000);
    size_t distinct_tids = 0;
    for (size_t i = 0; i < b.threads.len; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= b.threads.items[j].tid == b.threads.items[i].tid;
        distinct_tids += !seen;
    }
    assert_int_equal(distinct_tids, 2);
    tp_batch_free(&b);
}

static void test_full_ring_drops_and_counts(void **state)
{
    (void)state;
    setenv("TRAINPROF_RING_SLOTS", "64", 1);
    assert_int_equal(in_child("overflow"), 0); /* finished, and saw drops */
    unsetenv("TRAINPROF_RING_SLOTS");
    tp_batch b = {0};
    collect(&b);
    uint64_t dropped = 0;
    for (size_t i = 0; i < b.threads.len; i++)
        dropped += b.threads.items[i].dropped;
    assert_true(dropped > 0);
    size_t kept = intervals_named(&b, "tight", 0);
    assert_true(kept < 200000);
    assert_true(kept + dropped / 2 <= 200000 + 1);
    tp_batch_free(&b);
}

/* A process that learns its rank after its threads sent events (mp.spawn,
 * Lightning: no RANK in the environment): every thread takes it, the ones
 * that sent events before included, and so does a thread started after. */
static void test_rank_set_late_reaches_every_thread(void **state)
{
    (void)state;
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    unsetenv("WORLD_SIZE");
    assert_int_equal(in_child("late_rank"), 0);
    tp_batch b = {0};
    collect(&b);
    /* the sink's ids go on from the earlier tests': this child's from the first row's on */
    assert_true(b.threads.len > 0);
    uint32_t base = b.threads.items[0].id;
    tp_thread_info first[8] = {{0}}, last[8] = {{0}};
    uint32_t threads = 0;
    for (size_t i = 0; i < b.threads.len; i++) {
        const tp_thread_info *t = &b.threads.items[i];
        assert_true(t->id >= base && t->id < base + 8);
        if (last[t->id - base].id == 0)
            first[threads++] = *t;
        last[t->id - base] = *t;
    }
    assert_int_equal(threads, 3);
    /* the two threads before it came without a rank, the one after it with it */
    assert_int_equal(first[0].rank, -1);
    assert_int_equal(first[1].rank, -1);
    assert_int_equal(first[2].rank, 5);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(last[i].rank, 5);
        assert_int_equal(last[i].local_rank, 1);
        assert_int_equal(last[i].world_size, 8);
    }
    assert_int_equal(intervals_named(&b, "before_rank", 0), 1);
    tp_batch_free(&b);
}

static void test_fork_child_gets_its_own_ring(void **state)
{
    (void)state;
    assert_int_equal(in_child("fork"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(intervals_named(&b, "parent_work", 0), 1);
    assert_int_equal(intervals_named(&b, "child_work", 0), 1);
    /* one ring each; every thread appears once when it attaches and once
     * more with its drop count when its ring is retired */
    assert_int_equal(b.threads.len, 4);
    int32_t pids[2] = {b.threads.items[0].pid, 0};
    for (size_t i = 1; i < b.threads.len; i++)
        if (b.threads.items[i].pid != pids[0])
            pids[1] = b.threads.items[i].pid;
    assert_true(pids[1] != 0 && pids[1] != pids[0]);
    tp_batch_free(&b);
}

static void test_fork_while_a_thread_attaches_never_hangs_the_child(void **state)
{
    (void)state;
    int rc = in_child("fork_while_attaching");
    if (rc == 77)
        skip(); /* a sanitized build: its runtime's own locks are what hang */
    assert_int_equal(rc, 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(intervals_named(&b, "grandchild_work", 0), 1000);
    tp_batch_free(&b);
}

static void test_no_recorder_is_a_no_op(void **state)
{
    (void)state;
    assert_int_equal(in_child("none"), 0);
    tp_batch b = {0};
    collect(&b);
    assert_int_equal(b.threads.len, 0);
    tp_batch_free(&b);
}

/* The connections the recorder holds leave a quarter of its descriptor
 * limit and 16 to the rest (under ulimit -n 64 it lost rings when filled to
 * the limit): 32 of 64, at least one, at most what the drain holds. */
static void test_connections_leave_room_under_the_descriptor_limit(void **state)
{
    (void)state;
    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    struct rlimit low = {64, was.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    size_t at_64 = tp_fd_room_for_peers(1024);
    low.rlim_cur = 8;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    size_t at_8 = tp_fd_room_for_peers(1024);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_int_equal(at_64, 32);
    assert_int_equal(at_8, 1);
    if (was.rlim_cur >= 128) /* room for more than the drain holds: what it holds */
        assert_int_equal(tp_fd_room_for_peers(3), 3);
}

/* A listening socket at a path, or ENAMETOOLONG for one no address holds. */
static void test_a_listening_socket_takes_a_connection(void **state)
{
    (void)state;
    char *root = fx_root();
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    assert_true(strlen(root) + sizeof "/l.sock" <= sizeof addr.sun_path);
    char path[256];
    snprintf(path, sizeof path, "%s/l.sock", root);
    int fd = tp_listen_seqpacket(path, 4);
    assert_true(fd >= 0);
    int peer = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    memcpy(addr.sun_path, path, strlen(path) + 1);
    assert_int_equal(connect(peer, (struct sockaddr *)&addr, sizeof addr), 0);
    int taken = accept(fd, NULL, NULL);
    assert_true(taken >= 0);
    close(taken);
    close(peer);
    close(fd);
    memset(path, 'x', 200);
    path[200] = 0;
    errno = 0;
    assert_int_equal(tp_listen_seqpacket(path, 4), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    fx_rmtree(root);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_regions_steps_epochs),
        cmocka_unit_test(test_device_times_follow_their_regions),
        cmocka_unit_test(test_spans_keep_their_times),
        cmocka_unit_test(test_threads_get_their_own_rings),
        cmocka_unit_test(test_full_ring_drops_and_counts),
        cmocka_unit_test(test_rank_set_late_reaches_every_thread),
        cmocka_unit_test(test_fork_child_gets_its_own_ring),
        cmocka_unit_test(test_fork_while_a_thread_attaches_never_hangs_the_child),
        cmocka_unit_test(test_no_recorder_is_a_no_op),
        cmocka_unit_test(test_connections_leave_room_under_the_descriptor_limit),
        cmocka_unit_test(test_a_listening_socket_takes_a_connection),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
