/* compare.c: two runs compared (analyze/run_compare.h), in words and as JSON. */
#include "render/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "render/causes_words.h"
#include "render/report.h"
#include "render/units.h"
#include "render/verdict_words.h"

static void duration(char *out, size_t cap, double s)
{
    if (isfinite(s))
        tp_format_duration(out, cap, s);
    else
        snprintf(out, cap, "-");
}

/* "B's steps take 23% longer than A's (21% to 25%): 4.1 ms against 3.3 ms" */
static void step_line(FILE *out, const tp_run_compare *c)
{
    char a[32], b[32];
    duration(a, sizeof a, c->a.step_s);
    duration(b, sizeof b, c->b.step_s);
    if (!c->comparable && c->a.steps >= 2 && c->b.steps >= 2) {
        fprintf(out, "  No step time to compare: the step figures of A or B are not finite "
                     "numbers (a damaged or crafted file).\n");
        return;
    }
    if (!c->comparable) {
        fprintf(out, "  No step time to compare: %s had %s steps (trainprof.step() marks them).\n",
                c->a.steps < 2 ? "A" : "B",
                (c->a.steps < 2 ? c->a.steps : c->b.steps) ? "too few" : "no");
        return;
    }
    double pct = 100 * c->change;
    if (c->changed)
        fprintf(out,
                "  B's steps take %.0f%% %s than A's (95%% interval %+.0f%% to %+.0f%%): %s a "
                "step against %s.\n",
                fabs(pct), pct > 0 ? "longer" : "less time", 100 * c->low, 100 * c->high, b, a);
    else
        fprintf(out,
                "  No change in step time: B's steps %s, A's %s (%+.1f%%; 95%% interval %+.1f%% "
                "to %+.1f%%), within %s.\n",
                b, a, pct, 100 * c->low, 100 * c->high,
                c->low <= 0 && c->high >= 0 ? "the noise of their steps"
                                            : "what two runs of one training differ by (5%)");
    if (isfinite(c->rate_change))
        fprintf(out, "  B's samples/s: %.1f against A's %.1f (%+.0f%%).\n", c->b.samples_per_s,
                c->a.samples_per_s, 100 * c->rate_change);
}

/* Where side's run drifted: "B's steps grew steadily over its run, at no
 * one step: 9.5 ms a step over its first quarter (steps 1-256), 27 ms over
 * its last (steps 507-599; A's 4.7 ms, +477%); compared on its steps since
 * 385, its latest pace, as its report judges them." */
static void drift_line(FILE *out, const char *name, const tp_compare_side *side,
                       const char *other_name, const tp_compare_side *other)
{
    const tp_regimes_drift *d = &side->drift;
    char first[32], last[32], theirs[32], against[48] = "", on[96] = "its whole run", line[512];
    duration(first, sizeof first, d->first_s);
    duration(last, sizeof last, d->last_s);
    duration(theirs, sizeof theirs, other->step_s);
    if (other->step_s > 0 && isfinite(d->last_s))
        snprintf(against, sizeof against, ", %+.0f%%", 100 * (d->last_s / other->step_s - 1));
    if (tp_compare_side_on_latest_pace(side))
        snprintf(on, sizeof on, "its steps since %zu, its latest pace,", side->first_step);
    snprintf(line, sizeof line,
             "%s's steps %s steadily over its run, at no one step: %s a step over its first "
             "quarter (steps %zu-%zu), %s over its last (steps %zu-%zu; %s's %s%s); compared on "
             "%s as its report judges them.",
             name, d->last_s > d->first_s ? "grew" : "got faster", first, d->first_from,
             d->first_to, last, d->last_from, d->last_to, other_name, theirs, against, on);
    tp_report_wrapped(out, "", line);
}

/* Where side's run changed pace: "B's pace changed at step 201: its steps
 * took 11 ms before (A's 11 ms, +1%), 45 ms since; compared on its steps
 * since, as its report judges them." A drift says so instead. */
