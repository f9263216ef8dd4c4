/* summary_save.c: computing a run's summary and storing it in its file. */
#include "analyze/summary_save.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/own_cost.h"
#include "analyze/ranks.h"
#include "analyze/regime_stacks.h"
#include "analyze/regimes.h"
#include "analyze/scaling.h"
#include "analyze/stack_counts.h"
#include "analyze/stack_facts.h"
#include "analyze/stalls.h"
#include "analyze/summary.h"
#include "analyze/summary_plots.h"
#include "store/reader_stacks.h"
#include "store/summary_tables.h"
#include "util/oom.h"

bool tp_summary_store_save(const char *path, char *err, size_t cap)
{
    return tp_summary_store_save_keeping(path, NULL, err, cap);
}

/* The first rank's regimes, from the step phases just computed (as a report
 * finds them from the stored ones: analyze/summary.c), their function causes
 * not yet added; none without steps. */
static void pace_regimes(tp_run *run, const tp_summary *s, const tp_summary_plots *plots,
                         tp_regimes *regimes)
{
    if (!s->timings.nsteps || !plots->nranks || plots->ranks[0] != s->timings.steps[0].rank)
        return;
    int rank = plots->ranks[0];
    const tp_rank_row *place = tp_ranks_find(&s->ranks, rank);
    int64_t agent = place ? place->agent_id : 1;
    const tp_run_gpu *on = tp_summary_rank_gpu(s, rank); /* as summary.c's regimes */
    tp_regimes_build(run, &plots->phases[0], rank, agent,
                     on && on->agent_id == agent ? on->index : -1, regimes);
}

/* The ranks over the first rank's latest pace, where it changed (analyze/
 * summary.h, ranks_latest); none in a run of one pace, or of one rank that
 * was the whole job. A node's one rank of a larger job is kept: a merge sets
 * it beside the other nodes' (summary.c). */
static bool latest_ranks(tp_run *run, const tp_summary *s, const tp_regimes *regimes, tp_ranks *out,
                         char *err, size_t cap)
{
    if (!s->ranks.n || regimes->n < 2)
        return true;
    if (s->ranks.n == 1 && tp_run_world_size(run, &s->timings) < 2)
        return true;
    return tp_ranks_latest_from_rows(run, regimes, 1, out, err, cap);
}

/* The plots' step phases, of every rank that marked steps (its warm-up
 * left out). */
static bool finish_plots(tp_run *run, const tp_summary *s, tp_summary_plots *plots,
                         const char *path, char *err, size_t cap)
{
    int *ranks = malloc((s->timings.nsteps + 1) * sizeof *ranks);
    size_t *warmup = malloc((s->timings.nsteps + 1) * sizeof *warmup);
    for (size_t i = 0; ranks && warmup && i < s->timings.nsteps; i++) {
        ranks[i] = s->timings.steps[i].rank;
        warmup[i] = s->timings.steps[i].warmup;
    }
    bool ok = ranks && warmup &&
              tp_summary_plots_finish(run, ranks, warmup, s->timings.nsteps, plots, err, cap);
    if (!ranks || !warmup)
        snprintf(err, cap, "%s: out of memory", path);
    free(ranks);
    free(warmup);
    return ok;
}

/* What the summary stores of the first rank's changes of pace (every part
 * a report would otherwise read the rows, or every sample since the change,
 * again for), and the ranks over its latest pace. */
typedef struct pace_parts {
    tp_regimes regimes;
    const tp_regime *latest; /* NULL: the pace did not change */
    tp_ranks ranks;          /* over it */
    tp_stack_facts span;     /* its stack samples */
    tp_pace_function *functions;
    size_t nfunctions;
    tp_region_withins withins; /* what the user regions' samples count for */
} pace_parts;

/* The stack counts (summary_stack: *stacks, *nstacks), trainprof's own cost
 * (own) and the pace parts (p), what each needs of the stack samples read
 * in one pass for the four of them (the counts' and the own cost's from the
 * start, the function causes' since the first regime, the latest pace's
 * since it began): each reader given what it would read alone, in the same
 * order, the rows read once (the counts' SQL read them twice, and three
 * passes followed where the pace changed, before). */
