/* report_course.c: the course of a run in words and JSON: the ranks that
 * stalled and where each thread waited (analyze/stalls.h); the changes of
 * pace are report_regimes.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/metric_catalog.h"
#include "core/stall_rule.h"
#include "render/causes_words.h"
#include "render/report.h"
#include "render/units.h"

void tp_report_frame_text(char *out, size_t cap, const tp_stack_tree *t, uint32_t node)
{
    out[0] = '\0';
    if (node == 0 || node > t->n)
        return;
    uint32_t frame = t->frame[node - 1];
    const char *fn = frame && frame <= t->nframes ? t->function[frame - 1] : "?";
    const char *file = frame && frame <= t->nframes ? t->file[frame - 1] : "?";
    char place[TP_PLACE_MAX];
    tp_format_place(place, sizeof place, file, t->line[node - 1]);
    snprintf(out, cap, "%s (%s)", fn, place);
}

void tp_report_place(char *out, size_t cap, const tp_stack_tree *t, uint32_t node, uint32_t outer)
{
    char outer_text[400], inner[400];
    tp_report_frame_text(outer_text, sizeof outer_text, t, outer ? outer : node);
    if (!outer || outer == node) {
        snprintf(out, cap, "%s", outer_text);
        return;
    }
    tp_report_frame_text(inner, sizeof inner, t, node);
    snprintf(out, cap, "%s calling %s", outer_text, inner);
}

/* Where a stalled thread was (tp_report_place). */
static void thread_place(char *out, size_t cap, const tp_stalls *st, const tp_stall_thread *th)
{
    tp_report_place(out, cap, &st->tree, th->node, th->outer);
}

/* "waiting", "waiting on storage", "on a CPU", or "" when the kernel never said. */
static const char *thread_state(const tp_stall_thread *th)
{
    return tp_doing_words[tp_doing_of(th->known, th->on_cpu, th->blocked)];
}

/* The threads worth naming: those with a region open or a DataLoader
 * worker's, at most 3. */
static bool worth_naming(const tp_stall_thread *th) { return th->phase || th->worker; }

/* The ongoing stall the others wait for (or that stopped first), NULL when
 * none lasted to the end. */
static const tp_stall *first_stalled(const tp_stalls *st)
{
    const tp_stall *any = NULL;
    for (size_t i = 0; i < st->n; i++) {
        if (st->v[i].ended)
            continue;
        if (st->v[i].first)
            return &st->v[i];
        any = any ? any : &st->v[i];
    }
    return any;
}

static size_t ongoing_count(const tp_stalls *st)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++)
        n += !st->v[i].ended;
    return n;
}

/* The stall's place (thread_place) and state of its busiest thread worth
 * naming: " in D.__getitem__ (hang_ddp.py:13), waiting"; "" without stacks. */
static void where_text(char *out, size_t cap, const tp_stalls *st, const tp_stall *r)
{
    out[0] = '\0';
    for (size_t k = 0; k < r->nthreads; k++) {
        const tp_stall_thread *th = &r->threads[k];
        char frame[820];
        thread_place(frame, sizeof frame, st, th);
        if (!worth_naming(th) || !frame[0])
            continue;
        const char *state = thread_state(th);
        snprintf(out, cap, "%s in %s%s%s", th->worker ? " its DataLoader worker" : "", frame,
                 state[0] ? ", " : "", state);
        return;
    }
}

/* "; its GPU 0 stayed busy (NVML's utilization 100%): a kernel that does
 * not end" or "; its GPU 0 sat idle (2%): it waits for a peer, a collective
 * or the host", what a stalled rank's GPU did meanwhile; then, where its
 * threads waited on storage (state D) from TP_STALL_BLOCKED on, "; its
 * threads waited on storage ...: a filesystem or disk that does not
 * answer"; "" where neither is known. */
