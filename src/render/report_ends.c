/* report_ends.c: the processes that died before the command ended, and the
 * signal that asked the run to stop, in words and JSON (analyze/deaths.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/gpu_memory_words.h"
#include "render/report.h"
#include "render/units.h"

/* "SIGKILL" of a signal number, "signal N" for one without a name. */
static void signal_name(char *out, size_t cap, int sig)
{
    const char *name = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (name)
        snprintf(out, cap, "SIG%s", name);
    else
        snprintf(out, cap, "signal %d", sig);
}

/* "Rank 1 (pid 123)", "A DataLoader worker of rank 1 (pid 123)", "The
 * training (pid 123)". */
static void who_text(char *out, size_t cap, const tp_death *d)
{
    if (d->worker && d->rank >= 0)
        snprintf(out, cap, "A DataLoader worker of rank %d (pid %lld)", d->rank, (long long)d->pid);
    else if (d->worker)
        snprintf(out, cap, "A DataLoader worker (pid %lld)", (long long)d->pid);
    else if (d->rank >= 0)
        snprintf(out, cap, "Rank %d (pid %lld)", d->rank, (long long)d->pid);
    else
        snprintf(out, cap, "The training (pid %lld)", (long long)d->pid);
}

/* How it ended: "raised RuntimeError: loss went bad", "was killed by the
 * kernel's OOM killer (SIGKILL)", ... */
static void how_text(char *out, size_t cap, const tp_death *d)
{
    char sig[32];
    signal_name(sig, sizeof sig, d->signal ? d->signal : 9);
    switch (d->how) {
    case TP_DEATH_EXCEPTION:
        snprintf(out, cap, "raised %s%s%s%s", d->exception_type,
                 d->exception_message && d->exception_message[0] ? " (\"" : "",
                 d->exception_message ? d->exception_message : "",
                 d->exception_message && d->exception_message[0] ? "\")" : "");
        break;
    case TP_DEATH_OOM:
        snprintf(out, cap, "was killed by the kernel's OOM killer%s%s%s", d->signal ? " (" : "",
                 d->signal ? sig : "", d->signal ? ")" : "");
        break;
    case TP_DEATH_SIGNAL: snprintf(out, cap, "was killed by %s", sig); break;
    case TP_DEATH_EXIT: snprintf(out, cap, "exited with status %d", d->exit_status); break;
    case TP_DEATH_VANISHED:
        snprintf(out, cap, "ended without Python's shutdown (a signal, os._exit or a crash)");
        break;
    }
}

/* " at step 8 in backward, 2.6 s into the run (15:40:02 UTC)"; " after its
 * script ended, as Python shut down, 5.8 s into the run (...)" */
static void when_text(char *out, size_t cap, const tp_summary *s, const tp_death *d)
{
    char step[48] = "", wall[16];
    tp_report_wall_time(wall, sizeof wall, &s->inv, d->end_s);
    if (d->after_script) {
        snprintf(out, cap,
                 " after its script ended, as Python shut down, %.1f s into the run%s%s%s",
                 d->end_s, wall[0] ? " (" : "", wall, wall[0] ? " UTC)" : "");
        return;
    }
    if (d->step)
        snprintf(step, sizeof step, " at step %zu", d->step);
    snprintf(out, cap, "%s%s%s, %.1f s into the run%s%s%s", step, d->phase ? " in " : "",
             d->phase ? d->phase : "", d->end_s, wall[0] ? " (" : "", wall, wall[0] ? " UTC)" : "");
}

/* Where it was: the exception's frames, else its last sampled stack's;
 * none after its script ended (that stack is from its training, before). */
static void where_text(char *out, size_t cap, const tp_deaths *ds, const tp_death *d)
{
    out[0] = '\0';
    (void)ds;
    if (d->exception_where && d->exception_where[0])
        snprintf(out, cap, "%s", d->exception_where);
    else if (d->stack && !d->after_script)
        snprintf(out, cap, "%s", d->stack);
}

/* What a death after the script tells ("" for others). */
static const char *after_script_text(const tp_death *d)
{
    return d->after_script ? " Its training had finished: what crashed was a library's teardown "
                             "(its threads or destructors as the interpreter ended), not the "
                             "training's code."
                           : "";
}

static void stop_text(char *out, size_t cap, const tp_summary *s)
{
    const tp_deaths *ds = &s->deaths;
    char wall[16], step[64] = "";
    tp_report_wall_time(wall, sizeof wall, &s->inv, ds->stop_s);
    if (ds->stop_step && s->course.n)
        snprintf(step, sizeof step, ", at step %zu%s", ds->stop_step,
                 s->course.v[0].rank >= 0 ? " of the first rank" : "");
    snprintf(out, cap, "The run was asked to stop: record got %s %.1f s into the run%s%s%s%s.",
             ds->stop_signal, ds->stop_s, wall[0] ? " (" : "", wall, wall[0] ? " UTC)" : "", step);
}

