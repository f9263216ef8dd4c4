/* regimes.c: lasting changes of a rank's step time (regimes.h). */
#include "analyze/regimes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/pace_drift.h"
#include "core/metric_catalog.h"
#include "core/stall_rule.h"
#include "core/step_rules.h"
#include "util/ns_math.h"
#include "util/labels.h"
#include "util/oom.h"
#include "core/run_keys.h"

/* The mean of a series of agent over [t0, t1), NaN without samples. */
static double mean_between(tp_run *run, int64_t agent, const char *metric, int64_t t0, int64_t t1)
{
    double v;
    return tp_run_agent_mean_between(run, agent, metric, "{}", t0, t1, &v) ? v : NAN;
}

bool tp_rank_step_thread_labels(tp_run *run, int rank, int64_t agent_id, char *labels, size_t cap)
{
    tp_run_process *procs = NULL;
    size_t n = 0;
    bool found = false;
    if (!tp_run_processes(run, &procs, &n))
        return false;
    for (size_t i = 0; i < n && !found; i++) {
        tp_labels_pid(labels, cap, (long)procs[i].pid);
        found = procs[i].rank == rank && procs[i].agent_id == agent_id && !procs[i].worker &&
                tp_run_series_find(run, agent_id, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, labels);
    }
    free(procs);
    return found;
}

/* The median of a series of agent over [t0, t1), -1 without samples. */
static double p50_between(tp_run *run, int64_t agent, const char *metric, const char *labels,
                          int64_t t0, int64_t t1)
{
    tp_stats st;
    return tp_run_agent_stats_between(run, agent, metric, labels, t0, t1, &st) ? st.p50 : -1;
}

/* The medians the input cause judges over [t0, t1) on agent (tp_regime_machine). */
static void input_medians(tp_run *run, int64_t agent, int64_t t0, int64_t t1, tp_regime_machine *m)
{
    m->cpu_busy_p50 = p50_between(run, agent, TP_METRIC_CPU_UTIL_PERCENT, "{}", t0, t1);
    m->proc_cpu_p50 = p50_between(run, agent, TP_METRIC_PROC_CPU_PERCENT, "{}", t0, t1);
    m->cpu_wait_p50 = p50_between(run, agent, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}", t0, t1);
    m->io_p50 = p50_between(run, agent, TP_METRIC_PRESSURE_IO_SOME_PERCENT, "{}", t0, t1);
    m->disk_p50 = -1;
    m->disk = NULL;
    for (size_t i = 0; i < run->nseries; i++) {
        const tp_run_series *x = &run->series[i];
        if (x->agent_id != agent || strcmp(x->metric, TP_METRIC_DISK_BUSY_PERCENT) != 0)
            continue;
        double busy = p50_between(run, agent, x->metric, x->labels, t0, t1);
        if (busy > m->disk_p50) {
            m->disk_p50 = busy;
            m->disk = x;
        }
    }
}

/* What the machine did over [t0, t1) (ns since the run's start) on agent,
 * rank's step thread's wait, its GPU's figures where gpu >= 0 (NaN where
 * not recorded, and in a summary-only file, whose last sample of each
 * series would stand for every span: m stays unknown). */
