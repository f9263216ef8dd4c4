/* test_verdicts.c: the rules of thumb (analyze/verdicts.h) and bottleneck's
 * limit (analyze/bottleneck_facts.h) on facts made here, not recorded: each
 * rule at its threshold and just below (input, transfer, compute, GPU use,
 * GPU memory and slowdowns, host memory, CPUs, a network link, stragglers
 * and exposed communication), each input-bound cause, and what
 * keeps a rule quiet (a stall, input beside compute). The end-to-end tests
 * show the rules on real runs; these hold the rules themselves. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#include "analyze/bottleneck_facts.h"
#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "render/verdict_words.h"
#include "trainprof.h"

#define MAX_ROWS   16
#define MAX_SERIES 16

/* A one-agent run of one rank (0), as the summary holds it. */
typedef struct facts {
    tp_run run;
    tp_run_agent agent;
    tp_run_meta meta[8];
    tp_run_gpu gpu;
    tp_run_series series[MAX_SERIES];
    tp_series_summary items[MAX_SERIES];
    tp_timing_row rows[MAX_ROWS];
    tp_step_row steps;
    tp_stall stall;
    tp_summary s;
} facts;

static facts *facts_new(void)
{
    facts *f = calloc(1, sizeof *f);
    f->agent = (tp_run_agent){.id = 1, .name = "node", .host = "node"};
    f->run.agents = &f->agent;
    f->run.nagents = 1;
    f->run.meta = f->meta;
    f->s.run = &f->run;
    f->s.parts = TP_PARTS_ALL; /* no stacks, windows or stalls: empty, but built */
    f->s.items = f->items;
    f->s.timings.rows = f->rows;
    f->s.timings.steps = &f->steps;
    f->s.timings.nsteps = 1;
    /* 100 steps of 10 ms */
    f->steps = (tp_step_row){.rank = 0, .stats = {.count = 100, .mean = 0.010}, .total_s = 1.0};
    return f;
}

/* The summary's inventory taken again from the run as the test has made it
 * (render/ reads the run through it). */
static void take_inventory(facts *f)
{
    tp_run_inventory_free(&f->s.inv);
    tp_run_settings_read(f->run.meta, f->run.nmeta, &f->run.settings);
    assert_true(tp_run_inventory_build(&f->run, &f->s.inv));
}

static void facts_free(facts *f)
{
    tp_run_inventory_free(&f->s.inv);
    free(f);
}

static int by_rank_name(const void *x, const void *y)
{
    const tp_timing_row *a = x, *b = y;
    return a->rank != b->rank ? (a->rank > b->rank) - (a->rank < b->rank)
                              : strcmp(a->name, b->name);
}

/* Rank 0's phase name takes share of its step time (host), device of it on
 * the GPU (0: none timed). */
static void phase(facts *f, const char *name, double share, double device)
{
    tp_timing_row *r = &f->rows[f->s.timings.nrows++];
    *r = (tp_timing_row){.rank = 0,
                         .name = (char *)name,
                         .share = share,
                         .in_steps_s = share * f->steps.total_s,
                         .total_s = share * f->steps.total_s,
                         .stats = {.count = 100, .mean = share * f->steps.stats.mean},
                         .device_total_s = device * f->steps.total_s};
    qsort(f->rows, f->s.timings.nrows, sizeof *f->rows, by_rank_name);
}

/* A series of agent 1 whose figures over the steps (and the run) are p50
 * (median), mean and max. */
static void series(facts *f, const char *metric, const char *labels, double p50, double mean,
                   double max)
{
    size_t i = f->s.n++;
    f->series[i] = (tp_run_series){.id = (int64_t)i + 1,
                                   .agent_id = 1,
                                   .metric = (char *)metric,
                                   .unit = "",
                                   .labels = (char *)labels};
    tp_stats st = {
        .count = 100, .mean = mean, .min = 0, .p5 = p50, .p50 = p50, .p95 = max, .max = max};
    f->items[i] =
        (tp_series_summary){.series = &f->series[i], .stats = st, .steps = st, .in_steps = true};
}

static void meta(facts *f, const char *key, const char *value)
{
    f->meta[f->run.nmeta++] = (tp_run_meta){.key = (char *)key, .value = (char *)value};
}

