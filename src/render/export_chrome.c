/* export_chrome.c: the run as a Trace Event Format file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/timings.h"
#include "analyze/stack_own.h"
#include "util/ns_math.h"
#include "analyze/run_facts.h"
#include "render/export.h"
#include "store/reader_stacks.h"
#include "store/reader_stream.h"
#include "util/json_writer.h"
#include "util/labels.h"
#include "stacks.h"

/* Counter tracks live in processes of their own, far from real pids. */
#define AGENT_PID_BASE 1000000000
#define PIDS_PER_AGENT 1000
/* A thread's device times go on a track of its own, beside the thread's:
 * its tid plus this (Linux tids stay below 2^22). */
#define DEVICE_TID_BASE 1000000000

typedef struct chrome_ctx {
    FILE *out;
    tp_run *run;
    tp_run_thread *threads;
    size_t nthreads;
    bool *device_named; /* per thread: its device track is named */
    bool first;
    tp_stack_tree stacks;
    tp_export_budget *budget;
} chrome_ctx;

bool tp_export_room(tp_export_budget *b)
{
    if (!b || *b->written < b->max_bytes)
        return true;
    b->cut++;
    return false;
}

/* Before an event: its separator, and whether it may be written at all
 * (false past the budget: the caller writes nothing). */
static bool sep(chrome_ctx *c)
{
    if (!tp_export_room(c->budget))
        return false;
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = false;
    return true;
}

static bool sep_any(void *ctx) { return sep(ctx); }

static const tp_run_thread *thread_by_id(const chrome_ctx *c, int64_t id)
{
    if (id >= 1 && (size_t)id <= c->nthreads && c->threads[id - 1].id == id)
        return &c->threads[id - 1];
    for (size_t i = 0; i < c->nthreads; i++)
        if (c->threads[i].id == id)
            return &c->threads[i];
    return NULL;
}

static void meta_event(chrome_ctx *c, const char *what, long long pid, long long tid,
                       const char *key, const char *text, long long number)
{
    if (!sep(c))
        return;
    fprintf(c->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%lld", what, pid);
    if (tid >= 0)
        fprintf(c->out, ",\"tid\":%lld", tid);
    fprintf(c->out, ",\"args\":{\"%s\":", key);
    if (text)
        json_write_escaped(c->out, text);
    else
        fprintf(c->out, "%lld", number);
    fputs("}}", c->out);
}

static bool is_sampler(const tp_run_thread *t)
{
    return strcmp(t->name, TP_SAMPLER_THREAD_NAME) == 0;
}

/* The thread that names pid's process: a DataLoader worker's, else the first
 * training thread's (a stack sampler's only when the process has no other). */
static const tp_run_thread *namer_of(const chrome_ctx *c, int pid)
{
    const tp_run_thread *best = NULL;
    for (size_t j = 0; j < c->nthreads; j++) {
        const tp_run_thread *t = &c->threads[j];
        if (t->pid != pid)
            continue;
        if (strncmp(t->name, "DL worker ", 10) == 0)
            return t;
        if (!best || (is_sampler(best) && !is_sampler(t)))
            best = t;
    }
    return best;
}

static void name_processes(chrome_ctx *c)
{
    char buf[128];
    for (size_t i = 0; i < c->nthreads; i++) {
        const tp_run_thread *t = &c->threads[i];
        bool first_of_pid = true;
        for (size_t j = 0; j < i; j++)
            first_of_pid &= c->threads[j].pid != t->pid;
        if (first_of_pid) {
            const tp_run_thread *n = namer_of(c, t->pid);
            if (strncmp(n->name, "DL worker ", 10) == 0)
                snprintf(buf, sizeof buf, "DataLoader worker %s (pid %d)", n->name + 10, n->pid);
            else if (n->rank >= 0)
                snprintf(buf, sizeof buf, "rank %d (pid %d)", n->rank, n->pid);
            else
                snprintf(buf, sizeof buf, "pid %d", n->pid);
            meta_event(c, "process_name", t->pid, -1, "name", buf, 0);
            meta_event(c, "process_sort_index", t->pid, -1, "sort_index", NULL,
                       n->rank >= 0 ? n->rank : 100000);
        }
        if (is_sampler(t))
            continue; /* its samples go on the sampled threads' tracks */
        snprintf(buf, sizeof buf, "%s (tid %d)", t->name[0] ? t->name : "thread", t->tid);
        meta_event(c, "thread_name", t->pid, t->tid, "name", buf, 0);
    }
    for (size_t a = 0; a < c->run->nagents; a++) {
        long long pid = AGENT_PID_BASE + (long long)a * PIDS_PER_AGENT;
        snprintf(buf, sizeof buf, "%s: system metrics", c->run->agents[a].name);
        meta_event(c, "process_name", pid, -1, "name", buf, 0);
        for (size_t g = 0; g < c->run->ngpus; g++) {
            const tp_run_gpu *gpu = &c->run->gpus[g];
            if (gpu->agent_id != c->run->agents[a].id)
                continue;
            snprintf(buf, sizeof buf, "%s: GPU %d (%s)", c->run->agents[a].name, gpu->index,
                     gpu->name);
            meta_event(c, "process_name", pid + 1 + gpu->index, -1, "name", buf, 0);
        }
    }
}

static void region_event(void *ctx, int64_t thread, const char *name, int depth, int64_t start,
                         int64_t end)
{
    chrome_ctx *c = ctx;
    const tp_run_thread *t = thread_by_id(c, thread);
    if (!t)
        return;
    if (!sep(c))
        return;
    /* the training's pauses (evaluate, checkpoint, compile, ...) stand out:
     * their own category, and a grey slice where the viewer knows cname */
    fputs(tp_timing_is_pause(name) ? "{\"ph\":\"X\",\"cat\":\"pause\",\"cname\":\"grey\",\"name\":"
                                   : "{\"ph\":\"X\",\"cat\":\"region\",\"name\":",
          c->out);
    json_write_escaped(c->out, name);
    fprintf(c->out, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"depth\":%d}}",
            t->pid, t->tid, (double)start / 1e3, (double)tp_ns_sub(end, start) / 1e3, depth);
}

/* A device time as a slice on its thread's device track, placed at the
 * region's host start: CUDA events give the span on the stream, not when on
 * the device it began. */
static void device_event(void *ctx, int64_t thread, const char *name, int64_t start,
                         int64_t device_ns)
{
    chrome_ctx *c = ctx;
    const tp_run_thread *t = thread_by_id(c, thread);
    if (!t)
        return;
    long long tid = DEVICE_TID_BASE + (long long)t->tid;
    size_t i = (size_t)(t - c->threads);
    if (!c->device_named[i]) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s (tid %d): device times (CUDA events)",
                 t->name[0] ? t->name : "thread", t->tid);
        meta_event(c, "thread_name", t->pid, tid, "name", buf, 0);
        meta_event(c, "thread_sort_index", t->pid, tid, "sort_index", NULL, t->tid);
        c->device_named[i] = true;
    }
    if (!sep(c))
        return;
    fputs("{\"ph\":\"X\",\"cat\":\"device\",\"name\":", c->out);
    json_write_escaped(c->out, name);
    fprintf(c->out,
            ",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"ts\":\"the region's host start\"}}",
            t->pid, tid, (double)start / 1e3, (double)device_ns / 1e3);
}

