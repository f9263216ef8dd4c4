/* test_course.c: the course of a run: change points over step times, the
 * stall threshold. */
#include <math.h>
#include <stdlib.h>

#include "analyze/regimes.h"
#include "analyze/stalls.h"
#include "harness.h"

/* n steps of base seconds with 5 % log-normal noise (fixed seed). */
static double *noisy(size_t n, double base, unsigned seed)
{
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) {
        double u = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        double v = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        d[i] = base * exp(0.05 * sqrt(-2 * log(u)) * cos(2 * M_PI * v));
    }
    return d;
}

static void test_steady_steps_have_no_change(void **state)
{
    (void)state;
    size_t starts[TP_REGIMES_MAX];
    for (unsigned seed = 1; seed <= 20; seed++) {
        double *d = noisy(2000, 0.1, seed);
        for (size_t i = 0; i < 2000; i += 97) /* a checkpoint's slow step now and then */
            d[i] *= 8;
        assert_int_equal(tp_change_points(d, 2000, starts), 0);
        free(d);
    }
}

static void test_a_level_shift_is_placed(void **state)
{
    (void)state;
    size_t starts[TP_REGIMES_MAX];
    double *d = noisy(1000, 0.1, 3);
    for (size_t i = 400; i < 1000; i++)
        d[i] *= 1.5;
    assert_int_equal(tp_change_points(d, 1000, starts), 1);
    assert_true(starts[0] >= 398 && starts[0] <= 402);
    /* and back: two changes, in order */
    for (size_t i = 700; i < 1000; i++)
        d[i] /= 1.5;
    assert_int_equal(tp_change_points(d, 1000, starts), 2);
    assert_true(starts[0] >= 398 && starts[0] <= 402);
    assert_true(starts[1] >= 698 && starts[1] <= 702);
    free(d);
}

static void test_small_or_short_changes_are_none(void **state)
{
    (void)state;
    size_t starts[TP_REGIMES_MAX];
    double *d = noisy(1000, 0.1, 5);
    for (size_t i = 500; i < 1000; i++) /* 8 % slower: under the 15 % a change needs */
        d[i] *= 1.08;
    assert_int_equal(tp_change_points(d, 1000, starts), 0);
    for (size_t i = 500; i < 1000; i++)
        d[i] /= 1.08;
    for (size_t i = 500; i < 505; i++) /* 5 steps 3 times slower: a hiccup */
        d[i] *= 3;
    assert_int_equal(tp_change_points(d, 1000, starts), 0);
    free(d);
    /* too few steps to tell */
    double few[12] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2};
    assert_int_equal(tp_change_points(few, 12, starts), 0);
    assert_int_equal(tp_change_points(few, 0, starts), 0);
}

static void test_a_blip_the_pace_came_back_from_is_none(void **state)
{
    (void)state;
    size_t starts[TP_REGIMES_MAX];
    double *d = noisy(1000, 0.1, 9);
    for (size_t i = 500; i < 560; i++) /* 60 steps (6 %) half as fast, then as before */
        d[i] *= 2;
    assert_int_equal(tp_change_points(d, 1000, starts), 0);
    for (size_t i = 560; i < 1000; i++) /* ... unless it stays */
        d[i] *= 2;
    assert_int_equal(tp_change_points(d, 1000, starts), 1);
    assert_true(starts[0] >= 498 && starts[0] <= 502);
    free(d);
}

static void test_two_alternating_speeds_are_one_pace(void **state)
{
    (void)state;
    size_t starts[TP_REGIMES_MAX];
    double *d = noisy(1000, 0.1, 7);
    for (size_t i = 0; i < 1000; i += 2)
        d[i] *= 2;
    assert_int_equal(tp_change_points(d, 1000, starts), 0);
    free(d);
}

static void test_stall_threshold(void **state)
{
    (void)state;
    assert_true(tp_stall_threshold(5, 0.01) == 5);             /* --stall-after wins */
    assert_true(tp_stall_threshold(0, 0.1) == TP_STALL_MIN_S); /* 10 steps are 1 s */
    assert_true(tp_stall_threshold(0, 12) == 120);
    assert_true(tp_stall_threshold(0, NAN) == TP_STALL_FIRST_STEP_S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_steps_have_no_change),
        cmocka_unit_test(test_a_level_shift_is_placed),
        cmocka_unit_test(test_small_or_short_changes_are_none),
        cmocka_unit_test(test_a_blip_the_pace_came_back_from_is_none),
        cmocka_unit_test(test_two_alternating_speeds_are_one_pace),
        cmocka_unit_test(test_stall_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
