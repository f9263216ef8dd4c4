/* verdicts.c: applying the rules of thumb to a run's figures. */
#include "analyze/verdicts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/rank_gpu.h"
#include "core/metric_catalog.h"
#include "store/model_facts_file.h"
#include "util/grow.h"
#include "trainprof.h"
#include "core/run_keys.h"

#define INPUT_BOUND_SHARE       TP_INPUT_BOUND_SHARE
#define TRANSFER_BOUND_SHARE    TP_TRANSFER_BOUND_SHARE
#define COMPUTE_BOUND_SHARE     TP_COMPUTE_BOUND_SHARE
#define COMPUTE_BOUND_INPUT_MAX TP_COMPUTE_BOUND_INPUT_MAX
#define MEMORY_NEAR_FULL        TP_VERDICT_MEMORY_NEAR_FULL
#define EXPOSED_COMM_SHARE      0.25
#define INPUT_IO_WAIT_PERCENT   25.0
#define DISK_BUSY_PERCENT       90.0
/* the training's threads seen waiting on storage (state D), on average
 * over the steps, against the share of the step its loading is waited for:
 * a loader that waits on storage has its readers in D about that long (the
 * main process, its workers or its reading threads together); under a
 * quarter of it, storage busy with other processes' I/O is not what the
 * loading waits on (the first steps' code read from a busy disk: 0.1 of
 * 0.87, measured) */
#define INPUT_BLOCKED_OF_SHARE 0.25

static double share(const tp_timings *t, int rank, const char *name)
{
    const tp_timing_row *r = tp_timings_row(t, rank, name);
    return r ? r->share : 0;
}

/* The device time of (rank, name) over the rank's step time, at most 1: how
 * much of the steps the GPU spent on that region's work, which host times
 * hide when CUDA runs asynchronously (0 without device times or steps).
 * sampled: the recorder backed off and device times were taken on some steps
 * only (own_cost.h's device_every): the total is scaled up from the
 * occurrences that were timed. */
static double device_share(const tp_timings *t, int rank, const char *name, bool sampled)
{
    const tp_timing_row *r = tp_timings_row(t, rank, name);
    const tp_step_row *st = tp_timings_steps_of(t, rank);
    double device_s = r ? r->device_total_s : 0;
    if (sampled && r && r->device.count > 0 && r->stats.count > r->device.count)
        device_s *= (double)r->stats.count / (double)r->device.count;
    double v = st && st->total_s > 0 ? device_s / st->total_s : 0;
    return v < 1 ? v : 1; /* more: the host ran ahead of the GPU, steps are launches */
}

/* device_share's value for a verdict's figures: -1 (none) where (rank,
 * name) had no device times, so that a CPU training shows no GPU share. */
static double device_figure(const tp_timings *t, int rank, const char *name, double share)
{
    const tp_timing_row *r = tp_timings_row(t, rank, name);
    return r && (r->device.count > 0 || r->device_total_s > 0) ? share : -1;
}

/* The agent's disk with the highest median busy share over the steps, or
 * NULL (the metric has one series per disk and no total). */
static const tp_series_summary *busiest_disk(const tp_summary *s, int64_t agent)
{
    const tp_series_summary *best = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const tp_series_summary *x = &s->items[i];
        if (x->series->agent_id == agent &&
            strcmp(x->series->metric, TP_METRIC_DISK_BUSY_PERCENT) == 0 &&
            (!best || x->steps.p50 > best->steps.p50))
            best = x;
    }
    return best;
}

/* The series `metric` of rank_gpu's GPU, or NULL. */
static const tp_series_summary *rank_gpu_series(const tp_summary *s, int rank, const char *metric)
{
    const tp_run_gpu *gpu = tp_summary_rank_gpu(s, rank);
    if (!gpu)
        return NULL;
    char labels[32];
    tp_labels_gpu(labels, sizeof labels, gpu->index);
    return tp_summary_find(s, gpu->agent_id, metric, labels);
}

/* The input cause's figures of v over its latest pace: the regime's
 * medians (machine) in place of the whole run's steps'. */