static void pace_line(FILE *out, const char *name, const tp_compare_side *side,
                      const char *other_name, const tp_compare_side *other)
{
    if (side->drift.found) {
        drift_line(out, name, side, other_name, other);
        return;
    }
    if (!tp_compare_side_on_latest_pace(side))
        return;
    char before[32], since[32], theirs[32], against[48] = "";
    duration(before, sizeof before, side->before_s);
    duration(since, sizeof since, side->step_s);
    duration(theirs, sizeof theirs, other->step_s);
    if (other->step_s > 0 && isfinite(side->before_s))
        snprintf(against, sizeof against, ", %+.0f%%", 100 * (side->before_s / other->step_s - 1));
    fprintf(out,
            "  %s's pace changed at step %zu: its steps took %s before (%s's %s%s), %s since;\n"
            "    compared on its steps since, as its report judges them.\n",
            name, side->first_step, before, other_name, theirs, against, since);
}

/* Two regimes of one run that drifted: "The run's steps grew steadily, at
 * no one step: 9.5 ms a step over its first quarter (steps 1-256), 27 ms
 * over its last (steps 507-599); A and B are where change points cut that
 * slope." */
static void one_run_drift_line(FILE *out, const tp_regimes_drift *d)
{
    if (!d->found)
        return;
    char first[32], last[32], line[400];
    duration(first, sizeof first, d->first_s);
    duration(last, sizeof last, d->last_s);
    snprintf(line, sizeof line,
             "The run's steps %s steadily, at no one step: %s a step over its first quarter "
             "(steps %zu-%zu), %s over its last (steps %zu-%zu); A and B are where change points "
             "cut that slope.",
             d->last_s > d->first_s ? "grew" : "got faster", first, d->first_from, d->first_to,
             last, d->last_from, d->last_to);
    tp_report_wrapped(out, "", line);
}

/* Where a side is its latest pace: the whole runs' steps, those before included. */
static void whole_line(FILE *out, const tp_run_compare *c)
{
    if (!isfinite(c->whole_change))
        return;
    char a[32], b[32];
    duration(a, sizeof a, c->a.whole_step_s);
    duration(b, sizeof b, c->b.whole_step_s);
    fprintf(out,
            "  Over the whole runs, the steps before %s included:\n"
            "    B's steps %s, A's %s (%+.0f%%).\n",
            c->a.drift.found || c->b.drift.found ? "the latest pace" : "the change of pace", b, a,
            100 * c->whole_change);
}

/* "dataloader_next +0.8 ms a step (0.2 ms to 1.0 ms); stayed: train_batch, other" */
static void phases_line(FILE *out, const tp_run_compare *c)
{
    if (!c->comparable)
        return;
    bool any = false;
    for (size_t k = 0; k < TP_STEP_PHASES; k++) {
        if (!c->moved[k])
            continue;
        char d[32], a[32], b[32];
        double delta = c->b.phase_s[k] - c->a.phase_s[k];
        duration(d, sizeof d, fabs(delta));
        duration(a, sizeof a, c->a.phase_s[k]);
        duration(b, sizeof b, c->b.phase_s[k]);
        fprintf(out, "%s%s %s%s a step (%s to %s)",
                any ? "; " : "  Moved: ", tp_step_phase_names[k], delta > 0 ? "+" : "-", d, a, b);
        any = true;
    }
    if (any)
        fputs(".\n", out);
    else if (c->changed)
        fputs("  No phase moved on its own: the whole step did.\n", out);
}

static void verdict_names(FILE *out, uint32_t bits, uint32_t other)
{
    bool first = true;
    for (int k = 0; k < 32; k++)
        if ((bits >> k) & 1 && !((other >> k) & 1)) {
            fprintf(out, "%s%s", first ? "" : ", ", tp_verdict_kind_name((tp_verdict_kind)k));
            first = false;
        }
}

static void side_line(FILE *out, const char *name, const tp_compare_side *s)
{
    if (tp_compare_side_on_latest_pace(s))
        fprintf(out, "  %s  %s, steps %zu to %zu: its latest pace\n", name, s->path, s->first_step,
                s->last_step);
    else if (s->first_step)
        fprintf(out, "  %s  %s, steps %zu to %zu\n", name, s->path, s->first_step, s->last_step);
    else
        fprintf(out, "  %s  %s (%zu step%s)\n", name, s->path, s->steps, s->steps == 1 ? "" : "s");
}

