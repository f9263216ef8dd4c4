/* test_verdicts.c: the rules of thumb (analyze/verdicts.h) and bottleneck's
 * limit (analyze/bottleneck_facts.h) on facts made by hand
 * (verdict_facts.h), not recorded: each rule at its threshold and just
 * below (input, transfer, compute, host memory, a network link,
 * stragglers and exposed communication; a GPU's: test_verdicts_gpu.c; the
 * CPUs': test_verdicts_cpu.c), each
 * input-bound cause, and what keeps a rule quiet (a stall, input beside
 * compute). The end-to-end tests
 * show the rules on real runs; these hold the rules themselves. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "verdict_facts.h"

#include "analyze/bottleneck_facts.h"
#include "analyze/verdicts.h"
#include "render/verdict_evidence.h"
#include "core/metric_catalog.h"
#include "render/verdict_words.h"
#include "trainprof.h"

static void test_input_bound_at_its_share_and_not_below(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, TP_INPUT_BOUND_SHARE, 0);
    phase(f, TP_PHASE_TRAIN_BATCH, 0.5, 0);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_int_equal(v.rank, 0);
    assert_true(fabs(v.f.input.share - TP_INPUT_BOUND_SHARE) < 1e-12);
    f->rows[0].share = TP_INPUT_BOUND_SHARE - 0.01; /* dataloader_next sorts first */
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0);
    facts_free(f);
}

/* A virtual machine's steal for cause_with, % (< 0: not counted), and
 * the training's processes seen waiting on storage (state D, mean; < 0: not
 * recorded, as in a run file older than that series). */
static double cause_steal = -1;
static double cause_blocked = -1;
static char cause_words[TP_VERDICT_MESSAGE_MAX]; /* cause_with's verdict in words */

/* The cause that picks the advice, from the machine's figures over the
 * steps; held: the training's wait for a CPU (< 0: not recorded). */
static tp_input_cause cause_with(double cpu, double own_cpu, double disk, double io, double held)
{
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.5, 0);
    meta(f, "cpu_count", "4");
    series(f, TP_METRIC_CPU_UTIL_PERCENT, "{}", cpu, cpu, cpu);
    series(f, TP_METRIC_PROC_CPU_PERCENT, "{}", own_cpu * 4, own_cpu * 4, own_cpu * 4);
    series(f, TP_METRIC_DISK_BUSY_PERCENT, "{\"device\":\"sda\"}", disk, disk, disk);
    series(f, TP_METRIC_PRESSURE_IO_SOME_PERCENT, "{}", io, io, io);
    if (held >= 0)
        series(f, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", held, held, held);
    if (cause_steal >= 0)
        series(f, TP_METRIC_CPU_STEAL_PERCENT, "{}", cause_steal, cause_steal, cause_steal);
    if (cause_blocked >= 0)
        series(f, TP_METRIC_PROC_BLOCKED, "{}", 0, cause_blocked, 1);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_true(message_of(f, TP_VERDICT_INPUT_BOUND, cause_words, sizeof cause_words));
    double others = cpu - fmax(cause_steal, 0) - own_cpu;
    assert_true(v.f.input.others_idle == (v.f.input.cause != TP_INPUT_CONTENTION &&
                                          cpu >= TP_CPU_SATURATED_PERCENT && own_cpu < others));
    facts_free(f);
    return v.f.input.cause;
}

