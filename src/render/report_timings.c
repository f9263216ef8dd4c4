/* report_timings.c: the Timings part of the report, as text and as JSON. */
#include <math.h>
#include <string.h>

#include "render/report.h"
#include "analyze/model_case.h"
#include "analyze/verdicts.h"
#include "store/model_facts_file.h"
#include "render/verdict_evidence.h"
#include "render/verdict_words.h"
#include "render/units.h"
#include "util/ns_math.h"

/* ", rank N" after a table's name; nothing for a process with no rank (a
 * training of one process: its tables need no qualifier). */
static void rank_title(char *buf, size_t cap, int rank)
{
    if (rank < 0)
        buf[0] = '\0';
    else
        snprintf(buf, cap, ", rank %d", rank);
}

/* After a rank's Timings table: the other regions with time outside its
 * steps (an evaluation loop of the script's own, the wait between epochs),
 * which count in count and total but not in the shares. Nothing when that
 * time is negligible. */
static void outside_steps_line(FILE *out, const tp_timings *t, int rank)
{
    /* a warm-up whose regions' time is counted outside (a file from before in_warmup_s) */
    bool warmup = false;
    for (size_t i = 0; i < t->nsteps; i++)
        warmup |= t->steps[i].rank == rank && t->steps[i].warmup;
    for (size_t i = 0; i < t->nrows && warmup; i++)
        warmup = !(t->rows[i].rank == rank && t->rows[i].in_warmup_s > 0);
    bool any = false;
    for (size_t i = 0; i < t->nrows; i++) {
        const tp_timing_row *r = &t->rows[i];
        /* a window's and the warm-up's are inside; a file summarized before
         * in_warmup_s counts the warm-up's outside */
        double outside = r->total_s - r->in_steps_s - r->in_profiled_s - r->in_warmup_s;
        if (r->rank != rank || r->pause || outside < 1e-3 || outside < 0.05 * r->total_s)
            continue;
        char d[32];
        tp_format_duration(d, sizeof d, outside);
        fprintf(out, "%s%s %s",
                any ? ", "
                : warmup
                    ? "  outside the steps counted (warm-up steps included; not in the shares): "
                    : "  outside the steps (not in the shares): ",
                r->name, d);
        any = true;
    }
    if (any)
        fputc('\n', out);
}

/* A table row of durations: region, count, total, mean, p50, p95, max (the
 * caller ends the line). */
static void duration_row(FILE *out, const char *name, size_t count, double total,
                         const tp_stats *st)
{
    char c[5][32];
    const double v[] = {total, st->mean, st->p50, st->p95, st->max};
    for (int k = 0; k < 5; k++)
        tp_format_duration(c[k], sizeof c[k], v[k]);
    fprintf(out, "  %-24.24s %8zu %11s %11s %11s %11s %11s", name, count, c[0], c[1], c[2], c[3],
            c[4]);
}

/* After a rank's Timings table: the device (CUDA event) times of its
 * regions that have them. Returns whether there were any. */
static bool device_table(FILE *out, const tp_timings *t, int rank)
{
    bool any = false;
    for (size_t i = 0; i < t->nrows; i++) {
        const tp_timing_row *r = &t->rows[i];
        if (r->rank != rank || r->device.count == 0)
            continue;
        if (!any)
            fprintf(out, "  on the device (CUDA events)\n  %-24s %8s %11s %11s %11s %11s %11s\n",
                    "region", "count", "total", "mean", "p50", "p95", "max");
        any = true;
        duration_row(out, r->name, r->device.count, r->device_total_s, &r->device);
        fputc('\n', out);
    }
    return any;
}

/* What follows a rank's table: time outside its steps, then device times. */
static bool after_rank_table(FILE *out, const tp_timings *t, int rank)
{
    outside_steps_line(out, t, rank);
    return device_table(out, t, rank);
}

