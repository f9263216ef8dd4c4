/* test_hostile.c: training processes that attack the recorder through their
 * rings (the hostile_ring program), each beside a well-behaved one
 * (emit_events): the recorder's drain, in this process so that the
 * sanitizers watch it, must survive, record the well-behaved process in
 * full, and name the hostile one's pid among the unavailable sources. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
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
    tp_drain *drain = tp_drain_start(sink, err, sizeof err);
    if (!drain)
        fail_msg("drain: %s", err);
    setenv("TRAINPROF_SOCKET", tp_drain_socket_path(drain), 1);
    *hostile = spawn("HOSTILE_RING", mode);
    pid_t good = spawn("EMIT_EVENTS", "nested");
    assert_int_equal(status_of(good), 0);
    assert_int_equal(status_of(*hostile), 0);
    tp_drain_stop(drain);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_capacity_rewritten_after_the_handover),
        cmocka_unit_test(test_an_unsealed_ring_cut_to_nothing),
        cmocka_unit_test(test_name_ids_out_of_bounds),
        cmocka_unit_test(test_a_sparse_terabyte_claiming_2_31_slots),
        cmocka_unit_test(test_a_rewritten_tail_loses_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
