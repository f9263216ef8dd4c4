/* bottleneck_facts.h: what `trainprof bottleneck`'s three runs measured
 * (as is; the first batch replayed: the training limit; the loader alone:
 * the input limit) and which limit binds, judged by the thresholds the
 * verdicts use (core/step_rules.h). No words: render/bottleneck_words.h. */
#ifndef TP_ANALYZE_BOTTLENECK_FACTS_H
#define TP_ANALYZE_BOTTLENECK_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model_facts.h"

enum { TP_BOTTLENECK_ASIS, TP_BOTTLENECK_REPLAY, TP_BOTTLENECK_LOADER, TP_BOTTLENECK_MODES };

/* One run's figures over its measured steps (after the warm-up). */
typedef struct tp_bottleneck_run {
    bool found_loader;    /* a dataloader_next phase was seen */
    bool samples_seen;    /* batch sizes were visible: rate is samples/s, else steps/s */
    double rate;          /* over the measured steps of the thread with the most steps */
    long steps;           /* measured */
    int64_t t0_ns, t1_ns; /* the measured steps: after the warm-up to the last */
    /* means over the measured steps (the whole run's where too short for a
     * sample inside them); NAN where the run has no such series */
    double cpu_mean, disk_read_mb_s, disk_read_iops, gpu_util;
    /* the command's own: its process tree's CPU over the machine's cores
     * (%), and its storage reads (MB/s); NAN where not recorded. The
     * machine's figures above are everyone's */
    double own_cpu_mean, own_read_mb_s;
    double steal_mean;        /* a virtual machine's steal, % of the CPUs (NaN: not recorded) */
    double workers;           /* the command's processes at most, less the training's */
    int cpus;                 /* the machine's */
    bool has_gpu;             /* GPU 0 measured */
    double gpu_mem_frac;      /* GPU 0's memory used at peak over its total */
    tp_model_facts run_facts; /* what the script does, from the run file */
    tp_model_facts facts;     /* the replay run's model, as the run reported it */
    bool has_facts;           /* ... where it did */
} tp_bottleneck_run;

/* Reads the run file at path into r (zeroed first): false when it can't be
 * read (r keeps no figures). */
bool tp_bottleneck_run_measure(const char *path, long warmup, tp_bottleneck_run *r);

typedef enum tp_limit {
    TP_LIMIT_INPUT,    /* the loader alone is below (1 - TP_INPUT_BOUND_SHARE) of the training */
    TP_LIMIT_COMPUTE,  /* the training alone is below TP_COMPUTE_LIMIT_SHARE of the loader */
    TP_LIMIT_BALANCED, /* neither: both limits are close */
} tp_limit;

/* Which limit binds, from the training limit's rate and the input limit's. */
tp_limit tp_bottleneck_limit(double train_rate, double input_rate);

/* The loader alone kept the CPUs saturated (the verdicts' CPU threshold),
 * with its own processes using at least as much of them as the others
 * (where recorded): loading is CPU-bound and more workers won't help. */
bool tp_loader_cpu_bound(const tp_bottleneck_run *loader);

/* The CPUs saturated while the loader ran, mostly by other processes (a
 * virtual machine's steal left out, as input_bound's rule does: its host's,
 * no process's): they compete with it, and its own figures are no limit of
 * its. */
bool tp_loader_crowded(const tp_bottleneck_run *loader);

/* The disks' reads averaged below TP_SMALL_READ_KIB each, with enough of
 * them to matter, and at least half of the bytes read were the loader's
 * own (where recorded: another process's small reads are not its):
 * many small files, or random access. *kib: the mean size (0 without
 * reads). */
bool tp_loader_small_reads(const tp_bottleneck_run *loader, double *kib);

#endif
