/* test_verdicts_pace.c: verdicts where the pace changed, across ranks: the
 * stragglers of the latest pace, a rank's step verdicts on its split over
 * it, and that split from its step phases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks.h"
#include "analyze/regimes.h"
#include "analyze/run_compare.h"
#include "core/metric_catalog.h"
#include "harness.h"
#include "render/causes_words.h"
#include "render/verdict_evidence.h"
#include "render/verdict_words.h"
#include "verdict_facts.h"

/* Where the first rank's pace changed and the ranks were compared over its
 * latest pace (ranks_latest), the stragglers are those of the latest pace,
 * said since its first step; a steady run keeps the whole run's. */
static void test_stragglers_judged_on_the_latest_pace(void **state)
{
    (void)state;
    facts *f = facts_new();
    tp_rank_row whole[2] = {
        {.rank = 0, .agent_id = 1, .steps = 100, .window_s = 10, .compute_s = 6, .excess = 0.03},
        {.rank = 1, .agent_id = 1, .steps = 100, .window_s = 10, .compute_s = 7, .straggler = true},
    };
    measure_all(whole, 2);
    tp_rank_row latest[2] = {
        {.rank = 0, .agent_id = 1, .steps = 50, .window_s = 5, .compute_s = 4.5, .excess = 0.5},
        {.rank = 1, .agent_id = 1, .steps = 50, .window_s = 5, .compute_s = 3, .excess = -0.5},
    };
    measure_all(latest, 2);
    latest[0].straggler = true;
    f->s.ranks = (tp_ranks){.rows = whole, .n = 2, .nstragglers = 1};
    f->s.ranks_latest = (tp_ranks){.rows = latest, .n = 2, .nstragglers = 1, .median_own_s = 0.08};
    f->s.regimes.rank = 0, f->s.regimes.n = 1; /* a steady run: the whole run's straggler */
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_STRAGGLER, &v), 1);
    assert_true(v.rank == 1 && v.pace == NULL);
    f->s.regimes.n = 2; /* the pace changed at step 51 */
    f->s.regimes.v[1] = (tp_regime){.first_step = 51, .last_step = 100, .mean_s = 0.1};
    assert_int_equal(verdicts_of(f, TP_VERDICT_STRAGGLER, &v), 1);
    assert_int_equal(v.rank, 0);
    assert_true(v.pace == &f->s.regimes.v[1] && v.f.straggler.ranks == &f->s.ranks_latest);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_STRAGGLER, words, sizeof words));
    assert_non_null(strstr(words, "Since step 51, rank 0 is a straggler"));
    assert_non_null(strstr(words, "50 % longer per step than the median rank's (90.0 vs 80.0 ms)"));
    assert_non_null(strstr(words, "Judged on steps 51-100, its latest pace: over the whole run, "
                                  "the steps before included, it was no straggler (its own "
                                  "work +3 % against the median rank's)"));
    /* a pace that drifted: step 51 is where change points cut a slope */
    f->s.regimes.drift.found = true;
    assert_true(message_of(f, TP_VERDICT_STRAGGLER, words, sizeof words));
    assert_non_null(strstr(words, "Over steps 51-100, rank 0 is a straggler"));
    assert_non_null(strstr(words, "Judged on steps 51-100, its latest (the pace grew or shrank "
                                  "all along, at no one step): over the whole run"));
    assert_null(strstr(words, "Since step"));
    f->s.ranks_latest = (tp_ranks){0};
    facts_free(f);
}

/* Rank 0 of two, its step mostly computing over the whole run (dataloader_next
 * 20 %), its data slow since step 161 (72 % of a 47 ms step there): where
 * the ranks were compared over the latest pace and its split over it is
 * known, its step verdicts judge that split; without it, the whole run's. */
