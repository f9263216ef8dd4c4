/* verdicts.c: applying the rules of thumb to a run's figures. */
#include "analyze/verdicts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUT_BOUND_SHARE       0.25
#define TRANSFER_BOUND_SHARE    0.15
#define COMPUTE_BOUND_SHARE     0.60
#define COMPUTE_BOUND_INPUT_MAX 0.10
#define GPU_UTIL_TARGET         90.0
#define MEMORY_NEAR_FULL        0.90
#define EXPOSED_COMM_SHARE      0.25

static tp_verdict *add(tp_verdicts *v, const char *kind)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        tp_verdict *p = realloc(v->items, v->cap * sizeof *p);
        if (!p)
            abort();
        v->items = p;
    }
    tp_verdict *d = &v->items[v->n++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    return d;
}

static const tp_timing_row *row(const tp_timings *t, int rank, const char *name)
{
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].rank == rank && strcmp(t->rows[i].name, name) == 0)
            return &t->rows[i];
    return NULL;
}

static double share(const tp_timings *t, int rank, const char *name)
{
    const tp_timing_row *r = row(t, rank, name);
    return r ? r->share : 0;
}

static const tp_step_row *steps_of(const tp_timings *t, int rank)
{
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].rank == rank)
            return &t->steps[i];
    return NULL;
}

/* The device time of (rank, name) over the rank's step time, at most 1: how
 * much of the steps the GPU spent on that region's work, which host times
 * hide when CUDA runs asynchronously (0 without device times or steps). */
static double device_share(const tp_timings *t, int rank, const char *name)
{
    const tp_timing_row *r = row(t, rank, name);
    const tp_step_row *st = steps_of(t, rank);
    double v = r && st && st->total_s > 0 ? r->device_total_s / st->total_s : 0;
    return v < 1 ? v : 1; /* more: the host ran ahead of the GPU, steps are launches */
}

static double max_of(const tp_summary *s, const char *metric, const char *labels)
{
    const tp_series_summary *m = tp_summary_find(s, 1, metric, labels);
    return m ? m->stats.max : -1;
}

static void rank_name(char *buf, size_t cap, int rank)
{
    if (rank < 0)
        snprintf(buf, cap, "the training");
    else
        snprintf(buf, cap, "rank %d", rank);
}

