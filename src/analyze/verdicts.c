/* verdicts.c: applying the rules of thumb to a run's figures. */
#include "analyze/verdicts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_writer.h"
#include "util/labels.h"
#include "util/grow.h"

#define INPUT_BOUND_SHARE       0.25
#define TRANSFER_BOUND_SHARE    0.15
#define COMPUTE_BOUND_SHARE     0.60
#define COMPUTE_BOUND_INPUT_MAX 0.10
#define GPU_UTIL_TARGET         90.0
#define MEMORY_NEAR_FULL        0.90
#define EXPOSED_COMM_SHARE      0.25
#define CPU_SATURATED_PERCENT   90.0
#define LINK_NEAR_FULL          0.90
#define INPUT_IO_WAIT_PERCENT   25.0
#define DISK_BUSY_PERCENT       90.0

static tp_verdict *add(tp_verdicts *v, const char *kind)
{
    v->items = tp_grow(v->items, v->n, &v->cap, sizeof *v->items);
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

/* The agent's disk with the highest median busy share over the steps, or
 * NULL (the metric has one series per disk and no total). */
static const tp_series_summary *busiest_disk(const tp_summary *s, int64_t agent)
{
    const tp_series_summary *best = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const tp_series_summary *x = &s->items[i];
        if (x->series->agent_id == agent && strcmp(x->series->metric, "disk_busy_percent") == 0 &&
            (!best || x->steps.p50 > best->steps.p50))
            best = x;
    }
    return best;
}

/* What a figure of x was taken over, for a verdict's message: the training
 * steps (tp_series_summary.steps), or the whole run where the steps are
 * unknown. */
static const char *over(const tp_series_summary *x)
{
    return x && x->in_steps ? " during the training steps" : "";
}

/* The same for the evidence's "over": "steps" or "run". */
static const char *over_key(const tp_series_summary *x)
{
    return x && x->in_steps ? "steps" : "run";
}

static void rank_name(char *buf, size_t cap, int rank)
{
    if (rank < 0)
        snprintf(buf, cap, "the training");
    else
        snprintf(buf, cap, "rank %d", rank);
}

/* input_bound for rank (waiting `in` of its step time), with the cause
 * that picks the advice: its machine's CPUs busy (median >= 90 %), else
 * its storage (tasks waiting on I/O, median >= 25 %, or a disk busy, median
 * >= 90 %), else too few workers. Medians over the agent's training steps,
 * so that the start-up (importing torch on one core) doesn't count. */