static void test_input_bound_causes(void **state)
{
    (void)state;
    /* the CPUs saturated, the training's own processes at least half of it */
    assert_int_equal(cause_with(95, 60, 0, 0, -1), TP_INPUT_CPU);
    /* saturated, but mostly by others */
    assert_int_equal(cause_with(95, 30, 0, 0, -1), TP_INPUT_CONTENTION);
    assert_int_equal(cause_with(95, 30, 0, 0, TP_CPU_WAIT_PERCENT), TP_INPUT_CONTENTION);
    /* a VM's host took 40 % of it (steal): the other processes' 25 % is
     * less than the training's, whose loading the CPUs hold back */
    cause_steal = 40;
    assert_int_equal(cause_with(95, 30, 0, 0, -1), TP_INPUT_CPU);
    cause_steal = -1;
    /* by others, but the training hardly waited for a CPU (a loader that
     * sleeps): not them, its latency */
    assert_int_equal(cause_with(95, 30, 0, 0, TP_CPU_WAIT_PERCENT - 1), TP_INPUT_WORKERS);
    /* just below saturation: the storage's turn */
    assert_int_equal(cause_with(TP_CPU_SATURATED_PERCENT - 1, 60, 95, 0, -1), TP_INPUT_DISK);
    assert_int_equal(cause_with(50, 40, 10, 30, -1), TP_INPUT_IO_WAIT);
    /* nothing busy: latency that too few workers can't hide */
    assert_int_equal(cause_with(50, 40, 10, 10, -1), TP_INPUT_WORKERS);
}

/* A disk busy, or tasks waiting on storage, with the training's processes
 * hardly waiting on it (state D a twentieth of the time, its loading waited
 * for half of the step): another's I/O, not its loading's cause, and the
 * words say so; a quarter of that half or more, storage. */
static void test_storage_busy_with_others_io_is_not_the_cause(void **state)
{
    (void)state;
    cause_blocked = 0.05;
    assert_int_equal(cause_with(50, 40, 95, 0, -1), TP_INPUT_WORKERS);
    assert_non_null(strstr(cause_words, "Disk sda was busy 95% of the time"));
    assert_non_null(strstr(cause_words, "but not with the training's I/O: its threads were "
                                        "seen waiting on storage 5% of the time"));
    assert_non_null(strstr(cause_words, "num_workers"));
    assert_null(strstr(cause_words, "loading waits on the disk"));
    assert_int_equal(cause_with(50, 40, 10, 30, -1), TP_INPUT_WORKERS);
    assert_non_null(strstr(cause_words, "Tasks waited for storage 30% of the time"));
    cause_blocked = 0.12;
    assert_int_equal(cause_with(50, 40, 95, 0, -1), TP_INPUT_WORKERS);
    cause_blocked = 0.125;
    assert_int_equal(cause_with(50, 40, 95, 0, -1), TP_INPUT_DISK);
    assert_non_null(strstr(cause_words, "loading waits on the disk"));
    assert_null(strstr(cause_words, "but not with"));
    assert_int_equal(cause_with(50, 40, 10, 30, -1), TP_INPUT_IO_WAIT);
    /* nothing busy: nothing to say of the storage */
    cause_blocked = 0;
    assert_int_equal(cause_with(50, 40, 10, 10, -1), TP_INPUT_WORKERS);
    assert_null(strstr(cause_words, "but not with"));
    cause_blocked = -1;
}

static void test_transfer_bound_by_host_or_device_time(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_TO_DEVICE, TP_TRANSFER_BOUND_SHARE - 0.05, 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_TRANSFER_BOUND, NULL), 0);
    /* the host saw a short launch; the GPU spent longer copying */
    f->rows[0].device_total_s = (TP_TRANSFER_BOUND_SHARE + 0.05) * f->steps.total_s;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_TRANSFER_BOUND, &v), 1);
    assert_true(v.f.transfer.share > v.f.transfer.host_share);
    assert_true(v.f.transfer.share == v.f.transfer.device_share);
    facts_free(f);
}

/* Backed off over its budget, the recorder had device times taken on one
 * step in 8: the GPU's share is scaled from the copies timed, not read as
 * an eighth of it. */
