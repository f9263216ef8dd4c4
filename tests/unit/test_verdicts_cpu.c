/* test_verdicts_cpu.c: the rules of thumb on a machine's CPUs
 * (analyze/verdicts_system.c) on facts made by hand (verdict_facts.h):
 * cpu_saturated where the CPUs feed GPUs, cpu_contention where other
 * processes held them and the training waited, its weight when it leads,
 * and cpu_steal where a virtual machine's host took them. The end-to-end
 * tests show them on real runs beside burners (test_compare, test_verdicts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "verdict_facts.h"

#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "render/verdict_words.h"
#include "trainprof.h"

static void test_cpu_saturated_only_where_cpus_feed_gpus(void **state)
{
    (void)state;
    facts *f = facts_new();
    series(f, TP_METRIC_CPU_UTIL_PERCENT, "{}", 99, 99, 100);
    /* training on the CPU is meant to keep it busy */
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_SATURATED, NULL), 0);
    f->gpu = (tp_run_gpu){.agent_id = 1, .index = 0};
    f->run.gpus = &f->gpu;
    f->run.ngpus = 1;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_SATURATED, &v), 1);
    assert_true(v.f.cpu.host);
    f->items[0].steps.mean = TP_CPU_SATURATED_PERCENT - 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_SATURATED, NULL), 0);
    facts_free(f);
}

/* The machine of a step: cores 4, the CPUs `busy`, the training's tree
 * using `own_cores` of them, some task waiting for a CPU `wait` percent of
 * the time (< 0: no pressure series, as on a kernel without PSI). */
static facts *machine_with(double busy, double own_cores, double wait)
{
    facts *f = facts_new();
    meta(f, "cpu_count", "4");
    series(f, TP_METRIC_CPU_UTIL_PERCENT, "{}", busy, busy, busy);
    series(f, TP_METRIC_PROC_CPU_PERCENT, "{}", 100 * own_cores, 100 * own_cores, 100 * own_cores);
    if (wait >= 0)
        series(f, TP_METRIC_PRESSURE_CPU_SOME_PERCENT, "{}", wait, wait, wait);
    return f;
}

static size_t contention_with(double busy, double own_cores, double wait, tp_verdict *v)
{
    facts *f = machine_with(busy, own_cores, wait);
    size_t n = verdicts_of(f, TP_VERDICT_CPU_CONTENTION, v);
    facts_free(f);
    return n;
}

static void test_cpu_contention_where_others_held_the_cpus(void **state)
{
    (void)state;
    tp_verdict v;
    /* 95 % busy, the training 1 core of 4 (25 %): others 70 %, tasks waiting */
    assert_int_equal(contention_with(95, 1, 50, &v), 1);
    assert_true(fabs(v.f.cpu.others_percent - 70) < 1e-9 && v.f.cpu.cores == 4);
    assert_int_equal(contention_with(95, 1, -1, NULL), 1); /* no pressure: the shares say it */
    /* others on cycles the training left idle: nothing waited, nothing slowed */
    assert_int_equal(contention_with(95, 1, 9, NULL), 0);
    /* the training itself held half of the busy time or more: not others' */
    assert_int_equal(contention_with(95, 1.9, 50, NULL), 0);
    assert_int_equal(contention_with(TP_CPU_SATURATED_PERCENT - 1, 1, 50, NULL), 0);
    /* on an agent with GPUs it says who held them, not cpu_saturated */
    facts *f = machine_with(95, 1, 50);
    one_gpu(f);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_SATURATED, NULL), 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 1);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_CPU_CONTENTION, words, sizeof words));
    assert_non_null(strstr(words, "Other processes held the CPUs"));
    assert_non_null(strstr(words, "using 25% of the machine (1.0 of its 4 cores), others 70%"));
    assert_non_null(strstr(words, "some task waited for a CPU 50% of the time"));
    facts_free(f);
    /* the command at its cgroup's CPU limit: its wait is its quota's */
    f = machine_with(95, 1, 50);
    meta(f, "cgroup_cpu_limit_cores", "1");
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 0);
    facts_free(f);
    /* where the training's own wait was recorded it decides: a training that
     * sleeps beside busy CPUs is not held back, whatever else waited; on an
     * agent with GPUs, no cpu_saturated either (the saturation is others',
     * not the training's workers' to cut) */
    f = machine_with(95, 1, 50);
    series(f, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", 5, 5, 5);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 0);
    one_gpu(f);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_SATURATED, NULL), 0);
    f->items[f->s.n - 1].steps.mean = 40;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, &v), 1);
    assert_true(message_of(f, TP_VERDICT_CPU_CONTENTION, words, sizeof words));
    assert_non_null(strstr(words, "the training's processes waited for a CPU 40% of the time"));
    facts_free(f);
}

/* A virtual machine's host that took its CPUs: steal 10 % or more of the
 * time over the steps while the training used half a core or more is
 * cpu_steal, beside what else held the CPUs; the steal is no other
 * process's, so it leaves cpu_contention's others' share and test. */
