/* report_own.c: what trainprof's own work cost the training, in words and
 * JSON (analyze/own_cost.h): every report says it, and a run over the
 * budget says with what option it comes down. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "render/report.h"

static const char *const part_names[TP_WORK_KINDS] = {"", "wrappers", "device times",
                                                      "capture windows"};
static const char *const part_keys[TP_WORK_KINDS] = {"", "wrappers", "device_times",
                                                     "capture_windows"};

/* What lowers a part's cost, said after "mostly ..." */
static const char *const part_advice[TP_WORK_KINDS] = {
    "",
    ("its wrappers of PyTorch's calls, which every short call of a step pays for (module "
     "calls, to(), item()): TRAINPROF_AUTO=0 leaves PyTorch unwrapped (then no phases but "
     "trainprof.region's and trainprof.step's)"),
    "CUDA events of its device times: TRAINPROF_DEVICE_TIMES=0 turns them off",
    "", /* the capture windows': windows_advice, from the windows that ran */
};

/* "its capture windows (...): ..." into out: the switch for each kind of
 * window the run took (rank's, or every rank's where rank < -1), since one
 * the schedule took is not lowered by the slow steps' switch, and a run as
 * short as a few minutes pays for the first scheduled window whole. */
static void windows_advice(char *out, size_t cap, const tp_ops_facts *f, int rank)
{
    int n[4] = {0};
    for (size_t i = 0; i < f->nwindows; i++)
        if (!f->windows[i].skipped && f->windows[i].reason >= 1 && f->windows[i].reason <= 3 &&
            (rank < -1 || f->windows[i].rank == rank))
            n[f->windows[i].reason]++;
    char kinds[160] = "";
    size_t len = 0;
    for (int k = 1; k <= 3 && len < sizeof kinds; k++)
        if (n[k])
            len += (size_t)snprintf(kinds + len, sizeof kinds - len, "%s%d %s", len ? ", " : "",
                                    n[k], tp_ops_reason_words_of(k, n[k]));
    snprintf(out, cap, "its capture windows%s%s%s: %s%s--ops off takes none at all",
             kinds[0] ? " (" : "", kinds, kinds[0] ? ")" : "",
             n[1] ? "the schedule takes one after the warm-up (a short run pays for it whole), "
                    "then one every --ops-every seconds (more seconds, fewer windows); "
                  : "",
             n[3] ? "record --ops-on-slow 0 takes none after slow steps; " : "");
}

/* The rank whose cost is the most surely high (the highest lower end of
 * its interval, then the highest share: in synchronous training every rank
 * waits for the one trainprof slowed most), the first of equals, or NULL where none has
 * samples; *measured counts the ranks with samples. */
static const tp_own_cost *most_measured(const tp_own_costs *c, size_t *measured)
{
    const tp_own_cost *most = NULL;
    *measured = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].samples > 0) {
            ++*measured;
            if (!most || c->v[i].share_low > most->share_low ||
                (c->v[i].share_low == most->share_low && c->v[i].share > most->share))
                most = &c->v[i];
        }
    return most;
}

/* " The recorder backed off ..." (record/ops_plan.h), "" where it did not;
 * device: the run has device times (then sampled from there on). */
static void backoff_words(char *out, size_t cap, const tp_own_backoff *b, bool device)
{
    out[0] = '\0';
    if (!b->set)
        return;
    char sampled[160] = "";
    if (device && b->device_every > 1)
        snprintf(sampled, sizeof sampled,
                 ", and device times (CUDA events) taken on one step in %d (the device shares "
                 "below are scaled from those)",
                 b->device_every);
    snprintf(out, cap,
             " The recorder backed off %.1f s into the run (step %llu), its cost estimated at "
             "%.1f%% of the steps (%s): no capture window after a slow step from there on, the "
             "scheduled ones four times further apart%s.",
             b->at_s, (unsigned long long)b->step, 100 * b->share,
             b->mostly_windows ? "mostly its capture windows" : "mostly the regions it times",
             sampled);
}

/* " Its capture windows left CUPTI attached ..." where they did (the fact
 * ops.cupti_kept: 1 the environment said so, 2 a CUDA before 12.6), else "":
 * a cost that lands in PyTorch's CUDA calls, so no stack sample names it. */
static void cupti_words(char *out, size_t cap, int kept)
{
    out[0] = '\0';
    if (kept == 1 || kept == 2)
        snprintf(out, cap,
                 " Its capture windows on the GPU left CUPTI attached (%s): every CUDA call "
                 "after the first window paid for CUPTI's callbacks until the process ended, "
                 "a cost that lands in PyTorch's calls and is not counted above; %s--ops off "
                 "takes no window.",
                 kept == 1 ? "TEARDOWN_CUPTI is set to other than 1 in the training's "
                             "environment"
                           : "PyTorch's CUDA is older than 12.6, where letting CUPTI go is not "
                             "safe with CUDA graphs",
                 kept == 1 ? "TEARDOWN_CUPTI=1 lets it go at each window's end (not with CUDA "
                             "graphs on a CUDA before 12.6); "
                           : "");
}

/* Whether any rank's regions carry device times. */
static bool has_device_times(const tp_timings *t)
{
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].device.count > 0)
            return true;
    return false;
}