static void input_over_pace(const tp_summary *s, int64_t agent, const tp_regime_machine *m,
                            tp_verdict *v)
{
    double cores = tp_verdicts_agent_cores(s, agent);
    v->f.input.over_pace = true;
    v->f.input.cpu_p50 = m->cpu_busy_p50;
    v->f.input.own_cpu_p50 = m->proc_cpu_p50 >= 0 && cores >= 1 ? m->proc_cpu_p50 / cores : -1;
    v->f.input.held_p50 = m->cpu_wait_p50;
    v->f.input.steal_percent = isfinite(m->cpu_steal_percent) ? m->cpu_steal_percent : -1;
    v->f.input.io_p50 = m->io_p50;
    if (isfinite(m->training_blocked))
        v->f.input.blocked = m->training_blocked;
    v->f.input.disk_p50 = m->disk_p50;
    v->f.input.disk = m->disk ? tp_summary_find(s, agent, m->disk->metric, m->disk->labels) : NULL;
    if (!v->f.input.disk)
        v->f.input.disk_p50 = -1;
}

/* input_bound for rank (waiting `in` of its step time), with the cause
 * that picks the advice: its machine's CPUs busy (median >= 90 %), with the
 * training's own process tree using as much of that busy time as other
 * processes (cpu; a virtual machine's steal is neither's, cpu_steal's),
 * or less (contention: another process competes, and the training's
 * processes waited for a CPU, where recorded; others busy on cycles a
 * loader that sleeps leaves idle are not its cause); else its storage (tasks
 * waiting on I/O, median >= 25 %, or a disk busy, median >= 90 %), where
 * the training's own threads were seen waiting on it (state D) for a
 * quarter of the loading's share or more (a disk busy with another's
 * writes is not a sleeping loader's cause); else
 * latency (too few workers to hide it). Medians over the agent's training
 * steps, so that the start-up (importing torch on one core) doesn't count;
 * over the latest pace where the verdict is judged on it (pace) and its
 * regime's medians are of the rank's agent: burners that started midway
 * are the cause since, whatever the whole run's median says. */
static void input_bound_verdict(const tp_summary *s, int rank, double in, double step_mean,
                                const tp_regime *pace, tp_verdicts *out)
{
    const tp_timings *t = &s->timings;
    const tp_timing_row *r = tp_timings_row(t, rank, TP_PHASE_DATALOADER_NEXT);
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    int64_t agent = place ? place->agent_id : 1; /* the rank's, where the ranks table knows it */
    const tp_series_summary *pc = tp_summary_find(s, agent, TP_METRIC_PROC_COUNT, "{}");
    const tp_series_summary *cpu = tp_summary_find(s, agent, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    const tp_series_summary *io =
        tp_summary_find(s, agent, TP_METRIC_PRESSURE_IO_SOME_PERCENT, "{}");
    const tp_series_summary *disk = busiest_disk(s, agent);
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_INPUT_BOUND);
    v->rank = rank;
    v->agent_id = agent;
    v->f.input.share = in;
    v->f.input.next_mean_s = r->stats.mean;
    v->f.input.step_mean_s = step_mean;
    v->f.input.procs = pc ? pc->stats.max : -1;
    v->f.input.cpu_p50 = cpu ? cpu->steps.p50 : -1;
    v->f.input.io_p50 = io ? io->steps.p50 : -1;
    v->f.input.disk_p50 = disk ? disk->steps.p50 : -1;
    v->f.input.cpu = cpu, v->f.input.io = io, v->f.input.disk = disk;
    v->f.input.cpus = tp_run_agent_meta_get(s->run, agent, TP_META_CPU_COUNT);
    /* the training's share of the machine: its tree's CPU (100 = one core)
     * over the cores */
    const tp_series_summary *own = tp_summary_find(s, agent, TP_METRIC_PROC_CPU_PERCENT, "{}");
    double cores = tp_verdicts_agent_cores(s, agent);
    v->f.input.own = own;
    v->f.input.own_cpu_p50 = own && cores >= 1 ? own->steps.p50 / cores : -1;
    const tp_series_summary *held =
        tp_summary_find(s, agent, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}");
    v->f.input.held_p50 = held && held->steps.count ? held->steps.p50 : -1;
    const tp_series_summary *steal = tp_summary_find(s, agent, TP_METRIC_CPU_STEAL_PERCENT, "{}");
    v->f.input.steal_percent = steal && steal->steps.count ? steal->steps.mean : -1;
    const tp_series_summary *blocked = tp_summary_find(s, agent, TP_METRIC_PROC_BLOCKED, "{}");
    v->f.input.blocked = blocked && blocked->steps.count ? blocked->steps.mean : -1;
    if (pace && s->regimes.agent_id == agent && pace->machine.cpu_busy_p50 >= 0)
        input_over_pace(s, agent, &pace->machine, v);
    bool busy = v->f.input.cpu_p50 >= TP_CPU_SATURATED_PERCENT;
    double others_p50 = v->f.input.cpu_p50 - fmax(v->f.input.steal_percent, 0) -
                        v->f.input.own_cpu_p50; /* other processes', the steal left out */
    bool others = busy && v->f.input.own_cpu_p50 >= 0 && others_p50 > v->f.input.own_cpu_p50;
    bool held_back = v->f.input.held_p50 < 0 || v->f.input.held_p50 >= TP_CPU_WAIT_PERCENT;
    v->f.input.others_idle = others && !held_back;
    bool disk_busy = v->f.input.disk_p50 >= DISK_BUSY_PERCENT;
    bool io_busy = v->f.input.io_p50 >= INPUT_IO_WAIT_PERCENT;
    bool waited = v->f.input.blocked < 0 || v->f.input.blocked >= INPUT_BLOCKED_OF_SHARE * in;
    v->f.input.storage_others = waited      ? TP_INPUT_WORKERS
                                : disk_busy ? TP_INPUT_DISK
                                : io_busy   ? TP_INPUT_IO_WAIT
                                            : TP_INPUT_WORKERS;
    v->f.input.cause = others && held_back   ? TP_INPUT_CONTENTION
                       : busy && !others     ? TP_INPUT_CPU
                       : disk_busy && waited ? TP_INPUT_DISK
                       : io_busy && waited   ? TP_INPUT_IO_WAIT
                                             : TP_INPUT_WORKERS;
}

