/* gpu_memory_words.c: a rank's GPU memory in words and JSON
 * (gpu_memory_words.h). */
#include "render/gpu_memory_words.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "render/report.h"
#include "render/units.h"

/* ranks the report names one by one; the rest in one line */
#define SHOWN_RANKS 4

static void bytes(char *out, size_t cap, double v) { tp_format_value(out, cap, "bytes", v); }

/* "Rank 3" or, for a training of one process, "The training" (lower case
 * where !capital). */
static void who(char *out, size_t cap, int rank, bool capital)
{
    if (rank >= 0)
        snprintf(out, cap, "%s %d", capital ? "Rank" : "rank", rank);
    else
        snprintf(out, cap, "%s training", capital ? "The" : "the");
}

static const char fragment_advice[] =
    " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow its segments "
    "instead of caching blocks of odd sizes.";

/* " It reserved up to 6.1 GiB more than it allocated (fragmentation): ..."
 * where fragmented, or "". */
static void fragment_words(char *out, size_t cap, const tp_gpu_memory_rank *g)
{
    out[0] = '\0';
    if (!g->fragmented)
        return;
    char f[32];
    bytes(f, sizeof f, g->fragment_bytes);
    snprintf(out, cap,
             " It reserved up to %s more than it had allocated at its peak "
             "(fragmentation).%s",
             f, g->expandable ? " It runs with expandable segments already." : fragment_advice);
}

void tp_gpu_pressure_words(char *out, size_t cap, const tp_verdict *v)
{
    const tp_gpu_memory_rank *g = v->f.gpu_memory.allocator;
    char name[32], peak[32], limit[32], frag[400];
    who(name, sizeof name, g->rank, true);
    bytes(peak, sizeof peak, g->peak_allocated_bytes);
    bytes(limit, sizeof limit, g->limit_bytes);
    fragment_words(frag, sizeof frag, g);
    snprintf(out, cap,
             "%s's CUDA caching allocator peaked at %s of the %s it can use (%.0f%% "
             "headroom, by its readings at step boundaries): a bigger batch or a longer sequence "
             "will not fit, and fragmentation can end the run out of memory.%s Try a smaller "
             "batch with gradient accumulation, mixed precision, or activation checkpointing.",
             name, peak, limit, 100 * (1 - g->peak_allocated_bytes / g->limit_bytes), frag);
}

void tp_gpu_growth_words(char *out, size_t cap, const tp_verdict *v)
{
    const tp_gpu_memory_rank *g = v->f.gpu_growth;
    char name[32], rate[32], a[32], b[32], limit[32], when[200] = "";
    who(name, sizeof name, g->rank, true);
    bytes(rate, sizeof rate, g->growth_bytes_per_step);
    bytes(a, sizeof a, g->growth_first_bytes);
    bytes(b, sizeof b, g->growth_last_bytes);
    bytes(limit, sizeof limit, g->limit_bytes);
    if (g->oom && g->oom->step)
        snprintf(when, sizeof when, " It ran out of memory at step %zu.", g->oom->step);
    else if (isfinite(g->out_of_room_step))
        snprintf(when, sizeof when,
                 " At that rate its peak meets the %s it can use at about step %.0f (it had "
                 "begun %zu).",
                 limit, g->out_of_room_step, g->steps_seen);
    snprintf(out, cap,
             "%s's GPU memory between steps grows by %s a step (from %s to %s over its "
             "steps past the warm-up): a leak on the device, as when a loss or an output is kept "
             "with its graph (keep loss.item(), or a tensor's .detach()) or a list keeps "
             "tensors of every step.%s",
             name, rate, a, b, when);
}

/* The share of its limit a rank's peak took (NaN unknown). */
static double peak_share(const tp_gpu_memory_rank *g)
{
    return g->peak_allocated_bytes / g->limit_bytes;
}

