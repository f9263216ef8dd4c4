/* verdicts_system.c: the rules of thumb on the machines' figures (GPUs,
 * host memory, CPUs, network links; tp_verdicts_system in verdicts.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/gpu_use.h"
#include "analyze/rank_gpu.h"
#include "analyze/regimes.h"
#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"

#define GPU_UTIL_TARGET      90.0
#define GPU_SM_ACTIVE_TARGET 50.0 /* GPM: half the SMs' time busy, at least */
#define GPU_THROTTLED_SHARE  0.10 /* of samples held back by heat or a power fault */
#define MEMORY_NEAR_FULL     TP_VERDICT_MEMORY_NEAR_FULL
#define LINK_NEAR_FULL       0.90

/* A MIG-mode GPU's instances (list: meta gpu.N.mig, "UUID=total bytes,..."),
 * each one's memory used (gpu_mem_used_bytes {gpu, mig}) against its total. */
static void mig_memory_verdicts(const tp_summary *s, const tp_run_gpu *gpu, const char *list,
                                tp_verdicts *out)
{
    tp_mig_entry e;
    int k = 0;
    for (const char *p = list; tp_mig_next(&p, &e); k++) {
        double total = e.total_bytes;
        char labels[64];
        tp_labels_gpu_mig(labels, sizeof labels, gpu->index, k);
        const tp_series_summary *m =
            tp_summary_find(s, gpu->agent_id, TP_METRIC_GPU_MEM_USED_BYTES, labels);
        if (m && total > 0 && m->stats.max >= MEMORY_NEAR_FULL * total) {
            tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_MEMORY);
            v->agent_id = gpu->agent_id, v->gpu = gpu;
            v->f.gpu_memory.used_max_bytes = m->stats.max;
            v->f.gpu_memory.total_bytes = total;
            v->f.gpu_memory.mig = k;
        }
    }
}

static void gpu_verdicts(const tp_summary *s, const tp_run_gpu *gpu, tp_verdicts *out)
{
    char labels[32];
    tp_labels_gpu(labels, sizeof labels, gpu->index);
    const tp_series_summary *u =
        tp_summary_find(s, gpu->agent_id, TP_METRIC_GPU_UTIL_PERCENT, labels);
    const tp_series_summary *sm =
        tp_summary_find(s, gpu->agent_id, TP_METRIC_GPU_SM_ACTIVE_PERCENT, labels);
    if (u && (u->steps.mean < GPU_UTIL_TARGET || (sm && sm->steps.mean < GPU_SM_ACTIVE_TARGET))) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_UNDERUSED);
        v->agent_id = gpu->agent_id, v->gpu = gpu;
        v->f.gpu_util.util = u;
        v->f.gpu_util.sm_active = sm;
    }
    const struct tp_gpu_slowdown *d = s->gpu_slowdown ? &s->gpu_slowdown[gpu - s->run->gpus] : NULL;
    if (d && d->trouble_share >= GPU_THROTTLED_SHARE) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_THROTTLED);
        v->agent_id = gpu->agent_id, v->gpu = gpu;
        v->f.gpu_throttle.bits = d->bits;
        v->f.gpu_throttle.share = d->share, v->f.gpu_throttle.trouble_share = d->trouble_share;
    }
    char key[48];
    tp_meta_key_gpu(key, sizeof key, gpu->index, TP_META_GPU_MIG);
    const char *mig = tp_run_agent_meta_get(s->run, gpu->agent_id, key);
    if (mig) { /* each instance's memory against its own: the card's is several jobs' */
        mig_memory_verdicts(s, gpu, mig, out);
        return;
    }
    const tp_series_summary *m =
        tp_summary_find(s, gpu->agent_id, TP_METRIC_GPU_MEM_USED_BYTES, labels);
    if (m && gpu->mem_total_bytes > 0 &&
        m->stats.max >= MEMORY_NEAR_FULL * (double)gpu->mem_total_bytes) {
        tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_GPU_MEMORY);
        v->agent_id = gpu->agent_id, v->gpu = gpu;
        v->f.gpu_memory.used_max_bytes = m->stats.max;
        v->f.gpu_memory.total_bytes = (double)gpu->mem_total_bytes;
        v->f.gpu_memory.mig = -1;
    }
}

