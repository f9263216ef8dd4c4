/* report_ops.c: the capture windows in the report (docs/ops.md): the
 * operators of each phase in the seed's table, the kernels, the GPU's idle
 * time by the host's phase, the caching allocator's headroom; JSON's
 * windows, ops, kernels and gpu_idle; and the operators a compute-bound
 * verdict names. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyze/ops.h"
#include "core/phases.h"
#include "render/kernel_names.h"
#include "render/report.h"
#include "render/units.h"

#define OPS_SHOWN     8 /* operators per phase */
#define PHASES_SHOWN  6 /* phases per rank */
#define KERNELS_SHOWN 10
#define RANKS_SHOWN   2 /* the first ranks' tables: every rank's is in the JSON */

const char *tp_ops_reason_words_of(int reason, int n)
{
    return reason == 1   ? "scheduled"
           : reason == 2 ? "on demand"
           : reason == 3 ? (n > 1 ? "after slow steps" : "after a slow step")
                         : "?";
}

const char *tp_ops_reason_words(int reason) { return tp_ops_reason_words_of(reason, 1); }

/* Steps captured by rank's windows (first rank: all when rank < -1). */
static int steps_of(const tp_ops_facts *f, int rank)
{
    int n = 0;
    for (size_t i = 0; i < f->nwindows; i++)
        if (f->windows[i].rank == rank && !f->windows[i].skipped)
            n += f->windows[i].steps;
    return n;
}

static void ms(char *buf, size_t cap, double s) { snprintf(buf, cap, "%.2f", s * 1e3); }

/* "steps 11-15", "step 11", "no complete step", or, for a count no process
 * makes (a crafted window's 2^63 - 1), "steps out of range". */
static void window_steps(char *out, size_t cap, const tp_ops_window_fact *w)
{
    if (w->steps <= 0)
        snprintf(out, cap, "no complete step");
    else if (w->first_step < 0 || w->first_step > INT64_MAX - w->steps)
        snprintf(out, cap, "steps out of range");
    else if (w->steps == 1)
        snprintf(out, cap, "step %lld", (long long)w->first_step);
    else
        snprintf(out, cap, "steps %lld-%lld", (long long)w->first_step,
                 (long long)(w->first_step + w->steps - 1));
}

static void windows_text(FILE *out, const tp_ops_facts *f)
{
    for (size_t i = 0; i < f->nwindows; i++) {
        const tp_ops_window_fact *w = &f->windows[i];
        if (i >= 8) {
            fprintf(out, "  ... and %zu more windows (report --json lists them all)\n",
                    f->nwindows - i);
            break;
        }
        char rank[32] = "";
        if (w->rank >= 0)
            snprintf(rank, sizeof rank, "rank %d, ", w->rank);
        if (w->skipped) {
            fprintf(out, "  %spid %d, %s: skipped: %s\n", rank, (int)w->pid,
                    tp_ops_reason_words(w->reason), w->note ? w->note : "");
            continue;
        }
        char steps[80];
        window_steps(steps, sizeof steps, w);
        fprintf(out, "  %spid %d, %s: %s (%.1f s to %.1f s), %lld events%s", rank, (int)w->pid,
                tp_ops_reason_words(w->reason), steps, w->start_s, w->end_s, (long long)w->events,
                w->cuda ? ", with the GPU's" : "");
        if (w->dropped)
            fprintf(out, " (%lld more left out: the bound is 500,000 a window)",
                    (long long)w->dropped);
        if (w->note)
            fprintf(out, "; %s", w->note);
        fputc('\n', out);
    }
}

