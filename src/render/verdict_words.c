/* verdict_words.c: the rules of thumb's verdicts in words and as evidence. */
#include "render/verdict_words.h"

#include "render/ranks_words.h"

#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/model_case.h"
#include "core/metric_catalog.h"
#include "render/causes_words.h"
#include "render/remedy_words.h"
#include "render/report.h"
#include "render/units.h"
#include "render/gpu_memory_words.h"
#include "render/gpu_reasons_words.h"
#include "render/input_words.h"
#include "util/json_writer.h"
#include "util/labels.h"

const char *tp_verdict_kind_name(tp_verdict_kind kind)
{
    switch (kind) {
    case TP_VERDICT_INPUT_BOUND: return "input_bound";
    case TP_VERDICT_TRANSFER_BOUND: return "transfer_bound";
    case TP_VERDICT_COMPUTE_BOUND: return "compute_bound";
    case TP_VERDICT_STRAGGLER: return "straggler";
    case TP_VERDICT_COMMUNICATION_BOUND: return "communication_bound";
    case TP_VERDICT_GPU_UNDERUSED: return "gpu_underused";
    case TP_VERDICT_GPU_MEMORY:
    case TP_VERDICT_HOST_MEMORY: return "memory_pressure";
    case TP_VERDICT_CPU_SATURATED: return "cpu_saturated";
    case TP_VERDICT_CPU_CONTENTION: return "cpu_contention";
    case TP_VERDICT_NETWORK_SATURATED: return "network_saturated";
    case TP_VERDICT_GPU_THROTTLED: return "gpu_throttled";
    case TP_VERDICT_MEMORY_GROWTH: return "memory_growth";
    case TP_VERDICT_HOST_BOUND: return "host_bound";
    case TP_VERDICT_GPU_MEMORY_GROWTH: return "gpu_memory_growth";
    case TP_VERDICT_CPU_STEAL: return "cpu_steal";
    }
    return "?";
}

/* What a figure of x was taken over, for a message: the training steps
 * (tp_series_summary.steps), or the whole run where the steps are unknown. */
static const char *over(const tp_series_summary *x)
{
    return x && x->in_steps ? " during the training steps" : "";
}

const char *tp_verdict_over_key(const tp_series_summary *x)
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

void tp_verdict_agent_of(const tp_run_inventory *inv, int64_t agent_id, char *of, size_t cap,
                         char *json, size_t jcap)
{
    snprintf(of, cap, "%s", "");
    snprintf(json, jcap, "null");
    ptrdiff_t a = inv->nagents > 1 ? tp_inventory_agent_at(inv, agent_id) : -1;
    if (a >= 0) {
        snprintf(of, cap, " of %.60s", inv->agents[a].name);
        tp_json_quote(json, jcap, inv->agents[a].name, 60);
    }
}

/* " (NVML's utilization over the steps; its SMs active 29% (GPM); idle 73% of
 * the steps PyTorch's profiler captured)": how a computing rank's GPU busy
 * share was seen. */
static void gpu_busy_words(char *out, size_t cap, const tp_verdict *v)
{
    const __typeof__(v->f.compute) *c = &v->f.compute;
    size_t len = (size_t)snprintf(out, cap, " (%s",
                                  c->witness == TP_GPU_BUSY_NVML
                                      ? "NVML's utilization over the steps"
                                      : "its kernels in the steps PyTorch's profiler captured");
    if (c->sm_active && len < cap)
        len += (size_t)snprintf(out + len, cap - len, "; its SMs active %.0f%% (GPM)",
                                c->sm_active->steps.mean);
    if (c->witness == TP_GPU_BUSY_NVML && isfinite(c->window_idle) && len < cap)
        len += (size_t)snprintf(out + len, cap - len,
                                "; idle %.0f%% of the steps PyTorch's profiler captured",
                                100 * c->window_idle);
    if (len < cap)
        snprintf(out + len, cap - len, ")");
}