static void test_device_times_of_some_steps_are_scaled_to_all(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_TO_DEVICE, 0.05, 0);
    double whole = (TP_TRANSFER_BOUND_SHARE + 0.05) * f->steps.total_s;
    f->rows[0].device = (tp_stats){.count = 12, .mean = whole / 100};
    f->rows[0].device_total_s = 12 * whole / 100; /* 12 of its 100 copies timed */
    assert_int_equal(verdicts_of(f, TP_VERDICT_TRANSFER_BOUND, NULL), 0); /* not backed off */
    f->s.own.backoff = (tp_own_backoff){.set = true, .device_every = 8};
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_TRANSFER_BOUND, &v), 1);
    assert_float_equal(v.f.transfer.device_share, TP_TRANSFER_BOUND_SHARE + 0.05, 1e-9);
    facts_free(f);
}

static double *loader_share(facts *f)
{
    for (size_t i = 0; i < f->s.timings.nrows; i++)
        if (strcmp(f->rows[i].name, TP_PHASE_DATALOADER_NEXT) == 0)
            return &f->rows[i].share;
    fail_msg("no dataloader_next row");
    return NULL;
}

/* compute_bound up to input_bound's share of waiting for data: under
 * TP_COMPUTE_BOUND_INPUT_MAX the input keeps up; from it, the loader is
 * named next; at TP_INPUT_BOUND_SHARE the step is input_bound instead */
static void test_compute_bound_names_the_loader_next_until_input_bound(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_TRAIN_BATCH, TP_COMPUTE_BOUND_SHARE, 0);
    phase(f, TP_PHASE_DATALOADER_NEXT, TP_COMPUTE_BOUND_INPUT_MAX - 0.01, 0);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_true(v.f.compute.loader_timed);
    assert_false(v.f.compute.input_next);
    *loader_share(f) = TP_COMPUTE_BOUND_INPUT_MAX;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_true(v.f.compute.input_next);
    *loader_share(f) = TP_INPUT_BOUND_SHARE - 0.01;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_true(v.f.compute.input_next);
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0);
    *loader_share(f) = TP_INPUT_BOUND_SHARE;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 1);
    facts_free(f);
}

/* A run whose pace changed: its step verdicts are its latest regime's,
 * not the average of two paces (38 % waiting for data where it waited 1 %,
 * then 68 %), in both directions; a steady run's stay the whole run's. */
static void test_a_changed_pace_is_judged_on_its_latest_regime(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_TRAIN_BATCH, 0.58, 0);
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.38, 0);
    tp_regimes *r = &f->s.regimes;
    const tp_regime computing = {.first_step = 1,
                                 .last_step = 400,
                                 .mean_s = 0.008,
                                 .phase_s = {0.0001, 0, 0.0075},
                                 .compute_bound = true};
    const tp_regime loading = {
        .first_step = 401, .last_step = 550, .mean_s = 0.030, .phase_s = {0.0204, 0, 0.009}};
    r->rank = 0, r->n = 2, r->v[0] = computing, r->v[1] = loading;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_non_null(v.pace);
    assert_int_equal(v.pace->first_step, 401);
    assert_float_equal(v.f.input.share, 0.68, 1e-9);
    assert_float_equal(v.f.input.step_mean_s, 0.030, 1e-12);
    assert_float_equal(v.f.input.next_mean_s, 0.0204, 1e-12);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_INPUT_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "since step 401, rank 0 is input-bound"));
    assert_non_null(strstr(words, "before step 401 its steps were compute-bound"));
    /* the other way: the data came to be cached, the step computes now */
    r->v[0] = loading, r->v[0].first_step = 1, r->v[0].input_bound = true;
    r->v[1] = computing, r->v[1].first_step = 401, r->v[1].compute_bound = false;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_float_equal(v.f.compute.share, 0.0075 / 0.008, 1e-9);
    assert_true(message_of(f, TP_VERDICT_COMPUTE_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "before step 401 its steps were input-bound"));
    /* one regime: the whole run's shares */
    r->n = 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_null(v.pace);
    assert_float_equal(v.f.input.share, 0.38, 1e-9);
    /* device times, which regimes do not split: the whole run's too */
    r->n = 2;
    f->rows[1].device_total_s = 0.5 * f->steps.total_s; /* train_batch on the GPU */
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    assert_null(v.pace);
    facts_free(f);
}