/* An agent's host memory size: its metadata's (each node's, in a merged
 * run), or where that is unknown (a merge from before agent_meta), MemTotal
 * as the mean of used + the mean of available (their sum is MemTotal in
 * every sample). 0 when unknown. */
static double host_memory_total(const tp_summary *s, int64_t agent_id)
{
    const char *meta = tp_run_agent_meta_get(s->run, agent_id, TP_META_MEM_TOTAL_BYTES);
    if (meta)
        return strtod(meta, NULL);
    const tp_series_summary *used =
        tp_summary_find(s, agent_id, TP_METRIC_HOST_MEM_USED_BYTES, "{}");
    const tp_series_summary *avail =
        tp_summary_find(s, agent_id, TP_METRIC_HOST_MEM_AVAILABLE_BYTES, "{}");
    return used && avail ? used->stats.mean + avail->stats.mean : 0;
}

static void host_memory_verdict(const tp_summary *s, int64_t agent_id, tp_verdicts *out)
{
    const tp_series_summary *u = tp_summary_find(s, agent_id, TP_METRIC_HOST_MEM_USED_BYTES, "{}");
    const tp_series_summary *w = tp_summary_find(s, agent_id, TP_METRIC_SWAP_USED_BYTES, "{}");
    double total = host_memory_total(s, agent_id), used = u ? u->stats.max : -1,
           swap = w ? w->stats.max : -1;
    if (!(total > 0 && (used >= MEMORY_NEAR_FULL * total || swap > 64.0 * (1 << 20))))
        return;
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_HOST_MEMORY);
    v->agent_id = agent_id;
    v->f.host_memory.used_max_bytes = used;
    v->f.host_memory.total_bytes = total;
    v->f.host_memory.swap_max_bytes = swap > 0 ? swap : 0;
    const tp_series_summary *rss = tp_summary_find(s, agent_id, TP_METRIC_PROC_RSS_BYTES, "{}");
    v->f.host_memory.training_max_bytes = rss && rss->stats.count ? rss->stats.max : -1;
    v->f.host_memory.others = rss && rss->stats.count && used > 0 && 2 * rss->stats.max < used;
}

/* The agent's step thread that waited most for a CPU over the steps
 * (step_thread_cpu_wait_percent{pid}: each traced process's), into v's
 * step_wait, its rank and the count of step threads read; none in a run
 * recorded before the metric. */
static void most_held_step_thread(const tp_summary *s, int64_t agent_id, tp_verdict *v)
{
    const tp_series_summary *best = NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tp_series_summary *x = &s->items[i];
        if (x->series->agent_id != agent_id || x->steps.count == 0 ||
            strcmp(x->series->metric, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT) != 0)
            continue;
        n++;
        if (!best || x->steps.mean > best->steps.mean)
            best = x;
    }
    v->f.cpu.step_wait = best, v->f.cpu.step_threads = n, v->f.cpu.step_wait_rank = -1;
    tp_run_process *procs = NULL;
    size_t nprocs = 0;
    if (!best || !tp_run_processes(s->run, &procs, &nprocs))
        return;
    for (size_t i = 0; i < nprocs; i++) {
        char labels[48];
        tp_labels_pid(labels, sizeof labels, (long)procs[i].pid);
        if (procs[i].agent_id == agent_id && strcmp(labels, best->series->labels) == 0)
            v->f.cpu.step_wait_rank = procs[i].rank;
    }
    free(procs);
}

/* Other processes' share of the agent's CPUs over the steps (the steal left
 * out), in *others, and the training's tree's, in *own (both % of the
 * machine); false where the CPU count or a series is unknown. */