/* A rank's Timings table, rows [lo, hi) of t: its regions in the training,
 * then the pauses (evaluate, checkpoint, compile, ...), which lie outside
 * the steps; their share, where they ran inside steps at all, is shown. */
static void rank_table(FILE *out, const tp_timings *t, size_t lo, size_t hi)
{
    char title[32];
    rank_title(title, sizeof title, t->rows[lo].rank);
    fprintf(out, "\nTimings%s\n  %-24s %8s %11s %11s %11s %11s %11s %7s\n", title, "region",
            "count", "total", "mean", "p50", "p95", "max", "share");
    for (int pauses = 0; pauses < 2; pauses++) {
        bool first = true;
        for (size_t i = lo; i < hi; i++) {
            const tp_timing_row *r = &t->rows[i];
            if (r->pause != pauses)
                continue;
            if (pauses && first)
                fprintf(out, "  not training (pauses outside the steps)\n");
            first = false;
            duration_row(out, r->name, r->stats.count, r->total_s, &r->stats);
            if (r->pause && r->in_steps_s <= 0)
                fprintf(out, " %7s\n", "-");
            else
                fprintf(out, " %6.1f%%\n", 100 * r->share);
        }
    }
}

/* A rank's steps: count, durations and rates of its steady steps, what a
 * step fetched, and its warm-up steps set apart. */
static void steps_lines(FILE *out, const tp_timings *t, const tp_step_row *st)
{
    char title[32], mean[32], p50[32], p95[32];
    rank_title(title, sizeof title, st->rank);
    tp_format_duration(mean, sizeof mean, st->stats.mean);
    tp_format_duration(p50, sizeof p50, st->stats.p50);
    tp_format_duration(p95, sizeof p95, st->stats.p95);
    char rate[64] = "";
    if (st->samples > 0 && st->total_s > 0)
        snprintf(rate, sizeof rate, ", %.0f samples/s", (double)st->samples / st->total_s);
    char timed[48] = "";
    if (st->profiled || st->warmup)
        snprintf(timed, sizeof timed, " (%zu timed)", st->stats.count);
    size_t steps = st->stats.count + st->profiled + st->warmup; /* the training's own count */
    fprintf(out, "\nSteps%s: %zu step%s%s, mean %s (p50 %s, p95 %s), %.1f steps/s%s\n", title,
            steps, steps == 1 ? "" : "s", timed, mean, p50, p95,
            st->total_s > 0 ? (double)st->stats.count / st->total_s : 0, rate);
    double count = (double)st->stats.count;
    if (st->batches > 0 && count > 0) {
        double batches = (double)st->batches / count;
        fprintf(out, "  a step: %.3g %s", batches,
                st->batches == (int64_t)st->stats.count ? "batch" : "micro-batches");
        if (st->samples > 0)
            fprintf(out, ", %.4g samples", (double)st->samples / count);
        fputc('\n', out);
    }
    if (st->warmup) {
        char d[32];
        tp_format_duration(d, sizeof d, st->warmup_s);
        bool compiled = tp_timings_row(t, st->rank, TP_PHASE_COMPILE) != NULL;
        char first[48] = "the first step";
        if (st->warmup > 1)
            snprintf(first, sizeof first, "the first %zu steps", st->warmup);
        const char *are = st->warmup > 1 ? "are" : "is";
        const char *each = st->warmup > 1 ? "each " : "";
        if (compiled)
            fprintf(out,
                    "  %s (%s) %s warm-up, torch.compile compiling in them or %sover twice\n"
                    "  the median step: left out of the figures and of the shares\n",
                    first, d, are, each);
        else
            fprintf(
                out,
                "  %s (%s) %s warm-up, %sover twice the median step (the start's one-off\n"
                "  work: the first allocations, lazy imports; on a GPU, CUDA's start and cuDNN's\n"
                "  autotuning): left out of the figures and of the shares\n",
                first, d, are, each);
    }
    if (st->profiled)
        fprintf(out,
                "  %zu of them ran under PyTorch's profiler (capture windows, below): left out of\n"
                "  the figures and of the shares\n",
                st->profiled);
}

