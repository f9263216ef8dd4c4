/* input_words.c: an input-bound verdict's cause and advice in words. */
#include "render/input_words.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/model_case.h"
#include "render/causes_words.h"
#include "render/remedy_words.h"
#include "util/labels.h"

/* Over what an input-bound verdict's cause figure x is: " since step N"
 * where they are its latest pace's, else over(x), into buf. */
static const char *input_over(char *buf, size_t cap, const tp_verdict *v,
                              const tp_series_summary *x)
{
    if (!v->f.input.over_pace || !v->pace)
        return x && x->in_steps ? " during the training steps" : "";
    buf[0] = ' ';
    tp_verdict_since(buf + 1, cap - 1, v, false);
    return buf;
}

/* "Disk vda was busy 96% of the time during the training steps (median)"
 * for cause TP_INPUT_DISK (its busiest disk), else "Tasks waited for
 * storage 40% of the time ... (median)", into buf. */
static void storage_busy_words(char *buf, size_t cap, const tp_verdict *v, tp_input_cause cause)
{
    const __typeof__(v->f.input) *f = &v->f.input;
    char since[40];
    if (cause == TP_INPUT_DISK && f->disk) {
        char labels[TP_LABELS_MAX]; /* "device=nvme0n1" */
        tp_labels_display(f->disk->series->labels, labels, sizeof labels);
        const char *dev = strchr(labels, '=');
        snprintf(buf, cap, "Disk %.40s was busy %.0f%% of the time%s (median)",
                 dev ? dev + 1 : labels, f->disk_p50, input_over(since, sizeof since, v, f->disk));
    } else {
        snprintf(buf, cap, "Tasks waited for storage %.0f%% of the time%s (median)", f->io_p50,
                 input_over(since, sizeof since, v, f->io));
    }
}

/* "Disk vda was busy 96% of the time during the training steps (median), but
 * not with the training's I/O: its threads were seen waiting on storage
 * 2% of the time ... " into out where the storage was busy and the
 * training's threads hardly waited on it; its length (0: nothing said). */
static size_t storage_not_its(char *out, size_t cap, const tp_verdict *v)
{
    const __typeof__(v->f.input) *f = &v->f.input;
    char busy[160];
    out[0] = '\0';
    if (f->storage_others == TP_INPUT_WORKERS)
        return 0;
    storage_busy_words(busy, sizeof busy, v, f->storage_others);
    int n = snprintf(out, cap,
                     "%s, but not with the training's I/O: its threads were seen waiting on "
                     "storage %.0f%% of the time (state D, all of them together). ",
                     busy, 100 * f->blocked);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void tp_input_advice(char *out, size_t cap, const tp_verdict *v)
{
    const __typeof__(v->f.input) *f = &v->f.input;
    char busy[200], since[40];
    switch (f->cause) {
    case TP_INPUT_CPU:
        if (f->own_cpu_p50 >= 0)
            snprintf(busy, sizeof busy, ", the training's own processes using %.0f%% of them",
                     f->own_cpu_p50);
        else
            busy[0] = '\0';
        snprintf(out, cap, "The CPUs were busy %.0f%% of the time%s (median)%s, so %s.", f->cpu_p50,
                 input_over(since, sizeof since, v, f->cpu), busy, tp_cpu_bound_loading_words);
        return;
    case TP_INPUT_CONTENTION:
        snprintf(out, cap,
                 "The CPUs were busy %.0f%% of the time%s (median), but the training's own "
                 "processes used only %.0f%% of the machine: other processes compete for the "
                 "CPUs. Find them (trainprof top, or top) and stop or move them, or run where "
                 "the CPUs are free; then more DataLoader workers can help.",
                 f->cpu_p50, input_over(since, sizeof since, v, f->cpu), f->own_cpu_p50);
        return;
    case TP_INPUT_DISK:
    case TP_INPUT_IO_WAIT: storage_busy_words(busy, sizeof busy, v, f->cause); break;
    case TP_INPUT_WORKERS: {
        const tp_model_facts *m = &v->facts;
        int cores = f->cpus ? atoi(f->cpus) : 0;
        size_t len = storage_not_its(out, cap, v);
        if (m->num_workers >= 0 && cores > 0 && m->num_workers >= cores) {
            snprintf(out + len, cap - len,
                     "The loader already has num_workers=%d on %d CPUs, and neither the CPUs "
                     "nor the storage were busy%s: each sample waits on something slow (a "
                     "remote read, a lock, a sleep), so more workers won't help much. A larger "
                     "prefetch_factor%s, the data in memory or on local NVMe, or fewer and "
                     "larger reads.",
                     m->num_workers, cores,
                     f->storage_others != TP_INPUT_WORKERS ? " with its work" : "",
                     tp_pin_memory_helps(m) ? ", pin_memory=True" : "");
        } else {
            char ran[96];
            snprintf(ran, sizeof ran, "; the command ran up to %.0f process%s on %s CPUs", f->procs,
                     f->procs == 1 ? "" : "es", f->cpus ? f->cpus : "?");
            tp_more_workers_words(out + len, cap - len - 1, m, ran); /* and its full stop */
            len = strlen(out);
            if (len + 1 < cap)
                out[len] = '.', out[len + 1] = '\0';
        }
        return;
    }
    }
    snprintf(out, cap,
             "%s, so loading waits on the disk or the network filesystem: data on local "
             "NVMe or in memory, fewer and larger files read sequentially (sharded "
             "formats), and more workers only where the storage has headroom "
             "(trainprof iobench).",
             busy);
}