/* The evidence with the most figures (input_bound's) has room for them
 * all: its last, where it read its medians ("over"), is not cut. */
static void test_the_evidence_keeps_every_figure(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.5, 0);
    take_inventory(f);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    tp_evidence e;
    tp_verdict_evidence_of(&f->s, &v, &e);
    assert_true(e.n < TP_EVIDENCE_FIGURES);
    assert_string_equal(e.v[0].key, "rank");
    assert_string_equal(e.v[1].key, "since_step");
    assert_string_equal(e.v[e.n - 1].key, "over");
    tp_regime cut = {.first_step = 491, .last_step = 599}; /* of a drifting pace: one more */
    v.pace = &cut, v.pace_drifted = true;
    tp_verdict_evidence_of(&f->s, &v, &e);
    assert_true(e.n < TP_EVIDENCE_FIGURES && e.v[2].value == 599);
    assert_string_equal(e.v[2].key, "to_step");
    assert_string_equal(e.v[e.n - 1].key, "over");
    facts_free(f);
}

static void test_the_device_time_counts_where_the_host_ran_ahead(void **state)
{
    (void)state;
    facts *f = facts_new();
    /* asynchronous CUDA: the host's train_batch is a short launch */
    phase(f, TP_PHASE_TRAIN_BATCH, 0.2, 0.8);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_true(fabs(v.f.compute.share - 0.8) < 1e-12);
    assert_false(v.f.compute.loader_timed); /* no DataLoader in the steps */
    facts_free(f);
}

static void test_a_stalled_run_gets_no_step_verdict(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.9, 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 1);
    f->stall = (tp_stall){.rank = 0, .ended = false};
    f->s.stalls.v = &f->stall;
    f->s.stalls.n = 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 0);
    f->stall.ended = true; /* a stall the run came out of: the steps are judged */
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, NULL), 1);
    facts_free(f);
}

static void test_host_memory_near_full(void **state)
{
    (void)state;
    facts *f = facts_new();
    meta(f, "mem_total_bytes", "1000000000");
    series(f, TP_METRIC_HOST_MEM_USED_BYTES, "{}", 5e8, 6e8, 8.9e8);
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_MEMORY, NULL), 0);
    f->items[0].stats.max = 9e8;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_MEMORY, &v), 1);
    assert_true(v.f.host_memory.total_bytes == 1e9);
    assert_true(v.f.host_memory.training_max_bytes == -1 && !v.f.host_memory.others);
    facts_free(f);
}

/* Memory near full, the training's processes holding a third of what was
 * used: others' to free, and the words say so; half or more, the
 * training's (fewer workers, a smaller cache). */
static void test_host_memory_held_by_others_is_not_the_training_s(void **state)
{
    (void)state;
    facts *f = facts_new();
    meta(f, "mem_total_bytes", "1000000000");
    series(f, TP_METRIC_HOST_MEM_USED_BYTES, "{}", 5e8, 6e8, 9.6e8);
    series(f, TP_METRIC_PROC_RSS_BYTES, "{}", 3e8, 3e8, 3.2e8);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_MEMORY, &v), 1);
    assert_true(v.f.host_memory.others && v.f.host_memory.training_max_bytes == 3.2e8);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_HOST_MEMORY, words, sizeof words));
    assert_non_null(strstr(words, "the training's processes only 0.3 GiB of it (resident, at "
                                  "most)"));
    assert_non_null(strstr(words, "Other processes, or files in /dev/shm or a tmpfs, hold most"));
    assert_null(strstr(words, "DataLoader workers"));
    f->items[1].stats.max = 4.8e8; /* half of 9.6e8: the training's */
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_MEMORY, &v), 1);
    assert_false(v.f.host_memory.others);
    assert_true(message_of(f, TP_VERDICT_HOST_MEMORY, words, sizeof words));
    assert_non_null(strstr(words, "the training's processes 0.4 GiB of it"));
    assert_non_null(strstr(words, "fewer or lighter DataLoader workers"));
    facts_free(f);
}