static void input_bound_verdict(const tp_summary *s, int rank, const char *who, double in,
                                double step_mean, tp_verdicts *out)
{
    const tp_timings *t = &s->timings;
    const tp_timing_row *r = row(t, rank, "dataloader_next");
    int64_t agent = 1; /* the rank's, where the ranks table knows it */
    for (size_t i = 0; i < s->ranks.n; i++)
        if (s->ranks.rows[i].rank == rank)
            agent = s->ranks.rows[i].agent_id;
    const tp_series_summary *pc = tp_summary_find(s, agent, "proc_count", "{}");
    const tp_series_summary *cpu = tp_summary_find(s, agent, "cpu_util_percent", "{}");
    const tp_series_summary *io = tp_summary_find(s, agent, "pressure_io_some_percent", "{}");
    double procs = pc ? pc->stats.max : -1, cpu_p50 = cpu ? cpu->steps.p50 : -1,
           io_p50 = io ? io->steps.p50 : -1;
    const char *cpus = tp_run_agent_meta_get(s->run, agent, "cpu_count");
    const tp_series_summary *disk = busiest_disk(s, agent);
    double disk_p50 = disk ? disk->steps.p50 : -1;
    const char *cause = cpu_p50 >= CPU_SATURATED_PERCENT ? "cpu"
                        : io_p50 >= INPUT_IO_WAIT_PERCENT || disk_p50 >= DISK_BUSY_PERCENT
                            ? "storage"
                            : "workers";
    char advice[400];
    if (cause[0] == 'c') {
        snprintf(advice, sizeof advice,
                 "The CPUs were busy %.0f%% of the time%s (median), so loading is CPU-bound "
                 "and more workers won't help: cheaper decoding and transforms (or on the "
                 "GPU), data stored pre-processed, or more cores.",
                 cpu_p50, over(cpu));
    } else if (cause[0] == 's') {
        char busy[120];
        if (disk_p50 >= DISK_BUSY_PERCENT) {
            char labels[TP_LABELS_MAX]; /* "device=nvme0n1" */
            tp_labels_display(disk->series->labels, labels, sizeof labels);
            const char *dev = strchr(labels, '=');
            snprintf(busy, sizeof busy, "Disk %.40s was busy %.0f%% of the time%s (median)",
                     dev ? dev + 1 : labels, disk_p50, over(disk));
        } else {
            snprintf(busy, sizeof busy, "Tasks waited for storage %.0f%% of the time%s (median)",
                     io_p50, over(io));
        }
        snprintf(advice, sizeof advice,
                 "%s, so loading waits on the disk or the network filesystem: data on local "
                 "NVMe or in memory, fewer and larger files read sequentially (sharded "
                 "formats), and more workers only where the storage has headroom "
                 "(trainprof iobench).",
                 busy);
    } else {
        snprintf(advice, sizeof advice,
                 "Try more DataLoader workers (num_workers; the command ran up to %.0f "
                 "processes on %s CPUs), pin_memory=True, a larger prefetch_factor, and "
                 "data in memory or on local NVMe.",
                 procs, cpus ? cpus : "?");
    }
    tp_verdict *v = add(out, "input_bound");
    snprintf(v->message, sizeof v->message,
             "%s is input-bound: waiting for the next batch takes %.0f%% of step time "
             "(dataloader_next %.1f ms per fetch, steps %.1f ms). Loading should take much "
             "less than training. %s",
             who, 100 * in, 1e3 * r->stats.mean, 1e3 * step_mean, advice);
    snprintf(v->evidence, sizeof v->evidence,
             "{\"rank\":%d,\"dataloader_next_share\":%.4f,\"dataloader_next_mean_s\":%.6f,"
             "\"step_mean_s\":%.6f,\"proc_count_max\":%.0f,\"cause\":\"%s\","
             "\"cpu_util_p50_percent\":%.2f,\"pressure_io_some_p50_percent\":%.2f,"
             "\"disk_busy_p50_percent\":%.2f,\"over\":\"%s\"}",
             rank, in, r->stats.mean, step_mean, procs, cause, cpu_p50, io_p50, disk_p50,
             over_key(cpu));
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
    if (in >= INPUT_BOUND_SHARE)
        input_bound_verdict(s, rank, who, in, step_mean, out);
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
        /* without a DataLoader in the steps (batches of the script's own
         * making) the wait for data is not measured: it lies in what
         * train_batch leaves */
        char input[120];
        const tp_timing_row *next = row(t, rank, "dataloader_next");
        if (next && next->in_steps_s > 0)
            snprintf(input, sizeof input, "waiting for data only %.0f%%", 100 * in);
        else
            snprintf(input, sizeof input,
                     "everything else, making the batches included (no DataLoader timed), "
                     "%.0f%%",
                     train < 1 ? 100 * (1 - train) : 0.0);
        snprintf(v->message, sizeof v->message,
                 "%s is compute-bound: the computation (train_batch, outside communication) "
                 "takes %.0f%% of step time "
                 "and %s. The input pipeline keeps up; speed-ups come "
                 "from the computation: mixed precision (torch.autocast; FP16/BF16 on tensor "
                 "cores is 1.5-5x for common models), larger batches, torch.compile, faster or "
                 "more devices.",
                 who, 100 * train, input);
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"rank\":%d,\"train_batch_share\":%.4f,\"train_batch_device_share\":%.4f,"
                 "\"dataloader_next_share\":%.4f,\"step_mean_s\":%.6f}",
                 rank, train, train_dev, in, step_mean);
    }
}

/* " of node-3" (with the agent's name as JSON in json) when the run has several
 * agents, else "" (and "null"): which machine a system verdict is about. */
static void agent_of(const tp_run *run, int64_t agent_id, char *of, size_t cap, char *json,
                     size_t jcap)
{
    snprintf(of, cap, "%s", "");
    snprintf(json, jcap, "null");
    for (size_t a = 0; run->nagents > 1 && a < run->nagents; a++)
        if (run->agents[a].id == agent_id) {
            snprintf(of, cap, " of %.60s", run->agents[a].name);
            tp_json_quote(json, jcap, run->agents[a].name, 60);
        }
}

