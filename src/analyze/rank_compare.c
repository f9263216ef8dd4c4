/* rank_compare.c: see rank_compare.h. */
#include "analyze/rank_compare.h"

#include <math.h>
#include <stdlib.h>

#include "core/stats.h"
#include "core/step_rules.h"

static double median_of(const tp_ranks *out, double (*get)(const tp_rank_row *))
{
    double *v = malloc(out->n * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < out->n; i++) {
        double x = get(&out->rows[i]);
        if (!isnan(x))
            v[n++] = x;
    }
    tp_stats st;
    tp_stats_compute(v, n, &st);
    free(v);
    return st.p50;
}

double tp_rank_own_per_step(const tp_rank_row *r)
{
    return (r->input_s + r->compute_s) / (double)r->measured_steps;
}
static double input_per_step(const tp_rank_row *r)
{
    return r->input_s / (double)r->measured_steps;
}
static double compute_per_step(const tp_rank_row *r)
{
    return r->compute_s / (double)r->measured_steps;
}
static double comm_per_step(const tp_rank_row *r) { return r->comm_s / (double)r->measured_steps; }
static double step_per_step(const tp_rank_row *r)
{
    return r->window_s / (double)r->measured_steps;
}

/* Whether r's own work per step exceeds the median rank's by more than 10 %
 * and by at least 2 % of the median rank's step (medians computed). */
static bool slower_than_median(const tp_ranks *out, const tp_rank_row *r)
{
    double own = tp_rank_own_per_step(r);
    return own > (1 + TP_STRAGGLER_EXCESS) * out->median_own_s &&
           own - out->median_own_s >= TP_STRAGGLER_STEP_SHARE * out->median_step_s;
}
static double gpu_clock(const tp_rank_row *r) { return r->gpu_sm_clock_mhz; }
static double gpu_util(const tp_rank_row *r) { return r->gpu_util_percent; }
static double gpu_slowdown(const tp_rank_row *r) { return r->gpu_slowdown_share; }
static double cpu_wait(const tp_rank_row *r) { return r->cpu_wait_percent; }

/* What makes a straggler slow, from its parts against the medians. */
static void explain(tp_ranks *out, tp_rank_row *r)
{
    double in = input_per_step(r), co = compute_per_step(r);
    tp_straggler_cause *c = &r->cause;
    c->input = in - out->median_input_s >= co - out->median_compute_s;
    c->part_s = c->input ? in : co;
    c->median_part_s = c->input ? out->median_input_s : out->median_compute_s;
    double clock = median_of(out, gpu_clock), util = median_of(out, gpu_util);
    double slowdown = median_of(out, gpu_slowdown);
    c->gpu_note = TP_GPU_NOTE_NONE;
    /* NVML's clock event reasons name throttling where they were recorded
     * (held back at least a fifth of the time, and a fifth more than the
     * median rank's GPU); the clock alone is only a guess where they were not */
    bool reasons = !isnan(r->gpu_slowdown_share);
    if (reasons && r->gpu_slowdown_share >= 0.2 &&
        r->gpu_slowdown_share >= (isnan(slowdown) ? 0 : slowdown) + 0.2)
        c->gpu_note = TP_GPU_NOTE_THROTTLED, c->gpu_value = r->gpu_slowdown_share * 100,
        c->gpu_median = isnan(slowdown) ? 0 : slowdown * 100,
        c->gpu_reasons = r->gpu_slowdown_reasons;
    else if (!reasons && !isnan(r->gpu_sm_clock_mhz) && r->gpu_sm_clock_mhz < 0.9 * clock)
        c->gpu_note = TP_GPU_NOTE_CLOCK, c->gpu_value = r->gpu_sm_clock_mhz, c->gpu_median = clock;
    else if (!isnan(r->gpu_util_percent) && fabs(r->gpu_util_percent - util) >= 10)
        c->gpu_note = TP_GPU_NOTE_UTIL, c->gpu_value = r->gpu_util_percent, c->gpu_median = util;
    size_t on_node = 0, slow_on_node = 0, elsewhere = 0;
    for (size_t i = 0; i < out->n; i++) {
        const tp_rank_row *o = &out->rows[i];
        if (o->agent_id != r->agent_id) {
            elsewhere++;
            continue;
        }
        on_node++;
        slow_on_node += slower_than_median(out, o);
    }
    c->node_slow = elsewhere && on_node > 1 && slow_on_node == on_node;
    /* its step thread held back by others on its CPUs, more than the
     * median rank's (the run-queue delay the recorder read) */
    double waited = median_of(out, cpu_wait);
    c->cpu_held = !isnan(r->cpu_wait_percent) && !isnan(waited) &&
                  r->cpu_wait_percent >= TP_CPU_WAIT_PERCENT && r->cpu_wait_percent >= waited + 10;
    c->cpu_wait = r->cpu_wait_percent, c->median_cpu_wait = waited;
}

/* Medians, stragglers and their causes, from the rows' parts. */
void tp_ranks_compare(tp_ranks *out)
{
    out->median_step_s = median_of(out, step_per_step);
    out->median_own_s = median_of(out, tp_rank_own_per_step);
    out->median_input_s = median_of(out, input_per_step);
    out->median_compute_s = median_of(out, compute_per_step);
    out->median_comm_s = median_of(out, comm_per_step);
    for (size_t i = 0; i < out->n; i++) {
        tp_rank_row *r = &out->rows[i];
        r->excess = out->median_own_s > 0 ? tp_rank_own_per_step(r) / out->median_own_s - 1 : 0;
        r->straggler = slower_than_median(out, r);
    }
    for (size_t i = 0; i < out->n; i++)
        if (out->rows[i].straggler) {
            explain(out, &out->rows[i]);
            out->nstragglers++;
        }
}

typedef struct rank_work {
    double own_per_step;
    int rank;
} rank_work;

static int by_own_work_desc(const void *a, const void *b)
{
    double x = ((const rank_work *)a)->own_per_step, y = ((const rank_work *)b)->own_per_step;
    return (x < y) - (x > y);
}

static int by_rank_number(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

size_t tp_ranks_notable(const tp_ranks *r, int *out)
{
    if (r->n <= TP_NOTABLE_RANKS)
        return 0;
    rank_work *order = malloc(r->n * sizeof *order);
    if (!order)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        order[i] = (rank_work){tp_rank_own_per_step(&r->rows[i]), r->rows[i].rank};
    qsort(order, r->n, sizeof *order, by_own_work_desc);
    size_t n = 0;
    for (size_t i = 0; i < TP_NOTABLE_RANKS - 2; i++)
        out[n++] = order[i].rank;
    out[n++] = order[r->n / 2].rank;
    out[n++] = order[r->n - 1].rank;
    free(order);
    qsort(out, n, sizeof *out, by_rank_number);
    return n;
}