static bool cpu_shares(const tp_summary *s, int64_t agent_id, const tp_series_summary *u,
                       const tp_series_summary *p, const tp_series_summary *st, double *others,
                       double *own)
{
    double cores = tp_verdicts_agent_cores(s, agent_id);
    if (!u || !p || cores < 1)
        return false;
    *own = p->steps.mean / cores;
    *others = tp_others_cpu_percent(u->steps.mean, st ? st->steps.mean : NAN, p->steps.mean, cores);
    return true;
}

/* Others held agent's CPUs: busy >= 90 % on average over its steps, the
 * other processes (busy less the training's own process tree and a
 * virtual machine's steal, which cpu_steal tells) using more of it than the
 * training (as input_bound's contention cause judges), and the training held back by
 * it: the step thread that waited most (of the rank the others slowed
 * most, which the rest wait for at their collectives) waiting for a CPU >=
 * TP_CPU_WAIT_PERCENT of the time (run-queue delay); in a run recorded
 * before that, the tree's processes' main threads together; before that,
 * some task on the machine waiting (pressure), where the kernel reports it.
 * Others busy on cycles the training left idle (a training that sleeps,
 * waits on its GPU) do not slow it: no verdict. The CPU count unknown: no
 * judgement. u, p, w, st: the agent's CPUs busy, the training's tree's CPU,
 * the CPU pressure and the steal (NULL where not recorded). */
static bool cpu_contention(const tp_summary *s, int64_t agent_id, const tp_series_summary *u,
                           const tp_series_summary *p, const tp_series_summary *w,
                           const tp_series_summary *st, tp_verdicts *out)
{
    const tp_series_summary *held =
        tp_summary_find(s, agent_id, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}");
    if (held && held->steps.count == 0)
        held = NULL;
    double others, own;
    if (!cpu_shares(s, agent_id, u, p, st, &others, &own) ||
        !(u->steps.mean >= TP_CPU_SATURATED_PERCENT))
        return false;
    tp_verdict found = {.kind = TP_VERDICT_CPU_CONTENTION};
    most_held_step_thread(s, agent_id, &found);
    const tp_series_summary *waited = found.f.cpu.step_wait ? found.f.cpu.step_wait
                                      : held                ? held
                                                            : w;
    if (!(others > own) || (waited && !(waited->steps.mean >= TP_CPU_WAIT_PERCENT)))
        return false;
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_CPU_CONTENTION);
    v->f.cpu = found.f.cpu;
    v->agent_id = agent_id;
    v->f.cpu.host = true;
    v->f.cpu.util = u, v->f.cpu.proc = p, v->f.cpu.wait = w, v->f.cpu.held = held;
    v->f.cpu.cores = tp_verdicts_agent_cores(s, agent_id);
    v->f.cpu.others_percent = others;
    v->f.cpu.steal = st;
    return true;
}

/* A virtual machine whose host took its CPUs: the steal (st) >= 10 % of
 * the time on average over the agent's steps, the training's tree (p)
 * using half a core or more of them meanwhile (a training that sleeps or
 * waits loses little to it). Every CPU second of the training's, its
 * Python, operators, loading and launches, ran on a machine that lost that
 * share of its time; no change of pace shows it where it held throughout. */
static void cpu_steal(const tp_summary *s, int64_t agent_id, const tp_series_summary *u,
                      const tp_series_summary *p, const tp_series_summary *st, tp_verdicts *out)
{
    if (!st || !p || !(st->steps.mean >= TP_CPU_STEAL_PERCENT) ||
        !(p->steps.mean >= TP_CPU_STEAL_OWN_MIN))
        return;
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_CPU_STEAL);
    v->agent_id = agent_id;
    v->f.cpu.host = true;
    v->f.cpu.util = u, v->f.cpu.proc = p, v->f.cpu.steal = st;
    v->f.cpu.cores = tp_verdicts_agent_cores(s, agent_id);
}

/* CPUs maxed out on an agent with GPUs (where the CPUs feed them; training
 * on the CPU is meant to keep it busy): the host's (every core busy on
 * average), or, under a cgroup CPU limit (the agent's metadata), the
 * command's share of its limit. Else, or on an agent without GPUs, others
 * holding the CPUs (cpu_contention), but not where the command used its
 * cgroup's limit: its wait for a CPU is then its own quota's. Where others
 * held most of the busy CPUs but did not hold the training back, neither:
 * the saturation is theirs, and the training lost nothing to it. */