static void machine_over(tp_run *run, int rank, int64_t agent, int gpu, int64_t t0, int64_t t1,
                         tp_regime_machine *m)
{
    if (tp_run_summary_only(run))
        return; /* its series' first and last samples only: nothing known of a span */
    char step_labels[48];
    double mean;
    m->step_cpu_wait = m->step_cpu_busy = NAN;
    if (tp_rank_step_thread_labels(run, rank, agent, step_labels, sizeof step_labels)) {
        if (tp_run_agent_mean_between(run, agent, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
                                      step_labels, t0, t1, &mean))
            m->step_cpu_wait = mean;
        if (tp_run_agent_mean_between(run, agent, TP_METRIC_STEP_THREAD_CPU_PERCENT, step_labels,
                                      t0, t1, &mean))
            m->step_cpu_busy = mean;
    }
    m->gpu_sm_clock_mhz = m->gpu_trouble_share = m->gpu_busy_percent = NAN;
    if (gpu >= 0) {
        char index[16], labels[48];
        uint32_t bits;
        snprintf(index, sizeof index, "%d", gpu);
        tp_labels1(labels, sizeof labels, TP_LABEL_GPU, index);
        double clock;
        if (tp_run_agent_mean_between(run, agent, TP_METRIC_GPU_SM_CLOCK_MHZ, labels, t0, t1,
                                      &clock))
            m->gpu_sm_clock_mhz = clock;
        double busy;
        if (tp_run_agent_mean_between(run, agent, TP_METRIC_GPU_UTIL_PERCENT, labels, t0, t1,
                                      &busy))
            m->gpu_busy_percent = busy;
        tp_run_agent_bits_between(run, agent, TP_METRIC_GPU_CLOCK_EVENT_REASONS, labels, t0, t1,
                                  TP_GPU_REASONS_TROUBLE, &bits, &m->gpu_trouble_share);
    }
    double busy = mean_between(run, agent, TP_METRIC_CPU_UTIL_PERCENT, t0, t1);
    double own = mean_between(run, agent, TP_METRIC_PROC_CPU_PERCENT, t0, t1);
    const char *cpus = tp_run_agent_meta_get(run, agent, TP_META_CPU_COUNT);
    m->cpu_steal_percent = mean_between(run, agent, TP_METRIC_CPU_STEAL_PERCENT, t0, t1);
    m->others_cpu_percent =
        tp_others_cpu_percent(busy, m->cpu_steal_percent, own, cpus ? strtod(cpus, NULL) : 0);
    m->cpu_pressure = mean_between(run, agent, TP_METRIC_PRESSURE_CPU_SOME_PERCENT, t0, t1);
    m->training_cpu_wait = mean_between(run, agent, TP_METRIC_PROC_CPU_WAIT_PERCENT, t0, t1);
    m->io_pressure = mean_between(run, agent, TP_METRIC_PRESSURE_IO_SOME_PERCENT, t0, t1);
    m->training_blocked = mean_between(run, agent, TP_METRIC_PROC_BLOCKED, t0, t1);
    m->mem_used_bytes = mean_between(run, agent, TP_METRIC_HOST_MEM_USED_BYTES, t0, t1);
    m->swap_used_bytes = mean_between(run, agent, TP_METRIC_SWAP_USED_BYTES, t0, t1);
    input_medians(run, agent, t0, t1, m);
}

static void add_cause(tp_regime *g, tp_cause_kind kind, size_t phase, double before, double after)
{
    if (g->ncauses < TP_REGIME_CAUSES)
        g->causes[g->ncauses++] =
            (tp_regime_cause){.kind = kind, .phase = phase, .before = before, .after = after};
}

/* The step thread's CPU time a step, where it moved from p to g the way
 * the mean step did by half of its change or more, on a rank without a
 * GPU: TP_CAUSE_STEP_COMPUTED. */
static void step_computed_cause(const tp_regime *p, tp_regime *g)
{
    const tp_regime_machine *a = &p->machine, *b = &g->machine;
    double before = a->step_cpu_busy / 100 * p->mean_s, after = b->step_cpu_busy / 100 * g->mean_s;
    double computed = after - before, step = g->mean_s - p->mean_s;
    if (!isfinite(a->gpu_busy_percent) && !isfinite(b->gpu_busy_percent) && computed * step > 0 &&
        fabs(computed) >= 0.5 * fabs(step))
        add_cause(g, TP_CAUSE_STEP_COMPUTED, 0, before, after);
}