/* compute_bound and host_bound: the step computes; on a GPU busy enough,
 * the GPU is its limit, else the host that can't keep it busy. */
static void compute_message(char *out, size_t cap, const tp_verdict *v, const char *who)
{
    const __typeof__(v->f.compute) *c = &v->f.compute;
    double train = c->share;
    char busy[200] = "";
    if (c->witness != TP_GPU_BUSY_UNKNOWN)
        gpu_busy_words(busy, sizeof busy, v);
    if (v->kind == TP_VERDICT_HOST_BOUND) {
        char cpu[96] = "", remedies[400];
        if (c->proc_cpu)
            snprintf(cpu, sizeof cpu, "; the training's processes kept %.1f cores busy",
                     c->proc_cpu->steps.mean / 100);
        tp_host_bound_remedies(remedies, sizeof remedies, &v->facts);
        snprintf(out, cap,
                 "%s is host-bound: its GPU was busy only %.0f%% of the training steps%s, while "
                 "the step's work on the host (train_batch, outside communication) takes %.0f%% "
                 "of step time. The host can't launch work fast enough to keep the GPU busy "
                 "(Python, the dispatcher, kernel launches, synchronizations)%s. Try %s.",
                 who, 100 * c->gpu_busy, busy, 100 * train, cpu, remedies);
        return;
    }
    char input[120], gpu[240] = "";
    if (c->input_next)
        snprintf(input, sizeof input, "waiting for data %.0f%%", 100 * c->input_share);
    else if (c->loader_timed)
        snprintf(input, sizeof input, "waiting for data only %.0f%%", 100 * c->input_share);
    else
        snprintf(input, sizeof input,
                 "everything else, making the batches included (no DataLoader timed), "
                 "%.0f%%",
                 train < 1 ? 100 * (1 - train) : 0.0);
    if (c->witness != TP_GPU_BUSY_UNKNOWN)
        snprintf(gpu, sizeof gpu, ", and its GPU was busy %.0f%% of the steps%s", 100 * c->gpu_busy,
                 busy);
    char remedies[512];
    tp_compute_remedies(remedies, sizeof remedies, &v->facts);
    snprintf(out, cap,
             "%s is compute-bound: the computation (train_batch, outside communication) "
             "takes %.0f%% of step time and %s%s. %s from the computation: %s.",
             who, 100 * train, input, gpu,
             c->input_next ? "Speed-ups come first" : "The input pipeline keeps up; speed-ups come",
             remedies);
}

/* " Judged on steps 401-550, its latest pace; before step 401 its steps
 * were compute-bound (...)": a step verdict on the rank's latest regime
 * (verdicts.h: pace), and what the regime before it was; of another rank
 * than the one whose regimes they are (own false), the regime before is
 * that first rank's, and said so. Where the pace drifted, the latest
 * regime is a cut of the slope, said so, and the one before is "earlier". */
static void pace_words(char *out, size_t cap, const tp_regime *now, bool own, bool drifted)
{
    const tp_regime *before = now - 1; /* pace is the last of at least two regimes */
    const char *was = before->input_bound      ? "input-bound"
                      : before->transfer_bound ? "transfer-bound"
                      : before->compute_bound  ? "compute-bound"
                      : before->host_bound     ? "host-bound"
                                               : "bound by no one phase";
    char split[96] = "";
    if (before->mean_s > 0 && isfinite(before->phase_s[0]) && isfinite(before->phase_s[2]))
        snprintf(split, sizeof split, ", dataloader_next %.0f%% and train_batch %.0f%% of a step",
                 100 * before->phase_s[0] / before->mean_s,
                 100 * before->phase_s[2] / before->mean_s);
    if (drifted)
        snprintf(out, cap,
                 " Judged on steps %zu-%zu, its latest: its pace grew or shrank all along, at "
                 "no one step, and change points cut it there; earlier (steps %zu-%zu) %s steps "
                 "were %s%s (Changes of pace, below).",
                 now->first_step, now->last_step, before->first_step, before->last_step,
                 own ? "its" : "the first rank's", was, split);
    else
        snprintf(out, cap,
                 " Judged on steps %zu-%zu, its latest pace: before step %zu %s steps were %s%s "
                 "(Changes of pace, below).",
                 now->first_step, now->last_step, now->first_step, own ? "its" : "the first rank's",
                 was, split);
}

