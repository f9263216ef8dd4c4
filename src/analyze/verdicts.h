/* verdicts.h: the rules of thumb applied to a run's figures, as facts: which
 * rule fired, where, and the figures behind it (render/verdict_words.c says
 * them in words and as JSON evidence).
 *
 * Rules (from the seed documents), per rank with timings, shares of the
 * rank's step time:
 *   input_bound     dataloader_next >= 25 %: loading should take much less
 *                   than training; its cause (the machine's CPUs busy with the
 *                   training's processes or with others', tasks waiting on
 *                   storage, else latency) picks the advice
 *   transfer_bound  to_device >= 15 %
 *   compute_bound   train_batch >= 60 % and dataloader_next < 10 %; on a
 *                   GPU, only where the GPU was busy >= 70 % of the steps
 *   host_bound      the same step on a GPU busy less: the host can't feed it
 *                   (launches, Python, syncs); the GPU's under-use is its
 *                   evidence, not a verdict beside it
 * across ranks:
 *   straggler       a rank's own work per step well above the median rank's
 *   communication_bound  ranks wait in communication >= 25 % of their steps
 * and per agent (every agent of a merged run, named when there are several):
 *   gpu_underused   a GPU's mean utilization < 90 %, but where a rank's
 *                   compute_bound or host_bound says why
 *   memory_pressure GPU memory or host memory >= 90 % at peak, or swap used
 *   cpu_contention  its CPUs >= 90 % busy on average over the steps, the
 *                   training's own processes less than half of that, and its
 *                   processes' main threads waiting for a CPU >= 10 % of the
 *                   time (in a run without that figure, some task, where the
 *                   kernel reports pressure): others held the CPUs the
 *                   training waited for; left out where a rank's
 *                   input_bound on that agent names the contention
 *   cpu_saturated   else, on an agent with GPUs, its CPUs >= 90 % busy on
 *                   average, or the command at >= 90 % of its cgroup CPU limit
 *   cpu_steal       a virtual machine whose host took its CPUs (steal)
 *                   >= 10 % of the time on average over the steps, the
 *                   training using half a core or more: its CPU work ran
 *                   on less than the machine it sees
 *   network_saturated  a link's traffic one way >= 90 % of its speed at p95
 *   memory_growth   the training's memory grows steadily through its steps
 *                   (memory_growth.h), with the time left at that rate
 * and per rank, from its GPU allocator's readings (gpu_memory.h):
 *   memory_pressure its peak allocated >= 90 % of what it can use
 *   gpu_memory_growth  what stays allocated between steps grows, with the
 *                   step it would run out at */
#ifndef TP_ANALYZE_VERDICTS_H
#define TP_ANALYZE_VERDICTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/gpu_memory.h"
#include "analyze/memory_growth.h"
#include "analyze/summary.h"
#include "core/model_facts.h"
#include "core/step_rules.h"

typedef enum {
    TP_VERDICT_INPUT_BOUND,
    TP_VERDICT_TRANSFER_BOUND,
    TP_VERDICT_COMPUTE_BOUND,
    TP_VERDICT_STRAGGLER,
    TP_VERDICT_COMMUNICATION_BOUND,
    TP_VERDICT_GPU_UNDERUSED,
    TP_VERDICT_GPU_MEMORY,  /* memory_pressure of a GPU */
    TP_VERDICT_HOST_MEMORY, /* memory_pressure of a host */
    TP_VERDICT_CPU_SATURATED,
    TP_VERDICT_CPU_CONTENTION, /* others held the CPUs (f.cpu, with others_percent) */
    TP_VERDICT_NETWORK_SATURATED,
    TP_VERDICT_GPU_THROTTLED, /* NVML's clock event reasons: thermal, hardware slowdown */
    TP_VERDICT_MEMORY_GROWTH, /* the training's memory grows steadily (memory_growth.h) */
    TP_VERDICT_HOST_BOUND,    /* a computing step on a GPU the host can't keep busy */
    /* a rank's GPU memory between steps grows (analyze/gpu_memory.h) */
    TP_VERDICT_GPU_MEMORY_GROWTH,
    TP_VERDICT_CPU_STEAL, /* a VM's host took its CPUs (f.cpu, with steal) */
} tp_verdict_kind;

/* What says how busy a rank's GPU was over its steps. */
typedef enum {
    TP_GPU_BUSY_UNKNOWN, /* not on a GPU, or nothing measured it */
    TP_GPU_BUSY_NVML,    /* NVML's utilization, mean over the steps */
    TP_GPU_BUSY_WINDOW,  /* the capture windows' kernels over their steps */
} tp_gpu_busy_witness;