void tp_regime_find_causes(const tp_regime *p, tp_regime *g)
{
    size_t moved = TP_STEP_PHASES;
    double most = 0, step = g->level_s - p->level_s;
    for (size_t k = 0; k < TP_STEP_PHASES; k++) {
        double delta = g->phase_level_s[k] - p->phase_level_s[k];
        if (delta * step > 0 && fabs(delta) > most) { /* moved the way the step did */
            most = fabs(delta);
            moved = k;
        }
    }
    /* a phase that carries at least half of the step's change, both in the
     * statistic the words give */
    if (moved < TP_STEP_PHASES && most >= 0.5 * fabs(step))
        add_cause(g, TP_CAUSE_PHASE, moved, p->phase_level_s[moved], g->phase_level_s[moved]);
    const tp_regime_machine *a = &p->machine, *b = &g->machine;
    if (fabs(b->others_cpu_percent - a->others_cpu_percent) >= 15)
        add_cause(g, TP_CAUSE_OTHERS_CPU, 0, a->others_cpu_percent, b->others_cpu_percent);
    if (fabs(b->cpu_steal_percent - a->cpu_steal_percent) >= TP_CAUSE_STEAL_POINTS)
        add_cause(g, TP_CAUSE_CPU_STEAL, 0, a->cpu_steal_percent, b->cpu_steal_percent);
    bool stepped = isfinite(a->step_cpu_wait) && isfinite(b->step_cpu_wait);
    bool waited = stepped || (isfinite(a->training_cpu_wait) && isfinite(b->training_cpu_wait));
    if (stepped && fabs(b->step_cpu_wait - a->step_cpu_wait) >= 10)
        add_cause(g, TP_CAUSE_STEP_CPU_WAIT, 0, a->step_cpu_wait, b->step_cpu_wait);
    else if (!stepped && waited && fabs(b->training_cpu_wait - a->training_cpu_wait) >= 10)
        add_cause(g, TP_CAUSE_CPU_WAIT, 0, a->training_cpu_wait, b->training_cpu_wait);
    if (!waited && fabs(b->cpu_pressure - a->cpu_pressure) >= 10) /* the machine's, not its own */
        add_cause(g, TP_CAUSE_CPU_PRESSURE, 0, a->cpu_pressure, b->cpu_pressure);
    /* the training's own wait on storage where both sides recorded it: the
     * machine's I/O pressure is everyone's (another's writes) */
    if (isfinite(a->training_blocked) && isfinite(b->training_blocked)) {
        if (fabs(b->training_blocked - a->training_blocked) >= TP_CAUSE_BLOCKED_MOVE)
            add_cause(g, TP_CAUSE_STORAGE_WAIT, 0, a->training_blocked, b->training_blocked);
    } else if (fabs(b->io_pressure - a->io_pressure) >= 10) {
        add_cause(g, TP_CAUSE_IO_PRESSURE, 0, a->io_pressure, b->io_pressure);
    }
    if (b->swap_used_bytes - a->swap_used_bytes >= 64.0 * 1024 * 1024)
        add_cause(g, TP_CAUSE_SWAP, 0, a->swap_used_bytes, b->swap_used_bytes);
    if (fabs(b->gpu_sm_clock_mhz - a->gpu_sm_clock_mhz) >= 0.1 * a->gpu_sm_clock_mhz)
        add_cause(g, TP_CAUSE_GPU_CLOCK, 0, a->gpu_sm_clock_mhz, b->gpu_sm_clock_mhz);
    if (fabs(b->gpu_trouble_share - a->gpu_trouble_share) >= 0.2)
        add_cause(g, TP_CAUSE_GPU_THROTTLE, 0, a->gpu_trouble_share, b->gpu_trouble_share);
    step_computed_cause(p, g);
}

/* The steps of group g of ph: from its first step to the next group's. */
static double group_steps(const tp_step_phases *ph, size_t g)
{
    double next = g + 1 < ph->ngroups ? ph->first_step[g + 1] : (double)ph->nsteps;
    return next > ph->first_step[g] ? next - ph->first_step[g] : 1;
}

static double group_time(const double *times, size_t g) { return times ? times[g] : NAN; }

/* A step number held as a double (a stored summary's, maybe damaged) as a
 * count: 0 where it is negative or no number, bounded above. */