static void rank_message(char *out, size_t cap, const tp_verdict *v)
{
    char name[32], who[96], since[48];
    rank_name(name, sizeof name, v->rank);
    if (v->pace) {
        tp_verdict_since(since, sizeof since, v, false);
        snprintf(who, sizeof who, "%s, %s", since, name);
    } else
        snprintf(who, sizeof who, "%s", name);
    if (v->kind == TP_VERDICT_INPUT_BOUND) {
        char advice[640];
        tp_input_advice(advice, sizeof advice, v);
        const __typeof__(v->f.input) *f = &v->f.input;
        size_t len = strlen(advice);
        if (f->others_idle && len < sizeof advice)
            snprintf(advice + len, sizeof advice - len,
                     " Other processes kept the CPUs busy (%.0f%%, median; the training's own "
                     "%.0f%%), but the training waited for a CPU only %.0f%% of the time: they "
                     "are not what slows its loading.",
                     f->cpu_p50, f->own_cpu_p50, f->held_p50);
        snprintf(out, cap,
                 "%s is input-bound: waiting for the next batch takes %.0f%% of step time "
                 "(dataloader_next %.1f ms per fetch, steps %.1f ms). Loading should take much "
                 "less than training. %s",
                 who, 100 * v->f.input.share, 1e3 * v->f.input.next_mean_s,
                 1e3 * v->f.input.step_mean_s, advice);
    } else if (v->kind == TP_VERDICT_TRANSFER_BOUND) {
        snprintf(out, cap,
                 "%s is transfer-bound: host-to-device copies take %.0f%% of step time%s. Try "
                 "pin_memory=True in the DataLoader with .to(device, non_blocking=True), copying "
                 "once per batch rather than per tensor, and smaller dtypes for inputs.",
                 who, 100 * v->f.transfer.share,
                 v->f.transfer.share == v->f.transfer.device_share ? " on the GPU" : "");
    } else {
        compute_message(out, cap, v, who);
    }
}

/* " Its GPU's tensor cores were busy only 6% of the time (GPM) ...": how
 * much of a compute-bound rank's GPU work ran on the tensor cores, and
 * what keeps it off them, by what the model already runs in. */
static void tensor_words(char *out, size_t cap, const tp_verdict *v)
{
    const __typeof__(v->f.compute) *c = &v->f.compute;
    const tp_series_summary *tensor = c->tensor;
    out[0] = '\0';
    if (!tensor || strcmp(v->facts.device, "cuda") != 0)
        return;
    if (tensor->steps.mean >= 30) {
        snprintf(out, cap, " Its GPU's tensor cores were busy %.0f%% of the time (GPM).",
                 tensor->steps.mean);
        return;
    }
    char idle[96] = "";
    if (c->gpu_busy < 0.9) /* the GPU's idle time first: no tensor core works then */
        snprintf(idle, sizeof idle, ", the GPU itself idle %.0f%% of the steps,",
                 100 * (1 - c->gpu_busy));
    if (tp_precision_case_of(&v->facts) == TP_PRECISION_ALREADY_REDUCED) {
        char precision[64];
        if (v->facts.autocast == 1)
            snprintf(precision, sizeof precision, "%s%sautocast",
                     tp_dtype_short(v->facts.autocast_dtype),
                     v->facts.autocast_dtype[0] ? " " : "");
        else
            snprintf(precision, sizeof precision, "%s", v->facts.dtype);
        snprintf(out, cap,
                 " Its GPU's tensor cores were busy only %.0f%% of the time (GPM)%s under %s: "
                 "most of its GPU time goes to work they don't run (normalization, element-wise "
                 "ops, reductions, small or oddly shaped matrices); fused kernels (torch.compile) "
                 "and sizes in multiples of 8 move more of it onto them.",
                 tensor->steps.mean, idle, precision);
    } else {
        snprintf(out, cap,
                 " Its GPU's tensor cores were busy only %.0f%% of the time (GPM)%s: most of "
                 "its compute doesn't use them (FP32 without TF32, small or oddly shaped "
                 "matrices, element-wise work); bf16 autocast, "
                 "torch.backends.cuda.matmul.allow_tf32 and sizes in multiples of 8 let it.",
                 tensor->steps.mean, idle);
    }
}

