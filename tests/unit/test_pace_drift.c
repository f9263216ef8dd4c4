/* test_pace_drift.c: a pace that drifts (steps that grow or shrink over the
 * whole run) told from one that changes at a few steps, on series with the
 * noise and the episodes of real runs. */
#include <math.h>
#include <stdlib.h>

#include "analyze/change_points.h"
#include "analyze/pace_drift.h"
#include "analyze/pace_now.h"
#include "harness.h"

enum { N = 600 };

/* A series of N groups: d[i] = level(i) with 5 % log-normal noise (fixed
 * seed), one after another from 0 s, and its regimes (tp_regime_starts). */
typedef struct series {
    double d[N], t0[N], t1[N];
    size_t starts[TP_REGIMES_MAX], nstarts;
} series;

static void make(series *s, double (*level)(size_t), unsigned seed)
{
    double t = 0;
    for (size_t i = 0; i < N; i++) {
        double u = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        double v = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        s->d[i] = level(i) * exp(0.05 * sqrt(-2 * log(u)) * cos(2 * M_PI * v));
        s->t0[i] = t;
        t += s->d[i];
        s->t1[i] = t;
    }
    s->nstarts = tp_regime_starts(s->d, s->t0, s->t1, N, s->starts);
}

static tp_pace_drift drift_of(const series *s)
{
    return tp_pace_drift_of(s->d, s->t0, s->t1, N, s->starts, s->nstarts);
}

/* 10 ms a step growing by 60 us a step (a history summed every step):
 * 46 ms at the end, 17 s in all */
static double growing(size_t i) { return 0.010 + 60e-6 * (double)i; }
static double shrinking(size_t i) { return growing(N - 1 - i); }
/* 20 ms, then 40 ms from step 250 (others' processes took the CPUs) */
static double shifted(size_t i) { return i < 250 ? 0.020 : 0.040; }
/* 20, 30 and 45 ms a third of the run each */
static double stairs(size_t i) { return i < 200 ? 0.020 : i < 400 ? 0.030 : 0.045; }
static double steady(size_t i) { return (void)i, 0.025; }

static void test_steps_that_grow_all_along_drift(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 10; seed++) {
        series s;
        make(&s, growing, seed);
        tp_pace_drift d = drift_of(&s);
        assert_true(d.found);
        /* a quarter of 17 s: the first quarter's steps are the short ones */
        assert_int_equal(d.first_lo, 0);
        assert_true(d.first_hi > 150 && d.first_hi < 300);
        assert_int_equal(d.last_hi, N - 1);
        assert_true(d.first_s > 0.012 && d.first_s < 0.022);
        assert_true(d.last_s > 0.040 && d.last_s < 0.047);
    }
}

static void test_steps_that_shrink_all_along_drift_too(void **state)
{
    (void)state;
    series s;
    make(&s, shrinking, 3);
    tp_pace_drift d = drift_of(&s);
    assert_true(d.found);
    assert_true(d.last_s < d.first_s / 2);
}

static void test_a_change_at_one_step_is_no_drift(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 10; seed++) {
        series s;
        make(&s, shifted, seed);
        assert_int_equal(s.nstarts, 1);
        assert_false(drift_of(&s).found);
        make(&s, stairs, seed); /* each third flat: the regimes tell it */
        assert_int_equal(s.nstarts, 2);
        assert_false(drift_of(&s).found);
        make(&s, steady, seed);
        assert_false(drift_of(&s).found);
    }
}

/* A change at one step to a pace that others' load keeps moving: 20 ms,
 * then from step 200 between 35 and 60 ms in episodes of 40 steps that
 * happen to rise (its quarters climb one after another). */
static void test_a_change_to_a_wandering_pace_is_no_drift(void **state)
{
    (void)state;
    static const double after[] = {0.035, 0.042, 0.039, 0.048, 0.046,
                                   0.052, 0.050, 0.058, 0.060, 0.057};
    series s;
    make(&s, steady, 5);
    for (size_t i = 0; i < N; i++)
        s.d[i] *= i < 200 ? 0.8 : after[(i - 200) / 40] / 0.025;
    double t = 0;
    for (size_t i = 0; i < N; i++) {
        s.t0[i] = t;
        t += s.d[i];
        s.t1[i] = t;
    }
    s.nstarts = tp_regime_starts(s.d, s.t0, s.t1, N, s.starts);
    assert_true(s.nstarts >= 1);
    assert_false(drift_of(&s).found);
}

static void test_a_short_run_or_unknown_times_have_none(void **state)
{
    (void)state;
    series s;
    make(&s, growing, 7);
    assert_true(drift_of(&s).found);
    /* 200 groups: 3 s of steps, under the 8 s four quarters need */
    assert_false(tp_pace_drift_of(s.d, s.t0, s.t1, 200, s.starts, 0).found);
    s.t0[300] = NAN; /* a file stored before keeps no times */
    assert_false(drift_of(&s).found);
    assert_false(tp_pace_drift_of(s.d, s.t0, s.t1, 0, s.starts, 0).found);
}

/* s's steps fed to top's live pace (tp_pace_now) one begin at a time, and
 * its drift's two quarters. */
static bool live_drift(const series *s, tp_pace_regime *first, tp_pace_regime *last)
{
    tp_pace_now p;
    tp_pace_now_init(&p, 0);
    for (size_t i = 0; i <= N; i++) /* step i + 1 begins */
        tp_pace_now_step(&p, (int64_t)(1e9 * (1 + (i < N ? s->t0[i] : s->t1[N - 1]))));
    return tp_pace_now_drift(&p, first, last);
}

/* top says what the report says: steps that grow all along drifted (its
 * quarters in step order, up to the last step, past the warm-up's), and a
 * change at one step or a steady run did not. */
static void test_top_s_live_pace_tells_a_drift_too(void **state)
{
    (void)state;
    series s;
    make(&s, growing, 2);
    tp_pace_regime first, last;
    assert_true(live_drift(&s, &first, &last));
    assert_int_equal(first.first_step, TP_PACE_WARMUP_STEPS + 1);
    assert_true(first.last_step > 150 && first.last_step < 300);
    assert_true(first.last_step < last.first_step && last.last_step == N);
    assert_true(first.typical_s > 0.012 && first.typical_s < 0.022);
    assert_true(last.typical_s > 0.040 && last.typical_s < 0.047 && last.t0_s > first.t0_s);
    make(&s, shifted, 2);
    assert_false(live_drift(&s, &first, &last));
    make(&s, steady, 2);
    assert_false(live_drift(&s, &first, &last));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_that_grow_all_along_drift),
        cmocka_unit_test(test_steps_that_shrink_all_along_drift_too),
        cmocka_unit_test(test_a_change_at_one_step_is_no_drift),
        cmocka_unit_test(test_a_change_to_a_wandering_pace_is_no_drift),
        cmocka_unit_test(test_a_short_run_or_unknown_times_have_none),
        cmocka_unit_test(test_top_s_live_pace_tells_a_drift_too),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