void tp_report_own_answer(FILE *out, const tp_summary *s)
{
    if (!s->timings.nsteps)
        return;
    size_t measured;
    const tp_own_cost *o = most_measured(&s->own, &measured);
    char line[1600], parts[300] = "", who[64] = "", backoff[800], windows[400], cupti[600];
    backoff_words(backoff, sizeof backoff, &s->own.backoff, has_device_times(&s->timings));
    cupti_words(cupti, sizeof cupti, s->inv.model.ops_cupti_kept);
    strncat(backoff, cupti, sizeof backoff - strlen(backoff) - 1);
    if (!o) {
        snprintf(line, sizeof line,
                 "trainprof's own work: not measured (no stack samples of the steps: record "
                 "--stacks 0, or a summary-only merge).%s",
                 backoff);
        tp_report_wrapped(out, "", line);
        return;
    }
    if (measured > 1 && !(o->share > 0))
        snprintf(who, sizeof who, " of every one of its %zu ranks", measured);
    else if (measured > 1)
        snprintf(who, sizeof who, " of rank %d, the most of its %zu ranks", o->rank, measured);
    else if (s->own.n > 1 || o->rank >= 0)
        snprintf(who, sizeof who, " of rank %d", o->rank);
    size_t len = 0;
    for (int w = TP_WORK_WRAPPERS; w < TP_WORK_KINDS && len < sizeof parts; w++)
        if (o->own[w] / o->samples >= 0.0005) /* said as 0.1% at least */
            len += (size_t)snprintf(parts + len, sizeof parts - len, "%s%s %.1f%%", len ? ", " : "",
                                    part_names[w], 100 * o->own[w] / o->samples);
    if (o->regions_share >= 0.0005 && len < sizeof parts) /* beneath the script's own frames */
        snprintf(parts + len, sizeof parts - len,
                 "%sthe script's %.0f regions a step about %.1f%% (at %.0f ns each)",
                 len ? "; " : "", o->user_regions, 100 * o->regions_share,
                 1e9 * TP_OWN_REGION_COST_S);
    windows_advice(windows, sizeof windows, &s->ops, s->own.n > 1 ? o->rank : -2);
    if (o->over_budget)
        snprintf(line, sizeof line,
                 "trainprof's own work took %.1f%% of the step thread's time%s (%.1f to %.1f%%, "
                 "%.0f of its %.0f samples), over its %.0f%% budget (%s); mostly %s.%s",
                 100 * o->share, who, 100 * o->share_low, 100 * o->share_high, o->ours, o->samples,
                 100 * TP_OWN_BUDGET, parts,
                 o->regions_most ? "the script's own regions, each timed at a cost: time fewer, "
                                   "longer ones (a region around a loop, not in it)"
                 : o->most == TP_WORK_WINDOWS ? windows
                                              : part_advice[o->most],
                 backoff);
    else if (o->share > TP_OWN_BUDGET) /* a few samples of ours: no overrun said */
        snprintf(line, sizeof line,
                 "trainprof's own work: %.1f%% of the step thread's time%s%s%s%s, from %.0f of "
                 "its %.0f samples: between %.1f and %.1f%%, too few to tell from its %.0f%% "
                 "budget.%s",
                 100 * o->share, who, parts[0] ? " (" : "", parts, parts[0] ? ")" : "", o->ours,
                 o->samples, 100 * o->share_low, 100 * o->share_high, 100 * TP_OWN_BUDGET, backoff);
    else
        snprintf(line, sizeof line,
                 "trainprof's own work: %.1f%% of the step thread's time%s%s%s%s.%s",
                 100 * o->share, who, parts[0] ? " (" : "", parts, parts[0] ? ")" : "", backoff);
    tp_report_wrapped(out, o->over_budget ? "[cost] " : "", line);
}

void tp_report_own_json(json_writer *w, const tp_summary *s)
{
    json_key(w, "own_cost");
    json_array_begin(w);
    for (size_t i = 0; i < s->own.n; i++) {
        const tp_own_cost *o = &s->own.v[i];
        json_object_begin(w);
        json_key(w, "rank");
        json_int(w, o->rank);
        json_key(w, "samples"); /* the step thread's, in its steps */
        json_double(w, o->samples);
        json_key(w, "share"); /* trainprof's own work over them; null unmeasured */
        json_double(w, o->share);
        json_key(w, "share_low"); /* where it lies (95 %), null unmeasured */
        json_double(w, o->samples > 0 ? o->share_low : NAN);
        json_key(w, "share_high");
        json_double(w, o->samples > 0 ? o->share_high : NAN);
        json_key(w, "over_budget"); /* share_low over the budget: beyond the samples' doubt */
        json_bool(w, o->over_budget);
        json_key(w, "script_regions_per_step"); /* trainprof.region's, in the steps */
        json_double(w, o->user_regions);
        json_key(w, "script_regions_share"); /* their cost at TP_OWN_REGION_COST_S */
        json_double(w, o->regions_share);
        json_key(w, "parts"); /* each part's share of the samples */
        json_object_begin(w);
        for (int k = TP_WORK_WRAPPERS; k < TP_WORK_KINDS; k++) {
            json_key(w, part_keys[k]);
            json_double(w, o->samples > 0 ? o->own[k] / o->samples : 0);
        }
        json_object_end(w);
        json_object_end(w);
    }
    json_array_end(w);
    const tp_own_backoff *b = &s->own.backoff;
    json_key(w, "backoff"); /* the recorder's, over its budget (record/ops_plan.h); null none */
    if (b->set) {
        json_object_begin(w);
        json_key(w, "at_s");
        json_double(w, b->at_s);
        json_key(w, "step");
        json_int(w, (int64_t)(b->step < INT64_MAX ? b->step : INT64_MAX));
        json_key(w, "estimated_share");
        json_double(w, b->share);
        json_key(w, "regions_per_step");
        json_double(w, b->regions);
        json_key(w, "mostly");
        json_string(w, b->mostly_windows ? "capture_windows" : "regions");
        json_key(w, "device_times_every"); /* steps; null where the file does not say */
        if (b->device_every > 1)
            json_int(w, b->device_every);
        else
            json_null(w);
        json_object_end(w);
    } else {
        json_null(w);
    }
}