/* The capture windows' idle share of rank's captured steps on its GPU
 * (analyze/ops.h), NaN where no window caught the GPU's work. */
static double window_idle(const tp_summary *s, int rank)
{
    for (size_t i = 0; i < s->ops.nbusy; i++)
        if (s->ops.busy[i].rank == rank && s->ops.busy[i].span_s > 0)
            return 1 - s->ops.busy[i].busy_s / s->ops.busy[i].span_s;
    return NAN;
}

/* Whether rank's step runs on a CUDA GPU: the model's device as the
 * instrumentation saw it, device times of its regions, or a capture
 * window's GPU work. */
static bool on_gpu(const tp_summary *s, int rank, const tp_model_facts *facts)
{
    if (strcmp(facts->device, "cuda") == 0)
        return true;
    const tp_timings *t = &s->timings;
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].rank == rank && t->rows[i].device.count > 0)
            return true;
    return isfinite(window_idle(s, rank));
}

/* The figures of a computing step on rank's GPU, and whether the GPU was
 * the step's limit (busy at least TP_HOST_BOUND_GPU_BUSY of the steps, or
 * nothing says it was not): else the host could not keep it busy. */
static bool gpu_figures(const tp_summary *s, int rank, const tp_model_facts *facts, tp_verdict *v)
{
    __typeof__(v->f.compute) *c = &v->f.compute;
    c->gpu_busy = c->window_idle = NAN;
    c->witness = TP_GPU_BUSY_UNKNOWN;
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    c->proc_cpu = tp_summary_find(s, place ? place->agent_id : 1, TP_METRIC_PROC_CPU_PERCENT, "{}");
    if (!on_gpu(s, rank, facts))
        return true;
    v->gpu = tp_summary_rank_gpu(s, rank);
    c->tensor = rank_gpu_series(s, rank, TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT);
    c->sm_active = rank_gpu_series(s, rank, TP_METRIC_GPU_SM_ACTIVE_PERCENT);
    c->util = rank_gpu_series(s, rank, TP_METRIC_GPU_UTIL_PERCENT);
    c->window_idle = window_idle(s, rank);
    if (c->util && c->util->steps.count > 0) {
        c->gpu_busy = c->util->steps.mean / 100;
        c->witness = TP_GPU_BUSY_NVML;
    } else if (isfinite(c->window_idle)) {
        c->gpu_busy = 1 - c->window_idle;
        c->witness = TP_GPU_BUSY_WINDOW;
    }
    return !(c->gpu_busy < TP_HOST_BOUND_GPU_BUSY);
}

