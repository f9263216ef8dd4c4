/* ops_plan.h: when the recorder asks its processes for a capture window.
 *
 * A window is asked for by step number (the processes' counts of their own
 * step marks), so that every rank captures the same steps:
 *   - the schedule: at first_step (after the warm-up), then every
 *     `every_ns` of training, as a period in steps fixed once from the
 *     median step (rounded to 1, 2 or 5 times a power of ten, so that the
 *     recorders of several nodes, measuring nearly the same median, agree);
 *   - a demand (`trainprof capture`, POST /capture): from the step after
 *     next of the furthest process;
 *   - a slow step: one that took on_slow times the running median of the
 *     steps outside windows, at most one such window every slow_gap_ns.
 * One window at a time: a request is not made while the last one's steps
 * are still to come. Only the drain thread calls these but
 * tp_ops_plan_ask, which any thread may. No I/O, no clock: the caller says
 * the time. */
#ifndef TP_RECORD_OPS_PLAN_H
#define TP_RECORD_OPS_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops_window.h"

typedef struct tp_ops_options {
    bool off;            /* --ops off: no window at all */
    uint32_t steps;      /* --ops-steps: steps a window captures (5) */
    uint64_t first_step; /* the schedule's first window (11: after 10 warm-up steps) */
    int64_t every_ns;    /* --ops-every (30 min); 0: only the first */
    double on_slow;      /* --ops-on-slow (3); 0: never */
    int64_t slow_gap_ns; /* at most one slow-step window in this long (10 min) */
} tp_ops_options;

/* trainprof's own budget (analyze/own_cost.h's TP_OWN_BUDGET, the same 1 %),
 * and what a region costs the thread that times it: a `with region` pair
 * from Python under record (bench/python_region_cost.py, 221 ns), a pair
 * from C code's call site (bench/region_cost.c: 24 ns stamped with the TSC,
 * 51-55 ns with clock reads) */
#define TP_OPS_BUDGET           0.01
#define TP_OPS_REGION_COST_NS   200.0
#define TP_OPS_C_REGION_COST_NS 50.0
#define TP_OPS_COST_MIN_STEPS   50   /* steps outside windows seen before the cost is judged */
#define TP_OPS_COST_MIN_S       60.0 /* ... and seconds of steps before the windows' cost is */
/* Backed off, the processes record device times (CUDA events) on one step in
 * this many (lib/ops_window.h's request carries it; communication keeps
 * all of its own) */
#define TP_OPS_DEVICE_EVERY 8

/* Why the recorder backed off, and from when (tp_ops_plan_cost). */
typedef struct tp_ops_backoff {
    int64_t at_ns; /* 0: it did not */
    uint64_t step; /* the furthest process's step count then */
    double share;  /* the estimated share of the steps' time */
    double regions_per_step;
    bool windows; /* the capture windows' cost was the larger part, else the regions' */
} tp_ops_backoff;

#define TP_OPS_MEDIAN_STEPS 64 /* the running median's steps */
#define TP_OPS_MEDIAN_MIN   20 /* steps seen before a slow one counts */

typedef struct tp_ops_plan {
    tp_ops_options o;
    tp_ops_request current; /* the latest request; seq 0: none */
    bool published;         /* current reached the rings */
    uint64_t max_steps;     /* the furthest process's step count */
    double durations[TP_OPS_MEDIAN_STEPS];
    size_t nd, next_d;
    int64_t last_slow_ns;  /* when the latest slow step's window was asked for */
    uint64_t period_steps; /* the schedule's period, once known; 0 before */
    uint64_t next_scheduled;
    atomic_uint asked; /* demands from any thread */
    unsigned asked_served;
    /* what trainprof costs the steps, live (tp_ops_plan_cost): the steps
     * outside windows (their time and regions), and the windows' steps */
    uint64_t steps_seen, regions_seen, c_regions_seen, window_steps;
    int64_t steps_ns, window_ns;
    tp_ops_backoff backoff; /* once over the budget */
} tp_ops_plan;

void tp_ops_options_default(tp_ops_options *o);
void tp_ops_plan_init(tp_ops_plan *p, const tp_ops_options *o);

/* A thread that marks steps made `count` new ones (its count now
 * step_count), the slowest taking slowest_ns and all of them total_ns. */
void tp_ops_plan_steps(tp_ops_plan *p, uint64_t step_count, uint64_t count, int64_t slowest_ns,
                       int64_t total_ns, int64_t now_ns);

/* Regions a thread closed since the last call, and of them those C code
 * opened (what they cost is weighed against the budget). */
void tp_ops_plan_regions(tp_ops_plan *p, uint64_t regions, uint64_t c_regions);

/* trainprof's cost of the steps so far, estimated: the regions closed in
 * the steps outside windows at TP_OPS_REGION_COST_NS each (those C code
 * opened at TP_OPS_C_REGION_COST_NS), and, once
 * TP_OPS_COST_MIN_S of steps ran, the capture windows' steps beyond the
 * median step (the profiler's start, stop and the window's handing over:
 * paid at once, paid off by the steps after); over TP_OPS_BUDGET of the
 * steps' time, once TP_OPS_COST_MIN_STEPS were seen, the plan backs off for
 * good: no window after a slow step, the schedule's period four times
 * longer. True when it backed off at this call (p->backoff says how). */
bool tp_ops_plan_cost(tp_ops_plan *p, int64_t now_ns);

/* A demand, from any thread: served at the drain's next tp_ops_plan_tick. */
void tp_ops_plan_ask(tp_ops_plan *p);

/* A demand on the drain thread (`trainprof capture`): the window that will
 * serve it, in out: a new one from the furthest process's step after next,
 * or the one still to come or under way. False with windows off. */
bool tp_ops_plan_demand(tp_ops_plan *p, int64_t now_ns, tp_ops_request *out);

/* What the plan decides at now_ns (the drain's every period): true when
 * there is a new request for the rings, in out. */
bool tp_ops_plan_tick(tp_ops_plan *p, int64_t now_ns, tp_ops_request *out);

/* The median step of the running window, ns; 0 before TP_OPS_MEDIAN_MIN. */
int64_t tp_ops_plan_median_ns(const tp_ops_plan *p);

/* The schedule's period in steps for a median step and a period of time:
 * every_ns / median_ns rounded to the nearest 1, 2 or 5 times a power of
 * ten, at least min_steps. */
uint64_t tp_ops_period_steps(int64_t every_ns, int64_t median_ns, uint64_t min_steps);

#endif