/* A GPU's verdict (under-used, slowed, memory near full; an allocator's
 * peak in a capture window) in words; of: " of node-3" or "". */
static void gpu_message(char *out, size_t cap, const tp_verdict *v, const char *of)
{
    const tp_run_gpu *gpu = v->gpu;
    if (v->kind == TP_VERDICT_GPU_UNDERUSED) {
        const tp_series_summary *u = v->f.gpu_util.util, *sm = v->f.gpu_util.sm_active;
        if (u->steps.mean >= 90 && sm) /* busy by NVML's measure, not by its SMs' */
            snprintf(out, cap,
                     "GPU %d%s (%s) is under-used: a kernel ran %.0f%% of the time, but its SMs "
                     "were busy only %.0f%% of it (GPM's SM activity)%s: kernels too small to "
                     "fill the GPU. Make the work per kernel larger (batch size, fused or "
                     "compiled kernels: torch.compile, CUDA graphs for launch-bound steps).",
                     gpu->index, of, gpu->name, u->steps.mean, sm->steps.mean, over(u));
        else
            snprintf(out, cap,
                     "GPU %d%s (%s) is under-used: utilization averaged %.0f%% (p50 %.0f%%)%s; "
                     "it should be close to 100%%, at least 90%%. Look at the input pipeline "
                     "and host-side work between steps, and at the batch size.",
                     gpu->index, of, gpu->name, u->steps.mean, u->steps.p50, over(u));
    } else if (v->kind == TP_VERDICT_GPU_THROTTLED) {
        char why[200];
        tp_gpu_reasons_text(why, sizeof why, v->f.gpu_throttle.bits & TP_GPU_REASONS_TROUBLE);
        snprintf(out, cap,
                 "GPU %d%s (%s) was slowed by %s %.0f%% of the time (NVML's clock event "
                 "reasons), below the clock it would run at: check its cooling (airflow, fans, "
                 "the room) and the node's power supply; its other GPUs' figures say whether "
                 "the whole node is affected.",
                 gpu->index, of, gpu->name, why, 100 * v->f.gpu_throttle.trouble_share);
    } else if (v->kind == TP_VERDICT_GPU_MEMORY && v->f.gpu_memory.allocator) {
        tp_gpu_pressure_words(out, cap, v);
    } else if (v->kind == TP_VERDICT_GPU_MEMORY && !gpu) { /* a capture window's allocator */
        double max = v->f.gpu_memory.used_max_bytes, total = v->f.gpu_memory.total_bytes;
        char who[32] = "The training";
        if (v->rank >= 0)
            snprintf(who, sizeof who, "Rank %d", v->rank);
        snprintf(out, cap,
                 "%s's CUDA caching allocator peaked at %.1f of its GPU's %.1f GiB in the captured "
                 "steps (%.0f%% headroom, PyTorch's profiler): a bigger batch or a longer "
                 "sequence will not fit, and fragmentation can end the run out of memory. Try "
                 "a smaller batch with gradient accumulation, mixed precision, or activation "
                 "checkpointing.",
                 who, max / (1 << 30), total / (1 << 30), 100 * (1 - max / total));
    } else if (v->kind == TP_VERDICT_GPU_MEMORY) {
        double max = v->f.gpu_memory.used_max_bytes, total = v->f.gpu_memory.total_bytes;
        char inst[48] = "";
        if (v->f.gpu_memory.mig >= 0)
            snprintf(inst, sizeof inst, " (MIG instance %d)", v->f.gpu_memory.mig);
        snprintf(out, cap,
                 "GPU %d%s%s memory came within %.0f%% of full (peak %.1f of %.1f GiB): stay "
                 "away from the maximum (fragmentation, out-of-memory). Try a smaller batch with "
                 "gradient accumulation, mixed precision, or activation checkpointing.",
                 gpu->index, of, inst, 100 * (1 - max / total), max / (1 << 30), total / (1 << 30));
    }
}