static void test_cpu_steal_is_the_vm_host_s(void **state)
{
    (void)state;
    facts *f = machine_with(95, 1, 50); /* 25 % the training's, 70 % not */
    series(f, TP_METRIC_CPU_STEAL_PERCENT, "{}", 30, 30, 45);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_STEAL, &v), 1);
    assert_true(v.f.cpu.steal->steps.mean == 30 && v.f.cpu.cores == 4);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, &v), 1); /* others: 40 % */
    assert_true(fabs(v.f.cpu.others_percent - 40) < 1e-9);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_CPU_CONTENTION, words, sizeof words));
    assert_non_null(strstr(words, "others 40%, the virtual machine's host 30% (steal)"));
    assert_true(message_of(f, TP_VERDICT_CPU_STEAL, words, sizeof words));
    assert_non_null(strstr(words, "took its CPUs away 30% of the time during the training "
                                  "steps on average (steal; p95 45%), while the training "
                                  "used 1.0 of its 4 cores"));
    f->items[f->s.n - 1].steps.mean = 60; /* the rest, 10 %, is less than the training's */
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 0);
    f->items[f->s.n - 1].steps.mean = TP_CPU_STEAL_PERCENT - 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_STEAL, NULL), 0);
    facts_free(f);
    f = machine_with(95, 0.4, 50); /* a training that hardly computes loses little */
    series(f, TP_METRIC_CPU_STEAL_PERCENT, "{}", 30, 30, 45);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_STEAL, NULL), 0);
    facts_free(f);
}

/* Where each process's step thread's wait was recorded, the most held one
 * decides and weighs, not the tree's main threads summed: three processes
 * waiting 10 % each are no step that waited 30 %. */
static void test_cpu_contention_is_the_step_thread_s_wait(void **state)
{
    (void)state;
    facts *f = machine_with(95, 1, 50);
    series(f, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", 30, 30, 30);
    series(f, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, "{\"pid\":\"11\"}", 4, 4, 4);
    series(f, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, "{\"pid\":\"12\"}", 6, 6, 6);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 0);
    f->items[f->s.n - 1].steps.mean = 40; /* pid 12's step thread held back */
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, &v), 1);
    assert_ptr_equal(v.f.cpu.step_wait, &f->items[f->s.n - 1]);
    assert_int_equal(v.f.cpu.step_threads, 2);
    assert_int_equal(v.f.cpu.step_wait_rank, -1); /* no thread rows to name its rank */
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_CPU_CONTENTION, words, sizeof words));
    assert_non_null(strstr(words, "one process's step thread waited for a CPU 40% of the time, "
                                  "the most of the 2 processes' step threads"));
    /* it weighs the step's share: a step thread that waited 40 % of the
     * time leads a step that computes 95 % of it, weighed half of what it
     * computed, the 55 % it did not wait (0.275; the demo beside two
     * burners: 41 % waited of 83 % computing, the loader 15 %) */
    phase(f, TP_PHASE_TRAIN_BATCH, 0.95, 0);
    f->items[f->s.n - 1].steps.mean = 40;
    tp_verdicts all;
    tp_verdicts_build(&f->s, &all);
    assert_int_equal(all.items[tp_verdicts_main(&all)].kind, TP_VERDICT_CPU_CONTENTION);
    f->items[f->s.n - 1].steps.mean = 25; /* less than the compute weighs (0.35) */
    tp_verdicts_free(&all);
    tp_verdicts_build(&f->s, &all);
    assert_int_equal(all.items[tp_verdicts_main(&all)].kind, TP_VERDICT_COMPUTE_BOUND);
    tp_verdicts_free(&all);
    /* one process: the training's step thread */
    facts_free(f);
    f = machine_with(95, 1, 50);
    series(f, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, "{\"pid\":\"11\"}", 25, 25, 25);
    assert_true(message_of(f, TP_VERDICT_CPU_CONTENTION, words, sizeof words));
    assert_non_null(strstr(words, "the training's step thread waited for a CPU 25% of the time"));
    facts_free(f);
}

/* It leads a step that computes where the training waited for CPUs more of
 * its time than the compute weighs (the compute is slow because it waits),
 * and an input-bound rank that names the contention says it alone. */
static void test_cpu_contention_leads_and_is_said_once(void **state)
{
    (void)state;
    facts *f = machine_with(99, 0.5, 90);
    phase(f, TP_PHASE_TRAIN_BATCH, 0.95, 0);
    series(f, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", 50, 50, 50);
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.items[tp_verdicts_main(&v)].kind, TP_VERDICT_CPU_CONTENTION);
    tp_verdicts_free(&v);
    /* it weighs the step time the training waited: a little of it leaves
     * the compute to lead */
    f->items[f->s.n - 1].steps.mean = 20;
    tp_verdicts_build(&f->s, &v);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.items[tp_verdicts_main(&v)].kind, TP_VERDICT_COMPUTE_BOUND);
    tp_verdicts_free(&v);
    facts_free(f);
    f = machine_with(99, 0.5, 90);
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.5, 0);
    tp_verdict input;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &input), 1);
    assert_int_equal(input.f.input.cause, TP_INPUT_CONTENTION);
    assert_int_equal(verdicts_of(f, TP_VERDICT_CPU_CONTENTION, NULL), 0);
    facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_saturated_only_where_cpus_feed_gpus),
        cmocka_unit_test(test_cpu_contention_where_others_held_the_cpus),
        cmocka_unit_test(test_cpu_steal_is_the_vm_host_s),
        cmocka_unit_test(test_cpu_contention_leads_and_is_said_once),
        cmocka_unit_test(test_cpu_contention_is_the_step_thread_s_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