/* Which ranks get their own tables: every rank, unless the run has more than
 * TP_NOTABLE_RANKS ranks with steps and `all` is off; then the notable
 * ones, and ranks outside the comparison (no steps, or no rank). */
typedef struct shown_ranks {
    int notable[TP_NOTABLE_RANKS];
    size_t n; /* 0: all */
    const tp_ranks *ranks;
} shown_ranks;

static bool shown(const shown_ranks *sr, int rank)
{
    if (sr->n == 0)
        return true;
    for (size_t i = 0; i < sr->n; i++)
        if (sr->notable[i] == rank)
            return true;
    for (size_t i = 0; i < sr->ranks->n; i++)
        if (sr->ranks->rows[i].rank == rank)
            return false;
    return true;
}

/* Whether rank has a row of steps. */
static bool has_steps(const tp_timings *t, int rank)
{
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].rank == rank)
            return true;
    return false;
}

/* For each shown rank with timings but no steps: why none were found, and
 * how to mark them (without steps there are no shares, rates or verdicts). */
static void no_steps_lines(FILE *out, const tp_timings *t, const shown_ranks *sr)
{
    for (size_t i = 0; i < t->nrows; i++) {
        int rank = t->rows[i].rank;
        if ((i > 0 && t->rows[i - 1].rank == rank) || !shown(sr, rank) || has_steps(t, rank))
            continue;
        char title[32];
        rank_title(title, sizeof title, rank);
        fprintf(out,
                "\nSteps%s: none found. trainprof finds them by the training DataLoader's "
                "fetches or\n  the optimizer's steps, and this process had neither; mark each "
                "step's start\n  with trainprof.step() (tp_step() in C) for shares, rates and "
                "verdicts.\n",
                title);
    }
}

/* The epochs of the ranks shown: a table each. */
static void epochs_text(FILE *out, const tp_timings *t, const shown_ranks *sr)
{
    for (size_t i = 0; i < t->nepochs; i++) {
        const tp_epoch_row *e = &t->epochs[i];
        if (!shown(sr, e->rank))
            continue;
        if (i == 0 || t->epochs[i - 1].rank != e->rank) {
            char title[32];
            rank_title(title, sizeof title, e->rank);
            fprintf(out, "\nEpochs%s\n  %-8s %12s %8s %10s %12s %12s\n", title, "epoch", "duration",
                    "steps", "samples", "samples/s", "energy");
        }
        char d[32];
        tp_format_duration(d, sizeof d, e->duration_s);
        char samples[32] = "-", rate[32] = "-", energy[32] = "-";
        if (e->samples > 0) {
            snprintf(samples, sizeof samples, "%lld", (long long)e->samples);
            if (e->duration_s > 0)
                snprintf(rate, sizeof rate, "%.0f", (double)e->samples / e->duration_s);
        }
        if (!isnan(e->energy_j))
            tp_format_value(energy, sizeof energy, "joules", e->energy_j);
        fprintf(out, "  %-8lld %12s %8zu %10s %12s %12s\n", (long long)e->epoch, d, e->steps,
                samples, rate, energy);
    }
}

/* What the times are (host, device, or neither seen inside a framework's
 * compiled step), and DDP's all-reduce where it could not be timed. */
