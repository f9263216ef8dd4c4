/* gpu_memory.c: each rank's GPU memory as its allocator kept it
 * (gpu_memory.h). */
#include "analyze/gpu_memory.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "facts.h"
#include "util/grow.h"
#include "util/ns_math.h"

bool tp_death_is_gpu_oom(const tp_death *d)
{
    if (!isnan(d->oom_tried_bytes))
        return true;
    const char *type = d->exception_type, *message = d->exception_message;
    size_t n = type ? strlen(type) : 0, k = strlen("OutOfMemoryError");
    return (n >= k && strcmp(type + n - k, "OutOfMemoryError") == 0) ||
           (message && strstr(message, "CUDA out of memory"));
}

/* The series metric of process p's allocator: its summary, or NULL. */
static const tp_series_summary *of(const tp_summary *s, const tp_gpu_memory_rank *g,
                                   const char *metric)
{
    char labels[48];
    tp_labels_pid(labels, sizeof labels, (long)g->pid);
    const tp_series_summary *m = tp_summary_find(s, g->agent_id, metric, labels);
    return m && m->stats.count ? m : NULL;
}

static double max_of(const tp_series_summary *m) { return m ? m->stats.max : NAN; }

/* Held on the rank's GPU outside its allocator: NVML's memory used at its
 * most over the steps less the allocator's peak reserved (another process's,
 * the CUDA context, NCCL's buffers), NaN where NVML did not record it. */
static double other_bytes(const tp_summary *s, const tp_gpu_memory_rank *g)
{
    const tp_run_gpu *gpu = tp_summary_rank_gpu(s, g->rank);
    if (!gpu || gpu->agent_id != g->agent_id || isnan(g->peak_reserved_bytes))
        return NAN;
    char labels[32];
    tp_labels_gpu(labels, sizeof labels, gpu->index);
    const tp_series_summary *used =
        tp_summary_find(s, gpu->agent_id, TP_METRIC_GPU_MEM_USED_BYTES, labels);
    if (!used || !used->stats.count)
        return NAN;
    double other = used->steps.max - g->peak_reserved_bytes;
    return other > 0 ? other : 0;
}

static bool expandable_segments(const tp_summary *s, int64_t agent_id)
{
    const char *conf =
        tp_run_agent_meta_get(s->run, agent_id, TP_META_FACT TP_FACT_CUDA_ALLOC_CONF);
    return conf && strstr(conf, "expandable_segments:True");
}

/* The growth rule of gpu_memory.h over the rank's steps, from its readings
 * of allocated; g->growing and its figures where it fires. */
static void judge_growth(const tp_summary *s, tp_gpu_memory_rank *g)
{
    const tp_rank_course *c = tp_course_rank(&s->course, g->rank);
    const tp_step_row *row = NULL;
    for (size_t i = 0; i < s->timings.nsteps && !row; i++)
        if (s->timings.steps[i].rank == g->rank)
            row = &s->timings.steps[i];
    if (!c || g->readings < TP_GPU_GROWTH_MIN_READINGS)
        return;
    size_t first = row ? row->warmup : 0;
    if (c->n <= first)
        return;
    first += (size_t)((double)(c->n - first) * TP_GPU_GROWTH_SETTLE);
    if (c->n - first < TP_GPU_GROWTH_MIN_STEPS)
        return;
    int64_t t0 = c->a[first], t1 = c->b[c->n - 1], slice = (t1 - t0) / TP_GPU_GROWTH_SLICES;
    if (slice <= 0)
        return;
    char labels[48];
    tp_labels_pid(labels, sizeof labels, (long)g->pid);
    double m[TP_GPU_GROWTH_SLICES];
    for (int i = 0; i < TP_GPU_GROWTH_SLICES; i++) {
        int64_t a = tp_ns_add(t0, i * slice);
        if (!tp_run_agent_mean_between(s->run, g->agent_id, TP_METRIC_CUDA_ALLOCATED_BYTES, labels,
                                       a, tp_ns_add(a, slice), &m[i]))
            return; /* a summary-only file, or readings that stopped */
    }
    double lo = m[0], hi = m[TP_GPU_GROWTH_SLICES - 1], half = m[TP_GPU_GROWTH_SLICES / 2];
    int up = 0;
    for (int i = 1; i < TP_GPU_GROWTH_SLICES; i++)
        up += m[i] >= m[i - 1] - 0.01 * g->limit_bytes;
    if (hi - lo < TP_GPU_GROWTH_MIN_BYTES || up < TP_GPU_GROWTH_SLICES - 2 ||
        hi - half < 0.3 * (half - lo))
        return;
    /* the slices' centres as steps */
    double t_first = (double)(t0 + slice / 2) / 1e9;
    double t_last = (double)(t0 + slice * (TP_GPU_GROWTH_SLICES - 1) + slice / 2) / 1e9;
    size_t k0 = tp_course_step_at(&s->course, g->rank, t_first);
    size_t k1 = tp_course_step_at(&s->course, g->rank, t_last);
    if (k1 <= k0)
        return;
    g->growing = true;
    g->growth_first_bytes = lo, g->growth_last_bytes = hi;
    g->growth_bytes_per_step = (hi - lo) / (double)(k1 - k0);
    double room = g->limit_bytes - g->peak_allocated_bytes;
    if (!isnan(room))
        g->out_of_room_step =
            (double)g->steps_seen + (room > 0 ? room : 0) / g->growth_bytes_per_step;
}