static void gpu_verdicts(const tp_summary *s, const tp_run_gpu *gpu, tp_verdicts *out)
{
    char labels[32], of[80], agent[80];
    snprintf(labels, sizeof labels, "{\"gpu\":\"%d\"}", gpu->index);
    agent_of(s->run, gpu->agent_id, of, sizeof of, agent, sizeof agent);
    const tp_series_summary *u = tp_summary_find(s, gpu->agent_id, "gpu_util_percent", labels);
    if (u && u->steps.mean < GPU_UTIL_TARGET) {
        tp_verdict *v = add(out, "gpu_underused");
        snprintf(v->message, sizeof v->message,
                 "GPU %d%s (%s) is under-used: utilization averaged %.0f%% (p50 %.0f%%)%s; it "
                 "should be close to 100%%, at least 90%%. Look at the input pipeline and "
                 "host-side work between steps, and at the batch size.",
                 gpu->index, of, gpu->name, u->steps.mean, u->steps.p50, over(u));
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"gpu\":%d,\"agent\":%s,\"util_mean_percent\":%.2f,\"util_p50_percent\":%.2f,"
                 "\"over\":\"%s\"}",
                 gpu->index, agent, u->steps.mean, u->steps.p50, over_key(u));
    }
    const tp_series_summary *m = tp_summary_find(s, gpu->agent_id, "gpu_mem_used_bytes", labels);
    if (m && gpu->mem_total_bytes > 0 &&
        m->stats.max >= MEMORY_NEAR_FULL * (double)gpu->mem_total_bytes) {
        tp_verdict *v = add(out, "memory_pressure");
        snprintf(v->message, sizeof v->message,
                 "GPU %d%s memory came within %.0f%% of full (peak %.1f of %.1f GiB): stay away "
                 "from the maximum (fragmentation, out-of-memory). Try a smaller batch with "
                 "gradient accumulation, mixed precision, or activation checkpointing.",
                 gpu->index, of, 100 * (1 - m->stats.max / (double)gpu->mem_total_bytes),
                 m->stats.max / (1 << 30), (double)gpu->mem_total_bytes / (1 << 30));
        snprintf(v->evidence, sizeof v->evidence,
                 "{\"gpu\":%d,\"agent\":%s,\"mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%lld}",
                 gpu->index, agent, m->stats.max, (long long)gpu->mem_total_bytes);
    }
}

/* An agent's host memory size: its metadata's (each node's, in a merged
 * run), or where that is unknown (a merge from before agent_meta), MemTotal
 * as the mean of used + the mean of available (their sum is MemTotal in
 * every sample). 0 when unknown. */
static double host_memory_total(const tp_summary *s, int64_t agent_id)
{
    const char *meta = tp_run_agent_meta_get(s->run, agent_id, "mem_total_bytes");
    if (meta)
        return strtod(meta, NULL);
    const tp_series_summary *used = tp_summary_find(s, agent_id, "host_mem_used_bytes", "{}");
    const tp_series_summary *avail = tp_summary_find(s, agent_id, "host_mem_available_bytes", "{}");
    return used && avail ? used->stats.mean + avail->stats.mean : 0;
}

static void host_memory_verdict(const tp_summary *s, int64_t agent_id, tp_verdicts *out)
{
    const tp_series_summary *u = tp_summary_find(s, agent_id, "host_mem_used_bytes", "{}");
    const tp_series_summary *w = tp_summary_find(s, agent_id, "swap_used_bytes", "{}");
    double total = host_memory_total(s, agent_id), used = u ? u->stats.max : -1,
           swap = w ? w->stats.max : -1;
    if (!(total > 0 && (used >= MEMORY_NEAR_FULL * total || swap > 64.0 * (1 << 20))))
        return;
    char of[80], agent[80];
    agent_of(s->run, agent_id, of, sizeof of, agent, sizeof agent);
    tp_verdict *v = add(out, "memory_pressure");
    snprintf(v->message, sizeof v->message,
             "Host memory%s is near full: peak %.1f of %.1f GiB used, %.1f GiB of swap. Don't "
             "max out CPU memory: fewer or lighter DataLoader workers, a smaller in-memory "
             "cache, or a machine with more memory.",
             of, used / (1 << 30), total / (1 << 30), swap > 0 ? swap / (1 << 30) : 0);
    snprintf(v->evidence, sizeof v->evidence,
             "{\"agent\":%s,\"host_mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%.0f,"
             "\"swap_used_max_bytes\":%.0f}",
             agent, used, total, swap > 0 ? swap : 0);
}