static void meanwhile_text(char *out, size_t cap, const tp_stall *r)
{
    out[0] = '\0';
    if (isfinite(r->blocked) && r->blocked >= TP_STALL_BLOCKED) {
        char amount[48];
        if (r->blocked < 1)
            snprintf(amount, sizeof amount, "%.0f%% of the time", 100 * r->blocked);
        else
            snprintf(amount, sizeof amount, "%.1f threads at a time on average", r->blocked);
        snprintf(out, cap,
                 "; its threads waited on storage meanwhile (state D, %s): a filesystem or disk "
                 "that does not answer (a network mount, a failing disk)",
                 amount);
    }
    if (r->gpu < 0 || !isfinite(r->gpu_util_percent))
        return;
    double u = r->gpu_util_percent;
    size_t len = strlen(out);
    snprintf(out + len, cap - len,
             u >= TP_STALL_GPU_BUSY_PERCENT
                 ? "; its GPU %d stayed busy meanwhile (NVML's utilization %.0f%%): a kernel that "
                   "does not end, or the GPU's own work queued ahead of it"
             : u <= TP_STALL_GPU_IDLE_PERCENT
                 ? "; its GPU %d sat idle meanwhile (NVML's utilization %.0f%%): it waits for "
                   "something else (a peer or a collective, the host, a lock)"
                 : "; its GPU %d was busy %.0f%% of the time meanwhile (NVML's utilization)",
             r->gpu, u);
}

/* "at step 30", or "after step 30" where its last step had closed. */
static void step_text(char *out, size_t cap, const tp_stall *r)
{
    snprintf(out, cap, "%s step %zu", r->between ? "after" : "at", r->step);
}

/* "rank 1" or "the training" */
static void rank_name(char *out, size_t cap, int rank)
{
    if (rank >= 0)
        snprintf(out, cap, "rank %d", rank);
    else
        snprintf(out, cap, "the training");
}

/* The longest stall that ended, NULL when none did. */
static const tp_stall *longest_ended(const tp_stalls *st, size_t *count)
{
    const tp_stall *best = NULL;
    *count = 0;
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ended) {
            (*count)++;
            if (!best || st->v[i].seconds > best->seconds)
                best = &st->v[i];
        }
    *count += st->ended_untold;
    return best;
}

/* "step 11 of rank 0 made no progress for 6.0 s from 1.9 s into the run
 * (15:48:30 UTC), in train_batch: in <module> (pausing.py:12), waiting" */
static void ended_text(char *out, size_t cap, const tp_summary *s, const tp_stall *r)
{
    char who[32], wall[16], span[32], where[900];
    rank_name(who, sizeof who, r->rank);
    tp_report_wall_time(wall, sizeof wall, &s->inv, r->start_s);
    tp_format_duration(span, sizeof span, r->seconds);
    where_text(where, sizeof where, &s->stalls, r);
    snprintf(out, cap, "step %zu of %s took %s from %.1f s into the run%s%s%s%s%s%s%s", r->step,
             who, span, r->start_s, wall[0] ? " (" : "", wall, wall[0] ? " UTC)" : "",
             r->phase ? ", in " : "", r->phase ? r->phase : "", where[0] ? ":" : "", where);
}