/* The GPU index of a series labelled {"gpu":"N"}, or -1. */
static int gpu_of(const char *labels)
{
    const char *p = strstr(labels, "\"gpu\":\"");
    return p ? atoi(p + 7) : -1;
}

static void counter_event(void *ctx, const tp_run_series *s, int64_t t_ns, double value)
{
    chrome_ctx *c = ctx;
    long long pid = AGENT_PID_BASE;
    for (size_t a = 0; a < c->run->nagents; a++)
        if (c->run->agents[a].id == s->agent_id)
            pid = AGENT_PID_BASE + (long long)a * PIDS_PER_AGENT;
    int gpu = gpu_of(s->labels);
    if (gpu >= 0 && gpu < PIDS_PER_AGENT - 1)
        pid += 1 + gpu;
    char labels[TP_LABELS_MAX], name[TP_LABELS_MAX + 64];
    tp_labels_display(s->labels, labels, sizeof labels);
    snprintf(name, sizeof name, "%s%s%s%s", s->metric, labels[0] && gpu < 0 ? " (" : "",
             gpu < 0 ? labels : "", labels[0] && gpu < 0 ? ")" : "");
    if (!sep(c))
        return;
    fputs("{\"ph\":\"C\",\"name\":", c->out);
    json_write_escaped(c->out, name);
    fprintf(c->out, ",\"pid\":%lld,\"ts\":%.3f,\"args\":{", pid, (double)t_ns / 1e3);
    json_write_escaped(c->out, s->unit);
    fprintf(c->out, ":%.10g}}", value);
}

static void mark_events(chrome_ctx *c, const tp_run_mark *marks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const tp_run_thread *t = thread_by_id(c, marks[i].thread);
        if (!t || marks[i].kind == TP_MARK_SAMPLES)
            continue;
        if (!sep(c))
            continue;
        if (marks[i].kind == TP_MARK_EPOCH)
            fprintf(c->out, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"epoch %lld\"",
                    (long long)marks[i].value);
        else
            fprintf(c->out, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s\"",
                    marks[i].kind == TP_MARK_STEP_END ? "step end" : "step");
        fprintf(c->out, ",\"cat\":\"mark\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", t->pid, t->tid,
                (double)marks[i].t_ns / 1e3);
    }
}