static void test_a_rank_s_steps_are_judged_on_its_latest_pace(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, "dataloader_next", 0.2, 0);
    phase(f, "train_batch", 0.7, 0);
    tp_rank_row whole[2] = {
        {.rank = 0, .agent_id = 1, .steps = 300, .window_s = 9, .compute_s = 1, .input_s = 2},
        {.rank = 1, .agent_id = 1, .steps = 300, .window_s = 9, .compute_s = 1, .input_s = 2},
    };
    measure_all(whole, 2);
    tp_rank_row latest[2] = {
        {.rank = 0, .agent_id = 1, .steps = 140, .window_s = 6.6, .compute_s = 0.14},
        {.rank = 1, .agent_id = 1, .steps = 140, .window_s = 6.6, .compute_s = 0.14},
    };
    measure_all(latest, 2);
    tp_rank_pace now = {.rank = 0, .steps = 140, .mean_s = 0.047};
    now.phase_s[0] = 0.034, now.phase_s[2] = 0.003, now.phase_s[6] = 0.010;
    f->s.ranks = (tp_ranks){.rows = whole, .n = 2};
    f->s.ranks_latest = (tp_ranks){.rows = latest, .n = 2};
    f->s.regimes.rank = 0, f->s.regimes.n = 2;
    f->s.regimes.v[1] = (tp_regime){.first_step = 161, .last_step = 300, .mean_s = 0.047};
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0); /* its split unknown */
    f->s.rank_paces = &now, f->s.nrank_paces = 1;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_true(v.pace == &f->s.regimes.v[1]);
    assert_float_equal(v.f.input.share, 0.034 / 0.047, 1e-12);
    assert_float_equal(v.f.input.next_mean_s, 0.034, 1e-12);
    assert_float_equal(v.f.input.step_mean_s, 0.047, 1e-12);
    char words[TP_VERDICT_MESSAGE_MAX];
    f->s.regimes.rank = 1; /* another rank's regimes: the steps before are the first rank's */
    f->s.regimes.v[0] = (tp_regime){.first_step = 2, .last_step = 160, .mean_s = 0.013};
    assert_true(message_of(f, TP_VERDICT_INPUT_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "since step 161, rank 0 is input-bound"));
    assert_non_null(strstr(words, "before step 161 the first rank's steps were"));
    f->s.regimes.drift.found = true; /* a slope, which change points cut at step 161 */
    assert_true(message_of(f, TP_VERDICT_INPUT_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "over steps 161-300, rank 0 is input-bound"));
    assert_non_null(strstr(words, "Judged on steps 161-300, its latest: its pace grew or shrank "
                                  "all along, at no one step, and change points cut it there; "
                                  "earlier (steps 2-160) the first rank's steps were"));
    assert_null(strstr(words, "since step"));
    f->s.regimes.drift.found = false;
    /* device times: the regimes do not split them, the whole run's judge */
    f->rows[1].device_total_s = 0.3; /* train_batch's */
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0);
    f->s.rank_paces = NULL, f->s.nrank_paces = 0;
    f->s.ranks_latest = (tp_ranks){0};
    facts_free(f);
}

/* Four groups of ten steps, 1 s apart, the last two slower: the split over
 * [20 s, 40 s] is theirs alone, weighted by their steps; a span no group lies
 * within, or groups without times, have none. */
static void test_a_rank_s_split_over_a_span_of_its_groups(void **state)
{
    (void)state;
    double first[] = {0, 10, 20, 30}, start[] = {0, 10, 20, 30}, end[] = {10, 20, 30, 40};
    double values[4 * TP_STEP_PHASES] = {0};
    for (int g = 0; g < 4; g++) {
        values[g * TP_STEP_PHASES + 0] = g < 2 ? 0.01 : 0.05; /* dataloader_next */
        values[g * TP_STEP_PHASES + 2] = 0.05;                /* train_batch */
    }
    values[3 * TP_STEP_PHASES + 0] = 0.07;
    tp_step_phases ph = {.nsteps = 40,
                         .ngroups = 4,
                         .first_step = first,
                         .values = values,
                         .start_s = start,
                         .end_s = end};
    tp_run run = {0};
    tp_rank_pace p;
    assert_true(tp_rank_pace_over(&run, &ph, 3, 20, 40, &p));
    assert_int_equal(p.rank, 3);
    assert_int_equal(p.steps, 20);
    assert_float_equal(p.phase_s[0], 0.06, 1e-12);
    assert_float_equal(p.mean_s, 0.11, 1e-12);
    assert_false(tp_rank_pace_over(&run, &ph, 3, 21, 29, &p));
    ph.start_s = NULL;
    assert_false(tp_rank_pace_over(&run, &ph, 3, 20, 40, &p));
}