/* The verdicts of kind, counted; *first: the first of them. */
static size_t verdicts_of(const facts *f, tp_verdict_kind kind, tp_verdict *first)
{
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    size_t n = 0;
    for (size_t i = 0; i < v.n; i++)
        if (v.items[i].kind == kind && n++ == 0 && first)
            *first = v.items[i];
    tp_verdicts_free(&v);
    return n;
}

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

/* The cause that picks the advice, from the machine's figures over the steps. */
static tp_input_cause cause_with(double cpu, double own_cpu, double disk, double io)
{
    facts *f = facts_new();
    phase(f, TP_PHASE_DATALOADER_NEXT, 0.5, 0);
    meta(f, "cpu_count", "4");
    series(f, TP_METRIC_CPU_UTIL_PERCENT, "{}", cpu, cpu, cpu);
    series(f, TP_METRIC_PROC_CPU_PERCENT, "{}", own_cpu * 4, own_cpu * 4, own_cpu * 4);
    series(f, TP_METRIC_DISK_BUSY_PERCENT, "{\"device\":\"sda\"}", disk, disk, disk);
    series(f, TP_METRIC_PRESSURE_IO_SOME_PERCENT, "{}", io, io, io);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_INPUT_BOUND, &v), 1);
    facts_free(f);
    return v.f.input.cause;
}

static void test_input_bound_causes(void **state)
{
    (void)state;
    /* the CPUs saturated, the training's own processes at least half of it */
    assert_int_equal(cause_with(95, 60, 0, 0), TP_INPUT_CPU);
    /* saturated, but mostly by others */
    assert_int_equal(cause_with(95, 30, 0, 0), TP_INPUT_CONTENTION);
    /* just below saturation: the storage's turn */
    assert_int_equal(cause_with(TP_CPU_SATURATED_PERCENT - 1, 60, 95, 0), TP_INPUT_DISK);
    assert_int_equal(cause_with(50, 40, 10, 30), TP_INPUT_IO_WAIT);
    /* nothing busy: latency that too few workers can't hide */
    assert_int_equal(cause_with(50, 40, 10, 10), TP_INPUT_WORKERS);
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

static void test_compute_bound_needs_the_input_to_keep_up(void **state)
{
    (void)state;
    facts *f = facts_new();
    phase(f, TP_PHASE_TRAIN_BATCH, TP_COMPUTE_BOUND_SHARE, 0);
    phase(f, TP_PHASE_DATALOADER_NEXT, TP_COMPUTE_BOUND_INPUT_MAX - 0.01, 0);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_true(v.f.compute.loader_timed);
    /* waiting for data as long as the threshold: not compute-bound */
    for (size_t i = 0; i < f->s.timings.nrows; i++)
        if (strcmp(f->rows[i].name, TP_PHASE_DATALOADER_NEXT) == 0)
            f->rows[i].share = TP_COMPUTE_BOUND_INPUT_MAX;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 0);
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
    facts_free(f);
}

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

/* The run's one GPU (index 0, 80 GiB) on agent 1. */
static void one_gpu(facts *f)
{
    f->gpu = (tp_run_gpu){.agent_id = 1, .index = 0, .name = "H100", .mem_total_bytes = 80LL << 30};
    f->run.gpus = &f->gpu;
    f->run.ngpus = 1;
}

static void test_gpu_underused_by_utilization_or_by_its_sms(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 95, 95, 100);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    f->items[0].steps.mean = 89; /* below the 90 % target */
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 1);
    /* "busy" by NVML's measure, but kernels on a few SMs (GPM) */
    f->items[0].steps.mean = 99;
    series(f, TP_METRIC_GPU_SM_ACTIVE_PERCENT, "{\"gpu\":\"0\"}", 20, 20, 30);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, &v), 1);
    assert_non_null(v.f.gpu_util.sm_active);
    facts_free(f);
}