/* What an input-bound rank's loading waits on, which picks the advice. */
typedef enum {
    TP_INPUT_CPU, /* the CPUs busy (median >= 90 %), at least half of it the training's */
    /* the CPUs busy, mostly with processes not the training's, and the
     * training waiting for them (where its wait was recorded) */
    TP_INPUT_CONTENTION,
    /* a disk busy (median >= 90 %), the training's processes waiting on it */
    TP_INPUT_DISK,
    TP_INPUT_IO_WAIT, /* tasks waiting on storage (median >= 25 %), the training's too */
    TP_INPUT_WORKERS, /* none of those: latency, too few workers to hide it */
} tp_input_cause;

/* One verdict. Series point into the summary it was built from; a value the
 * run did not have is -1 (as the evidence has always said it). */
typedef struct tp_verdict {
    tp_verdict_kind kind;
    int rank;              /* rank verdicts and straggler; -1: "the training" */
    int64_t agent_id;      /* system verdicts */
    const tp_run_gpu *gpu; /* GPU verdicts */
    union {
        struct {
            double share, next_mean_s, step_mean_s, procs, cpu_p50, io_p50, disk_p50;
            double own_cpu_p50; /* the training's process tree, % of the machine; -1 unknown */
            /* its processes' wait for a CPU (median %, -1 unknown), and
             * whether others held the CPUs though the training hardly
             * waited for them (the cause is then not contention) */
            double held_p50;
            /* a virtual machine's steal (mean %, -1 not counted), inside
             * cpu_p50 but no process's: left out of the others' share */
            double steal_percent;
            /* the training's threads waiting on storage (state D), mean
             * over the steps (-1 not recorded); storage_others: the storage
             * cause the machine's figures name (a disk busy, tasks waiting
             * for I/O) where the training's threads hardly waited on it,
             * so that it is not the cause; TP_INPUT_WORKERS: none */
            double blocked;
            tp_input_cause storage_others;
            bool others_idle;
            tp_input_cause cause;
            /* the figures above are the latest pace's (the verdict's pace:
             * its regime's medians, regimes.h), not the whole run's steps' */
            bool over_pace;
            const tp_series_summary *cpu, *io, *disk, *own;
            const char *cpus; /* the agent's CPU count as its metadata says it, or NULL */
        } input;
        struct {
            /* share: the larger of the two; device_share -1 without device times */
            double share, host_share, device_share;
        } transfer;
        struct { /* compute_bound and host_bound */
            /* device_share: train_batch's device time over the steps, -1 without
             * device times (a CPU training: no GPU figure to show) */
            double share, device_share, input_share, step_mean_s;
            bool loader_timed; /* a DataLoader was timed inside the steps */
            /* its wait for data is TP_COMPUTE_BOUND_INPUT_MAX or more of
             * the step (under input_bound's share): the loader comes next */
            bool input_next;
            /* the rank's GPU (gpu above, NULL none known): GPM's tensor and
             * SM activity (Hopper and newer) and NVML's utilization, or NULL */
            const tp_series_summary *tensor, *sm_active, *util;
            /* how busy that GPU was over the steps (0..1, by witness; NaN
             * unknown), and the capture windows' idle share of their steps
             * (NaN: no window with the GPU's work) */
            double gpu_busy, window_idle;
            tp_gpu_busy_witness witness;
            /* the training's process tree's CPU over the steps (100 a core;
             * its threads without Python, autograd's among them, included), or NULL */
            const tp_series_summary *proc_cpu;
        } compute;
        struct {
            const tp_rank_row *row;
            /* the table row is of: the whole run's ranks, or those over the
             * latest pace (tp_summary.ranks_latest, with pace set) */
            const tp_ranks *ranks;
        } straggler;
        struct {
            double exposed_s, window_s;
            size_t ranks;
            bool device; /* the device's exposed time (CUDA events) counted, not the host's */
        } comm;
        struct {
            const tp_series_summary *util;
            /* GPM's SM activity (Hopper and newer), NULL where not recorded:
             * a GPU "100 % utilized" by kernels on a few SMs is under-used */
            const tp_series_summary *sm_active;
        } gpu_util;
        struct {
            uint32_t bits;               /* every slowdown reason seen (TP_GPU_REASON_*) */
            double share, trouble_share; /* of samples: any of them; a troubling one */
        } gpu_throttle;
        struct {
            double used_max_bytes;
            double total_bytes; /* the card's, or its MIG instance's */
            int mig;            /* the instance (meta gpu.N.mig's place), -1 the card */
            /* gpu NULL: a rank's caching allocator (used_max_bytes its peak
             * allocated, total_bytes what it can use of its device), as its
             * readings at step boundaries gave it (allocator), or a capture
             * window (allocator NULL) */
            const tp_gpu_memory_rank *allocator;
        } gpu_memory;
        const tp_gpu_memory_rank *gpu_growth;
        struct {
            double used_max_bytes, total_bytes, swap_max_bytes;
            /* the training's process tree's resident memory at most (shared
             * pages once per process: at or above its true share; -1 not
             * recorded), and whether other processes (or files in a tmpfs)
             * held most of what was used: then it is not the training's to
             * shrink */
            double training_max_bytes;
            bool others;
        } host_memory;
        tp_memory_growth memory_growth;
        struct {
            bool host; /* the host's CPUs, else the command against its cgroup limit */
            const tp_series_summary *util, *proc, *wait;
            double limit_cores; /* 0 without a limit */
            /* cpu_contention: the agent's cores, the share of the
             * machine's CPU time (percent) that processes other than the
             * training's took (busy minus the training's tree over the
             * cores), and the time the training's processes' main threads
             * waited for a CPU (NULL: a run recorded without it) */
            double cores, others_percent;
            const tp_series_summary *held;
            /* cpu_contention: the step thread that waited most for a CPU
             * (step_thread_cpu_wait_percent{pid}, NULL: a run recorded
             * without it), its process's rank (-1: unknown), and of how
             * many processes' step threads */
            const tp_series_summary *step_wait;
            int step_wait_rank;
            size_t step_threads;
            /* cpu_contention and cpu_steal: the machine's steal
             * (cpu_steal_percent, NULL where the kernel does not count it),
             * which others_percent leaves out */
            const tp_series_summary *steal;
        } cpu;
        struct {
            const tp_series_summary *link, *rate; /* the speed, and the worse direction */
            bool sent;
        } network;
    } f;
    /* what the script does (the run's facts, lib/facts.h), which the advice
     * fits: every field unknown for a run recorded before facts */
    tp_model_facts facts;
    /* a step verdict (input, transfer, compute or host-bound) judged on the
     * rank's latest regime, where its pace changed (verdicts.c,
     * tp_regimes_latest), or a straggler or communication verdict judged on
     * the ranks over the first rank's latest regime (tp_summary.ranks_latest):
     * the last of the summary's regimes; NULL: the whole run's steps */
    const tp_regime *pace;
    /* that pace grew or shrank all along (tp_regimes.drift): the latest
     * regime is where change points cut a slope, its first step no event */
    bool pace_drifted;
} tp_verdict;