static void rank_ops_text(FILE *out, const tp_ops_facts *f, int rank, bool device)
{
    const char *phases[64];
    size_t np = tp_ops_phases_by_time(f, rank, phases, 64);
    int steps = steps_of(f, rank);
    for (size_t p = 0; p < np && p < PHASES_SHOWN; p++) {
        double phase_s = tp_ops_phase_time_s(f, rank, phases[p]);
        char rank_label[32] = "";
        if (rank >= 0)
            snprintf(rank_label, sizeof rank_label, "rank %d  ", rank);
        fprintf(out, "  %s%s: %.2f ms a step\n", rank_label, *phases[p] ? phases[p] : "(no phase)",
                steps ? phase_s * 1e3 / steps : 0.0);
        fprintf(out, "    %-44s %8s %12s %12s%s\n", "operator", "calls", "CPU total ms",
                "CPU self ms", device ? "  device ms  allocated" : "");
        size_t shown = 0;
        for (size_t i = 0; i < f->nops && shown < OPS_SHOWN; i++) {
            const tp_op_fact *o = &f->ops[i];
            if (o->rank != rank || o->phase != phases[p])
                continue;
            shown++;
            char total[32], self[32], dev[32], alloc[32];
            ms(total, sizeof total, o->cpu_total_s);
            ms(self, sizeof self, o->cpu_self_s);
            ms(dev, sizeof dev, o->device_total_s);
            fprintf(out, "    %-44.44s %8llu %12s %12s", o->name, (unsigned long long)o->calls,
                    total, self);
            tp_format_value(alloc, sizeof alloc, "bytes", o->alloc_bytes);
            if (device)
                fprintf(out, " %10s %10s", dev, o->alloc_bytes > 0 ? alloc : "-");
            fputs(o->range ? "  (range)\n" : "\n", out);
        }
    }
}

/* Where rank's host was while its GPU sat idle (idle seconds in its captured
 * steps), its three biggest shares with the step thread's function where
 * its stacks saw one: ": 45% of that while the host was in backward (f,
 * file:line), ..." for the report's line, or (cite) " backward 45% (f,
 * file:line), ..." for a verdict. "" without idle time. */
static void idle_where(char *out, size_t cap, const tp_ops_facts *f, int rank, double idle,
                       bool cite)
{
    size_t n = 0, len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < f->nidle && n < 3 && idle > 0 && len < cap; i++) {
        const tp_gpu_idle_fact *g = &f->idle[i];
        if (g->rank != rank)
            continue;
        const char *sep = n++ ? ", " : cite ? " " : ": ";
        const char *phase = *g->phase ? g->phase : "no phase";
        double share = 100 * g->idle_s / idle;
        len += (size_t)(cite ? snprintf(out + len, cap - len, "%s%s %.0f%%", sep, phase, share)
                             : snprintf(out + len, cap - len,
                                        "%s%.0f%% of that while the host was in %s", sep, share,
                                        phase));
        if (g->function && len < cap) { /* the step thread's stacks then */
            char place[TP_PLACE_MAX];
            tp_format_place(place, sizeof place, g->file, g->line);
            len += (size_t)snprintf(out + len, cap - len, " (%s, %s: %llu of %llu sample%s)",
                                    g->function, place, (unsigned long long)g->function_samples,
                                    (unsigned long long)g->samples, g->samples == 1 ? "" : "s");
        }
    }
}

static void rank_gpu_text(FILE *out, const tp_ops_facts *f, int rank)
{
    const tp_kernel_fact *shown[KERNELS_SHOWN] = {0};
    char column[KERNELS_SHOWN][160];
    size_t n = tp_rank_kernels(f, rank, KERNELS_SHOWN, shown, column, 60);
    for (size_t i = 0; i < n; i++) {
        const tp_kernel_fact *k = shown[i];
        if (!i)
            fprintf(out, "  kernels (device ms, calls, the operator that launched them):\n");
        fprintf(out, "    %10.2f %7llu  %-60s  %s\n", k->device_s * 1e3,
                (unsigned long long)k->calls, column[i], *k->op ? k->op : "?");
    }
    for (size_t b = 0; b < f->nbusy; b++) {
        if (f->busy[b].rank != rank || f->busy[b].span_s <= 0)
            continue;
        double idle = f->busy[b].span_s - f->busy[b].busy_s;
        char where[600];
        idle_where(where, sizeof where, f, rank, idle, false);
        fprintf(out, "  the GPU sat idle %.0f%% of the captured steps%s\n",
                100 * idle / f->busy[b].span_s, where);
    }
}