static void test_gpu_memory_near_full_and_gpu_slowed(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    double total = (double)f->gpu.mem_total_bytes;
    series(f, TP_METRIC_GPU_MEM_USED_BYTES, "{\"gpu\":\"0\"}", 0.5 * total, 0.5 * total,
           0.89 * total);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    f->items[0].stats.max = 0.9 * total;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 1);
    /* slowed by heat or a fault 10 % of the samples or more */
    struct tp_gpu_slowdown slow = {.bits = 0, .share = 0.2, .trouble_share = 0.09};
    f->s.gpu_slowdown = &slow;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_THROTTLED, NULL), 0);
    slow.trouble_share = 0.1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_THROTTLED, NULL), 1);
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

static void test_an_allocator_near_its_devices_memory_once_per_rank(void **state)
{
    (void)state;
    facts *f = facts_new();
    double total = 80.0 * (1 << 30);
    tp_ops_window_fact windows[3] = {
        {.rank = 0, .peak_allocated_bytes = 0.89 * total, .device_memory_bytes = total},
        {.rank = 0, .peak_allocated_bytes = 0.95 * total, .device_memory_bytes = total},
        {.rank = 0, .peak_allocated_bytes = 0.97 * total, .device_memory_bytes = total},
    };
    f->s.ops.windows = windows;
    f->s.ops.nwindows = 1;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    f->s.ops.nwindows = 3; /* two windows near full: one verdict for the rank */
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, &v), 1);
    assert_null(v.gpu);
    assert_true(v.f.gpu_memory.used_max_bytes == 0.95 * total);
    windows[0].device_memory_bytes = NAN; /* no GPU: never near full */
    f->s.ops.nwindows = 1;
    windows[0].peak_allocated_bytes = 1e12;
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_MEMORY, NULL), 0);
    facts_free(f);
}

/* The verdict of kind with its words; found: whether there was one. */
static bool message_of(facts *f, tp_verdict_kind kind, char *words, size_t cap)
{
    take_inventory(f);
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    bool found = false;
    for (size_t i = 0; i < v.n && !found; i++)
        if ((found = v.items[i].kind == kind))
            tp_verdict_message(words, cap, &f->s, &v.items[i]);
    tp_verdicts_free(&v);
    return found;
}

/* A computing step on a GPU is the GPU's limit only where the GPU was busy
 * TP_HOST_BOUND_GPU_BUSY of the steps; below, the host can't feed it (the
 * H200's ResNet-18 at batch 64: train_batch 100 %, the GPU busy 40 %). The
 * GPU's under-use is then that verdict's evidence, not a second verdict. */
static void test_on_a_gpu_compute_bound_where_busy_else_host_bound(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.98, 0);
    double at = 100 * TP_HOST_BOUND_GPU_BUSY;
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", at, at, 100);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_NVML);
    assert_true(fabs(v.f.compute.gpu_busy - TP_HOST_BOUND_GPU_BUSY) < 1e-12);
    assert_ptr_equal(v.gpu, &f->gpu);
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, NULL), 0);
    /* under 90 %, but the compute verdict says why: no gpu_underused beside */
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    f->items[0].steps.mean = at - 1; /* just below: the host can't keep it busy */
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, &v), 1);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_GPU_UNDERUSED, NULL), 0);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_HOST_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "host-bound"));
    assert_non_null(strstr(words, "busy only 69% of the training steps"));
    assert_non_null(strstr(words, "reduce-overhead"));
    assert_non_null(strstr(words, "fused=True"));
    assert_non_null(strstr(words, "mixed precision or a faster GPU won't help"));
    assert_null(strstr(words, "faster or more GPUs"));
    /* it leads: it explains the most step time */
    tp_verdicts all;
    tp_verdicts_build(&f->s, &all);
    assert_int_equal(all.items[tp_verdicts_main(&all)].kind, TP_VERDICT_HOST_BOUND);
    tp_verdicts_free(&all);
    facts_free(f);
}

/* Without NVML's utilization, the capture windows' kernels say how busy
 * the GPU was; with neither, nothing says the host was the limit. */
static void test_the_capture_windows_witness_a_gpu_without_nvml(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.9, 0);
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, NULL), 1);
    struct tp_ops_gpu_busy busy = {.rank = 0, .span_s = 1.0, .busy_s = 0.27};
    f->s.ops.busy = &busy;
    f->s.ops.nbusy = 1;
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_WINDOW);
    assert_true(fabs(v.f.compute.window_idle - 0.73) < 1e-12);
    facts_free(f);
}