static void rank_verdicts(const tp_summary *s, int rank, tp_verdicts *out)
{
    const tp_timings *t = &s->timings;
    const tp_step_row *st = steps_of(t, rank);
    double step_mean = st ? st->stats.mean : 0;
    double in = share(t, rank, "dataloader_next"), to = share(t, rank, "to_device");
    double to_dev = device_share(t, rank, "to_device");
    double train = share(t, rank, "train_batch");
    /* across ranks, train_batch holds the wait for the others (DDP's backward
     * waits for its all-reduce): compute is what lies outside communication */
    for (size_t i = 0; i < s->ranks.n; i++)
        if (s->ranks.rows[i].rank == rank && s->ranks.rows[i].window_s > 0)
            train = s->ranks.rows[i].compute_s / s->ranks.rows[i].window_s;
    double train_dev = device_share(t, rank, "train_batch");
    if (train_dev > train) /* the host ran ahead and waited elsewhere (.item(), next batch) */
        train = train_dev;
    if (to_dev > to)
        to = to_dev;
    char who[32];
    rank_name(who, sizeof who, rank);
    if (in >= INPUT_BOUND_SHARE) {
        const tp_timing_row *r = row(t, rank, "dataloader_next");
        double procs = max_of(s, "proc_count", "{}");
        const char *cpus = tp_run_meta_get(s->run, "cpu_count");
        tp_verdict *v = add(out, "input_bound");
        snprintf(
            v->message, sizeof v->message,
            "%s is input-bound: waiting for the next batch takes %.0f%% of step time "
            "(dataloader_next %.1f ms per fetch, steps %.1f ms). Loading should take much "
            "less than training. Try more DataLoader workers (num_workers; the command "
            "ran up to %.0f processes on %s CPUs), pin_memory=True, a larger prefetch_factor, and "
            "data in memory or on local NVMe.",
            who, 100 * in, 1e3 * r->stats.mean, 1e3 * step_mean, procs, cpus ? cpus : "?");
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"rank\":%d,\"dataloader_next_share\":%.4f,\"dataloader_next_mean_s\":%.6f,"
                 "\"step_mean_s\":%.6f,\"proc_count_max\":%.0f}",
                 rank, in, r->stats.mean, step_mean, procs);
    }
    if (to >= TRANSFER_BOUND_SHARE) {
        tp_verdict *v = add(out, "transfer_bound");
        snprintf(v->message, sizeof v->message,
                 "%s is transfer-bound: host-to-device copies take %.0f%% of step time%s. Try "
                 "pin_memory=True in the DataLoader with .to(device, non_blocking=True), copying "
                 "once per batch rather than per tensor, and smaller dtypes for inputs.",
                 who, 100 * to, to == to_dev ? " on the GPU" : "");
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"rank\":%d,\"to_device_share\":%.4f,\"to_device_device_share\":%.4f}", rank,
                 share(t, rank, "to_device"), to_dev);
    }
    if (train >= COMPUTE_BOUND_SHARE && in < COMPUTE_BOUND_INPUT_MAX) {
        tp_verdict *v = add(out, "compute_bound");
        snprintf(v->message, sizeof v->message,
                 "%s is compute-bound: the computation (train_batch, outside communication) "
                 "takes %.0f%% of step time "
                 "and waiting for data only %.0f%%. The input pipeline keeps up; speed-ups come "
                 "from the computation: mixed precision (torch.autocast; FP16/BF16 on tensor "
                 "cores is 1.5-5x for common models), larger batches, torch.compile, faster or "
                 "more devices.",
                 who, 100 * train, 100 * in);
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"rank\":%d,\"train_batch_share\":%.4f,\"train_batch_device_share\":%.4f,"
                 "\"dataloader_next_share\":%.4f,\"step_mean_s\":%.6f}",
                 rank, train, train_dev, in, step_mean);
    }
}

static void system_verdicts(const tp_summary *s, tp_verdicts *out)
{
    for (size_t g = 0; g < s->run->ngpus; g++) {
        const tp_run_gpu *gpu = &s->run->gpus[g];
        char labels[32];
        snprintf(labels, sizeof labels, "{\"gpu\":\"%d\"}", gpu->index);
        const tp_series_summary *u = tp_summary_find(s, gpu->agent_id, "gpu_util_percent", labels);
        if (u && u->stats.mean < GPU_UTIL_TARGET) {
            tp_verdict *v = add(out, "gpu_underused");
            snprintf(v->message, sizeof v->message,
                     "GPU %d (%s) is under-used: utilization averaged %.0f%% (p50 %.0f%%); it "
                     "should be close to 100%%, at least 90%%. Look at the input pipeline and "
                     "host-side work between steps, and at the batch size.",
                     gpu->index, gpu->name, u->stats.mean, u->stats.p50);
            snprintf(v->evidence, sizeof v->evidence,
                     "{\"gpu\":%d,\"util_mean_percent\":%.2f,\"util_p50_percent\":%.2f}",
                     gpu->index, u->stats.mean, u->stats.p50);
        }
        const tp_series_summary *m =
            tp_summary_find(s, gpu->agent_id, "gpu_mem_used_bytes", labels);
        if (m && gpu->mem_total_bytes > 0 &&
            m->stats.max >= MEMORY_NEAR_FULL * (double)gpu->mem_total_bytes) {
            tp_verdict *v = add(out, "memory_pressure");
            snprintf(v->message, sizeof v->message,
                     "GPU %d memory came within %.0f%% of full (peak %.1f of %.1f GiB): stay away "
                     "from the maximum (fragmentation, out-of-memory). Try a smaller batch with "
                     "gradient accumulation, mixed precision, or activation checkpointing.",
                     gpu->index, 100 * (1 - m->stats.max / (double)gpu->mem_total_bytes),
                     m->stats.max / (1 << 30), (double)gpu->mem_total_bytes / (1 << 30));
            snprintf(v->evidence, sizeof v->evidence,
                     "{\"gpu\":%d,\"mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%lld}",
                     gpu->index, m->stats.max, (long long)gpu->mem_total_bytes);
        }
    }
    const char *total = tp_run_meta_get(s->run, "mem_total_bytes");
    double host_total = total ? strtod(total, NULL) : 0;
    double used = max_of(s, "host_mem_used_bytes", "{}");
    double swap = max_of(s, "swap_used_bytes", "{}");
    if (host_total > 0 && (used >= MEMORY_NEAR_FULL * host_total || swap > 64.0 * (1 << 20))) {
        tp_verdict *v = add(out, "memory_pressure");
        snprintf(v->message, sizeof v->message,
                 "Host memory is near full: peak %.1f of %.1f GiB used, %.1f GiB of swap. Don't "
                 "max out CPU memory: fewer or lighter DataLoader workers, a smaller in-memory "
                 "cache, or a machine with more memory.",
                 used / (1 << 30), host_total / (1 << 30), swap > 0 ? swap / (1 << 30) : 0);
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"host_mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%.0f,"
                 "\"swap_used_max_bytes\":%.0f}",
                 used, host_total, swap > 0 ? swap : 0);
    }
}