/* A step's split as a verdict judges it where the pace changed: seconds
 * per step waiting for the next batch and in to_device, the mean step, and
 * the computation's share. */
typedef struct pace_split {
    double next_s, to_device_s, mean_s, train;
} pace_split;

/* A run whose pace changed is judged on its latest pace: a training that
 * became input-bound midway is input-bound now, and the average (38 %
 * waiting for data where it waited 1 % and then 68 %) is true of no step.
 * Only where rank's split over it is known as the rules see it: one
 * process's host times (its regimes'), or a rank's over the span the ranks
 * were compared on again (summary.h: ranks_latest, rank_paces; *place then
 * becomes its row over that span). The caller leaves device times out:
 * neither splits them. Returns the latest regime and its split in *now;
 * NULL: the whole run's. */
static const tp_regime *latest_split(const tp_summary *s, int rank, const tp_rank_row **place,
                                     pace_split *now)
{
    if (!*place) {
        const tp_regime *pace = tp_regimes_latest(&s->regimes, rank);
        if (pace)
            *now = (pace_split){pace->phase_s[0], pace->phase_s[1], pace->mean_s,
                                pace->phase_s[2] / pace->mean_s};
        return pace;
    }
    const tp_rank_row *row = tp_ranks_find(&s->ranks_latest, rank);
    const tp_rank_pace *split = row ? tp_summary_rank_pace(s, rank) : NULL;
    const tp_regime *pace =
        split && row->window_s > 0 ? tp_regimes_latest(&s->regimes, s->regimes.rank) : NULL;
    if (pace) {
        *now = (pace_split){split->phase_s[0], split->phase_s[1], split->mean_s,
                            row->compute_s / row->window_s};
        *place = row;
    }
    return pace;
}

static void rank_verdicts(const tp_summary *s, int rank, const tp_model_facts *facts,
                          tp_verdicts *out)
{
    const tp_timings *t = &s->timings;
    const tp_step_row *st = tp_timings_steps_of(t, rank);
    double step_mean = st ? st->stats.mean : 0;
    double in = share(t, rank, TP_PHASE_DATALOADER_NEXT), to = share(t, rank, TP_PHASE_TO_DEVICE);
    bool sampled = s->own.backoff.device_every > 1 || s->inv.device_times_every > 1;
    double to_dev = device_share(t, rank, TP_PHASE_TO_DEVICE, sampled);
    double train = share(t, rank, TP_PHASE_TRAIN_BATCH);
    /* across ranks, train_batch holds the wait for the others (DDP's backward
     * waits for its all-reduce): compute is what lies outside communication */
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    if (place && place->window_s > 0)
        train = place->compute_s / place->window_s;
    double train_dev = device_share(t, rank, TP_PHASE_TRAIN_BATCH, sampled);
    if (train_dev > train) /* the host ran ahead and waited elsewhere (.item(), next batch) */
        train = train_dev;
    if (to_dev > to)
        to = to_dev;
    pace_split now = {0};
    const tp_regime *pace =
        train_dev > 0 || to_dev > 0 ? NULL : latest_split(s, rank, &place, &now);
    if (pace) {
        in = now.next_s / now.mean_s, to = now.to_device_s / now.mean_s;
        train = now.train, step_mean = now.mean_s;
    }
    size_t first = out->n;
    if (in >= INPUT_BOUND_SHARE) {
        input_bound_verdict(s, rank, in, step_mean, pace, out);
        if (pace) /* a fetch of the regime's: its seconds per step over the batches a step */
            out->items[out->n - 1].f.input.next_mean_s =
                now.next_s /
                (st && (double)st->batches > (double)st->stats.count && st->stats.count > 0
                     ? (double)st->batches / (double)st->stats.count
                     : 1.0);
    }
    if (to >= TRANSFER_BOUND_SHARE) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_TRANSFER_BOUND);
        v->rank = rank;
        v->f.transfer.share = to;
        v->f.transfer.host_share = share(t, rank, TP_PHASE_TO_DEVICE);
        v->f.transfer.device_share = device_figure(t, rank, TP_PHASE_TO_DEVICE, to_dev);
    }
    if (train >= COMPUTE_BOUND_SHARE && in < INPUT_BOUND_SHARE) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_COMPUTE_BOUND);
        v->rank = rank;
        v->agent_id = place ? place->agent_id : 1; /* the rank's, as input_bound's */
        if (!gpu_figures(s, rank, facts, v))
            v->kind = TP_VERDICT_HOST_BOUND;
        /* without a DataLoader in the steps (batches of the script's own
         * making) the wait for data is not measured: it lies in what
         * train_batch leaves */
        const tp_timing_row *next = tp_timings_row(t, rank, TP_PHASE_DATALOADER_NEXT);
        v->f.compute.loader_timed = next && next->in_steps_s > 0;
        v->f.compute.input_next = v->f.compute.loader_timed && in >= COMPUTE_BOUND_INPUT_MAX;
        v->f.compute.share = train;
        v->f.compute.device_share = device_figure(t, rank, TP_PHASE_TRAIN_BATCH, train_dev);
        v->f.compute.input_share = in;
        v->f.compute.step_mean_s = step_mean;
    }
    for (size_t i = first; i < out->n; i++)
        out->items[i].pace = pace;
}