/* A model on the CPU of a machine with an idle GPU is not host-bound. */
static void test_a_training_on_the_cpu_beside_an_idle_gpu_computes(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cpu");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.9, 0);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 0, 0, 0);
    tp_verdict v;
    assert_int_equal(verdicts_of(f, TP_VERDICT_COMPUTE_BOUND, &v), 1);
    assert_int_equal(v.f.compute.witness, TP_GPU_BUSY_UNKNOWN);
    assert_int_equal(verdicts_of(f, TP_VERDICT_HOST_BOUND, NULL), 0);
    facts_free(f);
}

/* What the script already does is never the advice: a model under bf16
 * autocast is said to run so, and its tensor cores' low use is put down to
 * the GPU's idle time and the work they don't run, not to FP32. */
static void test_precision_words_fit_what_the_model_runs_in(void **state)
{
    (void)state;
    facts *f = facts_new();
    one_gpu(f);
    meta(f, "fact.model.device", "cuda");
    meta(f, "fact.model.autocast", "1");
    meta(f, "fact.model.autocast_dtype", "bfloat16");
    meta(f, "fact.model.dtype", "float32");
    phase(f, TP_PHASE_TRAIN_BATCH, 0.95, 0);
    series(f, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}", 80, 80, 100);
    series(f, TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT, "{\"gpu\":\"0\"}", 6, 6, 9);
    char words[TP_VERDICT_MESSAGE_MAX];
    assert_true(message_of(f, TP_VERDICT_COMPUTE_BOUND, words, sizeof words));
    assert_non_null(strstr(words, "already runs under bf16 autocast"));
    assert_non_null(strstr(words, "the GPU itself idle 20% of the steps"));
    assert_non_null(strstr(words, "under bf16 autocast: most of its GPU time"));
    assert_null(strstr(words, "bf16 autocast, torch.backends"));
    assert_null(strstr(words, "float32 under autocast"));
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
    tp_bottleneck_run loader = {.cpu_mean = TP_CPU_SATURATED_PERCENT};
    assert_true(tp_loader_cpu_bound(&loader));
    loader.cpu_mean -= 1;
    assert_false(tp_loader_cpu_bound(&loader));
    double kib;
    loader.disk_read_iops = 100, loader.disk_read_mb_s = 100 * 16 * 1024 / 1e6; /* 16 KiB reads */
    assert_true(tp_loader_small_reads(&loader, &kib));
    assert_true(fabs(kib - 16) < 1e-9);
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
        cmocka_unit_test(test_transfer_bound_by_host_or_device_time),
        cmocka_unit_test(test_device_times_of_some_steps_are_scaled_to_all),
        cmocka_unit_test(test_compute_bound_needs_the_input_to_keep_up),
        cmocka_unit_test(test_the_device_time_counts_where_the_host_ran_ahead),
        cmocka_unit_test(test_a_stalled_run_gets_no_step_verdict),
        cmocka_unit_test(test_host_memory_near_full),
        cmocka_unit_test(test_cpu_saturated_only_where_cpus_feed_gpus),
        cmocka_unit_test(test_the_words_name_the_figures),
        cmocka_unit_test(test_gpu_underused_by_utilization_or_by_its_sms),
        cmocka_unit_test(test_gpu_memory_near_full_and_gpu_slowed),
        cmocka_unit_test(test_a_link_near_its_speed),
        cmocka_unit_test(test_stragglers_first_else_exposed_communication),
        cmocka_unit_test(test_an_allocator_near_its_devices_memory_once_per_rank),
        cmocka_unit_test(test_on_a_gpu_compute_bound_where_busy_else_host_bound),
        cmocka_unit_test(test_the_capture_windows_witness_a_gpu_without_nvml),
        cmocka_unit_test(test_a_training_on_the_cpu_beside_an_idle_gpu_computes),
        cmocka_unit_test(test_precision_words_fit_what_the_model_runs_in),
        cmocka_unit_test(test_bottleneck_limits_use_the_verdicts_thresholds),
        cmocka_unit_test(test_verdicts_of_a_summary_without_its_parts_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