void tp_report_course_answer(FILE *out, const tp_summary *s)
{
    const tp_stalls *st = &s->stalls;
    const tp_stall *first = first_stalled(st);
    size_t ended;
    const tp_stall *longest = longest_ended(st, &ended);
    if (longest) {
        char line[1800], what[1400];
        ended_text(what, sizeof what, s, longest);
        snprintf(line, sizeof line,
                 "The training stalled and went on%s: %s; over %.0f s without progress, it is"
                 " left out of the step figures.",
                 ended > 1 ? " (the longest of its stalls: all under Stalls below)" : "", what,
                 longest->threshold_s);
        tp_report_wrapped(out, "[stall] ", line);
    }
    if (!first)
        return;
    char line[1800], who[48], when[64] = "", where[900], span[32], gpu[400], step[40];
    meanwhile_text(gpu, sizeof gpu, first);
    step_text(step, sizeof step, first);
    tp_report_wall_time(who, sizeof who, &s->inv, first->start_s);
    if (who[0])
        snprintf(when, sizeof when, " (%s UTC)", who);
    where_text(where, sizeof where, st, first);
    tp_format_duration(span, sizeof span, first->seconds);
    if (first->rank >= 0)
        snprintf(who, sizeof who, ": rank %d stopped", first->rank);
    else
        snprintf(who, sizeof who, ": it stopped");
    snprintf(line, sizeof line,
             "The training stalled %.1f s into the run%s and nothing moved for the %s that"
             " followed, until the recording ended%s %s%s%s%s%s%s%s.",
             first->start_s, when, span, who, step, first->phase ? " in " : "",
             first->phase ? first->phase : "", where[0] ? "," : "", where, gpu,
             ongoing_count(st) > 1 && first->rank >= 0 ? "; the other ranks wait for it" : "");
    tp_report_wrapped(out, "[stalled] ", line);
}

/* A stall's "between_steps", its rank's GPU with NVML's utilization over
 * it, and its threads waiting on storage then (null where unknown). */
static void stall_gpu_json(json_writer *w, const tp_stall *r)
{
    json_key(w, "between_steps"); /* its last step had closed: it stopped between steps */
    json_bool(w, r->between);
    json_key(w, "gpu");
    if (r->gpu >= 0)
        json_int(w, r->gpu);
    else
        json_null(w);
    json_key(w, "gpu_util_mean_percent");
    if (r->gpu >= 0 && isfinite(r->gpu_util_percent))
        json_double(w, r->gpu_util_percent);
    else
        json_null(w);
    json_key(w, "training_blocked_mean"); /* its threads in state D, on average */
    if (isfinite(r->blocked))
        json_double(w, r->blocked);
    else
        json_null(w);
}

/* The threads of a stall worth naming, at most 3, a line each. */
static void thread_lines(FILE *out, const tp_stalls *st, const tp_stall *r)
{
    size_t named = 0;
    for (size_t k = 0; k < r->nthreads && named < 3; k++) {
        const tp_stall_thread *th = &r->threads[k];
        char frame[820], line[1100];
        thread_place(frame, sizeof frame, st, th);
        if (!worth_naming(th) || !frame[0])
            continue;
        const char *state = thread_state(th);
        snprintf(line, sizeof line, "%s %lld/%d (%s): %s%s%s",
                 th->worker ? "DataLoader worker" : "thread", (long long)th->pid, (int)th->tid,
                 th->worker  ? "its loader"
                 : th->phase ? th->phase
                             : "no region",
                 frame, state[0] ? ", " : "", state);
        tp_report_wrapped(out, "  ", line);
        named++;
    }
    if (!named)
        fprintf(out, "    (no stack samples of its threads then)\n");
}