typedef struct tp_verdicts {
    tp_verdict *items;
    size_t n, cap;
    /* each rank's GPU memory, which its verdicts point into and the report
     * says beside them (analyze/gpu_memory.h) */
    tp_gpu_memory gpu_memory;
} tp_verdicts;

void tp_verdicts_build(const tp_summary *s, tp_verdicts *out);

/* GPU or host memory at or above this share of its size at peak is near
 * full (the step rules' allocator verdicts, the machine rules'). */
#define TP_VERDICT_MEMORY_NEAR_FULL 0.90
/* A new verdict of kind at the end of v, zeroed but for its kind
 * (verdict_list.c, for the rules' files). */
tp_verdict *tp_verdicts_add(tp_verdicts *v, tp_verdict_kind kind);
/* An agent's CPU count: its metadata's cpu_count, else (a run recorded
 * before agent metadata) its per-core CPU series; 0 where neither says. */
double tp_verdicts_agent_cores(const tp_summary *s, int64_t agent);
/* Every GPU's verdicts, then every agent's host memory and CPUs, then every
 * network link whose speed is known (verdicts_system.c). */
void tp_verdicts_system(const tp_summary *s, tp_verdicts *out);

/* Which of the verdicts the rules fired stand (tp_verdicts_build calls it
 * last; verdicts_settle.c): a GPU's gpu_underused is left out where a
 * rank's compute_bound or host_bound on that GPU says why (its figures are
 * that verdict's evidence), and a verdict whose stated figures are not
 * finite numbers (a crafted summary's -inf or 1e308 steps) is dropped:
 * never said on what is no figure. */
void tp_verdicts_settle(tp_verdicts *v);
void tp_verdicts_free(tp_verdicts *v);

/* The index of the verdict to lead with (v->n > 0): the one that explains
 * the most of the step time (a phase's share, communication left exposed,
 * a straggler's excess), compute-bound weighing half (a training that
 * computes is where it should be) of what it computed (its share less the
 * time a cpu_contention verdict on its agent says it waited for a CPU:
 * that wait fell in its share), and the system verdicts little (they
 * say why, the step-time verdicts say what), but cpu_contention the time
 * the training waited for a CPU (its share of the step time, whichever
 * phase it fell in; without that figure, the others' share of the
 * machine); the first of equals. */
size_t tp_verdicts_main(const tp_verdicts *v);

#endif
