/* report_answer.c: the report's first lines, the answer (see report.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analyze/verdicts.h"
#include "core/step_phase_facts.h"
#include "render/report.h"
#include "render/units.h"
#include "render/verdict_words.h"

/* The share of rank's steps in the standard phase name, 0 when it has none. */
static double phase_share(const tp_timings *t, int rank, const char *name)
{
    const tp_timing_row *r = tp_timings_row(t, rank, name);
    return r ? r->share : 0;
}

/* "train_batch 85%, dataloader_next 12%, other 3%": the standard phases'
 * shares of a step (shares[k] of tp_step_phase_names[k]) with 1% or more,
 * largest first, and what they leave. */
static void split_words(char *out, size_t cap, double shares[TP_STEP_PHASES - 1])
{
    double sum = 0;
    for (int k = 0; k < TP_STEP_PHASES - 1; k++)
        sum += shares[k];
    size_t len = 0;
    out[0] = '\0';
    if (sum < 0.01)
        return; /* only regions of its own: Timings below has them */
    for (;;) {
        int best = -1;
        for (int k = 0; k < TP_STEP_PHASES - 1; k++)
            if (shares[k] >= 0.01 && (best < 0 || shares[k] > shares[best]))
                best = k;
        if (best < 0)
            break;
        int n = snprintf(out + len, cap - len, "%s%s %.0f%%", len ? ", " : "",
                         tp_step_phase_names[best], 100 * shares[best]);
        len = n > 0 && (size_t)n < cap - len ? len + (size_t)n : cap - 1;
        shares[best] = -1;
    }
    if (sum < 0.995)
        snprintf(out + len, cap - len, "%sother %.0f%%", len ? ", " : "", 100 * (1 - sum));
}

/* The split of rank's steps, from its timings. */
static void phase_split(char *out, size_t cap, const tp_timings *t, int rank)
{
    double shares[TP_STEP_PHASES - 1];
    for (int k = 0; k < TP_STEP_PHASES - 1; k++)
        shares[k] = phase_share(t, rank, tp_step_phase_names[k]);
    split_words(out, cap, shares);
}

/* The split of the latest regime's steps where rank's pace changed
 * (analyze/regimes.h): what the step verdicts judge (verdicts.h: pace),
 * not the average of paces that differ. Returns the regime's first step;
 * 0 where the pace did not change (out untouched). */
static size_t latest_split(char *out, size_t cap, const tp_regimes *r, int rank)
{
    const tp_regime *g = tp_regimes_latest(r, rank);
    if (!g)
        return 0;
    double shares[TP_STEP_PHASES - 1];
    for (int k = 0; k < TP_STEP_PHASES - 1; k++)
        shares[k] = g->phase_s[k] / g->mean_s;
    split_words(out, cap, shares);
    return g->first_step;
}

/* A rank's window split as the ranks table splits it (interval union,
 * communication first): "communication 44% (10% under compute), input 10%,
 * compute 40%, other 6%". */
static void rank_split(char *out, size_t cap, const tp_rank_row *r)
{
    double w = r->window_s;
    char comm[96] = "";
    if (r->comm_s >= 0.01 * w)
        snprintf(comm, sizeof comm, "communication %.0f%% (%.0f%% under compute), ",
                 100 * r->comm_s / w, 100 * r->comm_overlap_s / w);
    snprintf(out, cap, "%sinput %.0f%%, compute %.0f%%, other %.0f%%", comm, 100 * r->input_s / w,
             100 * r->compute_s / w, 100 * r->other_s / w);
}

static const tp_rank_row *rank_row(const tp_ranks *r, int rank)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->rows[i].rank == rank && r->rows[i].window_s > 0)
            return &r->rows[i];
    return NULL;
}

