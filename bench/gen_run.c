/* gen_run.c: a synthetic long run file, written through the real writer.
 *
 * usage: gen_run OUT.db HOURS INTERVAL_S CORES GPUS
 * Makes the series a node with CORES cores, two disks, two network interfaces
 * and GPUS GPUs records (the same names and labels as the collectors), and
 * fills them with plausible values at every interval for HOURS hours. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/metric_catalog.h"
#include "store/writer.h"
#include "util/labels.h"

#define MAX_SERIES 4096

static uint32_t ids[MAX_SERIES];
static size_t nids;

static void add(tp_sink *s, const char *metric, const char *key, const char *value)
{
    char labels[TP_LABELS_MAX];
    tp_labels1(labels, sizeof labels, key, value);
    if (nids < MAX_SERIES)
        ids[nids++] = tp_sink_series(s, metric, labels);
}

static void make_series(tp_sink *s, int cores, int gpus)
{
    char num[16];
    add(s, "cpu_util_percent", NULL, NULL);
    for (int c = 0; c < cores; c++) {
        snprintf(num, sizeof num, "%d", c);
        add(s, "cpu_util_percent", "cpu", num);
    }
    const char *host[] = {"host_mem_used_bytes",
                          "host_mem_available_bytes",
                          "swap_used_bytes",
                          "proc_cpu_percent",
                          "proc_rss_bytes",
                          "proc_read_bytes_per_s",
                          "proc_write_bytes_per_s",
                          "proc_count",
                          "proc_threads",
                          "pressure_cpu_some_percent",
                          "pressure_io_some_percent",
                          "pressure_io_full_percent",
                          "pressure_memory_some_percent",
                          "pressure_memory_full_percent"};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        add(s, host[i], NULL, NULL);
    const char *disk[] = {"disk_read_iops", "disk_write_iops", "disk_read_bytes_per_s",
                          "disk_write_bytes_per_s"};
    const char *devs[] = {NULL, "nvme0n1", "nvme1n1"};
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < 4; i++)
            add(s, disk[i], devs[d] ? "device" : NULL, devs[d]);
    const char *ifs[] = {NULL, "eth0", "ib0"};
    for (size_t d = 0; d < 3; d++) {
        add(s, "net_sent_bytes_per_s", ifs[d] ? "interface" : NULL, ifs[d]);
        add(s, "net_recv_bytes_per_s", ifs[d] ? "interface" : NULL, ifs[d]);
    }
    const char *gpu[] = {"gpu_util_percent", "gpu_mem_used_bytes",      "gpu_mem_free_bytes",
                         "gpu_power_watts",  "gpu_energy_joules",       "gpu_temp_celsius",
                         "gpu_sm_clock_mhz", "gpu_pcie_tx_bytes_per_s", "gpu_pcie_rx_bytes_per_s"};
    for (int g = 0; g < gpus; g++) {
        snprintf(num, sizeof num, "%d", g);
        for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++)
            add(s, gpu[i], "gpu", num);
    }
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: gen_run OUT.db HOURS INTERVAL_S CORES GPUS\n");
        return 2;
    }
    double hours = atof(argv[2]), interval = atof(argv[3]);
    int cores = atoi(argv[4]), gpus = atoi(argv[5]);
    char err[512];
    tp_writer *w = tp_writer_create(argv[1], true, "bench-node", err, sizeof err);
    if (!w) {
        fprintf(stderr, "gen_run: %s\n", err);
        return 1;
    }
    tp_sink *s = tp_sink_new(0);
    make_series(s, cores, gpus);
    tp_sink_meta(s, "command", "python train.py --synthetic");
    tp_sink_meta(s, "status", "finished");
    char buf[64];
    snprintf(buf, sizeof buf, "%.0f", hours * 3600e9);
    tp_sink_meta(s, "duration_ns", buf);
    tp_sink_meta(s, "exit_status", "0");
    snprintf(buf, sizeof buf, "%g", interval);
    tp_sink_meta(s, "interval_s", buf);
    uint64_t ticks = (uint64_t)(hours * 3600 / interval);
    uint64_t step_ns = (uint64_t)(interval * 1e9);
    unsigned seed = 1;
    tp_batch b = {0};
    for (uint64_t t = 0; t < ticks; t++) {
        for (size_t i = 0; i < nids; i++) {
            double v = 50 + 40 * sin((double)t / 600.0 + (double)i) + (rand_r(&seed) % 100) / 10.0;
            tp_sink_sample(s, ids[i], t * step_ns, v < 0 ? 0 : v);
        }
        if (t % 2000 == 1999 || t + 1 == ticks) {
            tp_sink_take(s, &b);
            if (!tp_writer_apply(w, &b, err, sizeof err)) {
                fprintf(stderr, "gen_run: %s\n", err);
                return 1;
            }
            tp_batch_clear(&b);
        }
    }
    tp_writer_finish(w);
    printf("{\"series\": %zu, \"samples\": %llu}\n", nids, (unsigned long long)(ticks * nids));
    tp_batch_free(&b);
    tp_sink_free(s);
    return 0;
}