static void test_the_words_name_the_figures(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.5, 0);
    meta(f, "fact.loader.num_workers", "2");
    take_inventory(f);
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    assert_int_equal(v.n, 1);
    char words[TP_VERDICT_MESSAGE_MAX];
    tp_verdict_message(words, sizeof words, &f->s, &v.items[0]);
    assert_non_null(strstr(words, "input-bound"));
    assert_non_null(strstr(words, "50% of step time"));
    assert_non_null(strstr(words, "num_workers=2 now"));
    tp_verdicts_free(&v);
    facts_free(f);
}

static void test_a_link_near_its_speed(void **state)
{
    (void)state;
    facts *f = facts_new();
    const char *eth = "{\"interface\":\"eth0\"}";
    series(f, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S, eth, 1.25e9, 1.25e9, 1.25e9);
    series(f, TP_METRIC_NET_SENT_BYTES_PER_S, eth, 1e8, 2e8, 1.2e9);
    f->items[1].steps.p95 = 0.89 * 1.25e9;
    assert_int_equal(verdicts_of(f, TP_VERDICT_NETWORK_SATURATED, NULL), 0);
    f->items[1].steps.p95 = 0.9 * 1.25e9;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_NETWORK_SATURATED, &v), 1);
    assert_true(v.f.network.sent);
    facts_free(f);
}

static void test_stragglers_first_else_exposed_communication(void **state)
{
    (void)state;
    facts *f = facts_new();
    tp_rank_row rows[2] = {
        {.rank = 0, .agent_id = 1, .steps = 100, .window_s = 10, .compute_s = 6, .comm_s = 3},
        {.rank = 1, .agent_id = 1, .steps = 100, .window_s = 10, .compute_s = 6, .comm_s = 3},
    };
    measure_all(rows, 2);
    f->s.ranks = (tp_ranks){.rows = rows, .n = 2};
    /* 3 s of 10 waiting in communication, none of it under compute: 30 % */
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMMUNICATION_BOUND, NULL), 1);
    rows[0].comm_overlap_s = rows[1].comm_overlap_s = 1; /* 20 %: under the 25 % */
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMMUNICATION_BOUND, NULL), 0);
    /* on the GPU it was exposed longer than the host saw */
    rows[0].comm_device_exposed_s = rows[1].comm_device_exposed_s = 3;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMMUNICATION_BOUND, &v), 1);
    assert_true(v.f.comm.device);
    /* a straggler is named instead: the others wait for it */
    rows[1].straggler = true;
    f->s.ranks.nstragglers = 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_STRAGGLER, &v), 1);
    assert_int_equal(v.rank, 1);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMMUNICATION_BOUND, NULL), 0);
    facts_free(f);
}

