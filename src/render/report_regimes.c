/* report_regimes.c: the changes of pace of a run in words and JSON
 * (analyze/regimes.h): where the steps' pace changed and why, or that it
 * grew all along (a drift). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "render/causes_words.h"
#include "render/report.h"
#include "render/units.h"

/* "at step 151, 6.2 s into the run (15:40:02 UTC), steps took 41 ms instead
 * of 22 ms (+86%): ..." for regime r > 0. */
static void change_text(char *out, size_t cap, const tp_summary *s, size_t r)
{
    const tp_regime *p = &s->regimes.v[r - 1], *g = &s->regimes.v[r];
    char when[16], a[32], b[32], causes[1200];
    tp_report_wall_time(when, sizeof when, &s->inv, g->t0_s);
    tp_format_duration(a, sizeof a, p->typical_s);
    tp_format_duration(b, sizeof b, g->typical_s);
    tp_causes_text(causes, sizeof causes, g->causes, g->ncauses);
    char at[64] = ""; /* a file stored before keeps no times */
    if (isfinite(g->t0_s))
        snprintf(at, sizeof at, ", %.1f s into the run%s%s%s", g->t0_s, when[0] ? " (" : "", when,
                 when[0] ? " UTC)" : "");
    snprintf(out, cap, "from step %zu%s, steps took %s instead of %s (%+.0f%%)%s%s", g->first_step,
             at, b, a, p->typical_s > 0 ? 100 * (g->typical_s / p->typical_s - 1) : 0,
             causes[0] ? ": " : "", causes);
}

/* "The steps grew steadily over the run, at no one step: 3.1 ms a step
 * over its first quarter (steps 1-150), 34 ms over its last (steps
 * 451-600), 11 times as long: <the biggest change's causes>; ..." */
static void drift_text(char *out, size_t cap, const tp_summary *s)
{
    const tp_regimes *rg = &s->regimes;
    const tp_regimes_drift *d = &rg->drift;
    bool grew = d->last_s > d->first_s;
    char a[32], b[32], ratio[48], causes[1200] = "", who[32] = "";
    tp_format_duration(a, sizeof a, d->first_s);
    tp_format_duration(b, sizeof b, d->last_s);
    double r = d->first_s > 0 ? d->last_s / d->first_s : 0;
    if (r >= 2)
        snprintf(ratio, sizeof ratio, "%.*f times as long", r < 10 ? 1 : 0, r);
    else
        snprintf(ratio, sizeof ratio, "%+.0f%%", 100 * (r - 1));
    size_t at = tp_regimes_biggest_change(rg);
    if (at)
        tp_causes_text(causes, sizeof causes, rg->v[at].causes, rg->v[at].ncauses);
    if (rg->rank >= 0)
        snprintf(who, sizeof who, " of rank %d", rg->rank);
    snprintf(out, cap,
             "The steps%s %s steadily over the run, at no one step: %s a step over its first "
             "quarter (steps %zu-%zu), %s over its last (steps %zu-%zu), %s%s%s%s",
             who, grew ? "grew" : "got faster", a, d->first_from, d->first_to, b, d->last_from,
             d->last_to, ratio, causes[0] ? "; with it, " : "", causes,
             grew ? ". A cost that grows with the steps is the usual cause: a list, a history "
                    "or a cache kept and walked every step, a graph that keeps growing"
                  : "");
}

void tp_report_regimes_answer(FILE *out, const tp_summary *s)
{
    const tp_regimes *rg = &s->regimes;
    char line[2000], change[1700], who[32] = "";
    if (rg->drift.found) {
        drift_text(change, sizeof change, s);
        snprintf(line, sizeof line, "%s.", change);
        tp_report_wrapped(out, "[pace] ", line);
        return;
    }
    if (rg->n < 2)
        return;
    change_text(change, sizeof change, s, tp_regimes_biggest_change(rg));
    if (rg->rank >= 0)
        snprintf(who, sizeof who, " of rank %d", rg->rank);
    snprintf(line, sizeof line, "The pace%s changed %s%s.", who, change,
             rg->n > 2 ? " (the biggest of its changes: all under Changes of pace below)" : "");
    tp_report_wrapped(out, "[pace] ", line);
}