static void timing_notes(FILE *out, const tp_summary *s, bool device)
{
    const tp_model_facts facts = s->inv.model;
    if (tp_phases_unseen(&facts))
        fprintf(out,
                "\n%s ran its train step on the %s backend, which trainprof does not look "
                "inside: the phases of a step (data, forward, backward, optimizer) are not "
                "seen; the steps, epochs, samples, "
                "evaluations and checkpoints come from %s's callbacks.\n",
                strcmp(facts.framework, "keras") == 0 ? "Keras" : "The framework",
                strcmp(facts.backend, "jax") == 0          ? "JAX"
                : strcmp(facts.backend, "tensorflow") == 0 ? "TensorFlow"
                                                           : "framework's",
                strcmp(facts.framework, "keras") == 0 ? "Keras" : "the framework");
    else if (device) {
        fprintf(out, "\nHost times are when the CPU entered and left a region; with CUDA's "
                     "asynchronous launches the GPU may do that work later (a collective on "
                     "NCCL returns at once: its host time is the launch). Device times are "
                     "the span on the region's CUDA stream from its start to its end, whatever "
                     "that stream waited for included, read from CUDA events once they "
                     "completed (no synchronize added).\n");
        if (s->inv.device_times_every > 1)
            fprintf(out,
                    "Device times were taken on one step in %d (TRAINPROF_DEVICE_TIMES=%d): "
                    "their counts and totals are those steps'; the verdicts scale them to "
                    "every step.\n",
                    s->inv.device_times_every, s->inv.device_times_every);
    } else
        fprintf(out, "\nTimes are host times: no CUDA work was timed (PyTorch's to_device and "
                     "train_batch get device times when they run on a CUDA device).\n");
    if (strcmp(facts.ddp_hook, "builtin") == 0)
        fprintf(out, "\nDDP's gradient all-reduce is not in reduce_metrics: the script "
                     "registered one of DDP's C++ communication hooks that has no Python "
                     "equivalent to time.\n");
    else if (strcmp(facts.ddp_hook, "left") == 0)
        fprintf(out, "\nDDP's gradient all-reduce is not in reduce_metrics: DDP ran its Python "
                     "reducer (compiled autograd) or refused a hook, and was left alone.\n");
    if (facts.loader_prefetched > 0)
        fprintf(out, "\nThe training DataLoader was fetched on another thread than the one "
                     "that trained (a background prefetcher filling a queue): its passes ran "
                     "ahead of the steps and are no epochs; the optimizer's updates mark the "
                     "steps, and its fetches, dataloader_next, are the wait of a step for data "
                     "where they overlap it.\n");
    if (facts.evaluate_training_mode > 0)
        fprintf(out,
                "\n%d evaluation%s (another DataLoader's pass between the training's) ran with "
                "gradients on and the model in training mode: model.eval() and torch.no_grad() "
                "around %s keep dropout and batch-norm statistics out of the results and build "
                "no autograd graph (less time and memory).\n",
                facts.evaluate_training_mode, facts.evaluate_training_mode == 1 ? "" : "s",
                facts.evaluate_training_mode == 1 ? "it" : "them");
}

void tp_report_timings_text(FILE *out, const tp_summary *s, bool all)
{
    const tp_timings *t = &s->timings;
    if (t->threads == 0) {
        if (s->inv.facts.package_unloaded)
            fprintf(out, "\nTimings: none recorded: %s\n", TP_PACKAGE_UNLOADED_WORDS);
        else
            fprintf(out, "\nTimings: none recorded (no instrumented process ran)\n");
        return;
    }
    shown_ranks sr = {.ranks = &s->ranks};
    if (!all)
        sr.n = tp_ranks_notable(&s->ranks, sr.notable);
    if (sr.n) {
        fprintf(out,
                "\nTimings, steps and epochs of %zu of %zu ranks: the %d with the most own "
                "work per step,\nthe median rank and the rank with the least (every rank: "
                "--all or --json)\n",
                sr.n, s->ranks.n, TP_NOTABLE_RANKS - 2);
    }
    bool device = false;
    for (size_t i = 0; i < t->nrows;) {
        size_t j = i;
        while (j < t->nrows && t->rows[j].rank == t->rows[i].rank)
            j++;
        if (shown(&sr, t->rows[i].rank)) {
            rank_table(out, t, i, j);
            device |= after_rank_table(out, t, t->rows[i].rank);
        }
        i = j;
    }
    for (size_t i = 0; i < t->nsteps; i++)
        if (shown(&sr, t->steps[i].rank))
            steps_lines(out, t, &t->steps[i]);
    no_steps_lines(out, t, &sr);
    epochs_text(out, t, &sr);
    timing_notes(out, s, device);
    if (t->dropped)
        fprintf(out,
                "\n%lld timing events were dropped on full rings: the figures above miss them "
                "(TRAINPROF_RING_SLOTS raises the ring size)\n",
                (long long)t->dropped);
    if (t->not_recorded)
        fprintf(out,
                "\n%lld timing events were not recorded (the recorder's memory ran out, or its "
                "writer was too far behind): the figures above miss them\n",
                (long long)t->not_recorded);
}