/* Rank 1's own work 2 ms a step over 200 steps, then 22 ms over 100 (the
 * median rank's 12 ms there): a straggler since, said right after the phase
 * that moved; with every cause taken the last is pushed off; and nothing
 * where its own work did not grow by half (it was slow all along). */
static void test_a_straggler_since_the_change_is_its_cause(void **state)
{
    (void)state;
    tp_rank_row whole[2] = {
        {.rank = 0, .steps = 300, .compute_s = 0.6},
        {.rank = 1, .steps = 300, .compute_s = 0.4 + 2.2},
    };
    measure_all(whole, 2);
    tp_rank_row latest[2] = {
        {.rank = 0, .steps = 100, .compute_s = 0.2},
        {.rank = 1, .steps = 100, .compute_s = 2.2, .straggler = true, .excess = 0.83},
    };
    measure_all(latest, 2);
    tp_ranks w = {.rows = whole, .n = 2}, l = {.rows = latest, .n = 2, .median_own_s = 0.012};
    tp_regime g = {.ncauses = 2};
    g.causes[0] =
        (tp_regime_cause){.kind = TP_CAUSE_PHASE, .phase = 2, .before = 0.003, .after = 0.024};
    g.causes[1] = (tp_regime_cause){.kind = TP_CAUSE_OTHERS_CPU, .before = 5, .after = 40};
    tp_ranks_pace_cause(&w, &l, &g);
    assert_int_equal(g.ncauses, 3);
    assert_int_equal(g.causes[1].kind, TP_CAUSE_STRAGGLER);
    assert_int_equal(g.causes[1].rank, 1);
    assert_float_equal(g.causes[1].before, 0.002, 1e-12);
    assert_float_equal(g.causes[1].after, 0.022, 1e-12);
    assert_int_equal(g.causes[2].kind, TP_CAUSE_OTHERS_CPU);
    char words[512];
    tp_causes_text(words, sizeof words, g.causes, g.ncauses);
    assert_non_null(strstr(words, "rank 1 became a straggler, whom the others wait for: its own "
                                  "work went from 2.00 ms to 22 ms a step, against the median "
                                  "rank's 12 ms (its compute)"));
    g.ncauses = TP_REGIME_CAUSES; /* full: the last is pushed off */
    g.causes[TP_REGIME_CAUSES - 1].kind = TP_CAUSE_SWAP;
    tp_ranks_pace_cause(&w, &l, &g);
    assert_int_equal(g.ncauses, TP_REGIME_CAUSES);
    assert_int_equal(g.causes[1].kind, TP_CAUSE_STRAGGLER);
    assert_int_not_equal(g.causes[TP_REGIME_CAUSES - 1].kind, TP_CAUSE_SWAP);
    whole[1].compute_s = 3 * 2.2; /* 22 ms a step before as well: slow all along */
    tp_regime steady = {0};
    tp_ranks_pace_cause(&w, &l, &steady);
    assert_int_equal(steady.ncauses, 0);
}

/* A virtual machine whose host gave its CPUs to others midway: the steal
 * that grew is a cause of its own, apart from other processes' CPU (which
 * leaves the steal out); a steal that barely moved, or one not counted on
 * either side (bare metal, a file recorded before it), is none. */
