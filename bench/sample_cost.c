/* sample_cost.c: the CPU cost of one full host sample.
 *
 * usage: sample_cost PID [TICKS]
 * Opens every host collector (CPU, memory, disks, network, InfiniBand,
 * pressure, and the process tree rooted at PID; not NVML or RAPL), ticks them
 * TICKS times (default 2000) and prints, as JSON, the median and p90 CPU time
 * of one tick measured on the ticking thread (user + system, so the kernel's
 * work to produce /proc text counts). The sink is emptied between ticks, as
 * the writer thread would. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/stats.h"
#include "collect/collectors.h"

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The floor: CPU time of one bare pread of /proc/meminfo, no parsing. */
static double bare_pread_us(int reps)
{
    tp_sysroot root;
    tp_procfile pf;
    if (!tp_sysroot_open(&root, "/") || !tp_procfile_open(&pf, &root, "/proc/meminfo"))
        return -1;
    uint64_t t0 = thread_cpu_ns();
    for (int i = 0; i < reps; i++)
        tp_procfile_read(&pf);
    double us = (double)(thread_cpu_ns() - t0) / 1000.0 / reps;
    tp_procfile_close(&pf);
    tp_sysroot_close(&root);
    return us;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: sample_cost PID [TICKS]\n");
        return 2;
    }
    pid_t pid = (pid_t)atoi(argv[1]);
    int ticks = argc > 2 ? atoi(argv[2]) : 2000;
    tp_sysroot root;
    if (!tp_sysroot_open(&root, "/"))
        return 1;
    tp_sink *sink = tp_sink_new(0);
    tp_collect_env env = {&root, sink, pid};
    tp_collector_set set;
    tp_collectors_open(&set, &env, TP_COLLECT_HOST);
    tp_batch batch = {0};
    double *cost = calloc((size_t)ticks, sizeof *cost);
    double per[TP_MAX_COLLECTORS] = {0}; /* CPU time per collector, summed */
    struct timespec gap = {0, 1000000};  /* 1 ms between ticks: rates stay defined */
    for (int i = -50; i < ticks; i++) {  /* 50 warm-up ticks */
        uint64_t t0 = thread_cpu_ns();
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        for (size_t c = 0; c < set.len; c++) {
            uint64_t c0 = thread_cpu_ns();
            set.items[c]->sample(set.items[c], now_ns);
            if (i >= 0)
                per[c] += (double)(thread_cpu_ns() - c0) / 1000.0;
        }
        uint64_t t1 = thread_cpu_ns();
        if (i >= 0)
            cost[i] = (double)(t1 - t0) / 1000.0;
        tp_sink_take(sink, &batch);
        tp_batch_clear(&batch);
        nanosleep(&gap, NULL);
    }
    uint32_t series;
    tp_sink_counts(sink, NULL, &series, NULL);
    tp_stats st;
    tp_stats_compute(cost, (size_t)ticks, &st);
    qsort(cost, (size_t)ticks, sizeof *cost, cmp_double);
    double p90 = tp_quantile_sorted(cost, (size_t)ticks, 0.9);
    printf("{\"ticks\": %d, \"series\": %u, \"median_us\": %.2f, \"p90_us\": %.2f, "
           "\"mean_us\": %.2f, \"per_collector_mean_us\": {",
           ticks, series, st.p50, p90, st.mean);
    for (size_t c = 0; c < set.len; c++)
        printf("%s\"%s\": %.2f", c ? ", " : "", set.items[c]->name, per[c] / ticks);
    printf("}, \"bare_pread_meminfo_us\": %.2f}\n", bare_pread_us(2000));
    free(cost);
    tp_batch_free(&batch);
    tp_collectors_close(&set);
    tp_sink_free(sink);
    tp_sysroot_close(&root);
    return 0;
}