static void stat_fields(json_writer *w, const tp_stats *st)
{
    const char *keys[] = {"mean_s", "p50_s", "p95_s", "max_s"};
    const double v[] = {st->mean, st->p50, st->p95, st->max};
    for (int k = 0; k < 4; k++) {
        json_key(w, keys[k]);
        json_double(w, v[k]);
    }
}

/* One row of "timings": a region of a rank, its host and device times. */
static void timing_row_json(json_writer *w, const tp_timing_row *r)
{
    json_object_begin(w);
    json_key(w, "name");
    json_string(w, r->name);
    json_key(w, "rank");
    json_int(w, r->rank);
    json_key(w, "count");
    json_int(w, (int64_t)r->stats.count);
    json_key(w, "total_s");
    json_double(w, r->total_s);
    stat_fields(w, &r->stats);
    json_key(w, "in_profiled_steps_s");
    json_double(w, r->in_profiled_s);
    json_key(w, "in_warmup_steps_s"); /* inside the warm-up steps, not in the shares */
    json_double(w, r->in_warmup_s);
    json_key(w, "in_steps_s");
    json_double(w, r->in_steps_s);
    json_key(w, "share");
    json_double(w, r->share);
    json_key(w, "pause");
    json_bool(w, r->pause);
    json_key(w, "device");
    if (r->device.count) {
        json_object_begin(w);
        json_key(w, "count");
        json_int(w, (int64_t)r->device.count);
        json_key(w, "total_s");
        json_double(w, r->device_total_s);
        stat_fields(w, &r->device);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_object_end(w);
}

/* One row of "steps": a rank's steps, the training's count (its warm-up and
 * profiled ones too) and the figures of the timed ones. */
static void step_row_json(json_writer *w, const tp_step_row *st)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, st->rank);
    /* the steps the training made (its warm-up and profiled ones too); the
     * figures are of the timed ones */
    json_key(w, "count");
    json_int(w, (int64_t)(st->stats.count + st->profiled + st->warmup));
    json_key(w, "timed_steps");
    json_int(w, (int64_t)st->stats.count);
    json_key(w, "total_s");
    json_double(w, st->total_s);
    stat_fields(w, &st->stats);
    json_key(w, "steps_per_s");
    json_double(w, st->total_s > 0 ? (double)st->stats.count / st->total_s : 0);
    json_key(w, "samples");
    /* every step's, warm-up and profiled ones included (saturating: a file says them) */
    json_int(w, tp_ns_add(tp_ns_add(st->samples, st->profiled_samples), st->warmup_samples));
    json_key(w, "samples_per_s");
    if (st->samples > 0 && st->total_s > 0)
        json_double(w, (double)st->samples / st->total_s);
    else
        json_null(w);
    double count = (double)st->stats.count;
    json_key(w, "samples_per_step");
    if (st->samples > 0 && count > 0)
        json_double(w, (double)st->samples / count);
    else
        json_null(w);
    json_key(w, "batches");
    json_int(w, tp_ns_add(tp_ns_add(st->batches, st->profiled_batches), st->warmup_batches));
    json_key(w, "batches_per_step");
    if (st->batches > 0 && count > 0)
        json_double(w, (double)st->batches / count);
    else
        json_null(w);
    json_key(w, "warmup_steps");
    json_int(w, (int64_t)st->warmup);
    json_key(w, "warmup_s");
    json_double(w, st->warmup_s);
    json_key(w, "profiled_steps");
    json_int(w, (int64_t)st->profiled);
    json_object_end(w);
}