/* The machine over each side's steps, A's figure then B's. */
static void machine_lines(FILE *out, const tp_regime_machine *ma, const tp_regime_machine *mb)
{
    fputs("\nThe machine over the steps (A, B)\n", out);
    fprintf(out, "  CPUs used by other processes   %5.0f%%  %5.0f%%\n", ma->others_cpu_percent,
            mb->others_cpu_percent);
    if (ma->cpu_steal_percent >= 0.5 || mb->cpu_steal_percent >= 0.5) /* a virtual machine's */
        fprintf(out, "  CPUs taken by the VM's host    %5.0f%%  %5.0f%%\n", ma->cpu_steal_percent,
                mb->cpu_steal_percent);
    if (isfinite(ma->training_cpu_wait) || isfinite(mb->training_cpu_wait))
        fprintf(out, "  the training waiting for a CPU %5.0f%%  %5.0f%%\n", ma->training_cpu_wait,
                mb->training_cpu_wait);
    if (isfinite(ma->step_cpu_wait) || isfinite(mb->step_cpu_wait))
        fprintf(out, "  its step thread waiting        %5.0f%%  %5.0f%%\n", ma->step_cpu_wait,
                mb->step_cpu_wait);
    fprintf(out, "  tasks waiting for a CPU        %5.0f%%  %5.0f%%\n", ma->cpu_pressure,
            mb->cpu_pressure);
    fprintf(out, "  tasks waiting for storage      %5.0f%%  %5.0f%%\n", ma->io_pressure,
            mb->io_pressure);
    if (isfinite(ma->training_blocked) || isfinite(mb->training_blocked))
        fprintf(out, "  the training waiting on it     %5.0f%%  %5.0f%%\n",
                100 * ma->training_blocked, 100 * mb->training_blocked);
}

void tp_compare_text(FILE *out, const tp_run_compare *c)
{
    fputs("trainprof compare\n", out);
    side_line(out, "A", &c->a);
    side_line(out, "B", &c->b);
    if (!c->same_script)
        fputs("  These are runs of different programs (their commands name different scripts): "
              "compared all the same.\n",
              out);
    fputs("\nIn short\n", out);
    if (c->one_run)
        one_run_drift_line(out, &c->a.drift);
    else {
        pace_line(out, "A", &c->a, "B", &c->b);
        pace_line(out, "B", &c->b, "A", &c->a);
    }
    step_line(out, c);
    whole_line(out, c);
    phases_line(out, c);
    char causes[2048];
    tp_causes_text(causes, sizeof causes, c->causes, c->ncauses);
    if (causes[0])
        fprintf(out, "  With it, from A to B: %s.\n", causes);
    for (size_t i = 0; i < c->nfacts; i++) /* the script's settings both runs say */
        if ((strncmp(c->facts[i].key, "loader.", 7) == 0 ||
             strncmp(c->facts[i].key, "model.", 6) == 0 ||
             strncmp(c->facts[i].key, "torch.", 6) == 0) &&
            c->facts[i].a[0] && c->facts[i].b[0])
            fprintf(out, "  B's %s is %s where A's was %s.\n", c->facts[i].key, c->facts[i].b,
                    c->facts[i].a);
    if (c->comparable) {
        fputs("\nSeconds per step, by phase\n", out);
        fprintf(out, "  %-20s %12s %12s %12s\n", "phase", "A", "B", "B - A");
        for (size_t k = 0; k < TP_STEP_PHASES; k++) {
            char a[32], b[32], d[32], signed_d[40];
            double delta = c->b.phase_s[k] - c->a.phase_s[k];
            duration(a, sizeof a, c->a.phase_s[k]);
            duration(b, sizeof b, c->b.phase_s[k]);
            duration(d, sizeof d, fabs(delta));
            snprintf(signed_d, sizeof signed_d, "%s%s", delta > 0 ? "+" : delta < 0 ? "-" : "", d);
            fprintf(out, "  %-20s %12s %12s %12s%s\n", tp_step_phase_names[k], a, b, signed_d,
                    c->moved[k] ? "  moved" : "");
        }
        char a[32], b[32];
        duration(a, sizeof a, c->a.step_s);
        duration(b, sizeof b, c->b.step_s);
        fprintf(out, "  %-20s %12s %12s\n", "step", a, b);
    }
    machine_lines(out, &c->a.machine, &c->b.machine);
    if (c->nfacts) {
        fputs("\nWhat differs between the runs (A, then B)\n", out);
        for (size_t i = 0; i < c->nfacts; i++)
            fprintf(out, "  %-28s %s\n  %-28s %s\n", c->facts[i].key,
                    c->facts[i].a[0] ? c->facts[i].a : "-", "",
                    c->facts[i].b[0] ? c->facts[i].b : "-");
    }
    if (c->a.verdicts != c->b.verdicts) {
        fputs("\nVerdicts\n", out);
        if (c->a.verdicts & ~c->b.verdicts) {
            fputs("  only A's: ", out);
            verdict_names(out, c->a.verdicts, c->b.verdicts);
            fputc('\n', out);
        }
        if (c->b.verdicts & ~c->a.verdicts) {
            fputs("  only B's: ", out);
            verdict_names(out, c->b.verdicts, c->a.verdicts);
            fputc('\n', out);
        }
    }
}