/* Stragglers by name; else ranks that mostly wait in communication. Where
 * the first rank's pace changed, judged on the ranks over its latest pace:
 * a rank that became a straggler at step 201 of 300 is one now, by how much
 * it is now, and the whole run's average (62 % longer, of steps that were
 * even and then far apart) is true of no step. */
static void across_ranks(const tp_summary *s, tp_verdicts *out)
{
    const tp_regime *pace =
        s->ranks_latest.n >= 2 ? tp_regimes_latest(&s->regimes, s->regimes.rank) : NULL;
    const tp_ranks *r = pace ? &s->ranks_latest : &s->ranks;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->rows[i].straggler)
            continue;
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_STRAGGLER);
        v->rank = r->rows[i].rank;
        v->agent_id = r->rows[i].agent_id;
        v->f.straggler.row = &r->rows[i];
        v->f.straggler.ranks = r;
        v->pace = pace;
    }
    if (r->n == 0 || r->nstragglers)
        return;
    /* the host's exposed comm, or the device's where collectives ran on
     * CUDA (NCCL: the host saw their launch), whichever is more */
    double exposed = 0, window = 0;
    bool device = false;
    for (size_t i = 0; i < r->n; i++) {
        double host = r->rows[i].comm_s - r->rows[i].comm_overlap_s;
        double dev = r->rows[i].comm_device_exposed_s;
        device = device || dev > host;
        exposed += dev > host ? dev : host;
        window += r->rows[i].window_s;
    }
    if (window > 0 && exposed / window >= EXPOSED_COMM_SHARE) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_COMMUNICATION_BOUND);
        v->f.comm.exposed_s = exposed, v->f.comm.window_s = window, v->f.comm.ranks = r->n;
        v->f.comm.device = device;
        v->pace = pace;
    }
}

/* A rank whose caching allocator peaked within MEMORY_NEAR_FULL of what it
 * can use of its device, by its readings at step boundaries (analyze/
 * gpu_memory.h), else in a capture window (analyze/ops.h): once per rank;
 * and a rank whose memory between steps grows. */
static void allocator_verdicts(const tp_summary *s, tp_verdicts *out)
{
    for (size_t i = 0; i < out->gpu_memory.n; i++) {
        const tp_gpu_memory_rank *g = &out->gpu_memory.v[i];
        if (g->peak_allocated_bytes >= MEMORY_NEAR_FULL * g->limit_bytes) {
            tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_MEMORY);
            v->rank = g->rank;
            v->f.gpu_memory.used_max_bytes = g->peak_allocated_bytes;
            v->f.gpu_memory.total_bytes = g->limit_bytes;
            v->f.gpu_memory.mig = -1;
            v->f.gpu_memory.allocator = g;
        }
        if (g->growing) {
            tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_MEMORY_GROWTH);
            v->rank = g->rank;
            v->f.gpu_growth = g;
        }
    }
    for (size_t i = 0; i < s->ops.nwindows; i++) {
        const tp_ops_window_fact *w = &s->ops.windows[i];
        if (!(w->peak_allocated_bytes >= MEMORY_NEAR_FULL * w->device_memory_bytes))
            continue; /* NaN (no GPU, unknown) is never near full */
        bool said = false;
        for (size_t k = 0; k < out->n && !said; k++)
            said = out->items[k].kind == TP_VERDICT_GPU_MEMORY && !out->items[k].gpu &&
                   out->items[k].rank == w->rank;
        if (said)
            continue;
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_MEMORY);
        v->rank = w->rank;
        v->f.gpu_memory.used_max_bytes = w->peak_allocated_bytes;
        v->f.gpu_memory.total_bytes = w->device_memory_bytes;
        v->f.gpu_memory.mig = -1;
    }
}