static void test_the_hypervisor_s_steal_is_a_cause(void **state)
{
    (void)state;
    /* 2 cores: busy 40 % then 70 %, the training a core of them, the steal 2 % then 30 % */
    double before_others = tp_others_cpu_percent(40, 2, 60, 2);
    double after_others = tp_others_cpu_percent(70, 30, 60, 2);
    assert_float_equal(before_others, 8, 1e-9);
    assert_float_equal(after_others, 10, 1e-9); /* the others kept their share */
    assert_float_equal(tp_others_cpu_percent(70, NAN, 60, 2), 40, 1e-9); /* not counted */
    assert_true(isnan(tp_others_cpu_percent(70, 30, 60, 0)));            /* cores unknown */
    assert_float_equal(tp_others_cpu_percent(30, 10, 60, 2), 0, 1e-9);   /* never below 0 */
    tp_regime a = {.machine = tp_regime_machine_unknown()}, b = a;
    a.machine.others_cpu_percent = before_others, b.machine.others_cpu_percent = after_others;
    a.machine.cpu_steal_percent = 2, b.machine.cpu_steal_percent = 30;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 1);
    assert_int_equal(b.causes[0].kind, TP_CAUSE_CPU_STEAL);
    assert_true(b.causes[0].before == 2 && b.causes[0].after == 30);
    char words[400];
    tp_causes_text(words, sizeof words, b.causes, b.ncauses);
    assert_string_equal(words, "the virtual machine's host gave its CPUs to others (steal) 30% "
                               "of the time instead of 2%");
    b.ncauses = 0, b.machine.cpu_steal_percent = 2 + TP_CAUSE_STEAL_POINTS - 0.5;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0);
    b.machine.cpu_steal_percent = NAN;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0);
}

/* A disk that other processes kept busy midway is no cause of a pace's
 * change where the training's own threads were seen waiting on storage
 * (proc_blocked) no more than before; their wait that grew is, said as a
 * share of the time under one thread at a time and as threads from one; the
 * machine's I/O pressure is said only where the training's wait was not
 * recorded. */
static void test_the_training_s_own_wait_on_storage_is_the_cause(void **state)
{
    (void)state;
    tp_regime a = {.machine = tp_regime_machine_unknown()}, b = a;
    a.machine.io_pressure = 2, b.machine.io_pressure = 80;
    a.machine.training_blocked = 0.02, b.machine.training_blocked = 0.05;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0); /* another's I/O */
    b.machine.training_blocked = 0.02 + TP_CAUSE_BLOCKED_MOVE + 0.38;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 1);
    assert_int_equal(b.causes[0].kind, TP_CAUSE_STORAGE_WAIT);
    char words[400];
    tp_causes_text(words, sizeof words, b.causes, b.ncauses);
    assert_string_equal(words, "the training's threads waited on storage 50% of the time "
                               "instead of 2% (state D, all of them together)");
    b.ncauses = 0;
    b.machine.training_blocked = 3.3; /* a pool of reading threads */
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 1);
    tp_causes_text(words, sizeof words, b.causes, b.ncauses);
    assert_string_equal(words, "the training's threads waiting on storage went from 0.0 to 3.3 "
                               "at a time on average (state D)");
    b.ncauses = 0; /* a file recorded before proc_blocked: the machine's pressure */
    a.machine.training_blocked = b.machine.training_blocked = NAN;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 1);
    assert_int_equal(b.causes[0].kind, TP_CAUSE_IO_PRESSURE);
}

/* Steps that took longer while their thread ran on a CPU throughout: its
 * CPU time a step moved with them, the cause (the code computed slower, or
 * did more); not where it moved less than half the step's change (the
 * thread waited instead), nor on a rank with a GPU (its host may spin while
 * it waits), nor between runs (compare's machine causes: other code). */
static void test_a_step_thread_that_computed_slower_is_a_cause(void **state)
{
    (void)state;
    tp_regime a = {.mean_s = 0.030, .machine = tp_regime_machine_unknown()}, b = a;
    b.mean_s = 0.040;
    a.machine.step_cpu_busy = 98, b.machine.step_cpu_busy = 97;
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 1);
    assert_int_equal(b.causes[0].kind, TP_CAUSE_STEP_COMPUTED);
    assert_float_equal(b.causes[0].before, 0.0294, 1e-12);
    assert_float_equal(b.causes[0].after, 0.0388, 1e-12);
    char words[400];
    tp_causes_text(words, sizeof words, b.causes, b.ncauses);
    assert_string_equal(words, "its step thread's time on a CPU went from 29 ms to 39 ms a step: "
                               "the same code computed slower (the CPU's clock, other work on "
                               "its core) or did more");
    tp_run_compare c = {.comparable = true, .ncauses = 1};
    c.causes[0] = b.causes[0];
    tp_regime_cause out[TP_REGIME_CAUSES];
    assert_int_equal(tp_compare_machine_causes(&c, out), 0);
    b.ncauses = 0, b.machine.step_cpu_busy = 80; /* 32 ms of a 40 ms step: it waited more */
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0);
    b.machine.step_cpu_busy = 97, b.machine.gpu_busy_percent = 60; /* a GPU's rank */
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0);
    b.machine.gpu_busy_percent = NAN, b.machine.step_cpu_busy = NAN; /* not recorded */
    tp_regime_find_causes(&a, &b);
    assert_int_equal(b.ncauses, 0);
}