/* cpu_contention and cpu_saturated in words; of as for gpu_message. */
static void cpu_message(char *out, size_t cap, const tp_verdict *v, const char *of)
{
    const __typeof__(v->f.cpu) *c = &v->f.cpu;
    char waited[160] = "", busy[200], whose[32] = "one process's";
    if (c->step_wait_rank >= 0)
        snprintf(whose, sizeof whose, "rank %d's", c->step_wait_rank);
    if (c->step_wait && c->step_threads > 1)
        snprintf(waited, sizeof waited,
                 "; %s step thread waited for a CPU %.0f%% of the time, the most of the %zu "
                 "processes' step threads",
                 whose, c->step_wait->steps.mean, c->step_threads);
    else if (c->step_wait) /* cpu_contention: the step's own wait, where recorded */
        snprintf(waited, sizeof waited,
                 "; the training's step thread waited for a CPU %.0f%% of the time",
                 c->step_wait->steps.mean);
    else if (c->held) /* before that, the training's processes' main threads' */
        snprintf(waited, sizeof waited,
                 "; the training's processes waited for a CPU %.0f%% of the time",
                 c->held->steps.mean);
    else if (c->wait)
        snprintf(waited, sizeof waited, "; some task waited for a CPU %.0f%% of the time",
                 c->wait->steps.mean);
    if (v->kind == TP_VERDICT_CPU_CONTENTION) {
        char steal[96] = "";
        double stolen = c->steal ? c->steal->steps.mean : 0;
        if (stolen >= 0.5)
            snprintf(steal, sizeof steal, ", the virtual machine's host %.0f%% (steal)", stolen);
        snprintf(out, cap,
                 "Other processes held the CPUs%s: they were busy %.0f%% of the time%s on "
                 "average, the training's own processes using %.0f%% of the machine (%.1f of "
                 "its %.0f cores), others %.0f%%%s%s. The step times are the shared machine's: "
                 "every phase waited for a CPU. Find the others (trainprof top, or top) and stop "
                 "or move them, run where the CPUs are free, or give the training cores of its "
                 "own (taskset, a cpuset cgroup, the scheduler's exclusive allocation).",
                 of, c->util->steps.mean, over(c->util), c->proc->steps.mean / c->cores,
                 c->proc->steps.mean / 100, c->cores, c->others_percent, steal, waited);
        return;
    }
    if (c->host)
        snprintf(busy, sizeof busy,
                 "the CPUs%s were busy %.0f%% of the time%s on average (p50 %.0f%%)", of,
                 c->util->steps.mean, over(c->util), c->util->steps.p50);
    else
        snprintf(busy, sizeof busy,
                 "the command%s used %.1f of the %.1f cores its cgroup allows%s, on average", of,
                 c->proc->steps.mean / 100, c->limit_cores, over(c->proc));
    snprintf(out, cap,
             "CPU saturated: %s%s. Don't max out CPU utilization: DataLoader workers, the "
             "training's own threads and other host work compete for the cores, so more "
             "workers won't load faster. Try cheaper transforms (or on the GPU), "
             "torch.set_num_threads so that workers and threads don't oversubscribe the "
             "cores, %sor more cores.",
             busy, waited, c->limit_cores > 0 ? "a higher cgroup CPU limit, " : "");
}

/* memory_pressure of a host: the peak, the training's own share where
 * recorded, and advice for whoever held most of it. */
