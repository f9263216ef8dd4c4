/* ops_plan.c: see ops_plan.h. */
#include "record/ops_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tp_ops_options_default(tp_ops_options *o)
{
    *o = (tp_ops_options){.off = false,
                          .steps = 5,
                          .first_step = 11,
                          .every_ns = 30LL * 60 * 1000000000LL,
                          .on_slow = 3.0,
                          .slow_gap_ns = 10LL * 60 * 1000000000LL};
}

/* The backed-off plan's device-time period, as a request's reason carries it. */
static uint32_t backed_off_bits(const tp_ops_plan *p)
{
    return p->backoff.at_ns ? (uint32_t)TP_OPS_DEVICE_EVERY << TP_OPS_DEVICE_EVERY_SHIFT : 0;
}

static void request(tp_ops_plan *p, uint32_t reason, uint64_t first_step, int64_t now_ns)
{
    p->current =
        (tp_ops_request){p->current.seq + 1, reason | backed_off_bits(p), p->o.steps, first_step};
    p->published = false;
    if (reason == TP_OPS_SLOW)
        p->last_slow_ns = now_ns;
}

void tp_ops_plan_init(tp_ops_plan *p, const tp_ops_options *o)
{
    memset(p, 0, sizeof *p);
    p->o = *o;
    if (p->o.steps < 1)
        p->o.steps = 1;
    atomic_init(&p->asked, 0);
    p->last_slow_ns = INT64_MIN / 2; /* none yet */
    if (!o->off)
        request(p, TP_OPS_SCHEDULE, o->first_step ? o->first_step : 1, 0);
}

/* Whether step count n falls in the latest window or the step after it
 * (whose start pays for the profiler's stop), or that window is still to
 * come. */