static void headroom_line(FILE *out, const tp_gpu_memory_rank *g)
{
    char name[32], peak[32], cap[32], start[32], adds[32], other[32], line[900], fit[200] = "";
    who(name, sizeof name, g->rank, false);
    bytes(peak, sizeof peak, g->peak_allocated_bytes);
    bytes(cap, sizeof cap, g->capacity_bytes);
    bytes(start, sizeof start, g->start_bytes);
    bytes(adds, sizeof adds, g->adds_bytes);
    bytes(other, sizeof other, g->other_bytes);
    if (g->growing)
        snprintf(fit, sizeof fit, ", and what stays grows (gpu_memory_growth)");
    else if (g->batch_factor >= 1.1)
        snprintf(fit, sizeof fit,
                 ": a batch about %.1fx larger would fit (an estimate: it assumes the "
                 "activations grow with the batch and nothing else does)",
                 floor(g->batch_factor * 10) / 10);
    else if (isfinite(g->batch_factor))
        snprintf(fit, sizeof fit, ": no room for a larger batch");
    int n = snprintf(line, sizeof line, "%s: peak %s of %s (%.0f%%", name, peak, cap,
                     100 * g->peak_allocated_bytes / g->capacity_bytes);
    if (isfinite(g->other_bytes) && g->other_bytes > 0 && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, "; %s of it held outside the allocator",
                      other);
    if (n > 0 && (size_t)n < sizeof line && isfinite(g->adds_bytes))
        n += snprintf(line + n, sizeof line - (size_t)n,
                      "); %s stays allocated between steps (weights, gradients, optimizer "
                      "state), a step adds %s%s.",
                      start, adds, fit);
    else if (n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, ").");
    if (n > 0 && (size_t)n < sizeof line)
        fragment_words(line + n, sizeof line - (size_t)n, g);
    n = (int)strlen(line);
    if (g->retries > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n,
                 " It freed its cache %.0f times to retry an allocation (each a synchronizing "
                 "cudaFree that slows its step): memory pressure before any out-of-memory.",
                 g->retries);
    tp_report_wrapped(out, "", line);
}

static int by_share(const void *a, const void *b)
{
    double x = peak_share(*(const tp_gpu_memory_rank *const *)a);
    double y = peak_share(*(const tp_gpu_memory_rank *const *)b);
    x = isnan(x) ? -1 : x, y = isnan(y) ? -1 : y;
    return (x < y) - (x > y);
}

void tp_gpu_memory_text(FILE *out, const tp_verdicts *v)
{
    const tp_gpu_memory *m = &v->gpu_memory;
    if (!m->n)
        return;
    const tp_gpu_memory_rank **order = malloc(m->n * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < m->n; i++)
        order[i] = &m->v[i];
    if (m->n > SHOWN_RANKS) /* the tightest first */
        qsort(order, m->n, sizeof *order, by_share);
    fprintf(out, "\nGPU memory (the CUDA caching allocator, read at step boundaries)\n");
    size_t shown = m->n > SHOWN_RANKS ? SHOWN_RANKS : m->n;
    for (size_t i = 0; i < shown; i++)
        headroom_line(out, order[i]);
    if (m->n > shown)
        fprintf(out, "  and %zu more ranks, each at most %.0f%% of its capacity at its peak\n",
                m->n - shown,
                100 * order[shown]->peak_allocated_bytes / order[shown]->capacity_bytes);
    free(order);
}

static const tp_gpu_memory_rank *rank_of_death(const tp_verdicts *v, const tp_death *d)
{
    for (size_t i = 0; i < v->gpu_memory.n; i++)
        if (v->gpu_memory.v[i].oom == d)
            return &v->gpu_memory.v[i];
    return NULL;
}

/* "; in its capture windows the operators that allocated most a step were
 * aten::linear (3.20 GiB), ..." for rank's outermost operators (up to 3),
 * or "" where its windows saw no allocation. */
static void allocating_ops(char *out, size_t cap, const tp_ops_facts *f, int rank)
{
    out[0] = '\0';
    int steps = 0;
    for (size_t i = 0; i < f->nwindows; i++)
        if (f->windows[i].rank == rank)
            steps += f->windows[i].steps;
    const tp_op_fact *top[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < f->nops && steps > 0; i++) {
        const tp_op_fact *o = &f->ops[i];
        if (o->rank != rank || !(o->outer_s > 0) || !(o->alloc_bytes > 0))
            continue; /* the outermost operators: their callees' allocations are theirs */
        for (int k = 0; k < 3; k++)
            if (!top[k] || o->alloc_bytes > top[k]->alloc_bytes) {
                for (int j = 2; j > k; j--)
                    top[j] = top[j - 1];
                top[k] = o;
                break;
            }
    }
    size_t n = 0;
    for (int k = 0; k < 3 && top[k] && n < cap; k++) {
        char b[32];
        bytes(b, sizeof b, top[k]->alloc_bytes / steps);
        n += (size_t)snprintf(out + n, cap - n, "%s%s (%s%s%s)",
                              k ? ", "
                                : "; in its capture windows the operators that allocated "
                                  "most a step were ",
                              top[k]->name, b, *top[k]->phase ? ", " : "", top[k]->phase);
    }
}