static void host_memory_message(char *out, size_t cap, const tp_verdict *v, const char *of)
{
    const __typeof__(v->f.host_memory) *m = &v->f.host_memory;
    char own[160] = "";
    if (m->training_max_bytes >= 0)
        snprintf(own, sizeof own, ", the training's processes %s%.1f GiB of it (resident, at most)",
                 m->others ? "only " : "", m->training_max_bytes / (1 << 30));
    int n = snprintf(out, cap,
                     "Host memory%s is near full: peak %.1f of %.1f GiB used%s, %.1f GiB of swap. ",
                     of, m->used_max_bytes / (1 << 30), m->total_bytes / (1 << 30), own,
                     m->swap_max_bytes / (1 << 30));
    if (n < 0 || (size_t)n >= cap)
        return;
    snprintf(out + n, cap - (size_t)n, "%s",
             m->others ? "Other processes, or files in /dev/shm or a tmpfs, hold most of it: find "
                         "them (trainprof top, or top sorted by memory) and stop or move them, or "
                         "run where memory is free; the training can swap or be killed by what "
                         "they take."
                       : "Don't max out CPU memory: fewer or lighter DataLoader workers, a smaller "
                         "in-memory cache, or a machine with more memory.");
}

/* cpu_steal in words; of as for gpu_message. */
static void steal_message(char *out, size_t cap, const tp_verdict *v, const char *of)
{
    const __typeof__(v->f.cpu) *c = &v->f.cpu;
    char cores[48] = "";
    if (c->cores >= 1)
        snprintf(cores, sizeof cores, " of its %.0f", c->cores);
    snprintf(out, cap,
             "The virtual machine's host took its CPUs%s away %.0f%% of the time%s on average "
             "(steal; p95 %.0f%%), while the training used %.1f%s cores: every CPU second of "
             "the training's (its Python, operators on the CPU, data loading, kernel launches) "
             "waited that much longer. Other guests on the same physical machine, or a "
             "burstable instance out of CPU credits, took them. Run on an instance type with "
             "dedicated cores (not burstable or shared-core), or on another host, and compare "
             "(trainprof compare).",
             of, c->steal->steps.mean, over(c->steal), c->steal->steps.p95,
             c->proc->steps.mean / 100, cores);
}

/* A host's verdict (memory growing or near full, CPUs held or saturated, a link
 * near its speed) in words; of as for gpu_message. */
static void host_message(char *out, size_t cap, const tp_verdict *v, const char *of)
{
    if (v->kind == TP_VERDICT_MEMORY_GROWTH) {
        const tp_memory_growth *g = &v->f.memory_growth;
        char left[200] = "", lasts[32];
        tp_format_duration(lasts, sizeof lasts, g->seconds_to_limit);
        if (isfinite(g->seconds_to_limit))
            snprintf(left, sizeof left, "; at that rate %s (%.1f GiB left) lasts %s more",
                     g->cgroup ? "its cgroup's memory limit" : "the host's available memory",
                     g->headroom_bytes / (1 << 30), lasts);
        snprintf(out, cap,
                 "The training's memory%s grows steadily through its steps: its processes held "
                 "%.2f GiB at the start and %.2f GiB at the end, %.2f GiB more an hour%s. A leak "
                 "to look for: DataLoader workers reading a Dataset of Python objects (lists, "
                 "dicts: each read copies the pages their reference counts are on; keep samples "
                 "in numpy arrays or tensors), losses or outputs kept with their graphs "
                 "(accumulate loss.item(), not loss), a cache that grows with every batch.",
                 of, g->start_bytes / (1 << 30), g->end_bytes / (1 << 30),
                 g->rate_bytes_per_s * 3600 / (1 << 30), left);
    } else if (v->kind == TP_VERDICT_HOST_MEMORY) {
        host_memory_message(out, cap, v, of);
    } else if (v->kind == TP_VERDICT_CPU_CONTENTION || v->kind == TP_VERDICT_CPU_SATURATED) {
        cpu_message(out, cap, v, of);
    } else if (v->kind == TP_VERDICT_CPU_STEAL) {
        steal_message(out, cap, v, of);
    } else {
        const tp_series_summary *link = v->f.network.link, *worst = v->f.network.rate;
        char labels[TP_LABELS_MAX];
        tp_labels_display(link->series->labels, labels, sizeof labels);
        double speed = link->stats.mean;
        snprintf(out, cap,
                 "The network link %.60s%s ran near its speed: %s at %.0f%% of its %.2f GB/s or "
                 "more during at least 5%% of the %s (p95 %.2f GB/s, mean %.2f GB/s). Don't max "
                 "out network bandwidth: fewer or larger collectives (gradient accumulation with "
                 "no_sync, DDP's bucket_cap_mb), lower-precision gradients, the data on local "
                 "disks rather than over the network, or a faster interconnect.",
                 labels, of, v->f.network.sent ? "sending" : "receiving",
                 100 * worst->steps.p95 / speed, speed / 1e9,
                 worst->in_steps ? "training steps" : "run", worst->steps.p95 / 1e9,
                 worst->steps.mean / 1e9);
    }
}