static void cpu_verdict(const tp_summary *s, int64_t agent_id, tp_verdicts *out)
{
    const tp_series_summary *u = tp_summary_find(s, agent_id, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    const tp_series_summary *p = tp_summary_find(s, agent_id, TP_METRIC_PROC_CPU_PERCENT, "{}");
    const tp_series_summary *w =
        tp_summary_find(s, agent_id, TP_METRIC_PRESSURE_CPU_SOME_PERCENT, "{}");
    const tp_series_summary *st = tp_summary_find(s, agent_id, TP_METRIC_CPU_STEAL_PERCENT, "{}");
    cpu_steal(s, agent_id, u, p, st, out);
    const char *limit_s = tp_run_agent_meta_get(s->run, agent_id, TP_META_CGROUP_CPU_LIMIT_CORES);
    double limit = limit_s && strcmp(limit_s, "none") != 0 ? strtod(limit_s, NULL) : 0;
    bool cgroup = limit > 0 && p && p->steps.mean >= TP_CPU_SATURATED_PERCENT * limit;
    if (!cgroup && cpu_contention(s, agent_id, u, p, w, st, out))
        return;
    bool gpus = false;
    for (size_t g = 0; g < s->run->ngpus && !gpus; g++)
        gpus = s->run->gpus[g].agent_id == agent_id;
    bool host = u && u->steps.mean >= TP_CPU_SATURATED_PERCENT;
    /* the host's CPUs held mostly by others, who did not hold the training
     * back (no cpu_contention): not its saturation, nothing of its to cut */
    double others, own;
    if (host && !cgroup && cpu_shares(s, agent_id, u, p, st, &others, &own) && others > own)
        host = false;
    if (!gpus || (!host && !cgroup))
        return;
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_CPU_SATURATED);
    v->agent_id = agent_id;
    v->f.cpu.host = host;
    v->f.cpu.util = u, v->f.cpu.proc = p, v->f.cpu.wait = w;
    v->f.cpu.limit_cores = limit;
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
    const char *dirs[] = {TP_METRIC_NET_SENT_BYTES_PER_S, TP_METRIC_NET_RECV_BYTES_PER_S};
    const tp_series_summary *worst = NULL;
    for (int d = 0; d < 2; d++) {
        const tp_series_summary *r = tp_summary_find(s, l->agent_id, dirs[d], l->labels);
        if (r && r->steps.p95 >= LINK_NEAR_FULL * speed &&
            (!worst || r->steps.p95 > worst->steps.p95))
            worst = r;
    }
    if (!worst)
        return;
    tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_NETWORK_SATURATED);
    v->agent_id = l->agent_id;
    v->f.network.link = link, v->f.network.rate = worst;
    v->f.network.sent = strcmp(worst->series->metric, dirs[0]) == 0;
}

void tp_verdicts_system(const tp_summary *s, tp_verdicts *out)
{
    for (size_t g = 0; g < s->run->ngpus; g++) /* not about GPUs the job left alone */
        if (!s->gpu_used || s->gpu_used[g] != TP_GPU_NOT_USED)
            gpu_verdicts(s, &s->run->gpus[g], out);
    for (size_t a = 0; a < s->run->nagents; a++) {
        host_memory_verdict(s, s->run->agents[a].id, out);
        cpu_verdict(s, s->run->agents[a].id, out);
        tp_memory_growth growth;
        if (tp_memory_growth_of(s, s->run->agents[a].id, &growth)) {
            tp_verdict *v = tp_verdicts_add(out, TP_VERDICT_MEMORY_GROWTH);
            v->agent_id = s->run->agents[a].id;
            v->f.memory_growth = growth;
        }
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->items[i].series->metric, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S) == 0)
            link_verdict(s, &s->items[i], out);
}