void tp_gpu_oom_words(char *out, size_t cap, const tp_summary *s, const tp_verdicts *v,
                      const tp_death *d)
{
    out[0] = '\0';
    if (!tp_death_is_gpu_oom(d))
        return;
    const tp_gpu_memory_rank *g = rank_of_death(v, d);
    char tried[32], alloc[32], res[32], free_[32], usual[32], rate[32];
    bytes(tried, sizeof tried, d->oom_tried_bytes);
    bytes(free_, sizeof free_, d->oom_free_bytes);
    size_t n = (size_t)snprintf(out, cap, " It ran out of GPU memory");
    if (n < cap && isfinite(d->oom_tried_bytes))
        n += (size_t)snprintf(out + n, cap - n, " asking for %s", tried);
    if (n < cap && g && isfinite(g->oom_allocated_bytes)) {
        bytes(alloc, sizeof alloc, g->oom_allocated_bytes);
        bytes(res, sizeof res, g->oom_reserved_bytes);
        n += (size_t)snprintf(out + n, cap - n, " with %s allocated and %s reserved by PyTorch",
                              alloc, res);
    }
    if (n < cap && isfinite(d->oom_free_bytes))
        n += (size_t)snprintf(out + n, cap - n, ", %s free on the device", free_);
    if (n < cap && g && isfinite(g->peak_allocated_bytes)) {
        bytes(usual, sizeof usual, g->usual_peak_bytes);
        n += (size_t)snprintf(out + n, cap - n, "; its steps had peaked at %s", usual);
    }
    if (n < cap) {
        allocating_ops(out + n, cap - n, &s->ops, d->rank);
        n += strlen(out + n);
    }
    if (n < cap && g && g->growing) {
        bytes(rate, sizeof rate, g->growth_bytes_per_step);
        n += (size_t)snprintf(out + n, cap - n,
                              ", and what stays allocated between steps had grown by %s a step "
                              "(a leak: gpu_memory_growth)",
                              rate);
    }
    if (n < cap)
        snprintf(out + n, cap - n,
                 ". Try %sa smaller batch (with gradient accumulation), activation "
                 "checkpointing, bf16 autocast%s.",
                 g && g->growing ? "keeping no tensor with its graph across steps, then " : "",
                 g && g->fragmented && !g->expandable
                     ? ", or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (its reserve "
                       "far exceeded what it allocated)"
                     : "");
}

static void growth_json(json_writer *w, const tp_gpu_memory_rank *g)
{
    json_key(w, "growth");
    if (!g->growing) {
        json_null(w);
        return;
    }
    json_object_begin(w);
    json_field_double(w, "bytes_per_step", g->growth_bytes_per_step);
    json_field_double(w, "first_bytes", g->growth_first_bytes);
    json_field_double(w, "last_bytes", g->growth_last_bytes);
    json_field_double(w, "out_of_room_step", g->out_of_room_step);
    json_object_end(w);
}

static void oom_json(json_writer *w, const tp_gpu_memory_rank *g)
{
    json_key(w, "out_of_memory");
    if (!g->oom) {
        json_null(w);
        return;
    }
    json_object_begin(w);
    json_field_double(w, "tried_bytes", g->oom->oom_tried_bytes);
    json_field_double(w, "free_bytes", g->oom->oom_free_bytes);
    json_field_double(w, "allocated_bytes", g->oom_allocated_bytes);
    json_field_double(w, "reserved_bytes", g->oom_reserved_bytes);
    json_field_double(w, "step", g->oom->step ? (double)g->oom->step : NAN);
    json_object_end(w);
}

void tp_gpu_memory_json(json_writer *w, const tp_verdicts *v)
{
    json_key(w, "gpu_memory");
    json_array_begin(w);
    for (size_t i = 0; i < v->gpu_memory.n; i++) {
        const tp_gpu_memory_rank *g = &v->gpu_memory.v[i];
        json_object_begin(w);
        json_key(w, "rank");
        json_int(w, g->rank);
        json_key(w, "pid");
        json_int(w, g->pid);
        json_key(w, "readings");
        json_int(w, (int64_t)g->readings);
        json_field_double(w, "capacity_bytes", g->capacity_bytes);
        json_field_double(w, "other_bytes", g->other_bytes);
        json_field_double(w, "limit_bytes", g->limit_bytes);
        json_field_double(w, "peak_allocated_bytes", g->peak_allocated_bytes);
        json_field_double(w, "usual_peak_bytes", g->usual_peak_bytes);
        json_field_double(w, "peak_reserved_bytes", g->peak_reserved_bytes);
        json_field_double(w, "between_steps_bytes", g->start_bytes);
        json_field_double(w, "step_adds_bytes", g->adds_bytes);
        json_field_double(w, "batch_factor", g->batch_factor);
        json_field_double(w, "fragment_bytes", g->fragment_bytes);
        json_key(w, "fragmented");
        json_bool(w, g->fragmented);
        json_key(w, "expandable_segments");
        json_bool(w, g->expandable);
        json_field_double(w, "alloc_retries", g->retries);
        json_field_double(w, "ooms", g->ooms);
        growth_json(w, g);
        oom_json(w, g);
        json_object_end(w);
    }
    json_array_end(w);
}
