/* bottleneck_words.c: see bottleneck_words.h. */
#include "render/bottleneck_words.h"

#include <stdio.h>

#include "analyze/storage_typical.h"
#include "core/metric_catalog.h"
#include "core/step_rules.h"
#include "render/remedy_words.h"

const char *tp_limit_name(tp_limit limit)
{
    switch (limit) {
    case TP_LIMIT_INPUT: return "input_bound";
    case TP_LIMIT_COMPUTE: return "compute_bound";
    case TP_LIMIT_BALANCED: return "balanced";
    }
    return "balanced";
}

/* What to try for an input limit, from what the loader run saw (l) and
 * what the script does (f): the verdicts' words for CPU-bound loading and
 * for more workers, and small reads' packing where the reads were small. */
static void input_advice(FILE *out, const tp_bottleneck_run *l, const tp_model_facts *f)
{
    char words[512];
    if (tp_loader_cpu_bound(l))
        fprintf(out, " The CPUs were %.0f%% busy while the loader ran alone: %s.", l->cpu_mean,
                tp_cpu_bound_loading_words);
    else if (tp_loader_crowded(l)) {
        tp_more_workers_words(words, sizeof words, f, "");
        fprintf(out,
                " The CPUs were %.0f%% busy while the loader ran, its own processes only %.0f%%: "
                "other processes compete for them, and the loader's limit is theirs as much as "
                "its own. Find them (trainprof top, or top) and measure again where the CPUs are "
                "free. %s.",
                l->cpu_mean, l->own_cpu_mean, words);
    } else {
        tp_more_workers_words(words, sizeof words, f, "");
        fprintf(out, " %s (see trainprof iobench).", words);
    }
    double kib;
    if (tp_loader_small_reads(l, &kib))
        fprintf(out, " Reads this small come from many small files or random access: samples "
                     "packed into larger files (WebDataset shards, HDF5, LMDB), kept in memory "
                     "or on local NVMe.");
    fputc('\n', out);
}

void tp_bottleneck_verdict_text(FILE *out, const tp_bottleneck_run *r, bool samples, tp_limit limit)
{
    const char *unit = samples ? "samples/s" : "steps/s";
    double train = r[TP_BOTTLENECK_REPLAY].rate, input = r[TP_BOTTLENECK_LOADER].rate;
    if (limit == TP_LIMIT_INPUT) {
        const tp_bottleneck_run *l = &r[TP_BOTTLENECK_LOADER];
        fprintf(out,
                "input-bound: the loader alone delivers %.1f %s, the training could take %.1f "
                "(%.1fx); %.2f ms per sample. The loader ran %.0f worker processes on %d CPUs; "
                "CPU averaged %.0f%% and the disks read %.1f MB/s",
                input, unit, train, input > 0 ? train / input : 0, input > 0 ? 1e3 / input : 0,
                l->workers, l->cpus, l->cpu_mean, l->disk_read_mb_s);
        double kib;
        tp_loader_small_reads(l, &kib);
        if (l->disk_read_iops >= 1)
            fprintf(out, " in %.0f reads/s of %.0f KiB", l->disk_read_iops, kib);
        fprintf(out,
                " while it ran (typically a disk reads ~%.0f MB/s, NVMe ~%.0f MB/s; "
                "trainprof iobench PATH measures yours).",
                TP_TYPICAL_DISK_MB_S, TP_TYPICAL_NVME_MB_S);
        input_advice(out, l, &r[TP_BOTTLENECK_ASIS].run_facts);
    } else if (limit == TP_LIMIT_COMPUTE) {
        const tp_bottleneck_run *t = &r[TP_BOTTLENECK_REPLAY];
        fprintf(out,
                "compute-bound: the training alone takes %.1f %s while the loader could deliver "
                "%.1f (%.1fx). Speed-ups come from the computation",
                train, unit, input, train > 0 ? input / train : 0);
        if (t->has_gpu)
            fprintf(out, ": GPU 0 averaged %.0f%% utilization with %.0f%% of its memory at peak",
                    t->gpu_util, 100 * t->gpu_mem_frac);
        char remedies[512];
        tp_compute_remedies(remedies, sizeof remedies,
                            t->has_facts ? &t->facts : &r[TP_BOTTLENECK_ASIS].run_facts);
        fprintf(out, "; try %s.\n", remedies);
    } else {
        fprintf(out,
                "balanced: the input limit (%.1f %s) and the training limit (%.1f) are close "
                "(the loader alone gives at least %.0f%% of what the training takes, and the "
                "training at least %.0f%% of what the loader gives); both need work to go "
                "faster.\n",
                input, unit, train, 100 * (1 - TP_INPUT_BOUND_SHARE), 100 * TP_COMPUTE_LIMIT_SHARE);
    }
}

void tp_bottleneck_json_details(json_writer *w, const tp_bottleneck_run *r, bool judged)
{
    if (judged) {
        const tp_bottleneck_run *l = &r[TP_BOTTLENECK_LOADER];
        json_key(w, "loader");
        json_object_begin(w);
        json_key(w, "workers");
        json_double(w, l->workers);
        json_key(w, "cpus");
        json_int(w, l->cpus);
        json_key(w, TP_METRIC_CPU_UTIL_PERCENT);
        json_double(w, l->cpu_mean);
        json_key(w, "disk_read_mb_s");
        json_double(w, l->disk_read_mb_s);
        json_key(w, TP_METRIC_DISK_READ_IOPS);
        json_double(w, l->disk_read_iops);
        json_key(w, "training_cpu_percent"); /* of the machine's CPUs */
        json_double(w, l->own_cpu_mean);
        json_key(w, "training_read_mb_s");
        json_double(w, l->own_read_mb_s);
        json_object_end(w);
    }
    const tp_bottleneck_run *t = &r[TP_BOTTLENECK_REPLAY];
    if (!t->has_facts)
        return;
    const tp_model_facts *f = &t->facts;
    char hint[512], cc[32];
    json_key(w, "model");
    json_object_begin(w);
    json_key(w, "dtype");
    json_string(w, f->dtype);
    json_key(w, "device");
    json_string(w, f->device);
    json_key(w, "compute_capability");
    snprintf(cc, sizeof cc, "%d.%d", f->cc_major, f->cc_minor);
    if (f->cc_major > 0)
        json_string(w, cc);
    else
        json_null(w);
    json_key(w, "autocast");
    if (f->autocast >= 0)
        json_bool(w, f->autocast == 1);
    else
        json_null(w);
    json_key(w, "precision_hint");
    if (tp_precision_words(hint, sizeof hint, f))
        json_string(w, hint);
    else
        json_null(w);
    json_object_end(w);
}