static void other_data(FILE *out, const tp_run *run)
{
    fputs("\"otherData\":{", out);
    tp_run_facts f;
    tp_run_facts_get(run, &f);
    const char *fields[][2] = {{"command", f.command},
                               {"host", f.host},
                               {"start_wall", f.start_wall},
                               {"trainprof_version", f.trainprof_version}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        fprintf(out, "%s\"%s\":", i ? "," : "", fields[i][0]);
        json_write_escaped(out, fields[i][1] ? fields[i][1] : "");
    }
    fputs("}", out);
}

/* A frame of the stack tree as "function (file:line)". */
static void frame_text(FILE *out, const tp_stack_tree *t, uint32_t node)
{
    uint32_t f = t->frame[node - 1];
    bool known = f >= 1 && f <= t->nframes;
    json_write_escaped_part(out, known ? t->function[f - 1] : "?");
    json_write_escaped_part(out, " (");
    json_write_escaped_part(out, known ? t->file[f - 1] : "?");
    fprintf(out, ":%d)", t->line[node - 1]);
}

/* A run of identical sampled stacks as an instant on its thread's track (the
 * process's main thread's where the thread's id is unknown), at its first
 * sample: named by its innermost function; in args its whole stack
 * (outermost first, ';'-separated), how many samples in a row it stands
 * for and the time from its first to its last. */
static void stack_event(void *ctx, const tp_stack_run *r)
{
    chrome_ctx *c = ctx;
    const tp_run_thread *t = thread_by_id(c, r->thread_id);
    const tp_stack_tree *tree = &c->stacks;
    if (!t || r->node == 0 || r->node > tree->n)
        return;
    uint32_t path[256];
    size_t n = tp_stack_path(tree, r->node, path, sizeof path / sizeof *path);
    uint32_t f = tree->frame[r->node - 1];
    if (!sep(c))
        return;
    fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"stack\",\"name\":", c->out);
    json_write_escaped(c->out, f >= 1 && f <= tree->nframes ? tree->function[f - 1] : "?");
    fprintf(c->out,
            ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"args\":{\"samples\":%llu,\"span_ms\":%.3f,"
            "\"on_cpu\":%s,\"blocked\":%s,\"stack\":\"",
            t->pid, r->tid > 0 ? r->tid : t->pid, (double)r->t_ns / 1e3,
            (unsigned long long)r->count, (double)r->span_ns / 1e6,
            !tp_stack_state_known(r->state)   ? "null"
            : tp_stack_state_on_cpu(r->state) ? "true"
                                              : "false",
            !tp_stack_state_known(r->state)    ? "null"
            : tp_stack_state_blocked(r->state) ? "true"
                                               : "false");
    while (n-- > 0) {
        frame_text(c->out, tree, path[n]);
        if (n)
            fputc(';', c->out);
    }
    fputs("\"}}", c->out);
}

bool tp_export_chrome(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap)
{
    chrome_ctx c = {out, run, NULL, 0, NULL, true, {0}, b};
    tp_run_mark *marks = NULL;
    size_t nmarks = 0;
    if (!tp_run_threads(run, &c.threads, &c.nthreads, err, cap) ||
        !tp_run_marks(run, &marks, &nmarks, err, cap)) {
        free(c.threads);
        return false;
    }
    c.device_named = calloc(c.nthreads ? c.nthreads : 1, sizeof *c.device_named);
    if (!c.device_named) {
        snprintf(err, cap, "export: out of memory");
        free(marks);
        free(c.threads);
        return false;
    }
    fputs("{\"displayTimeUnit\":\"ms\",", out);
    other_data(out, run);
    fputs(",\"traceEvents\":[", out);
    name_processes(&c);
    mark_events(&c, marks, nmarks);
    bool ok = tp_run_each_region(run, region_event, &c, err, cap) &&
              tp_run_each_device_time(run, device_event, &c, err, cap) &&
              tp_run_each_sample(run, counter_event, &c, err, cap) &&
              tp_stack_tree_load(run, &c.stacks, err, cap) &&
              tp_run_each_stack_sample(run, stack_event, &c, err, cap) &&
              tp_export_chrome_ops(out, run, sep_any, &c, err, cap);
    fputs("\n]}\n", out);
    tp_stack_tree_free(&c.stacks);
    free(c.device_named);
    free(marks);
    free(c.threads);
    return ok;
}