/* One process whose loader waited on latency, then on CPUs that others
 * took from step 401 on (burners started): its input_bound, judged on the
 * latest pace, takes that pace's cause from the regime's medians (others
 * busy, the training waiting for a CPU: contention), where the whole run's
 * medians (CPUs 40 % busy) would say latency and advise more workers; the
 * whole run's figures where the regime's are unknown (a summary-only file)
 * or of another agent. */
static void test_an_input_bound_pace_s_cause_is_that_pace_s(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.3, 0);
    phase(f, TP_PHASE_TRAIN_BATCH, 0.6, 0);
    meta(f, "cpu_count", "4");
    series(f, TP_METRIC_CPU_UTIL_PERCENT, "{}", 40, 40, 100);
    series(f, TP_METRIC_PROC_CPU_PERCENT, "{}", 100, 100, 100);
    series(f, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", 5, 5, 50);
    tp_regimes *r = &f->s.regimes;
    r->rank = 0, r->agent_id = 1, r->n = 2;
    r->v[0] = (tp_regime){.first_step = 1, .last_step = 400, .mean_s = 0.010};
    r->v[1] = (tp_regime){.first_step = 401, .last_step = 600, .mean_s = 0.030};
    r->v[1].phase_s[0] = 0.018, r->v[1].phase_s[2] = 0.011;
    r->v[1].machine = tp_regime_machine_unknown();
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_true(v.pace == &r->v[1] && !v.f.input.over_pace);
    assert_int_equal(v.f.input.cause,
                     TP_INPUT_WORKERS); /* unknown over the pace: the whole run's */
    tp_regime_machine *m = &r->v[1].machine;
    m->cpu_busy_p50 = 98, m->proc_cpu_p50 = 90, m->cpu_wait_p50 = 40, m->io_p50 = 0;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_true(v.f.input.over_pace);
    assert_int_equal(v.f.input.cause, TP_INPUT_CONTENTION);
    assert_float_equal(v.f.input.cpu_p50, 98, 1e-12);
    assert_float_equal(v.f.input.own_cpu_p50, 22.5, 1e-12); /* 90 of 400 */
    assert_float_equal(v.f.input.held_p50, 40, 1e-12);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_INPUT_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "The CPUs were busy 98% of the time since step 401 (median), "
                                  "but the training's own processes used only 22% of the machine"));
    take_inventory(f);
    tp_evidence e;
    tp_verdict_evidence_of(&f->s, &v, &e);
    assert_string_equal(e.v[e.n - 1].key, "over");
    assert_string_equal(e.v[e.n - 1].text, "latest_pace");
    r->agent_id = 2; /* the regimes' figures are another agent's machine */
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_true(!v.f.input.over_pace && v.f.input.cause == TP_INPUT_WORKERS);
    facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stragglers_judged_on_the_latest_pace),
        cmocka_unit_test(test_a_rank_s_steps_are_judged_on_its_latest_pace),
        cmocka_unit_test(test_a_rank_s_split_over_a_span_of_its_groups),
        cmocka_unit_test(test_a_straggler_since_the_change_is_its_cause),
        cmocka_unit_test(test_the_hypervisor_s_steal_is_a_cause),
        cmocka_unit_test(test_a_step_thread_that_computed_slower_is_a_cause),
        cmocka_unit_test(test_the_training_s_own_wait_on_storage_is_the_cause),
        cmocka_unit_test(test_an_input_bound_pace_s_cause_is_that_pace_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