static void system_message(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    char of[80], agent[80];
    tp_verdict_agent_of(&s->inv, v->agent_id, of, sizeof of, agent, sizeof agent);
    if (v->kind == TP_VERDICT_GPU_UNDERUSED || v->kind == TP_VERDICT_GPU_THROTTLED ||
        v->kind == TP_VERDICT_GPU_MEMORY)
        gpu_message(out, cap, v, of);
    else
        host_message(out, cap, v, of);
}

void tp_verdict_message(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    switch (v->kind) {
    case TP_VERDICT_INPUT_BOUND:
    case TP_VERDICT_TRANSFER_BOUND:
    case TP_VERDICT_COMPUTE_BOUND:
    case TP_VERDICT_HOST_BOUND: {
        rank_message(out, cap, v);
        size_t len = strlen(out);
        if (v->kind == TP_VERDICT_COMPUTE_BOUND && len < cap) {
            tensor_words(out + len, cap - len, v);
            len += strlen(out + len);
        }
        if (v->kind == TP_VERDICT_HOST_BOUND && len < cap) /* where the host was meanwhile */
            tp_ops_idle_cite(out + len, cap - len, &s->ops, v->rank);
        if (v->kind == TP_VERDICT_COMPUTE_BOUND && len < cap) /* the operators, where seen */
            tp_ops_cite(out + len, cap - len, &s->ops, v->rank);
        if (v->kind != TP_VERDICT_TRANSFER_BOUND && len < cap && !out[len])
            tp_stacks_cite(out + len, cap - len, v->pace ? &s->stacks_latest : &s->stacks, v->rank,
                           v->kind == TP_VERDICT_INPUT_BOUND); /* over what was judged */
        len += strlen(out + len);
        if ((v->kind == TP_VERDICT_COMPUTE_BOUND || v->kind == TP_VERDICT_HOST_BOUND) &&
            v->f.compute.input_next && len < cap) /* last: after what the step computes */
            snprintf(out + len, cap - len,
                     " The loader comes next: its %.0f%% of the step grows as the rest gets "
                     "faster (more DataLoader workers; `trainprof bottleneck` measures how fast "
                     "the loader alone goes).",
                     100 * v->f.compute.input_share);
        len += strlen(out + len);
        if (v->pace && len < cap) /* what was judged, after the advice */
            pace_words(out + len, cap - len, v->pace, v->rank == s->regimes.rank, v->pace_drifted);
        return;
    }
    case TP_VERDICT_STRAGGLER: tp_straggler_words(out, cap, s, v); return;
    case TP_VERDICT_COMMUNICATION_BOUND: tp_communication_words(out, cap, v); return;
    case TP_VERDICT_GPU_MEMORY_GROWTH: tp_gpu_growth_words(out, cap, v); return;
    default: system_message(out, cap, s, v); return;
    }
}