/* CPUs maxed out on an agent with GPUs (where the CPUs feed them; training
 * on the CPU is meant to keep it busy): the host's (every core busy on
 * average), or, under a cgroup CPU limit (the agent's metadata),
 * the command's share of its limit. */
static void cpu_verdict(const tp_summary *s, int64_t agent_id, tp_verdicts *out)
{
    bool gpus = false;
    for (size_t g = 0; g < s->run->ngpus && !gpus; g++)
        gpus = s->run->gpus[g].agent_id == agent_id;
    if (!gpus)
        return;
    const tp_series_summary *u = tp_summary_find(s, agent_id, "cpu_util_percent", "{}");
    const tp_series_summary *p = tp_summary_find(s, agent_id, "proc_cpu_percent", "{}");
    const tp_series_summary *w = tp_summary_find(s, agent_id, "pressure_cpu_some_percent", "{}");
    const char *limit_s = tp_run_agent_meta_get(s->run, agent_id, "cgroup_cpu_limit_cores");
    double limit = limit_s && strcmp(limit_s, "none") != 0 ? strtod(limit_s, NULL) : 0;
    bool host = u && u->steps.mean >= CPU_SATURATED_PERCENT;
    bool cgroup = limit > 0 && p && p->steps.mean >= CPU_SATURATED_PERCENT * limit;
    if (!host && !cgroup)
        return;
    char of[80], agent[80], waited[96] = "";
    agent_of(s->run, agent_id, of, sizeof of, agent, sizeof agent);
    if (w)
        snprintf(waited, sizeof waited, "; some task waited for a CPU %.0f%% of the time",
                 w->steps.mean);
    char busy[200];
    if (host)
        snprintf(busy, sizeof busy,
                 "the CPUs%s were busy %.0f%% of the time%s on average (p50 %.0f%%)", of,
                 u->steps.mean, over(u), u->steps.p50);
    else
        snprintf(busy, sizeof busy,
                 "the command%s used %.1f of the %.1f cores its cgroup allows%s, on average", of,
                 p->steps.mean / 100, limit, over(p));
    tp_verdict *v = add(out, "cpu_saturated");
    snprintf(v->message, sizeof v->message,
             "CPU saturated: %s%s. Don't max out CPU utilization: DataLoader workers, the "
             "training's own threads and other host work compete for the cores, so more "
             "workers won't load faster. Try cheaper transforms (or on the GPU), "
             "torch.set_num_threads so that workers and threads don't oversubscribe the cores, "
             "%sor more cores.",
             busy, waited, limit > 0 ? "a higher cgroup CPU limit, " : "");
    snprintf(v->evidence, sizeof v->evidence,
             "{\"agent\":%s,\"cpu_util_mean_percent\":%.2f,\"proc_cpu_mean_percent\":%.2f,"
             "\"cgroup_cpu_limit_cores\":%.2f,\"pressure_cpu_some_mean_percent\":%.2f,"
             "\"over\":\"%s\"}",
             agent, u ? u->steps.mean : -1, p ? p->steps.mean : -1, limit, w ? w->steps.mean : -1,
             over_key(host ? u : p));
}

/* A network link (interface or InfiniBand port) whose traffic one way ran
 * near its speed at least 5 % of the time (p95 >= 90 % of the link): the
 * bursts of collectives or of data loading over the network are capped by
 * it. Reads the link's speed series and its two rate series. */