static bool stack_parts(tp_run *run, const tp_summary *s, const tp_summary_plots *plots,
                        const tp_course *course, tp_stack_count **stacks, size_t *nstacks,
                        tp_own_costs *own, pace_parts *p, char *err, size_t cap)
{
    memset(p, 0, sizeof *p);
    tp_stack_reader readers[4] = {{0}};
    tp_counts_pass *counts = tp_stack_counts_begin(&readers[3]);
    tp_own_pass *own_pass = tp_own_costs_begin(run, course, own, &readers[0], err, cap);
    bool ok = own_pass != NULL;
    if (ok)
        pace_regimes(run, s, plots, &p->regimes);
    ok = ok && latest_ranks(run, s, &p->regimes, &p->ranks, err, cap) &&
         (!tp_run_has_stacks(run) || tp_region_withins_from_rows(run, &p->withins, err, cap));
    p->latest = ok ? tp_regimes_latest(&p->regimes, p->regimes.rank) : NULL;
    tp_causes_pass *causes =
        ok ? tp_regimes_causes_begin(run, &p->regimes, &p->withins, &readers[1], err, cap, &ok)
           : NULL;
    tp_span_pass *span = ok && p->latest ? tp_stack_facts_over_begin(run, p->latest, NULL, &p->span,
                                                                     &readers[2], err, cap, &ok)
                                         : NULL;
    ok = ok && tp_run_each_stack_run_to(run, readers, 4, err, cap);
    tp_stack_counts_end(counts, ok, stacks, nstacks);
    tp_regimes_causes_end(causes, ok);
    tp_stack_facts_over_end(span, ok);
    tp_own_costs_end(own_pass, &s->timings, own);
    p->functions = tp_regimes_pace_functions(&p->regimes, &p->nfunctions);
    return ok;
}

static void pace_parts_free(pace_parts *p)
{
    tp_ranks_free(&p->ranks);
    tp_stack_facts_free(&p->span);
    free(p->functions);
    tp_region_withins_free(&p->withins);
}

/* Each series' figures as the summary stores them. */
static tp_series_figures *series_figures(const tp_summary *s)
{
    tp_series_figures *series = tp_xcalloc(s->n + 1, sizeof *series);
    for (size_t i = 0; i < s->n; i++)
        series[i] = (tp_series_figures){s->items[i].series->id, s->items[i].stats,
                                        s->items[i].in_steps, s->items[i].steps};
    return series;
}

bool tp_summary_store_save_keeping(const char *path, tp_summary *kept, char *err, size_t cap)
{
    tp_run *run = tp_run_open(path, err, cap);
    if (!run)
        return false;
    int version = run->schema_version;
    if (version < 3) {
        tp_run_close(run);
        snprintf(err, cap, "%s: schema %d has no summary tables (its report reads the rows)", path,
                 version);
        return false;
    }
    run->raw_only = true;
    tp_summary s = {0};
    tp_summary_plots plots;
    bool ok = tp_summary_plots_init(run, &plots, err, cap) &&
              tp_summary_build_also(run, &s, tp_summary_plots_series, &plots, err, cap);
    ok = ok && finish_plots(run, &s, &plots, path, err, cap);
    tp_series_figures *series = ok ? series_figures(&s) : NULL;
    tp_stack_count *stacks = NULL;
    size_t nstacks = 0;
    tp_course course = {0}; /* the stalls, found from the rows */
    tp_stalls stalls = {0};
    ok = ok && tp_course_build(run, &course, err, cap) &&
         tp_stalls_build(run, &course, &s.timings, s.duration_s, &stalls, err, cap);
    if (ok) /* each stall's GPU and storage wait, stored with it for a summary-only merge */
        tp_summary_stalls_machine(&s, &stalls);
    tp_own_costs own = {0}; /* the pass over the samples a report then needs no more */
    pace_parts pace = {0};
    ok = ok && stack_parts(run, &s, &plots, &course, &stacks, &nstacks, &own, &pace, err, cap);
    tp_own_samples *own_counts = ok ? tp_own_costs_counts(&own) : NULL;
    tp_summary_rows rows = {series,
                            s.n,
                            s.windows,
                            s.nwindows,
                            &s.timings,
                            &s.ranks,
                            plots.points,
                            plots.npoints,
                            plots.ranks,
                            plots.phases,
                            plots.nranks,
                            stacks,
                            nstacks,
                            stalls.v,
                            stalls.n,
                            &pace.ranks,
                            pace.latest ? pace.latest->first_step : 0,
                            pace.latest ? pace.latest->last_step : 0,
                            run->gpus,
                            s.gpu_slowdown,
                            s.gpu_slowdown ? run->ngpus : 0,
                            own_counts,
                            own.n,
                            pace.span.counts,
                            pace.span.ncounts,
                            pace.functions,
                            pace.nfunctions,
                            pace.withins.v,
                            pace.withins.n};
    ok = ok && tp_summary_tables_save(run, &rows, err, cap);
    pace_parts_free(&pace);
    free(own_counts);
    tp_own_costs_free(&own);
    tp_stack_counts_free(stacks, nstacks);
    tp_stalls_free(&stalls);
    tp_course_free(&course);
    free(series);
    tp_summary_plots_free(&plots);
    if (ok && kept) { /* the caller's now, its run open */
        *kept = s;
        return true;
    }
    tp_summary_free(&s);
    tp_run_close(run);
    return ok;
}