static bool window_ahead_or_in(const tp_ops_plan *p, uint64_t n)
{
    if (!p->current.seq)
        return false;
    return n <= p->current.first_step + p->current.steps + 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int64_t tp_ops_plan_median_ns(const tp_ops_plan *p)
{
    if (p->nd < TP_OPS_MEDIAN_MIN)
        return 0;
    double v[TP_OPS_MEDIAN_STEPS];
    memcpy(v, p->durations, p->nd * sizeof *v);
    qsort(v, p->nd, sizeof *v, cmp_double);
    return (int64_t)llround(p->nd % 2 ? v[p->nd / 2] : (v[p->nd / 2 - 1] + v[p->nd / 2]) / 2);
}

void tp_ops_plan_steps(tp_ops_plan *p, uint64_t step_count, uint64_t count, int64_t slowest_ns,
                       int64_t total_ns, int64_t now_ns)
{
    if (p->o.off || !count)
        return;
    if (step_count > p->max_steps)
        p->max_steps = step_count;
    uint64_t first = step_count >= count ? step_count - count + 1 : 1;
    /* steps in or next to a window are the profiler's, not the training's */
    bool in_window = p->current.seq && first <= p->current.first_step + p->current.steps + 1 &&
                     step_count >= p->current.first_step;
    if (in_window) {
        p->window_steps += count;
        p->window_ns += total_ns;
        return;
    }
    p->steps_seen += count;
    p->steps_ns += total_ns;
    int64_t median = tp_ops_plan_median_ns(p);
    if (p->o.on_slow > 0 && median > 0 && (double)slowest_ns > p->o.on_slow * (double)median &&
        !window_ahead_or_in(p, step_count) && now_ns - p->last_slow_ns >= p->o.slow_gap_ns)
        request(p, TP_OPS_SLOW, step_count + 1, now_ns);
    double mean = (double)total_ns / (double)count;
    if ((double)slowest_ns > 3 * mean || mean <= 0) /* a slow one is kept out of the median */
        mean = (double)(total_ns - slowest_ns) / (double)(count > 1 ? count - 1 : 1);
    if (mean > 0 && !(median > 0 && p->o.on_slow > 0 && mean > p->o.on_slow * (double)median)) {
        p->durations[p->next_d] = mean;
        p->next_d = (p->next_d + 1) % TP_OPS_MEDIAN_STEPS;
        if (p->nd < TP_OPS_MEDIAN_STEPS)
            p->nd++;
    }
}

void tp_ops_plan_ask(tp_ops_plan *p) { atomic_fetch_add(&p->asked, 1); }

void tp_ops_plan_regions(tp_ops_plan *p, uint64_t regions, uint64_t c_regions)
{
    p->regions_seen += regions;
    p->c_regions_seen += c_regions < regions ? c_regions : regions;
}

bool tp_ops_plan_cost(tp_ops_plan *p, int64_t now_ns)
{
    int64_t median = tp_ops_plan_median_ns(p);
    if (p->o.off || p->backoff.at_ns || p->steps_seen < TP_OPS_COST_MIN_STEPS || median <= 0 ||
        p->steps_ns <= 0)
        return false;
    double regions = (double)(p->regions_seen - p->c_regions_seen) * TP_OPS_REGION_COST_NS +
                     (double)p->c_regions_seen * TP_OPS_C_REGION_COST_NS;
    double windows = (double)p->window_ns - (double)p->window_steps * (double)median;
    double all_ns = (double)(p->steps_ns + p->window_ns);
    /* a window costs at once what the steps after it pay off: judged over
     * TP_OPS_COST_MIN_S of steps at least, the regions from the first steps */
    windows = windows > 0 && all_ns >= TP_OPS_COST_MIN_S * 1e9 ? windows : 0;
    double share = (regions + windows) / all_ns;
    if (!(share > TP_OPS_BUDGET))
        return false;
    p->backoff =
        (tp_ops_backoff){.at_ns = now_ns > 0 ? now_ns : 1,
                         .step = p->max_steps,
                         .share = share,
                         .regions_per_step = (double)p->regions_seen / (double)p->steps_seen,
                         .windows = windows > regions};
    /* the latest request again, with the device times' period: a process
     * takes a request it has seen for no new window */
    if (p->current.seq) {
        p->current.reason |= backed_off_bits(p);
        p->current.seq++;
        p->published = false;
    }
    p->o.on_slow = 0; /* no window after a slow step */
    p->o.every_ns *= 4;
    if (p->period_steps) { /* the schedule's, once known: four times as far apart */
        p->next_scheduled += 3 * p->period_steps;
        p->period_steps *= 4;
    }
    return true;
}

bool tp_ops_plan_demand(tp_ops_plan *p, int64_t now_ns, tp_ops_request *out)
{
    if (p->o.off)
        return false;
    if (!window_ahead_or_in(p, p->max_steps))
        request(p, TP_OPS_DEMAND, p->max_steps + 2, now_ns);
    *out = p->current; /* a window still to come or under way serves it */
    return true;
}

uint64_t tp_ops_period_steps(int64_t every_ns, int64_t median_ns, uint64_t min_steps)
{
    if (every_ns <= 0 || median_ns <= 0)
        return 0;
    double raw = (double)every_ns / (double)median_ns;
    if (raw < 1)
        raw = 1;
    double decade = pow(10, floor(log10(raw)));
    static const double mantissas[] = {1, 2, 5, 10};
    double best = decade, best_err = INFINITY;
    for (size_t i = 0; i < 4; i++) {
        double err = fabs(log(raw / (mantissas[i] * decade)));
        if (err < best_err)
            best = mantissas[i] * decade, best_err = err;
    }
    uint64_t steps = best > 1e15 ? (uint64_t)1e15 : (uint64_t)llround(best);
    return steps < min_steps ? min_steps : steps;
}

bool tp_ops_plan_tick(tp_ops_plan *p, int64_t now_ns, tp_ops_request *out)
{
    if (p->o.off)
        return false;
    unsigned asked = atomic_load(&p->asked);
    if (asked != p->asked_served) {
        p->asked_served = asked;
        tp_ops_request served;
        tp_ops_plan_demand(p, now_ns, &served);
    }
    /* the schedule's period, once the steps after the first window show
     * the median */
    uint64_t after_first = p->o.first_step + p->o.steps + 1;
    if (!p->period_steps && p->o.every_ns > 0 && p->max_steps > after_first + TP_OPS_MEDIAN_MIN) {
        p->period_steps =
            tp_ops_period_steps(p->o.every_ns, tp_ops_plan_median_ns(p), 4 * (uint64_t)p->o.steps);
        p->next_scheduled = p->period_steps ? p->o.first_step + p->period_steps : 0;
        while (p->next_scheduled && p->next_scheduled <= p->max_steps + 1)
            p->next_scheduled += p->period_steps;
    }
    if (p->next_scheduled && p->max_steps + 5 >= p->next_scheduled &&
        !window_ahead_or_in(p, p->max_steps)) {
        request(p, TP_OPS_SCHEDULE, p->next_scheduled, now_ns);
        p->next_scheduled += p->period_steps;
    }
    if (p->current.seq && !p->published) {
        p->published = true;
        *out = p->current;
        return true;
    }
    return false;
}