static void side_json(json_writer *w, const char *key, const tp_compare_side *s)
{
    json_key(w, key);
    json_object_begin(w);
    json_key(w, "path");
    json_string(w, s->path);
    json_key(w, "rank");
    json_int(w, s->rank);
    json_key(w, "steps");
    json_int(w, (int64_t)s->steps);
    if (s->first_step) {
        json_key(w, "first_step");
        json_int(w, (int64_t)s->first_step);
        json_key(w, "last_step");
        json_int(w, (int64_t)s->last_step);
    }
    json_key(w, "step_mean_s");
    json_double(w, s->step_s);
    json_key(w, "paces"); /* its run's regimes where the side is its latest pace, else 1 */
    json_int(w, tp_compare_side_on_latest_pace(s) ? (int64_t)s->paces : 1);
    json_key(w, "pace_before_step_mean_s");
    json_double(w, tp_compare_side_on_latest_pace(s) ? s->before_s : NAN);
    json_key(w, "whole_step_mean_s");
    json_double(w, s->whole_step_s);
    json_key(w, "drift"); /* its run's steps grew or shrank steadily: null where not */
    tp_report_drift_json(w, &s->drift);
    json_key(w, "samples_per_s");
    json_double(w, s->samples_per_s);
    json_key(w, "samples_per_step");
    json_double(w, s->samples_per_step);
    json_key(w, "world_size");
    json_int(w, s->world);
    json_key(w, "phase_s");
    json_object_begin(w);
    for (size_t k = 0; k < TP_STEP_PHASES; k++) {
        json_key(w, tp_step_phase_names[k]);
        json_double(w, s->phase_s[k]);
    }
    json_object_end(w);
    const char *keys[] = {"others_cpu_percent",
                          TP_METRIC_CPU_STEAL_PERCENT,
                          "training_cpu_wait_percent",
                          TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
                          TP_METRIC_STEP_THREAD_CPU_PERCENT,
                          "cpu_pressure_percent",
                          "io_pressure_percent",
                          "training_blocked",
                          "memory_in_use_bytes",
                          "swap_in_use_bytes",
                          "gpu_clock_mhz",
                          "gpu_trouble_share"};
    const double values[] = {
        s->machine.others_cpu_percent, s->machine.cpu_steal_percent, s->machine.training_cpu_wait,
        s->machine.step_cpu_wait,      s->machine.step_cpu_busy,     s->machine.cpu_pressure,
        s->machine.io_pressure,        s->machine.training_blocked,  s->machine.mem_used_bytes,
        s->machine.swap_used_bytes,    s->machine.gpu_sm_clock_mhz,  s->machine.gpu_trouble_share};
    json_key(w, "machine");
    json_object_begin(w);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        json_key(w, keys[k]);
        json_double(w, values[k]);
    }
    json_object_end(w);
    json_key(w, "verdicts");
    json_array_begin(w);
    for (int k = 0; k < 32; k++)
        if ((s->verdicts >> k) & 1)
            json_string(w, tp_verdict_kind_name((tp_verdict_kind)k));
    json_array_end(w);
    json_object_end(w);
}