static size_t step_count(double v)
{
    return v >= 0 && v < 1e15 ? (size_t)v : v >= 1e15 ? (size_t)1e15 : 0;
}

/* A drift over the groups compared (idx[]: each one's group of ph) in the
 * rank's step numbers. */
static tp_regimes_drift drift_steps(const tp_step_phases *ph, const size_t *idx, tp_pace_drift d)
{
    if (!d.found)
        return (tp_regimes_drift){0};
    size_t a = idx[d.first_lo], b = idx[d.first_hi], c = idx[d.last_lo], e = idx[d.last_hi];
    return (tp_regimes_drift){.found = true,
                              .first_from = step_count(ph->first_step[a]) + 1,
                              .first_to = step_count(ph->first_step[b] + group_steps(ph, b)),
                              .last_from = step_count(ph->first_step[c]) + 1,
                              .last_to = step_count(ph->first_step[e] + group_steps(ph, e)),
                              .first_s = d.first_s,
                              .last_s = d.last_s};
}

void tp_regimes_build(tp_run *run, const tp_step_phases *ph, int rank, int64_t agent_id, int gpu,
                      tp_regimes *out)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->agent_id = agent_id;
    if (ph->ngroups == 0)
        return;
    /* the groups compared (each a group's mean step), without those that
     * stalled (a group of one step longer than the stall threshold) */
    size_t total = ph->ngroups, n = 0;
    double *d = tp_xmalloc(total * sizeof *d), *tmp = tp_xmalloc(2 * total * sizeof *tmp);
    size_t *idx = tp_xmalloc(total * sizeof *idx);
    for (size_t g = 0; g < total; g++) {
        d[g] = 0;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            d[g] += ph->values[g * TP_STEP_PHASES + k];
    }
    double stall_s = tp_stall_threshold(run->settings.stall_after_s, tp_median_of(d, total, tmp));
    for (size_t g = 0; g < total; g++)
        if (d[g] <= stall_s) {
            idx[n] = g;
            d[n++] = d[g];
        }
    double *t0 = tp_xmalloc(2 * total * sizeof *t0), *t1 = t0 + total;
    for (size_t i = 0; i < n; i++) {
        t0[i] = group_time(ph->start_s, idx[i]);
        t1[i] = group_time(ph->end_s, idx[i]);
    }
    size_t starts[TP_REGIMES_MAX];
    size_t nchanges = tp_regime_starts(d, t0, t1, n, starts);
    out->drift = drift_steps(ph, idx, tp_pace_drift_of(d, t0, t1, n, starts, nchanges));
    free(t0);
    for (size_t r = 0; n && r <= nchanges; r++) {
        size_t lo = r ? starts[r - 1] : 0, hi = r < nchanges ? starts[r] : n;
        tp_regime *g = &out->v[out->n++];
        double steps = 0, sum = 0;
        for (size_t i = lo; i < hi; i++) {
            steps += group_steps(ph, idx[i]);
            sum += d[i] * group_steps(ph, idx[i]);
        }
        size_t last = idx[hi - 1];
        *g = (tp_regime){.first_step = step_count(ph->first_step[idx[lo]]) + 1,
                         .last_step = step_count(ph->first_step[last] + group_steps(ph, last)),
                         .t0_s = group_time(ph->start_s, idx[lo]),
                         .t1_s = group_time(ph->end_s, last),
                         .mean_s = sum / steps,
                         .median_s = tp_median_of(d + lo, hi - lo, tmp)};
        g->typical_s = g->level_s = tp_regime_typical(d + lo, hi - lo);
        for (size_t k = 0; k < TP_STEP_PHASES; k++) {
            g->phase_s[k] = g->phase_level_s[k] = NAN;
            if (!nchanges) /* a steady run: its figures are the report's already */
                continue;
            double phase = 0;
            for (size_t i = lo; i < hi; i++) {
                tmp[i - lo] = ph->values[idx[i] * TP_STEP_PHASES + k];
                phase += tmp[i - lo] * group_steps(ph, idx[i]);
            }
            g->phase_s[k] = phase / steps;
            g->phase_level_s[k] = tp_trimmed_mean(tmp, hi - lo, tmp + (hi - lo));
        }
        if (nchanges && g->mean_s > 0) { /* the step verdicts of its own split */
            double in = g->phase_s[0] / g->mean_s, to = g->phase_s[1] / g->mean_s;
            g->input_bound = in >= TP_INPUT_BOUND_SHARE;
            g->transfer_bound = to >= TP_TRANSFER_BOUND_SHARE;
            g->compute_bound =
                g->phase_s[2] / g->mean_s >= TP_COMPUTE_BOUND_SHARE && in < TP_INPUT_BOUND_SHARE;
        }
        g->machine = tp_regime_machine_unknown();
        if (nchanges && isfinite(g->t0_s) && isfinite(g->t1_s))
            machine_over(run, rank, agent_id, gpu, tp_ns_round_s(g->t0_s), tp_ns_round_s(g->t1_s),
                         &g->machine);
        /* as the run's verdict: a GPU idle over the regime waited for its host */
        if (g->compute_bound && g->machine.gpu_busy_percent < 100 * TP_HOST_BOUND_GPU_BUSY) {
            g->compute_bound = false;
            g->host_bound = true;
        }
    }
    for (size_t r = 1; r < out->n; r++)
        tp_regime_find_causes(&out->v[r - 1], &out->v[r]);
    free(d);
    free(tmp);
    free(idx);
}