void tp_report_regimes_text(FILE *out, const tp_summary *s)
{
    const tp_regimes *rg = &s->regimes;
    if (rg->n < 2 && !rg->drift.found)
        return;
    fprintf(out, "\nChanges of pace%s", rg->rank >= 0 ? "" : "\n");
    if (rg->rank >= 0)
        fprintf(out, ", rank %d\n", rg->rank);
    fprintf(out, "  %-13s %9s %9s %11s %11s   %s\n", "steps", "from", "to", "typical", "step mean",
            "a step");
    for (size_t r = 0; r < rg->n; r++) {
        const tp_regime *g = &rg->v[r];
        char steps[32], p50[32], mean[32], split[400];
        snprintf(steps, sizeof steps, "%zu-%zu", g->first_step, g->last_step);
        tp_format_duration(p50, sizeof p50, g->typical_s);
        tp_format_duration(mean, sizeof mean, g->mean_s);
        size_t len = 0;
        split[0] = '\0';
        for (size_t k = 0; k < TP_STEP_PHASES && len < sizeof split; k++) {
            if (!(g->phase_s[k] >= 0.01 * g->mean_s))
                continue;
            int n = snprintf(split + len, sizeof split - len, "%s%s %.0f%%", len ? ", " : "",
                             tp_step_phase_names[k], 100 * g->phase_s[k] / g->mean_s);
            len = n > 0 && (size_t)n < sizeof split - len ? len + (size_t)n : sizeof split;
        }
        char from[16] = "?", to[16] = "?"; /* a file stored before keeps no times */
        if (isfinite(g->t0_s) && isfinite(g->t1_s)) {
            snprintf(from, sizeof from, "%.1f s", g->t0_s);
            snprintf(to, sizeof to, "%.1f s", g->t1_s);
        }
        fprintf(out, "  %-13s %9s %9s %11s %11s   %s%s%s%s%s\n", steps, from, to, p50, mean, split,
                g->input_bound ? "  [input_bound]" : "",
                g->transfer_bound ? "  [transfer_bound]" : "",
                g->compute_bound ? "  [compute_bound]" : "", g->host_bound ? "  [host_bound]" : "");
    }
    if (rg->drift.found) { /* the changes below only cut the slope */
        char drift[1800];
        drift_text(drift, sizeof drift, s);
        size_t len = strlen(drift);
        if (rg->n >= 2)
            snprintf(drift + len, sizeof drift - len,
                     ". The paces above are where change points cut that slope: the verdicts "
                     "judge the latest, as the run stood at its end");
        tp_report_wrapped(out, "", drift);
    }
    for (size_t r = 1; r < rg->n; r++) {
        char change[1600];
        change_text(change, sizeof change, s, r);
        tp_report_wrapped(out, "", change);
    }
}

static void regime_json(json_writer *w, const tp_regime *g)
{
    json_object_begin(w);
    json_key(w, "first_step");
    json_int(w, (int64_t)g->first_step);
    json_key(w, "last_step");
    json_int(w, (int64_t)g->last_step);
    json_field_double(w, "start_s", g->t0_s);
    json_field_double(w, "end_s", g->t1_s);
    json_field_double(w, "step_mean_s", g->mean_s);
    json_field_double(w, "step_median_s", g->median_s);
    json_field_double(w, "step_typical_s", g->typical_s);
    json_key(w, "phase_s"); /* seconds per step; null for a steady run's one regime */
    json_object_begin(w);
    for (size_t k = 0; k < TP_STEP_PHASES; k++)
        json_field_double(w, tp_step_phase_names[k], g->phase_s[k]);
    json_object_end(w);
    json_key(w, "machine");
    json_object_begin(w);
    json_field_double(w, "others_cpu_percent", g->machine.others_cpu_percent);
    json_field_double(w, TP_METRIC_CPU_STEAL_PERCENT, g->machine.cpu_steal_percent);
    json_field_double(w, "training_cpu_wait_percent", g->machine.training_cpu_wait);
    json_field_double(w, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, g->machine.step_cpu_wait);
    json_field_double(w, TP_METRIC_STEP_THREAD_CPU_PERCENT, g->machine.step_cpu_busy);
    json_field_double(w, "cpu_pressure_percent", g->machine.cpu_pressure);
    json_field_double(w, "io_pressure_percent", g->machine.io_pressure);
    json_field_double(w, "training_blocked", g->machine.training_blocked);
    json_field_double(w, "memory_in_use_bytes", g->machine.mem_used_bytes);
    json_field_double(w, "swap_in_use_bytes", g->machine.swap_used_bytes);
    json_field_double(w, "gpu_clock_mhz", g->machine.gpu_sm_clock_mhz);
    json_field_double(w, "gpu_trouble_share", g->machine.gpu_trouble_share);
    json_field_double(w, "gpu_busy_percent", g->machine.gpu_busy_percent);
    json_object_end(w);
    json_key(w, "verdicts"); /* the step verdicts its own split fires */
    json_array_begin(w);
    if (g->input_bound)
        json_string(w, "input_bound");
    if (g->transfer_bound)
        json_string(w, "transfer_bound");
    if (g->compute_bound)
        json_string(w, "compute_bound");
    if (g->host_bound)
        json_string(w, "host_bound");
    json_array_end(w);
    tp_causes_json(w, g->causes, g->ncauses);
    json_object_end(w);
}

void tp_report_regimes_json(json_writer *w, const tp_summary *s)
{
    json_key(w, "regimes");
    json_object_begin(w);
    json_key(w, "rank");
    if (s->regimes.n)
        json_int(w, s->regimes.rank);
    else
        json_null(w);
    json_key(w, "regimes");
    json_array_begin(w);
    for (size_t r = 0; r < s->regimes.n; r++)
        regime_json(w, &s->regimes.v[r]);
    json_array_end(w);
    json_key(w, "drift"); /* the steps grew or shrank steadily: null where not */
    tp_report_drift_json(w, &s->regimes.drift);
    json_object_end(w);
}

void tp_report_drift_json(json_writer *w, const tp_regimes_drift *d)
{
    if (d->found) {
        json_object_begin(w);
        json_key(w, "first_quarter_steps");
        json_array_begin(w);
        json_int(w, (int64_t)d->first_from);
        json_int(w, (int64_t)d->first_to);
        json_array_end(w);
        json_key(w, "last_quarter_steps");
        json_array_begin(w);
        json_int(w, (int64_t)d->last_from);
        json_int(w, (int64_t)d->last_to);
        json_array_end(w);
        json_field_double(w, "first_quarter_step_s", d->first_s);
        json_field_double(w, "last_quarter_step_s", d->last_s);
        json_object_end(w);
    } else
        json_null(w);
}