void tp_ops_idle_cite(char *out, size_t cap, const tp_ops_facts *f, int rank)
{
    out[0] = '\0';
    for (size_t b = 0; b < f->nbusy; b++) {
        if (f->busy[b].rank != rank || f->busy[b].span_s <= 0)
            continue;
        char where[600];
        idle_where(where, sizeof where, f, rank, f->busy[b].span_s - f->busy[b].busy_s, true);
        if (where[0])
            snprintf(out, cap, " While the GPU idled, the host was in%s (PyTorch's profiler).",
                     where);
        return;
    }
}

void tp_report_ops_text(FILE *out, const tp_summary *s)
{
    const tp_ops_facts *f = &s->ops;
    if (!f->nwindows)
        return;
    bool device = false;
    for (size_t i = 0; i < f->nops; i++)
        device = device || f->ops[i].device_total_s > 0;
    fprintf(out,
            "\nInside the steps (PyTorch's profiler in %zu capture window%s; their steps are "
            "left out of the step figures)\n",
            f->nwindows, f->nwindows == 1 ? "" : "s");
    windows_text(out, f);
    int ranks[RANKS_SHOWN];
    size_t nr = 0;
    for (size_t i = 0; i < f->nwindows && nr < RANKS_SHOWN; i++) {
        bool seen = false;
        for (size_t k = 0; k < nr; k++)
            seen = seen || ranks[k] == f->windows[i].rank;
        if (!seen && steps_of(f, f->windows[i].rank))
            ranks[nr++] = f->windows[i].rank;
    }
    for (size_t r = 0; r < nr; r++) {
        rank_ops_text(out, f, ranks[r], device);
        rank_gpu_text(out, f, ranks[r]);
    }
    for (size_t i = 0; i < f->nwindows; i++) {
        const tp_ops_window_fact *w = &f->windows[i];
        if (isnan(w->peak_allocated_bytes) || isnan(w->device_memory_bytes))
            continue;
        char peak[32], total[32];
        tp_format_value(peak, sizeof peak, "bytes", w->peak_allocated_bytes);
        tp_format_value(total, sizeof total, "bytes", w->device_memory_bytes);
        double headroom = 1 - w->peak_allocated_bytes / w->device_memory_bytes;
        fprintf(out,
                "  memory: the caching allocator peaked at %s of the GPU's %s (%.0f%% "
                "headroom)%s\n",
                peak, total, 100 * headroom,
                headroom < 0.10 ? ": under 10%, a bigger batch or model will not fit; "
                                  "activation checkpointing or a smaller batch gives room"
                                : "");
        break;
    }
}

/* One capture window: why, which steps, what it caught. */
static void window_json(json_writer *w, const tp_ops_window_fact *x)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, x->rank);
    json_key(w, "pid");
    json_int(w, x->pid);
    json_key(w, "reason");
    json_string(w, x->reason == 1 ? "schedule" : x->reason == 2 ? "demand" : "slow");
    json_key(w, "first_step");
    json_int(w, x->first_step);
    json_key(w, "steps");
    json_int(w, x->steps);
    json_key(w, "start_s");
    json_double(w, x->start_s);
    json_key(w, "end_s");
    json_double(w, x->end_s);
    json_key(w, "cuda");
    json_bool(w, x->cuda);
    json_key(w, "skipped");
    json_bool(w, x->skipped);
    json_key(w, "note");
    if (x->note)
        json_string(w, x->note);
    else
        json_null(w);
    json_key(w, "events");
    json_int(w, x->events);
    json_key(w, "dropped");
    json_int(w, x->dropped);
    json_key(w, "peak_allocated_bytes");
    json_double(w, x->peak_allocated_bytes);
    json_key(w, "reserved_bytes");
    json_double(w, x->reserved_bytes);
    json_key(w, "device_memory_bytes");
    json_double(w, x->device_memory_bytes);
    json_object_end(w);
}

/* One operator of a phase, over the windows. */
static void op_json(json_writer *w, const tp_op_fact *o)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, o->rank);
    json_key(w, "phase");
    json_string(w, o->phase);
    json_key(w, "name");
    json_string(w, o->name);
    json_key(w, "range");
    json_bool(w, o->range);
    json_key(w, "calls");
    json_int(w, (int64_t)o->calls);
    json_key(w, "cpu_total_s");
    json_double(w, o->cpu_total_s);
    json_key(w, "cpu_self_s");
    json_double(w, o->cpu_self_s);
    json_key(w, "device_total_s");
    json_double(w, o->device_total_s);
    json_key(w, "alloc_bytes");
    json_double(w, o->alloc_bytes);
    json_object_end(w);
}