size_t tp_regimes_biggest_change(const tp_regimes *r)
{
    size_t best = 0;
    double most = 0;
    for (size_t i = 1; i < r->n; i++) {
        double moved = fabs(log(r->v[i].typical_s / r->v[i - 1].typical_s));
        if (moved > most) {
            most = moved;
            best = i;
        }
    }
    return best;
}

const tp_regime *tp_regimes_latest(const tp_regimes *r, int rank)
{
    if (r->rank != rank || r->n < 2 || r->n > TP_REGIMES_MAX)
        return NULL;
    const tp_regime *g = &r->v[r->n - 1];
    if (!(g->mean_s > 0) || !isfinite(g->mean_s))
        return NULL;
    for (int k = 0; k < TP_STEP_PHASES - 1; k++)
        if (!isfinite(g->phase_s[k]))
            return NULL;
    return g;
}

bool tp_rank_pace_over(const tp_run *run, const tp_step_phases *ph, int rank, double t0_s,
                       double t1_s, tp_rank_pace *out)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    if (!ph->ngroups || !ph->start_s || !ph->end_s || !(t1_s > t0_s))
        return false;
    double *d = tp_xmalloc(2 * ph->ngroups * sizeof *d);
    for (size_t g = 0; g < ph->ngroups; g++) {
        d[g] = 0;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            d[g] += ph->values[g * TP_STEP_PHASES + k];
    }
    double stall_s = tp_stall_threshold(run->settings.stall_after_s,
                                        tp_median_of(d, ph->ngroups, d + ph->ngroups));
    const double slack = 1e-6; /* the span's ends are its first and last group's own times */
    double steps = 0;
    for (size_t g = 0; g < ph->ngroups; g++) {
        if (!(ph->start_s[g] >= t0_s - slack && ph->end_s[g] <= t1_s + slack) || d[g] > stall_s)
            continue;
        double n = group_steps(ph, g);
        steps += n;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            out->phase_s[k] += n * ph->values[g * TP_STEP_PHASES + k];
        out->mean_s += n * d[g];
    }
    free(d);
    if (!(steps > 0))
        return false;
    bool finite = true; /* a stored summary's phases are checked: they divide */
    for (size_t k = 0; k < TP_STEP_PHASES; k++)
        finite = finite && isfinite(out->phase_s[k] /= steps);
    out->mean_s /= steps;
    out->steps = (size_t)steps;
    return finite && out->mean_s > 0 && isfinite(out->mean_s);
}