void tp_report_stop_answer(FILE *out, const tp_summary *s)
{
    if (s->deaths.stop_signal) {
        char line[400];
        stop_text(line, sizeof line, s);
        tp_report_wrapped(out, "[stopped] ", line);
    }
}

void tp_report_ends_answer(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    const tp_deaths *ds = &s->deaths;
    if (ds->n) {
        const tp_death *d = &ds->v[0]; /* the first to die */
        char who[96], how[600], when[160], where[400], line[2400];
        who_text(who, sizeof who, d);
        how_text(how, sizeof how, d);
        when_text(when, sizeof when, s, d);
        where_text(where, sizeof where, ds, d);
        char oom[900];
        tp_gpu_oom_words(oom, sizeof oom, s, v, d);
        snprintf(line, sizeof line, "%s %s%s%s%s%s.%s%s", who, how, when, where[0] ? ", in " : "",
                 where, ds->n > 1 ? " (more under Ends below)" : "", after_script_text(d), oom);
        tp_report_wrapped(out, "[died] ", line);
    }
}

void tp_report_ends_text(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    const tp_deaths *ds = &s->deaths;
    if (!ds->n && !ds->stop_signal)
        return;
    fprintf(out, "\nEnds\n");
    for (size_t i = 0; i < ds->n; i++) {
        const tp_death *d = &ds->v[i];
        char who[96], how[600], when[160], where[400], line[2400], mem[32] = "", oom[900];
        who_text(who, sizeof who, d);
        how_text(how, sizeof how, d);
        when_text(when, sizeof when, s, d);
        where_text(where, sizeof where, ds, d);
        if (isfinite(d->rss_bytes))
            tp_format_value(mem, sizeof mem, "bytes", d->rss_bytes);
        tp_gpu_oom_words(oom, sizeof oom, s, v, d);
        snprintf(line, sizeof line, "%s %s%s%s%s%s%s%s%s%s", who, how, when,
                 where[0] ? "; in " : "", where,
                 mem[0] ? "; the training's processes peaked at " : "", mem,
                 mem[0] ? " of memory" : "", oom[0] ? "." : "", oom);
        tp_report_wrapped(out, "", line);
    }
    if (ds->stop_signal) {
        char line[400];
        stop_text(line, sizeof line, s);
        tp_report_wrapped(out, "", line);
    }
}

static void text_or_null(json_writer *w, const char *key, const char *v)
{
    json_key(w, key);
    if (v)
        json_string(w, v);
    else
        json_null(w);
}

void tp_report_ends_json(json_writer *w, const tp_summary *s)
{
    static const char *const how[] = {"exception", "oom_killer", "signal", "exit", "vanished"};
    const tp_deaths *ds = &s->deaths;
    json_key(w, "deaths");
    json_array_begin(w);
    for (size_t i = 0; i < ds->n; i++) {
        const tp_death *d = &ds->v[i];
        json_object_begin(w);
        json_key(w, "pid");
        json_int(w, d->pid);
        json_key(w, "rank");
        json_int(w, d->rank);
        json_key(w, "worker");
        json_bool(w, d->worker);
        json_key(w, "how");
        json_string(w, how[d->how]);
        json_key(w, "signal");
        if (d->signal)
            json_int(w, d->signal);
        else
            json_null(w);
        json_key(w, "exit_status");
        if (d->exit_status >= 0)
            json_int(w, d->exit_status);
        else
            json_null(w);
        json_key(w, "end_s");
        json_double(w, d->end_s);
        json_key(w, "died_s");
        json_double(w, d->died_s);
        json_key(w, "alive_s");
        if (isnan(d->alive_s))
            json_null(w);
        else
            json_double(w, d->alive_s);
        json_key(w, "step");
        if (d->step)
            json_int(w, (int64_t)d->step);
        else
            json_null(w);
        text_or_null(w, "phase", d->phase);
        json_key(w, "exception");
        if (d->exception_type) {
            json_object_begin(w);
            text_or_null(w, "type", d->exception_type);
            text_or_null(w, "message", d->exception_message);
            text_or_null(w, "where", d->exception_where);
            json_object_end(w);
        } else {
            json_null(w);
        }
        text_or_null(w, "last_stack", d->stack);
        json_key(w, "after_script");
        json_bool(w, d->after_script);
        json_key(w, "peak_rss_bytes");
        json_double(w, d->rss_bytes);
        json_object_end(w);
    }
    json_array_end(w);
    json_key(w, "stop");
    if (ds->stop_signal) {
        json_object_begin(w);
        json_key(w, "signal");
        json_string(w, ds->stop_signal);
        json_key(w, "at_s");
        json_double(w, ds->stop_s);
        json_key(w, "step");
        if (ds->stop_step)
            json_int(w, (int64_t)ds->stop_step);
        else
            json_null(w);
        json_object_end(w);
    } else {
        json_null(w);
    }
}
