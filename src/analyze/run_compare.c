/* run_compare.c: see run_compare.h. */
#include "analyze/run_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/compare_facts.h"
#include "analyze/compare_functions.h"
#include "analyze/scaling.h"
#include "core/metric_catalog.h"
#include "util/labels.h"
#include "util/ns_math.h"
#include "util/oom.h"
#include "core/run_keys.h"

/* A side's groups of steps. */
typedef struct groups {
    double *d, *w; /* each group's mean step and its steps */
    double *p;     /* and its mean phases, TP_STEP_PHASES a group */
    size_t n;
} groups;

static void groups_alloc(groups *g, size_t n)
{
    g->d = tp_xmalloc((n + 1) * sizeof *g->d);
    g->w = tp_xmalloc((n + 1) * sizeof *g->w);
    g->p = tp_xmalloc((n + 1) * TP_STEP_PHASES * sizeof *g->p);
    g->n = 0;
}

/* Adds a group of w steps whose mean step is d and mean phases phases. */
static void groups_add(groups *g, const double *phases, double d, double w)
{
    memcpy(g->p + g->n * TP_STEP_PHASES, phases, TP_STEP_PHASES * sizeof *g->p);
    g->d[g->n] = d;
    g->w[g->n++] = w;
}

static void groups_free(groups *g)
{
    free(g->d);
    free(g->w);
    free(g->p);
}

/* The agent and GPU of rank in s (agent 1 and no GPU where unknown). */
static void rank_place(const tp_summary *s, int rank, int64_t *agent, int *gpu)
{
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    *agent = place ? place->agent_id : 1;
    *gpu = place ? place->gpu : -1;
}

/* A series' mean over its agent's training steps (the summary's figures,
 * stored or computed alike), NaN where it has none. */
static double mean_over_steps(const tp_summary *s, int64_t agent, const char *metric,
                              const char *labels)
{
    const tp_series_summary *m = tp_summary_find(s, agent, metric, labels);
    return m && m->steps.count ? m->steps.mean : NAN;
}

/* What the machine of rank did over its agent's steps (regimes.h's
 * figures), from the summary's series: the same for a run file and for
 * its summary-only merge. */