bool tp_answer_steps(char *out, size_t cap, const tp_summary *s)
{
    const tp_timings *t = &s->timings;
    out[0] = '\0';
    if (t->nsteps == 0)
        return false;
    const tp_step_row *st = &t->steps[0]; /* the lowest rank's: ranks follow below */
    char mean[32], parts[256];
    tp_format_duration(mean, sizeof mean, st->stats.mean);
    size_t steps = st->stats.count + st->profiled + st->warmup; /* the training's own count */
    int n = snprintf(out, cap, "%zu step%s%s, %s each, %.1f steps/s", steps, steps == 1 ? "" : "s",
                     t->nsteps > 1 ? " of the first rank" : "", mean,
                     st->total_s > 0 ? (double)st->stats.count / st->total_s : 0);
    size_t len = n > 0 && (size_t)n < cap ? (size_t)n : strlen(out);
    if (st->samples > 0 && st->total_s > 0)
        len += (size_t)snprintf(out + len, cap - len, ", %.0f samples/s",
                                (double)st->samples / st->total_s);
    /* the ranks over the latest pace where they were compared over it (the
     * straggler verdicts judge those), else the whole run's */
    const tp_regime *pace = tp_regimes_latest(&s->regimes, st->rank);
    const tp_rank_row *r = pace ? rank_row(&s->ranks_latest, st->rank) : NULL;
    size_t since = r ? pace->first_step : 0;
    if (!r)
        r = rank_row(&s->ranks, st->rank);
    if (r)
        rank_split(parts, sizeof parts, r);
    else if (!(since = latest_split(parts, sizeof parts, &s->regimes, st->rank)))
        phase_split(parts, sizeof parts, t, st->rank);
    if (parts[0] && len < cap && since && pace && s->regimes.drift.found)
        snprintf(out + len, cap - len,
                 "; over steps %zu-%zu, its latest (a drifting pace), a "
                 "step: %s",
                 since, pace->last_step, parts);
    else if (parts[0] && len < cap && since)
        snprintf(out + len, cap - len, "; since step %zu, a step: %s", since, parts);
    else if (parts[0] && len < cap)
        snprintf(out + len, cap - len, "; a step: %s", parts);
    return true;
}

/* The verdict that leads, or why none does (a stall, no rule fired). */
static void lead_verdict(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    bool stalled = false;
    for (size_t i = 0; i < s->stalls.n; i++)
        stalled = stalled || !s->stalls.v[i].ended;
    if (stalled) { /* its trouble is the stall: no verdict on the steps before it leads */
        fprintf(out, "  (where each rank waited: under Stalled below%s)\n",
                v->n ? "; the machine's verdicts: under Verdicts" : "");
        return;
    }
    if (v->n == 0) {
        fprintf(out, "  No rule of thumb fired: nothing stands out as the bottleneck.\n");
        return;
    }
    char message[TP_VERDICT_MESSAGE_MAX], head[64];
    const tp_verdict *lead = &v->items[tp_verdicts_main(v)];
    tp_verdict_message(message, sizeof message, s, lead);
    snprintf(head, sizeof head, "[%s] ", tp_verdict_kind_name(lead->kind));
    tp_report_wrapped(out, head, message);
    if (v->n > 1)
        fprintf(out, "  (%zu more verdict%s, with the evidence, under Verdicts below)\n", v->n - 1,
                v->n > 2 ? "s" : "");
    else
        fprintf(out, "  (the evidence: under Verdicts below)\n");
}

void tp_report_answer_text(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    char line[512];
    fprintf(out, "\nIn short\n");
    tp_report_ends_answer(out, s, v);
    tp_report_course_answer(out, s);
    tp_report_stop_answer(out, s);
    tp_report_regimes_answer(out, s);
    if (tp_answer_steps(line, sizeof line, s))
        tp_report_wrapped(out, "", line);
    else if (s->inv.facts.package_unloaded)
        tp_report_wrapped(out, "", "No training steps found: " TP_PACKAGE_UNLOADED_WORDS);
    else
        fprintf(out, "  No training steps found (see Timings below for what was timed).\n");
    lead_verdict(out, s, v);
    tp_report_own_answer(out, s); /* last: what watching cost, after what was found */
}