/* One kernel (or copy, or memset) with the operator that launched it. */
static void kernel_json(json_writer *w, const tp_kernel_fact *k)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, k->rank);
    json_key(w, "name");
    json_string(w, k->name);
    char plain[1024];
    tp_kernel_demangled(plain, sizeof plain, k->name);
    json_key(w, "demangled"); /* as the C++ runtime spells it; the name where not mangled */
    json_string(w, plain);
    json_key(w, "kind");
    json_string(w, k->kind == 3 ? "kernel" : k->kind == 4 ? "memcpy" : "memset");
    json_key(w, "op");
    json_string(w, k->op);
    json_key(w, "calls");
    json_int(w, (int64_t)k->calls);
    json_key(w, "device_s");
    json_double(w, k->device_s);
    json_object_end(w);
}

/* The GPU's idle time in a phase, and the host's function then. */
static void idle_json(json_writer *w, const tp_gpu_idle_fact *g)
{
    json_object_begin(w);
    json_key(w, "rank");
    json_int(w, g->rank);
    json_key(w, "phase");
    json_string(w, g->phase);
    json_key(w, "idle_s");
    json_double(w, g->idle_s);
    json_key(w, "function");
    if (g->function) {
        json_object_begin(w);
        json_key(w, "function");
        json_string(w, g->function);
        json_key(w, "file");
        json_string(w, g->file);
        json_key(w, "line");
        json_int(w, g->line);
        json_key(w, "share");
        json_double(w, g->function_share);
        json_key(w, "of_samples"); /* the step thread's samples in this idle time */
        json_int(w, (int64_t)g->samples);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_object_end(w);
}

void tp_report_ops_json(json_writer *w, const tp_summary *s)
{
    const tp_ops_facts *f = &s->ops;
    json_key(w, "windows");
    json_array_begin(w);
    for (size_t i = 0; i < f->nwindows; i++)
        window_json(w, &f->windows[i]);
    json_array_end(w);
    json_key(w, "ops");
    json_array_begin(w);
    for (size_t i = 0; i < f->nops; i++)
        op_json(w, &f->ops[i]);
    json_array_end(w);
    json_key(w, "kernels");
    json_array_begin(w);
    for (size_t i = 0; i < f->nkernels && i < 200; i++)
        kernel_json(w, &f->kernels[i]);
    json_array_end(w);
    json_key(w, "gpu_idle");
    json_array_begin(w);
    for (size_t i = 0; i < f->nidle; i++)
        idle_json(w, &f->idle[i]);
    json_array_end(w);
}

void tp_ops_cite(char *out, size_t cap, const tp_ops_facts *f, int rank)
{
    out[0] = '\0';
    const char *phases[64];
    size_t np = tp_ops_phases_by_time(f, rank, phases, 64), len = 0, cited = 0;
    for (size_t p = 0; p < np && cited < 2 && len < cap; p++) {
        if (tp_phase_kind_of(phases[p]) != TP_PHASE_KIND_COMPUTE)
            continue;
        const tp_op_fact *top[2];
        size_t n = tp_ops_top_outer(f, rank, phases[p], top, 2);
        double phase_s = tp_ops_phase_time_s(f, rank, phases[p]);
        if (!n || phase_s <= 0)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s%s: ",
                                cited++ ? "; " : " Inside (PyTorch's profiler): ", phases[p]);
        for (size_t k = 0; k < n && k < 2 && len < cap; k++)
            len += (size_t)snprintf(out + len, cap - len, "%s%s %.0f%%", k ? ", " : "",
                                    top[k]->name + (strncmp(top[k]->name, "aten::", 6) ? 0 : 6),
                                    100 * top[k]->outer_s / phase_s);
    }
    if (cited && len < cap)
        snprintf(out + len, cap - len, " of its time.");
}
