/* verdicts_settle.c: which of the verdicts the rules fired stand
 * (tp_verdicts_settle in verdicts.h). */
#include "analyze/verdicts.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

static bool finite_all(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

static double mean_of(const tp_series_summary *x) { return x ? x->steps.mean : 0; }

/* Whether the figures a verdict states are numbers (a crafted file's
 * summary can hold -inf or 1e308 steps): a verdict is never said on
 * figures that are not. */
static bool figures_finite(const tp_verdict *v)
{
    switch (v->kind) {
    case TP_VERDICT_INPUT_BOUND: {
        double f[] = {v->f.input.share, v->f.input.next_mean_s, v->f.input.step_mean_s};
        return finite_all(f, 3);
    }
    case TP_VERDICT_TRANSFER_BOUND: return isfinite(v->f.transfer.share);
    case TP_VERDICT_COMPUTE_BOUND:
    case TP_VERDICT_HOST_BOUND: {
        double f[] = {v->f.compute.share, v->f.compute.input_share, v->f.compute.step_mean_s,
                      v->kind == TP_VERDICT_HOST_BOUND ? v->f.compute.gpu_busy : 0};
        return finite_all(f, 4);
    }
    case TP_VERDICT_STRAGGLER: {
        const tp_rank_row *r = v->f.straggler.row;
        double f[] = {r->excess, r->input_s, r->compute_s, r->window_s};
        return finite_all(f, 4);
    }
    case TP_VERDICT_COMMUNICATION_BOUND: {
        double f[] = {v->f.comm.exposed_s, v->f.comm.window_s};
        return finite_all(f, 2);
    }
    case TP_VERDICT_GPU_UNDERUSED: {
        double f[] = {mean_of(v->f.gpu_util.util), v->f.gpu_util.util->steps.p50,
                      mean_of(v->f.gpu_util.sm_active)};
        return finite_all(f, 3);
    }
    case TP_VERDICT_GPU_MEMORY: {
        double f[] = {v->f.gpu_memory.used_max_bytes, v->f.gpu_memory.total_bytes};
        return finite_all(f, 2);
    }
    case TP_VERDICT_HOST_MEMORY: {
        double f[] = {v->f.host_memory.used_max_bytes, v->f.host_memory.total_bytes,
                      v->f.host_memory.swap_max_bytes};
        return finite_all(f, 3);
    }
    case TP_VERDICT_CPU_CONTENTION: {
        double f[] = {mean_of(v->f.cpu.util),  mean_of(v->f.cpu.proc), mean_of(v->f.cpu.wait),
                      v->f.cpu.others_percent, mean_of(v->f.cpu.held), mean_of(v->f.cpu.step_wait)};
        return finite_all(f, 6);
    }
    case TP_VERDICT_CPU_STEAL: {
        double f[] = {mean_of(v->f.cpu.steal), v->f.cpu.steal->steps.p95, mean_of(v->f.cpu.proc)};
        return finite_all(f, 3);
    }
    case TP_VERDICT_CPU_SATURATED: {
        double f[] = {mean_of(v->f.cpu.util), mean_of(v->f.cpu.proc), mean_of(v->f.cpu.wait)};
        return finite_all(f, 3);
    }
    case TP_VERDICT_NETWORK_SATURATED: {
        double f[] = {v->f.network.link->stats.mean, v->f.network.rate->steps.p95,
                      v->f.network.rate->steps.mean};
        return finite_all(f, 3);
    }
    case TP_VERDICT_GPU_THROTTLED: return isfinite(v->f.gpu_throttle.trouble_share);
    case TP_VERDICT_GPU_MEMORY_GROWTH: {
        const tp_gpu_memory_rank *g = v->f.gpu_growth;
        double f[] = {g->growth_first_bytes, g->growth_last_bytes, g->growth_bytes_per_step};
        return finite_all(f, 3);
    }
    case TP_VERDICT_MEMORY_GROWTH: {
        double f[] = {v->f.memory_growth.start_bytes, v->f.memory_growth.end_bytes,
                      v->f.memory_growth.rate_bytes_per_s};
        return finite_all(f, 3);
    }
    }
    return true;
}

/* A GPU's under-use is the evidence of the verdict that says why where a
 * rank computing on it got one (compute_bound, host_bound): one verdict
 * explains the step, not two beside each other. */
static void fold_gpu_underused(tp_verdicts *v)
{
    size_t kept = 0;
    for (size_t i = 0; i < v->n; i++) {
        bool told = false;
        for (size_t k = 0; k < v->n && !told && v->items[i].kind == TP_VERDICT_GPU_UNDERUSED; k++)
            told = (v->items[k].kind == TP_VERDICT_COMPUTE_BOUND ||
                    v->items[k].kind == TP_VERDICT_HOST_BOUND) &&
                   v->items[k].gpu == v->items[i].gpu;
        if (!told)
            v->items[kept++] = v->items[i];
    }
    v->n = kept;
}

/* Others holding an agent's CPUs are the cause an input-bound rank there
 * already names (its contention cause, with the loader's figures): the
 * agent's cpu_contention is left out. */
static void fold_cpu_contention(tp_verdicts *v)
{
    size_t kept = 0;
    for (size_t i = 0; i < v->n; i++) {
        bool told = false;
        for (size_t k = 0; k < v->n && !told && v->items[i].kind == TP_VERDICT_CPU_CONTENTION; k++)
            told = v->items[k].kind == TP_VERDICT_INPUT_BOUND &&
                   v->items[k].f.input.cause == TP_INPUT_CONTENTION &&
                   v->items[k].agent_id == v->items[i].agent_id;
        if (!told)
            v->items[kept++] = v->items[i];
    }
    v->n = kept;
}

void tp_verdicts_settle(tp_verdicts *v)
{
    fold_gpu_underused(v);
    fold_cpu_contention(v);
    size_t kept = 0;
    for (size_t i = 0; i < v->n; i++)
        if (figures_finite(&v->items[i]))
            v->items[kept++] = v->items[i];
    v->n = kept;
}