/* Stragglers by name; else ranks that mostly wait in communication. */
static void across_ranks(const tp_summary *s, tp_verdicts *out)
{
    const tp_ranks *r = &s->ranks;
    for (size_t i = 0; i < r->n; i++) {
        const tp_rank_row *row = &r->rows[i];
        if (!row->straggler)
            continue;
        tp_verdict *v = add(out, "straggler");
        snprintf(v->message, sizeof v->message,
                 "Rank %d is a straggler: its own work (input + compute) takes %.0f %% longer "
                 "per step than the median rank's (%.1f vs %.1f ms), and in synchronous training "
                 "every other rank waits for it in collectives. Cause: %s.",
                 row->rank, 100 * row->excess, 1e3 * tp_rank_own_per_step(row),
                 1e3 * r->median_own_s, row->cause);
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"rank\":%d,\"own_s_per_step\":%.6f,\"median_own_s_per_step\":%.6f,"
                 "\"input_s_per_step\":%.6f,\"compute_s_per_step\":%.6f,"
                 "\"median_comm_s_per_step\":%.6f}",
                 row->rank, tp_rank_own_per_step(row), r->median_own_s,
                 row->input_s / (double)row->steps, row->compute_s / (double)row->steps,
                 r->median_comm_s);
    }
    if (r->n == 0 || r->nstragglers)
        return;
    double exposed = 0, window = 0;
    for (size_t i = 0; i < r->n; i++) {
        exposed += r->rows[i].comm_s - r->rows[i].comm_overlap_s;
        window += r->rows[i].window_s;
    }
    if (window > 0 && exposed / window >= EXPOSED_COMM_SHARE) {
        tp_verdict *v = add(out, "communication_bound");
        snprintf(v->message, sizeof v->message,
                 "Ranks spend %.0f %% of their step time in communication with no compute "
                 "region open, and none of them is a straggler: more work per communication "
                 "(a larger batch per rank, gradient accumulation with no_sync), DDP's "
                 "bucket_cap_mb, or a faster interconnect.",
                 100 * exposed / window);
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"exposed_comm_s\":%.6f,\"window_s\":%.6f,\"ranks\":%zu}", exposed, window,
                 r->n);
    }
}

void tp_verdicts_build(const tp_summary *s, tp_verdicts *out)
{
    memset(out, 0, sizeof *out);
    const tp_timings *t = &s->timings;
    for (size_t i = 0; i < t->nrows; i++)
        if (i == 0 || t->rows[i].rank != t->rows[i - 1].rank)
            rank_verdicts(s, t->rows[i].rank, out);
    across_ranks(s, out);
    system_verdicts(s, out);
}

void tp_verdicts_free(tp_verdicts *v)
{
    free(v->items);
    memset(v, 0, sizeof *v);
}