/* The allocated and reserved of the process's last reading (at its
 * out-of-memory, the Python face takes one). */
static void last_reading(const tp_summary *s, tp_gpu_memory_rank *g)
{
    char labels[48];
    tp_labels_pid(labels, sizeof labels, (long)g->pid);
    double v;
    g->oom_allocated_bytes =
        tp_run_agent_value_at(s->run, g->agent_id, TP_METRIC_CUDA_ALLOCATED_BYTES, labels,
                              INT64_MAX, &v)
            ? v
            : NAN;
    g->oom_reserved_bytes =
        tp_run_agent_value_at(s->run, g->agent_id, TP_METRIC_CUDA_RESERVED_BYTES, labels, INT64_MAX,
                              &v)
            ? v
            : NAN;
}

static void build_rank(const tp_summary *s, tp_gpu_memory_rank *g)
{
    const tp_series_summary *alloc = of(s, g, TP_METRIC_CUDA_ALLOCATED_BYTES);
    const tp_series_summary *cap = of(s, g, TP_METRIC_CUDA_CAPACITY_BYTES);
    g->readings = alloc->stats.count;
    g->capacity_bytes = max_of(cap);
    const tp_run_gpu *gpu = tp_summary_rank_gpu(s, g->rank);
    if (isnan(g->capacity_bytes) && gpu && gpu->mem_total_bytes > 0)
        g->capacity_bytes = (double)gpu->mem_total_bytes;
    const tp_series_summary *peak = of(s, g, TP_METRIC_CUDA_PEAK_ALLOCATED_BYTES);
    g->peak_allocated_bytes = max_of(peak);
    g->usual_peak_bytes = peak ? peak->steps.p50 : NAN;
    g->peak_reserved_bytes = max_of(of(s, g, TP_METRIC_CUDA_PEAK_RESERVED_BYTES));
    g->start_bytes = alloc->steps.p50;
    g->adds_bytes = g->peak_allocated_bytes - g->start_bytes;
    if (!(g->adds_bytes >= 0))
        g->adds_bytes = NAN;
    g->other_bytes = other_bytes(s, g);
    g->limit_bytes = g->capacity_bytes - (isnan(g->other_bytes) ? 0 : g->other_bytes);
    g->batch_factor = g->adds_bytes > 0 ? (g->limit_bytes - g->start_bytes) / g->adds_bytes : NAN;
    g->fragment_bytes = g->peak_reserved_bytes - g->peak_allocated_bytes;
    g->fragmented = g->fragment_bytes >= TP_GPU_FRAGMENT_MIN_BYTES &&
                    g->fragment_bytes >= TP_GPU_FRAGMENT_SHARE * g->peak_reserved_bytes;
    g->expandable = expandable_segments(s, g->agent_id);
    g->retries = max_of(of(s, g, TP_METRIC_CUDA_ALLOC_RETRIES));
    g->ooms = max_of(of(s, g, TP_METRIC_CUDA_OOMS));
    g->growth_first_bytes = g->growth_last_bytes = g->growth_bytes_per_step = NAN;
    g->out_of_room_step = NAN;
    g->oom_allocated_bytes = g->oom_reserved_bytes = NAN;
    const tp_rank_course *c = tp_course_rank(&s->course, g->rank);
    g->steps_seen = c ? c->begun : 0;
    judge_growth(s, g);
    for (size_t i = 0; i < s->deaths.n && !g->oom; i++) {
        const tp_death *d = &s->deaths.v[i];
        if (d->agent_id == g->agent_id && d->pid == g->pid && tp_death_is_gpu_oom(d))
            g->oom = d;
    }
    if (g->oom)
        last_reading(s, g);
}

static int by_rank(const void *a, const void *b)
{
    const tp_gpu_memory_rank *x = a, *y = b;
    return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank)
                              : (x->pid > y->pid) - (x->pid < y->pid);
}

void tp_gpu_memory_build(const tp_summary *s, tp_gpu_memory *out)
{
    memset(out, 0, sizeof *out);
    tp_run_process *procs = NULL;
    size_t nprocs = 0, cap = 0;
    if (!tp_run_processes(s->run, &procs, &nprocs))
        return;
    for (size_t i = 0; i < nprocs; i++) {
        tp_gpu_memory_rank g = {
            .rank = procs[i].rank, .agent_id = procs[i].agent_id, .pid = procs[i].pid};
        if (procs[i].worker || !of(s, &g, TP_METRIC_CUDA_ALLOCATED_BYTES))
            continue;
        build_rank(s, &g);
        out->v = tp_grow(out->v, out->n, &cap, sizeof *out->v);
        out->v[out->n++] = g;
    }
    free(procs);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, by_rank);
}

void tp_gpu_memory_free(tp_gpu_memory *g)
{
    free(g->v);
    memset(g, 0, sizeof *g);
}