/* One row of "epochs". */
static void epoch_row_json(json_writer *w, const tp_epoch_row *e)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, e->rank);
    json_key(w, "epoch");
    json_int(w, e->epoch);
    json_key(w, "start_s");
    json_double(w, e->start_s);
    json_key(w, "duration_s");
    json_double(w, e->duration_s);
    json_key(w, "steps");
    json_int(w, (int64_t)e->steps);
    json_key(w, "samples");
    json_int(w, e->samples);
    json_key(w, "batches");
    json_int(w, e->batches);
    json_key(w, "samples_per_s");
    if (e->samples > 0 && e->duration_s > 0)
        json_double(w, (double)e->samples / e->duration_s);
    else
        json_null(w);
    json_key(w, "energy_j");
    json_double(w, e->energy_j); /* null when NaN */
    json_object_end(w);
}

void tp_report_timings_json(json_writer *w, const tp_summary *s)
{
    const tp_timings *t = &s->timings;
    json_key(w, "timings");
    json_array_begin(w);
    for (size_t i = 0; i < t->nrows; i++)
        timing_row_json(w, &t->rows[i]);
    json_array_end(w);
    json_key(w, "steps");
    json_array_begin(w);
    for (size_t i = 0; i < t->nsteps; i++)
        step_row_json(w, &t->steps[i]);
    json_array_end(w);
    json_key(w, "epochs");
    json_array_begin(w);
    for (size_t i = 0; i < t->nepochs; i++)
        epoch_row_json(w, &t->epochs[i]);
    json_array_end(w);
    json_key(w, "timing_threads");
    json_int(w, t->threads);
    json_key(w, "dropped_events");
    json_int(w, t->dropped);
    json_key(w, "events_not_recorded");
    json_int(w, t->not_recorded);
}

void tp_report_verdicts_text(FILE *out, const tp_summary *s, const tp_verdicts *vs)
{
    const tp_verdicts *v = vs;
    fprintf(out, "\nVerdicts\n");
    if (v->n == 0)
        fprintf(out, "  none: no rule of thumb fired (see docs/verdicts.md for the rules)\n");
    for (size_t i = 0; i < v->n; i++) {
        char message[TP_VERDICT_MESSAGE_MAX];
        tp_verdict_message(message, sizeof message, s, &v->items[i]);
        tp_evidence evidence;
        tp_verdict_evidence_of(s, &v->items[i], &evidence);
        fprintf(out, "  [%s] %s\n      evidence: ", tp_verdict_kind_name(v->items[i].kind),
                message);
        tp_evidence_text(out, &evidence);
        fputc('\n', out);
    }
}

void tp_report_verdicts_json(json_writer *w, const tp_summary *s, const tp_verdicts *vs)
{
    const tp_verdicts *v = vs;
    json_key(w, "verdicts");
    json_array_begin(w);
    for (size_t i = 0; i < v->n; i++) {
        char message[TP_VERDICT_MESSAGE_MAX];
        tp_verdict_message(message, sizeof message, s, &v->items[i]);
        tp_evidence evidence;
        tp_verdict_evidence_of(s, &v->items[i], &evidence);
        json_object_begin(w);
        json_key(w, "kind");
        json_string(w, tp_verdict_kind_name(v->items[i].kind));
        json_key(w, "message");
        json_string(w, message);
        json_key(w, "evidence");
        tp_evidence_json(w, &evidence);
        json_object_end(w);
    }
    json_array_end(w);
}