static void link_verdict(const tp_summary *s, const tp_series_summary *link, tp_verdicts *out)
{
    const tp_run_series *l = link->series;
    double speed = link->stats.mean;
    if (!(speed > 0))
        return;
    const char *dirs[] = {"net_sent_bytes_per_s", "net_recv_bytes_per_s"};
    const tp_series_summary *worst = NULL;
    for (int d = 0; d < 2; d++) {
        const tp_series_summary *r = tp_summary_find(s, l->agent_id, dirs[d], l->labels);
        if (r && r->steps.p95 >= LINK_NEAR_FULL * speed &&
            (!worst || r->steps.p95 > worst->steps.p95))
            worst = r;
    }
    if (!worst)
        return;
    char of[80], agent[80], labels[TP_LABELS_MAX];
    agent_of(s->run, l->agent_id, of, sizeof of, agent, sizeof agent);
    tp_labels_display(l->labels, labels, sizeof labels);
    bool sent = strcmp(worst->series->metric, dirs[0]) == 0;
    tp_verdict *v = add(out, "network_saturated");
    snprintf(v->message, sizeof v->message,
             "The network link %.60s%s ran near its speed: %s at %.0f%% of its %.2f GB/s or more "
             "during at least 5%% of the %s (p95 %.2f GB/s, mean %.2f GB/s). Don't max out network "
             "bandwidth: fewer or larger collectives (gradient accumulation with no_sync, "
             "DDP's bucket_cap_mb), lower-precision gradients, the data on local disks rather "
             "than over the network, or a faster interconnect.",
             labels, of, sent ? "sending" : "receiving", 100 * worst->steps.p95 / speed,
             speed / 1e9, worst->in_steps ? "training steps" : "run", worst->steps.p95 / 1e9,
             worst->steps.mean / 1e9);
    char link_json[80];
    tp_json_quote(link_json, sizeof link_json, labels, 60);
    snprintf(v->evidence, sizeof v->evidence,
             "{\"agent\":%s,\"link\":%s,\"direction\":\"%s\",\"p95_bytes_per_s\":%.0f,"
             "\"mean_bytes_per_s\":%.0f,\"link_bytes_per_s\":%.0f,\"over\":\"%s\"}",
             agent, link_json, sent ? "sent" : "received", worst->steps.p95, worst->steps.mean,
             speed, over_key(worst));
}

/* Every GPU's verdicts, then every agent's host memory and CPUs, then every
 * network link whose speed is known. */
static void system_verdicts(const tp_summary *s, tp_verdicts *out)
{
    for (size_t g = 0; g < s->run->ngpus; g++)
        gpu_verdicts(s, &s->run->gpus[g], out);
    for (size_t a = 0; a < s->run->nagents; a++) {
        host_memory_verdict(s, s->run->agents[a].id, out);
        cpu_verdict(s, s->run->agents[a].id, out);
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->items[i].series->metric, "net_link_speed_bytes_per_s") == 0)
            link_verdict(s, &s->items[i], out);
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

/* Keeps an evidence object valid JSON whatever figures went into it: the
 * non-finite numbers printf writes (nan, inf, with a sign) become null, and
 * an object cut by its buffer becomes {"cut":true}. */
static void seal_evidence(char *evidence, size_t cap)
{
    char out[sizeof((tp_verdict *)0)->evidence];
    size_t n = 0, len = strlen(evidence);
    bool in_string = false, cut = len == 0 || evidence[len - 1] != '}';
    for (const char *p = evidence; *p && !cut; p++) {
        if (*p == '"' && (p == evidence || p[-1] != '\\'))
            in_string = !in_string;
        size_t word = 0;
        if (!in_string) {
            const char *q = p + (*p == '-');
            word = strncmp(q, "nan", 3) == 0 || strncmp(q, "inf", 3) == 0 ? (size_t)(q + 3 - p) : 0;
        }
        if (n + (word ? 4 : 1) >= sizeof out) {
            cut = true;
            break;
        }
        if (word) {
            memcpy(out + n, "null", 4);
            n += 4;
            p += word - 1;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    snprintf(evidence, cap, "%s", cut ? "{\"cut\":true}" : out);
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
    for (size_t i = 0; i < out->n; i++)
        seal_evidence(out->items[i].evidence, sizeof out->items[i].evidence);
}

void tp_verdicts_free(tp_verdicts *v)
{
    free(v->items);
    memset(v, 0, sizeof *v);
}