void tp_report_course_text(FILE *out, const tp_summary *s)
{
    const tp_stalls *st = &s->stalls;
    const tp_stall *first = first_stalled(st);
    size_t ongoing = ongoing_count(st);
    if (first)
        fprintf(out, "\nStalled (no progress for over %.0f s, until the recording ended)\n",
                first->threshold_s);
    for (size_t i = 0; first && i < st->n; i++) {
        const tp_stall *r = &st->v[i];
        if (r->ended)
            continue;
        char when[16], span[32], who[32], head[1000], gpu[400], step[40];
        meanwhile_text(gpu, sizeof gpu, r);
        step_text(step, sizeof step, r);
        tp_report_wall_time(when, sizeof when, &s->inv, r->start_s);
        tp_format_duration(span, sizeof span, r->seconds);
        rank_name(who, sizeof who, r->rank);
        char role[48] = ":";
        if (ongoing > 1 && r->first)
            snprintf(role, sizeof role, " stopped %s:", first == r ? "first" : "too");
        else if (ongoing > 1 && r->waits && first->rank >= 0)
            snprintf(role, sizeof role, " waits for rank %d:", first->rank);
        else if (ongoing > 1 && r->waits)
            snprintf(role, sizeof role, " waits for the others:");
        snprintf(head, sizeof head, "%s%s in %s %s since %.1f s%s%s%s (%s)%s", who, role,
                 r->phase ? r->phase : "no region", step, r->start_s, when[0] ? ", " : "", when,
                 when[0] ? " UTC" : "", span, gpu);
        tp_report_wrapped(out, "", head);
        thread_lines(out, st, r);
    }
    if (first)
        fprintf(out, "  Verdicts on step time are left out: the steps before the stall are in"
                     " Timings below.\n");
    size_t ended;
    if (!longest_ended(st, &ended))
        return;
    fprintf(out, "\nStalls (steps without progress for longer than their threshold, then went on;"
                 " left out of the step figures)\n");
    for (size_t i = 0; i < st->n; i++) {
        if (!st->v[i].ended)
            continue;
        char line[1000];
        ended_text(line, sizeof line, s, &st->v[i]);
        line[0] = 'S'; /* "Step ..." */
        tp_report_wrapped(out, "", line);
    }
    if (st->ended_untold)
        fprintf(out, "  and %zu more\n", st->ended_untold);
}

static void stall_json(json_writer *w, const tp_stalls *st, const tp_stall *r)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, r->rank);
    json_key(w, "ended");
    json_bool(w, r->ended);
    json_key(w, "start_s");
    json_double(w, r->start_s);
    json_key(w, "end_s");
    json_double(w, r->end_s);
    json_key(w, "seconds");
    json_double(w, r->seconds);
    json_key(w, "threshold_s");
    json_double(w, r->threshold_s);
    json_key(w, "step");
    json_int(w, (int64_t)r->step);
    stall_gpu_json(w, r);
    json_key(w, "phase");
    if (r->phase)
        json_string(w, r->phase);
    else
        json_null(w);
    json_key(w, "waits_for_others");
    json_bool(w, r->waits);
    json_key(w, "first");
    json_bool(w, r->first);
    json_key(w, "threads");
    json_array_begin(w);
    for (size_t k = 0; k < r->nthreads; k++) {
        const tp_stall_thread *th = &r->threads[k];
        json_object_begin(w);
        json_key(w, "pid");
        json_int(w, th->pid);
        json_key(w, "tid");
        json_int(w, th->tid);
        json_key(w, "worker");
        json_bool(w, th->worker);
        json_key(w, "phase");
        if (th->phase)
            json_string(w, th->phase);
        else
            json_null(w);
        json_key(w, "state");
        const char *state = tp_doing_keys[tp_doing_of(th->known, th->on_cpu, th->blocked)];
        if (state)
            json_string(w, state);
        else
            json_null(w);
        json_key(w, "samples");
        json_double(w, th->samples);
        json_key(w, "frames"); /* innermost first */
        json_array_begin(w);
        uint32_t path[8];
        size_t depth = tp_stack_path(&st->tree, th->node, path, 8);
        for (size_t d = 0; d < depth; d++) {
            uint32_t frame = st->tree.frame[path[d] - 1];
            bool known = frame && frame <= st->tree.nframes;
            json_object_begin(w);
            json_key(w, "function");
            json_string(w, known ? st->tree.function[frame - 1] : "?");
            json_key(w, "file");
            json_string(w, known ? st->tree.file[frame - 1] : "?");
            json_key(w, "line");
            json_int(w, st->tree.line[path[d] - 1]);
            json_object_end(w);
        }
        json_array_end(w);
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}

void tp_report_course_json(json_writer *w, const tp_summary *s)
{
    json_key(w, "stalls");
    json_array_begin(w);
    for (size_t i = 0; i < s->stalls.n; i++)
        stall_json(w, &s->stalls, &s->stalls.v[i]);
    json_array_end(w);
}