static void machine_over_steps(const tp_summary *s, int rank, tp_regime_machine *m)
{
    int64_t agent;
    int gpu;
    rank_place(s, rank, &agent, &gpu);
    double busy = mean_over_steps(s, agent, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    double own = mean_over_steps(s, agent, TP_METRIC_PROC_CPU_PERCENT, "{}");
    const char *cpus = tp_run_agent_meta_get(s->run, agent, TP_META_CPU_COUNT);
    m->cpu_steal_percent = mean_over_steps(s, agent, TP_METRIC_CPU_STEAL_PERCENT, "{}");
    m->others_cpu_percent =
        tp_others_cpu_percent(busy, m->cpu_steal_percent, own, cpus ? strtod(cpus, NULL) : 0);
    m->cpu_pressure = mean_over_steps(s, agent, TP_METRIC_PRESSURE_CPU_SOME_PERCENT, "{}");
    m->training_cpu_wait = mean_over_steps(s, agent, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}");
    char step_labels[48];
    bool stepped = tp_rank_step_thread_labels(s->run, rank, agent, step_labels, sizeof step_labels);
    m->step_cpu_wait =
        stepped ? mean_over_steps(s, agent, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, step_labels)
                : NAN;
    m->step_cpu_busy =
        stepped ? mean_over_steps(s, agent, TP_METRIC_STEP_THREAD_CPU_PERCENT, step_labels) : NAN;
    m->io_pressure = mean_over_steps(s, agent, TP_METRIC_PRESSURE_IO_SOME_PERCENT, "{}");
    m->training_blocked = mean_over_steps(s, agent, TP_METRIC_PROC_BLOCKED, "{}");
    m->mem_used_bytes = mean_over_steps(s, agent, TP_METRIC_HOST_MEM_USED_BYTES, "{}");
    m->swap_used_bytes = mean_over_steps(s, agent, TP_METRIC_SWAP_USED_BYTES, "{}");
    m->gpu_sm_clock_mhz = m->gpu_trouble_share = NAN;
    if (gpu < 0)
        return;
    char index[16], labels[48];
    snprintf(index, sizeof index, "%d", gpu);
    tp_labels1(labels, sizeof labels, TP_LABEL_GPU, index);
    m->gpu_sm_clock_mhz = mean_over_steps(s, agent, TP_METRIC_GPU_SM_CLOCK_MHZ, labels);
    for (size_t i = 0; s->gpu_slowdown && i < s->run->ngpus; i++)
        if (s->run->gpus[i].agent_id == agent && s->run->gpus[i].index == gpu)
            m->gpu_trouble_share = s->gpu_slowdown[i].trouble_share;
}

/* The groups of ph whose first step is in [first, last] (numbers from 1). */
static void regime_groups(const tp_step_phases *ph, size_t first, size_t last, groups *g)
{
    groups_alloc(g, ph->ngroups);
    for (size_t i = 0; i < ph->ngroups; i++) {
        double step = ph->first_step[i] + 1;
        if (step < (double)first || step > (double)last)
            continue;
        double next = i + 1 < ph->ngroups ? ph->first_step[i + 1] : (double)ph->nsteps, d = 0;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            d += ph->values[i * TP_STEP_PHASES + k];
        if (!isfinite(d))
            continue;
        groups_add(g, ph->values + i * TP_STEP_PHASES, d,
                   next > ph->first_step[i] ? next - ph->first_step[i] : 1);
    }
}

/* Makes side the latest pace r of its run (regimes.h), where its groups
 * among ph are two or more: its steps, figures and machine over r (over
 * the steps in a summary-only file, which knows no figure over a span),
 * the whole run's mean step and the regime before's kept beside; g
 * becomes its groups. */
static void latest_pace(const tp_summary *s, const tp_regime *r, const tp_step_phases *ph,
                        tp_compare_side *side, groups *g)
{
    groups latest;
    regime_groups(ph, r->first_step, r->last_step, &latest);
    double weight = 0, sum = 0, phase[TP_STEP_PHASES] = {0};
    for (size_t i = 0; i < latest.n; i++) {
        weight += latest.w[i];
        sum += latest.w[i] * latest.d[i];
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            phase[k] += latest.w[i] * latest.p[i * TP_STEP_PHASES + k];
    }
    if (latest.n < 2 || !(weight > 0) || !(sum > 0)) {
        groups_free(&latest);
        return;
    }
    side->paces = s->regimes.n;
    side->before_s = s->regimes.v[s->regimes.n - 2].mean_s;
    side->step_s = sum / weight;
    for (size_t k = 0; k < TP_STEP_PHASES; k++)
        side->phase_s[k] = phase[k] / weight;
    side->first_step = r->first_step;
    side->last_step = r->last_step;
    side->steps = (size_t)weight;
    if (side->samples_per_s > 0) /* the same samples a step, at the latest pace */
        side->samples_per_s *= side->whole_step_s / side->step_s;
    if (!tp_run_summary_only(s->run)) /* a regime's machine is unknown there: the steps' */
        side->machine = r->machine;
    groups_free(g);
    *g = latest;
}

/* Fills side from s's first rank's step phases; g gets the groups. */
static bool side_build(const tp_summary *s, tp_compare_side *side, groups *g, char *err, size_t cap)
{
    const tp_timings *t = &s->timings;
    side->path = s->run->path;
    side->rank = -1;
    side->step_s = side->samples_per_s = side->samples_per_step = NAN;
    side->before_s = side->whole_step_s = NAN;
    side->world = tp_run_world_size(s->run, t);
    side->machine = tp_regime_machine_unknown();
    for (size_t k = 0; k < TP_STEP_PHASES; k++)
        side->phase_s[k] = NAN;
    double rate = 0;
    for (size_t i = 0; i < t->nsteps; i++) /* the job's: each rank's own batches */
        if (t->steps[i].samples > 0 && t->steps[i].total_s > 0)
            rate += (double)t->steps[i].samples / t->steps[i].total_s;
    if (rate > 0)
        side->samples_per_s = rate;
    if (!t->nsteps)
        return true;
    const tp_step_row *row = &t->steps[0];
    side->rank = row->rank;
    side->steps = row->stats.count;
    if (row->samples > 0 && row->stats.count)
        side->samples_per_step = (double)row->samples / (double)row->stats.count;
    tp_step_phases ph;
    if (!tp_summary_step_phases(s, row->rank, row->warmup, &ph, err, cap)) {
        tp_step_phases_free(&ph);
        return false;
    }
    groups_alloc(g, ph.ngroups);
    double weight = 0, sum = 0, phase[TP_STEP_PHASES] = {0};
    for (size_t i = 0; i < ph.ngroups; i++) {
        double next = i + 1 < ph.ngroups ? ph.first_step[i + 1] : (double)ph.nsteps;
        double w = next > ph.first_step[i] ? next - ph.first_step[i] : 1, d = 0;
        for (size_t k = 0; k < TP_STEP_PHASES; k++) {
            d += ph.values[i * TP_STEP_PHASES + k];
            phase[k] += w * ph.values[i * TP_STEP_PHASES + k];
        }
        if (!isfinite(d) || !isfinite(w))
            continue; /* a damaged stored summary's group */
        groups_add(g, ph.values + i * TP_STEP_PHASES, d, w);
        weight += w;
        sum += w * d;
    }
    if (weight > 0) {
        side->step_s = side->whole_step_s = sum / weight;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            side->phase_s[k] = phase[k] / weight;
    }
    machine_over_steps(s, row->rank, &side->machine);
    if (s->regimes.rank == row->rank)
        side->drift = s->regimes.drift;
    const tp_regime *latest = tp_regimes_latest(&s->regimes, row->rank);
    if (latest && weight > 0)
        latest_pace(s, latest, &ph, side, g);
    tp_step_phases_free(&ph);
    return true;
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The weighted mean of n groups drawn from g with replacement, of the
 * value each holds at v[i * stride] (its step: g->d, 1; its phase k:
 * g->p + k, TP_STEP_PHASES). */
static double resampled_mean(const groups *g, const double *v, size_t stride, uint64_t *x)
{
    double sw = 0, swv = 0;
    for (size_t i = 0; i < g->n; i++) {
        size_t k = (size_t)(next_random(x) % g->n);
        sw += g->w[k];
        swv += g->w[k] * v[k * stride];
    }
    return sw > 0 ? swv / sw : NAN;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The 95 % interval, by the bootstrap, of B's mean less A's (ratio: B's
 * over A's, less one) of the values at va, vb (strided as above); NaN
 * where no resample gave one. The seed is fixed: the same files give the
 * same interval. */
static void interval(const groups *a, const double *va, const groups *b, const double *vb,
                     size_t stride, bool ratio, double *low, double *high)
{
    double *r = tp_xmalloc(TP_COMPARE_RESAMPLES * sizeof *r);
    uint64_t x = 0x9e3779b97f4a7c15u;
    size_t n = 0;
    for (size_t i = 0; i < TP_COMPARE_RESAMPLES; i++) {
        double ma = resampled_mean(a, va, stride, &x), mb = resampled_mean(b, vb, stride, &x);
        if (ratio ? ma > 0 && isfinite(mb) : isfinite(ma) && isfinite(mb))
            r[n++] = ratio ? mb / ma - 1 : mb - ma;
    }
    qsort(r, n, sizeof *r, cmp_double);
    *low = n ? r[(size_t)(0.025 * (double)n)] : NAN;
    *high = n ? r[(size_t)ceil(0.975 * (double)n) - 1] : NAN;
    free(r);
}

/* The 95 % interval of B's mean step over A's, less one. */
static void bootstrap(const groups *a, const groups *b, double *low, double *high)
{
    interval(a, a->d, b, b->d, 1, true, low, high);
}

/* Whether phase k moved from a to b: by TP_COMPARE_MIN_CHANGE of A's step
 * or more, by a quarter of the step's change or more, and beyond the noise
 * of the phase's own steps (the 95 % interval of B's mean less A's, by the
 * bootstrap, leaves 0 out). The same run twice on a busy machine had its
 * loader 10 % apart (0.6 ms, 9 % of its step) with the step's interval
 * -19 % to +15 %: noise, not a move. */
static bool phase_moved(const groups *a, const groups *b, size_t k, double a_s, double b_s,
                        double a_step_s, double step_moved)
{
    double moved = fabs(b_s - a_s);
    if (!(moved >= TP_COMPARE_MIN_CHANGE * a_step_s && moved >= 0.25 * step_moved))
        return false;
    double low, high;
    interval(a, a->p + k, b, b->p + k, TP_STEP_PHASES, false, &low, &high);
    return low > 0 || high < 0;
}

/* A side's samples: over its latest pace where it is compared on it. */
static tp_compare_samples samples_of(const tp_summary *s, const tp_compare_side *side)
{
    bool latest = tp_compare_side_on_latest_pace(side);
    return (tp_compare_samples){latest ? &s->stacks_latest : &s->stacks, side->rank};
}

/* The function behind the moved phase of cause at (compare_functions.h),
 * over each side's compared steps: a cause put right after the phase's. */
static void function_cause(const tp_summary *a, const tp_summary *b, tp_run_compare *c, size_t at)
{
    tp_compare_samples sa = samples_of(a, &c->a), sb = samples_of(b, &c->b);
    tp_regime_cause found;
    if (!tp_compare_function_cause(&sa, &sb, &c->causes[at], &found) || at + 1 >= TP_REGIME_CAUSES)
        return;
    size_t n = c->ncauses < TP_REGIME_CAUSES ? c->ncauses + 1 : TP_REGIME_CAUSES;
    memmove(&c->causes[at + 2], &c->causes[at + 1], (n - at - 2) * sizeof *c->causes);
    c->causes[at + 1] = found;
    c->ncauses = n;
}

/* The verdict kinds that fired, as bits. */
static uint32_t verdict_bits(const tp_verdicts *v)
{
    uint32_t bits = 0;
    for (size_t i = 0; v && i < v->n; i++)
        if ((unsigned)v->items[i].kind < 32)
            bits |= 1u << v->items[i].kind;
    return bits;
}

bool tp_run_compare_build(const tp_summary *a, const tp_verdicts *va, const tp_summary *b,
                          const tp_verdicts *vb, tp_run_compare *out, char *err, size_t cap)
{
    tp_summary_needs(a, TP_PARTS_ALL, "tp_run_compare_build"); /* stacks, regimes */
    tp_summary_needs(b, TP_PARTS_ALL, "tp_run_compare_build");
    memset(out, 0, sizeof *out);
    out->change = out->low = out->high = out->rate_change = out->whole_change = NAN;
    groups ga = {0}, gb = {0};
    bool ok = side_build(a, &out->a, &ga, err, cap) && side_build(b, &out->b, &gb, err, cap);
    out->a.verdicts = verdict_bits(va);
    out->b.verdicts = verdict_bits(vb);
    /* a crafted file's figures (steps of 1e308 s) can't be compared: never a verdict on them */
    out->comparable = ok && ga.n >= 2 && gb.n >= 2 && out->a.step_s > 0 && out->b.step_s > 0 &&
                      isfinite(out->a.step_s) && isfinite(out->b.step_s);
    if (out->comparable) {
        out->change = out->b.step_s / out->a.step_s - 1;
        bootstrap(&ga, &gb, &out->low, &out->high);
        out->comparable = isfinite(out->change) && isfinite(out->low) && isfinite(out->high);
    }
    if (out->comparable &&
        (tp_compare_side_on_latest_pace(&out->a) || tp_compare_side_on_latest_pace(&out->b)))
        out->whole_change = out->b.whole_step_s / out->a.whole_step_s - 1;
    if (out->comparable) {
        out->changed =
            (out->low > 0 || out->high < 0) && fabs(out->change) >= TP_COMPARE_MIN_CHANGE;
        double step_moved = fabs(out->b.step_s - out->a.step_s);
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            out->moved[k] = phase_moved(&ga, &gb, k, out->a.phase_s[k], out->b.phase_s[k],
                                        out->a.step_s, step_moved);
        /* A as the regime before, B as the one after */
        tp_regime pa = {
            .mean_s = out->a.step_s, .level_s = out->a.step_s, .machine = out->a.machine};
        tp_regime pb = {
            .mean_s = out->b.step_s, .level_s = out->b.step_s, .machine = out->b.machine};
        memcpy(pa.phase_s, out->a.phase_s, sizeof pa.phase_s);
        memcpy(pb.phase_s, out->b.phase_s, sizeof pb.phase_s);
        memcpy(pa.phase_level_s, out->a.phase_s, sizeof pa.phase_level_s); /* means, as step_s */
        memcpy(pb.phase_level_s, out->b.phase_s, sizeof pb.phase_level_s);
        tp_regime_find_causes(&pa, &pb);
        /* two runs may run other code: the step thread's CPU time a step
         * is no "same code computed slower" between them */
        size_t kept = 0;
        for (size_t i = 0; i < pb.ncauses; i++)
            if (pb.causes[i].kind != TP_CAUSE_STEP_COMPUTED)
                pb.causes[kept++] = pb.causes[i];
        pb.ncauses = kept;
        /* causes explain a change: none where the step did not change and
         * no phase moved (the same run twice, its loader 10 % apart in noise) */
        bool any_moved = false;
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            any_moved = any_moved || out->moved[k];
        out->ncauses = out->changed || any_moved ? pb.ncauses : 0;
        memcpy(out->causes, pb.causes, out->ncauses * sizeof *pb.causes);
        for (size_t i = 0; i < out->ncauses; i++)
            if (out->causes[i].kind == TP_CAUSE_PHASE) {
                function_cause(a, b, out, i);
                break;
            }
    }
    if (out->a.samples_per_s > 0 && out->b.samples_per_s > 0)
        out->rate_change = out->b.samples_per_s / out->a.samples_per_s - 1;
    if (ok)
        out->nfacts = tp_compare_differing_facts(a, b, out->a.world, out->b.world, out->facts);
    out->same_script = tp_compare_same_program(a->run, b->run);
    groups_free(&ga);
    groups_free(&gb);
    return ok;
}

static void regime_side(const tp_summary *s, const tp_regime *r, tp_compare_side *side)
{
    side->path = s->run->path;
    side->rank = s->regimes.rank;
    side->steps = r->last_step >= r->first_step ? r->last_step - r->first_step + 1 : 0;
    side->first_step = r->first_step;
    side->last_step = r->last_step;
    side->step_s = side->whole_step_s = r->mean_s;
    side->samples_per_s = side->samples_per_step = side->before_s = NAN;
    side->world = tp_run_world_size(s->run, &s->timings);
    memcpy(side->phase_s, r->phase_s, sizeof side->phase_s);
    side->machine = r->machine;
    side->verdicts = (r->input_bound ? 1u << TP_VERDICT_INPUT_BOUND : 0) |
                     (r->transfer_bound ? 1u << TP_VERDICT_TRANSFER_BOUND : 0) |
                     (r->compute_bound ? 1u << TP_VERDICT_COMPUTE_BOUND : 0) |
                     (r->host_bound ? 1u << TP_VERDICT_HOST_BOUND : 0);
}

bool tp_run_compare_regimes(const tp_summary *s, size_t before, size_t after, tp_run_compare *out,
                            char *err, size_t cap)
{
    tp_summary_needs(s, TP_PARTS_ALL, "tp_run_compare_regimes"); /* the regimes, their stacks */
    memset(out, 0, sizeof *out);
    out->change = out->low = out->high = out->rate_change = out->whole_change = NAN;
    out->same_script = out->one_run = true;
    const tp_regimes *rg = &s->regimes;
    if (before >= rg->n || after >= rg->n || !s->timings.nsteps)
        return true; /* nothing to compare: not comparable */
    const tp_regime *p = &rg->v[before], *g = &rg->v[after];
    regime_side(s, p, &out->a);
    regime_side(s, g, &out->b);
    out->a.drift = out->b.drift = rg->drift; /* the regimes then cut its slope */
    tp_step_phases ph;
    if (!tp_summary_step_phases(s, rg->rank, s->timings.steps[0].warmup, &ph, err, cap)) {
        tp_step_phases_free(&ph);
        return false;
    }
    groups ga = {0}, gb = {0};
    regime_groups(&ph, p->first_step, p->last_step, &ga);
    regime_groups(&ph, g->first_step, g->last_step, &gb);
    tp_step_phases_free(&ph);
    out->comparable = ga.n >= 2 && gb.n >= 2 && p->mean_s > 0 && g->mean_s > 0 &&
                      isfinite(p->mean_s) && isfinite(g->mean_s);
    if (out->comparable) {
        out->change = g->mean_s / p->mean_s - 1;
        bootstrap(&ga, &gb, &out->low, &out->high);
        out->comparable = isfinite(out->change) && isfinite(out->low) && isfinite(out->high);
    }
    if (out->comparable) {
        out->changed =
            (out->low > 0 || out->high < 0) && fabs(out->change) >= TP_COMPARE_MIN_CHANGE;
        double step_moved = fabs(g->mean_s - p->mean_s);
        for (size_t k = 0; k < TP_STEP_PHASES; k++)
            out->moved[k] =
                phase_moved(&ga, &gb, k, p->phase_s[k], g->phase_s[k], p->mean_s, step_moved);
        if (after == before + 1) { /* the change's own causes, its functions' among them */
            memcpy(out->causes, g->causes, g->ncauses * sizeof *g->causes);
            out->ncauses = g->ncauses;
        } else {
            tp_regime pa = *p, pb = *g;
            pb.ncauses = 0;
            tp_regime_find_causes(&pa, &pb);
            memcpy(out->causes, pb.causes, pb.ncauses * sizeof *pb.causes);
            out->ncauses = pb.ncauses;
        }
    }
    groups_free(&ga);
    groups_free(&gb);
    return true;
}

double tp_compare_slower_at_least(const tp_run_compare *c) { return c->comparable ? c->low : NAN; }

size_t tp_compare_machine_causes(const tp_run_compare *c, tp_regime_cause out[TP_REGIME_CAUSES])
{
    bool others = false;
    for (size_t i = 0; i < c->ncauses && i < TP_REGIME_CAUSES; i++)
        others |= c->causes[i].kind == TP_CAUSE_OTHERS_CPU;
    size_t n = 0;
    for (size_t i = 0; i < c->ncauses && i < TP_REGIME_CAUSES; i++) {
        tp_cause_kind kind = c->causes[i].kind;
        if (kind == TP_CAUSE_PHASE || kind == TP_CAUSE_FUNCTION || kind == TP_CAUSE_STEP_COMPUTED ||
            ((kind == TP_CAUSE_CPU_PRESSURE || kind == TP_CAUSE_CPU_WAIT ||
              kind == TP_CAUSE_STEP_CPU_WAIT) &&
             !others))
            continue;
        out[n++] = c->causes[i];
    }
    return n;
}