static void test_bottleneck_limits_use_the_verdicts_thresholds(void **state)
{
    (void)state;
    double train = 100;
    assert_int_equal(tp_bottleneck_limit(train, (1 - TP_INPUT_BOUND_SHARE) * train - 1),
                     TP_LIMIT_INPUT);
    assert_int_equal(tp_bottleneck_limit(train, (1 - TP_INPUT_BOUND_SHARE) * train),
                     TP_LIMIT_BALANCED);
    assert_int_equal(tp_bottleneck_limit(train, train / TP_COMPUTE_LIMIT_SHARE + 1),
                     TP_LIMIT_COMPUTE);
    assert_int_equal(tp_bottleneck_limit(train, train), TP_LIMIT_BALANCED);
    tp_bottleneck_run loader = {
        .cpu_mean = TP_CPU_SATURATED_PERCENT, .own_cpu_mean = NAN, .own_read_mb_s = NAN};
    assert_true(tp_loader_cpu_bound(&loader)); /* its own share not recorded: as before */
    assert_false(tp_loader_crowded(&loader));
    loader.own_cpu_mean = TP_CPU_SATURATED_PERCENT / 2; /* half of it its own */
    assert_true(tp_loader_cpu_bound(&loader));
    loader.own_cpu_mean = 30; /* others held 60 of the 90: they crowd it */
    assert_false(tp_loader_cpu_bound(&loader));
    assert_true(tp_loader_crowded(&loader));
    loader.steal_mean = 40; /* 40 of the others' 60 the VM's host took: no process's */
    assert_true(tp_loader_cpu_bound(&loader) && !tp_loader_crowded(&loader));
    loader.steal_mean = NAN; /* not recorded: all of it the others' */
    assert_true(tp_loader_crowded(&loader));
    loader.cpu_mean -= 1;
    assert_false(tp_loader_cpu_bound(&loader) || tp_loader_crowded(&loader));
    double kib;
    loader.disk_read_iops = 100, loader.disk_read_mb_s = 100 * 16 * 1024 / 1e6; /* 16 KiB reads */
    assert_true(tp_loader_small_reads(&loader, &kib));
    assert_true(fabs(kib - 16) < 1e-9);
    loader.own_read_mb_s = loader.disk_read_mb_s / 2; /* half of the bytes its own */
    assert_true(tp_loader_small_reads(&loader, &kib));
    loader.own_read_mb_s = loader.disk_read_mb_s / 4; /* another process's small reads */
    assert_false(tp_loader_small_reads(&loader, &kib));
    loader.own_read_mb_s = NAN;
    loader.disk_read_iops = 10, loader.disk_read_mb_s = 10 * 16 * 1024 / 1e6; /* too few */
    assert_false(tp_loader_small_reads(&loader, &kib));
}

/* A consumer given a summary without a part it reads stops at once (the
 * verdicts read the capture windows and the stalls: built without them, a
 * stalled run would get a steady run's verdicts), naming what is missing. */
static void test_verdicts_of_a_summary_without_its_parts_stop(void **state)
{
    (void)state;
    int err_pipe[2];
    assert_int_equal(pipe(err_pipe), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(err_pipe[1], 2);
        facts *f = facts_new();
        f->s.parts = TP_PART_STACKS; /* the course never added */
        tp_verdicts v;
        tp_verdicts_build(&f->s, &v);
        _exit(0); /* not reached */
    }
    close(err_pipe[1]);
    char said[256] = "";
    ssize_t n = read(err_pipe[0], said, sizeof said - 1);
    said[n > 0 ? n : 0] = 0;
    close(err_pipe[0]);
    int wstatus = 0;
    assert_int_equal(waitpid(child, &wstatus, 0), child);
    assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT);
    assert_non_null(strstr(said, "tp_verdicts_build reads a summary built without its course"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_bound_at_its_share_and_not_below),
        cmocka_unit_test(test_input_bound_causes),
        cmocka_unit_test(test_storage_busy_with_others_io_is_not_the_cause),
        cmocka_unit_test(test_transfer_bound_by_host_or_device_time),
        cmocka_unit_test(test_device_times_of_some_steps_are_scaled_to_all),
        cmocka_unit_test(test_compute_bound_names_the_loader_next_until_input_bound),
        cmocka_unit_test(test_a_changed_pace_is_judged_on_its_latest_regime),
        cmocka_unit_test(test_the_evidence_keeps_every_figure),
        cmocka_unit_test(test_the_device_time_counts_where_the_host_ran_ahead),
        cmocka_unit_test(test_a_stalled_run_gets_no_step_verdict),
        cmocka_unit_test(test_host_memory_near_full),
        cmocka_unit_test(test_host_memory_held_by_others_is_not_the_training_s),
        cmocka_unit_test(test_the_words_name_the_figures),
        cmocka_unit_test(test_a_link_near_its_speed),
        cmocka_unit_test(test_stragglers_first_else_exposed_communication),
        cmocka_unit_test(test_bottleneck_limits_use_the_verdicts_thresholds),
        cmocka_unit_test(test_verdicts_of_a_summary_without_its_parts_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