void tp_compare_json(json_writer *w, const tp_run_compare *c)
{
    side_json(w, "a", &c->a);
    side_json(w, "b", &c->b);
    json_key(w, "same_script");
    json_bool(w, c->same_script);
    json_key(w, "step_change");
    json_object_begin(w);
    json_key(w, "comparable");
    json_bool(w, c->comparable);
    json_key(w, "change");
    json_double(w, c->change);
    json_key(w, "low");
    json_double(w, c->low);
    json_key(w, "high");
    json_double(w, c->high);
    json_key(w, "changed");
    json_bool(w, c->changed);
    json_key(w, "min_change");
    json_double(w, TP_COMPARE_MIN_CHANGE);
    json_key(w, "whole_change"); /* where a side is its latest pace: the whole runs' */
    json_double(w, c->whole_change);
    json_object_end(w);
    json_key(w, "samples_per_s_change");
    json_double(w, c->rate_change);
    json_key(w, "phases");
    json_array_begin(w);
    for (size_t k = 0; k < TP_STEP_PHASES; k++) {
        json_object_begin(w);
        json_key(w, "phase");
        json_string(w, tp_step_phase_names[k]);
        json_key(w, "a_s");
        json_double(w, c->a.phase_s[k]);
        json_key(w, "b_s");
        json_double(w, c->b.phase_s[k]);
        json_key(w, "moved");
        json_bool(w, c->moved[k]);
        json_object_end(w);
    }
    json_array_end(w);
    tp_causes_json(w, c->causes, c->ncauses);
    json_key(w, "differences");
    json_array_begin(w);
    for (size_t i = 0; i < c->nfacts; i++) {
        json_object_begin(w);
        json_key(w, "key");
        json_string(w, c->facts[i].key);
        json_key(w, "a");
        json_string(w, c->facts[i].a);
        json_key(w, "b");
        json_string(w, c->facts[i].b);
        json_object_end(w);
    }
    json_array_end(w);
}

void tp_scale_rows_text(FILE *out, const tp_scale_row *rows, size_t n)
{
    fprintf(out, "%-32s %6s %12s %12s %9s %11s %12s %14s\n", "run", "world", "epoch time",
            "samples/s", "speed-up", "efficiency", "energy/epoch", "energy/sample");
    for (size_t i = 0; i < n; i++) {
        char e[32] = "-", es[32] = "-", ep[32] = "-";
        if (!isnan(rows[i].epoch_s))
            tp_format_duration(e, sizeof e, rows[i].epoch_s);
        if (!isnan(rows[i].energy_epoch_j))
            tp_format_value(ep, sizeof ep, "joules", rows[i].energy_epoch_j);
        if (!isnan(rows[i].energy_sample_j))
            tp_format_value(es, sizeof es, "joules", rows[i].energy_sample_j);
        size_t len = strlen(rows[i].path);
        const char *shown = len > 32 ? rows[i].path + len - 32 : rows[i].path;
        fprintf(out, "%-32s %6d %12s %12.1f %8.2fx %10.0f%% %12s %14s\n", shown, rows[i].world, e,
                rows[i].samples_per_s, rows[i].speedup, 100 * rows[i].efficiency, ep, es);
    }
}

char *tp_compare_job_text(const tp_compare_job *job)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return NULL;
    tp_compare_text(mem, &job->c);
    if (job->scaling) {
        fputs("\nAt their scales\n", mem);
        tp_scale_rows_text(mem, job->rows, 2);
    }
    fclose(mem);
    return text;
}