void tp_verdicts_build(const tp_summary *s, tp_verdicts *out)
{
    tp_summary_needs(s, TP_PARTS_ALL, "tp_verdicts_build"); /* the windows, the stalls */
    memset(out, 0, sizeof *out);
    tp_gpu_memory_build(s, &out->gpu_memory);
    const tp_timings *t = &s->timings;
    tp_model_facts facts;
    tp_run_model_facts(s->run, &facts);
    /* a run that stalled gets no verdict on its step time: its trouble is
     * the stall, and the steps before it are too few to judge (report says so) */
    bool stalled = false;
    for (size_t i = 0; i < s->stalls.n; i++)
        stalled = stalled || !s->stalls.v[i].ended;
    for (size_t i = 0; i < t->nrows && !stalled; i++)
        if (i == 0 || t->rows[i].rank != t->rows[i - 1].rank)
            rank_verdicts(s, t->rows[i].rank, &facts, out);
    if (!stalled)
        across_ranks(s, out);
    tp_verdicts_system(s, out);
    allocator_verdicts(s, out);
    tp_verdicts_settle(out);
    for (size_t i = 0; i < out->n; i++) {
        out->items[i].facts = facts;
        out->items[i].pace_drifted = out->items[i].pace && s->regimes.drift.found;
    }
}

/* The share of the step time a cpu_contention verdict says the training
 * waited for a CPU: the step thread's wait; before it was recorded, the
 * tree's main threads' (over 100 with several processes) or others' share. */
static double contention_weight(const tp_verdict *v)
{
    const tp_series_summary *w = v->f.cpu.step_wait ? v->f.cpu.step_wait : v->f.cpu.held;
    double held = w ? w->steps.mean : v->f.cpu.others_percent;
    return held < 100 ? held / 100 : 1;
}

/* What a computing step's share holds of waiting for a CPU: the weight of a
 * cpu_contention verdict on the rank's agent among all (0 without one). */
static double cpu_wait_in(const tp_verdicts *all, const tp_verdict *v)
{
    for (size_t i = 0; i < all->n; i++)
        if (all->items[i].kind == TP_VERDICT_CPU_CONTENTION &&
            all->items[i].agent_id == v->agent_id)
            return contention_weight(&all->items[i]);
    return 0;
}

static double weight(const tp_verdicts *all, const tp_verdict *v)
{
    switch (v->kind) {
    case TP_VERDICT_INPUT_BOUND: return v->f.input.share;
    case TP_VERDICT_TRANSFER_BOUND: return v->f.transfer.share;
    /* a computing step weighs what it computed: the time its step thread
     * waited for a CPU lies in its share, and is cpu_contention's weight */
    case TP_VERDICT_COMPUTE_BOUND: return (v->f.compute.share - cpu_wait_in(all, v)) / 2;
    case TP_VERDICT_HOST_BOUND:
        return (v->f.compute.share - cpu_wait_in(all, v)) * (1 - v->f.compute.gpu_busy);
    case TP_VERDICT_COMMUNICATION_BOUND:
        return v->f.comm.window_s > 0 ? v->f.comm.exposed_s / v->f.comm.window_s : 0;
    case TP_VERDICT_STRAGGLER:
        return v->f.straggler.row && v->f.straggler.row->excess < 1 ? v->f.straggler.row->excess
                                                                    : 1;
    case TP_VERDICT_GPU_UNDERUSED: return 0.2;
    case TP_VERDICT_CPU_CONTENTION: return contention_weight(v);
    /* the share of the CPUs' time taken from the training's computing */
    case TP_VERDICT_CPU_STEAL: return v->f.cpu.steal->steps.mean / 100;
    case TP_VERDICT_GPU_MEMORY_GROWTH: return 0.3; /* it ends the run */
    default: return 0.1;
    }
}

size_t tp_verdicts_main(const tp_verdicts *v)
{
    size_t best = 0;
    for (size_t i = 1; i < v->n; i++)
        if (weight(v, &v->items[i]) > weight(v, &v->items[best]))
            best = i;
    return best;
}
