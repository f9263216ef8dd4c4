/* bottleneck_facts.c: see bottleneck_facts.h. */
#include "analyze/bottleneck_facts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "core/metric_catalog.h"
#include "core/step_rules.h"
#include "store/model_facts_file.h"
#include "trainprof.h"
#include "core/run_keys.h"

/* The loader's disk reads count as small (many small files, random access)
 * below this size per request, once there are enough of them to matter. */
#define TP_SMALL_READ_KIB       64.0
#define TP_SMALL_READS_MIN_IOPS 50.0

/* Rate over the step marks after the warm-up, on the thread with most steps. */
static void measure_rate(tp_run *run, long warmup, tp_bottleneck_run *r)
{
    tp_run_mark *m;
    size_t n;
    char err[256];
    if (!tp_run_marks(run, &m, &n, err, sizeof err))
        return;
    int64_t best_thread = -1;
    size_t best = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, steps = 0;
        while (j < n && m[j].thread == m[i].thread)
            steps += m[j++].kind == TP_MARK_STEP;
        if (steps > best) {
            best = steps;
            best_thread = m[i].thread;
        }
        i = j;
    }
    long seen = 0;
    int64_t t0 = -1, t1 = -1;
    double samples = 0, pending = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].thread != best_thread)
            continue;
        if (m[i].kind == TP_MARK_SAMPLES) {
            pending += (double)m[i].value;
            continue;
        }
        if (m[i].kind != TP_MARK_STEP)
            continue;
        if (seen > warmup) {
            samples += pending; /* the step that this mark closes */
            t1 = m[i].t_ns;
            r->steps++;
        }
        if (seen == warmup)
            t0 = m[i].t_ns;
        pending = 0;
        seen++;
    }
    free(m);
    r->samples_seen = samples > 0;
    r->t0_ns = t0, r->t1_ns = t1;
    if (t0 >= 0 && t1 > t0)
        r->rate = (samples > 0 ? samples : (double)r->steps) / ((double)(t1 - t0) / 1e9);
}

static double stat_of(const tp_summary *s, const char *metric, const char *labels, bool max)
{
    const tp_series_summary *x = tp_summary_find(s, 1, metric, labels);
    return x ? (max ? x->stats.max : x->stats.mean) : NAN;
}

/* The metric's mean while the measured steps ran, else over the whole run
 * (a run too short for a sample inside its steps). */
static double mean_during(const tp_summary *s, const tp_bottleneck_run *r, const char *metric,
                          const char *labels)
{
    double v;
    if (r->t1_ns > r->t0_ns && tp_run_mean_between(s->run, metric, labels, r->t0_ns, r->t1_ns, &v))
        return v;
    return stat_of(s, metric, labels, false);
}

bool tp_bottleneck_run_measure(const char *path, long warmup, tp_bottleneck_run *r)
{
    memset(r, 0, sizeof *r);
    char err[1024];
    tp_summary s;
    if (!tp_summary_load(path, 0, &s, err, sizeof err))
        return false;
    tp_run *run = s.run;
    for (size_t i = 0; i < s.timings.nrows; i++)
        r->found_loader |= strcmp(s.timings.rows[i].name, TP_PHASE_DATALOADER_NEXT) == 0;
    measure_rate(run, warmup, r);
    r->cpu_mean = mean_during(&s, r, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    r->steal_mean = mean_during(&s, r, TP_METRIC_CPU_STEAL_PERCENT, "{}");
    r->disk_read_mb_s = mean_during(&s, r, TP_METRIC_DISK_READ_BYTES_PER_S, "{}") / 1e6;
    r->disk_read_iops = mean_during(&s, r, TP_METRIC_DISK_READ_IOPS, "{}");
    r->own_read_mb_s = mean_during(&s, r, TP_METRIC_PROC_READ_BYTES_PER_S, "{}") / 1e6;
    r->workers = stat_of(&s, TP_METRIC_PROC_COUNT, "{}", true) - 1;
    const char *cpus = tp_run_meta_get(run, TP_META_CPU_COUNT);
    r->cpus = cpus ? atoi(cpus) : 0;
    r->own_cpu_mean =
        r->cpus > 0 ? mean_during(&s, r, TP_METRIC_PROC_CPU_PERCENT, "{}") / r->cpus : NAN;
    char gpu0[32];
    tp_labels_gpu(gpu0, sizeof gpu0, 0);
    r->gpu_util = mean_during(&s, r, TP_METRIC_GPU_UTIL_PERCENT, gpu0);
    r->has_gpu = !isnan(r->gpu_util) && run->ngpus > 0;
    tp_run_model_facts(run, &r->run_facts);
    if (r->has_gpu && run->gpus[0].mem_total_bytes > 0)
        r->gpu_mem_frac = stat_of(&s, TP_METRIC_GPU_MEM_USED_BYTES, gpu0, true) /
                          (double)run->gpus[0].mem_total_bytes;
    tp_summary_close(&s);
    return true;
}

tp_limit tp_bottleneck_limit(double train_rate, double input_rate)
{
    /* below (1 - TP_INPUT_BOUND_SHARE) of the training's rate, the as-is
     * run waits for data that share of each step: report's input_bound too */
    if (input_rate < (1 - TP_INPUT_BOUND_SHARE) * train_rate)
        return TP_LIMIT_INPUT;
    if (train_rate < TP_COMPUTE_LIMIT_SHARE * input_rate)
        return TP_LIMIT_COMPUTE;
    return TP_LIMIT_BALANCED;
}

bool tp_loader_crowded(const tp_bottleneck_run *loader)
{
    double own = loader->own_cpu_mean;
    double steal = isfinite(loader->steal_mean) ? loader->steal_mean : 0;
    return loader->cpu_mean >= TP_CPU_SATURATED_PERCENT && isfinite(own) &&
           loader->cpu_mean - steal - own > own;
}

bool tp_loader_cpu_bound(const tp_bottleneck_run *loader)
{
    return loader->cpu_mean >= TP_CPU_SATURATED_PERCENT && !tp_loader_crowded(loader);
}

bool tp_loader_small_reads(const tp_bottleneck_run *loader, double *kib)
{
    *kib = loader->disk_read_iops > 0 ? loader->disk_read_mb_s * 1e6 / 1024 / loader->disk_read_iops
                                      : 0;
    bool its =
        !isfinite(loader->own_read_mb_s) || 2 * loader->own_read_mb_s >= loader->disk_read_mb_s;
    return loader->disk_read_iops >= TP_SMALL_READS_MIN_IOPS && *kib < TP_SMALL_READ_KIB && its;
}
