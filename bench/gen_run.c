/* gen_run.c: a synthetic long run file, written through the real writer.
 *
 * usage: gen_run OUT.db HOURS INTERVAL_S CORES GPUS [RANKS STEP_S AGENT FIRST_RANK]
 * Makes the series a node with CORES cores, two disks, two network interfaces
 * and GPUS GPUs records (the same names and labels as the collectors), and
 * fills them with plausible values at every interval for HOURS hours (busy
 * 80 GB GPUs, half-used CPUs, 512 GiB of host memory well below full,
 * 100 Gb/s links: no system verdict fires). With
 * RANKS, the node also ran RANKS ranks (global ranks FIRST_RANK...) of a
 * data-parallel training with a step every STEP_S seconds: per step
 * dataloader_next, to_device, train_batch (forward, backward, optimizer_step
 * inside), a step mark with 32 samples, and four reduce_metrics spans (DDP
 * buckets) on a second thread of the rank; an epoch mark every hour. Global
 * rank 13 is a straggler: its input takes 2.5 times as long (every rank's, with
 * GEN_RUN_SLOW_NODE=1 in the environment: a slow node). With GEN_RUN_PACE_AT=F
 * (0 < F < 1) every rank's steps take half as long again from that fraction of
 * the run on: a change of pace. With GEN_RUN_STACK_HZ=N each rank's main
 * thread is also stack-sampled N times a second: in dataloader_next a
 * Dataset's read_cache (read_store once the pace changed), in the other
 * phases their own function, under a loop and <module> (consecutive samples
 * alike are one row, as the sampler's are). AGENT names the node (and moves
 * its start by its position among FIRST_RANK / RANKS). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary_save.h"
#include "core/metric_catalog.h"
#include "core/sink.h"
#include "store/writer.h"
#include "util/labels.h"

#define MAX_SERIES 4096

#define GIB            (1024.0 * 1024.0 * 1024.0)
#define HOST_MEM_BYTES (512 * GIB)
#define GPU_MEM_BYTES  (80 * GIB)

/* How a series' values go: a wave with noise between lo and hi, or (the
 * free or available memory beside a used series) its complement to total. */
typedef struct series_gen {
    uint32_t id;
    double lo, hi;
    double total; /* > 0: total - the previous series' value */
} series_gen;

static series_gen ids[MAX_SERIES];
static size_t nids;

/* Values in units a real node would record: percents that leave the
 * verdicts quiet (busy GPUs, CPUs half used), memory in use well below the
 * total, no swap. */
static series_gen value_range(const char *metric)
{
    if (strcmp(metric, "gpu_util_percent") == 0)
        return (series_gen){0, 92, 100, 0};
    if (strcmp(metric, "host_mem_used_bytes") == 0)
        return (series_gen){0, 100 * GIB, 300 * GIB, 0};
    if (strcmp(metric, "host_mem_available_bytes") == 0)
        return (series_gen){0, 0, 0, HOST_MEM_BYTES};
    if (strcmp(metric, "gpu_mem_used_bytes") == 0)
        return (series_gen){0, 40 * GIB, 60 * GIB, 0};
    if (strcmp(metric, "gpu_mem_free_bytes") == 0)
        return (series_gen){0, 0, 0, GPU_MEM_BYTES};
    if (strcmp(metric, "swap_used_bytes") == 0)
        return (series_gen){0, 0, 0, 0};
    if (strcmp(metric, "net_link_speed_bytes_per_s") == 0) /* 100 Gb/s links */
        return (series_gen){0, 12.5e9, 12.5e9, 0};
    if (strncmp(metric, "net_", 4) == 0)
        return (series_gen){0, 0.2e9, 2e9, 0};
    if (strncmp(metric, "pressure_", 9) == 0) /* tasks rarely stall */
        return (series_gen){0, 0, 5, 0};
    if (strcmp(metric, "disk_read_bytes_per_s") == 0 ||
        strcmp(metric, "disk_write_bytes_per_s") == 0 || strncmp(metric, "gpu_pcie_", 9) == 0)
        return (series_gen){0, 50e6, 2e9, 0};
    if (strcmp(metric, "disk_read_iops") == 0 || strcmp(metric, "disk_write_iops") == 0)
        return (series_gen){0, 100, 5000, 0};
    if (strcmp(metric, "proc_rss_bytes") == 0)
        return (series_gen){0, 10 * GIB, 40 * GIB, 0};
    if (strcmp(metric, "gpu_sm_clock_mhz") == 0)
        return (series_gen){0, 1700, 1980, 0};
    if (strcmp(metric, "gpu_power_watts") == 0)
        return (series_gen){0, 300, 700, 0};
    return (series_gen){0, 10, 90, 0};
}

static void add(tp_sink *s, const char *metric, const char *key, const char *value)
{
    char labels[TP_LABELS_MAX];
    tp_labels1(labels, sizeof labels, key, value);
    if (nids < MAX_SERIES) {
        ids[nids] = value_range(metric);
        ids[nids++].id = tp_sink_series(s, metric, labels);
    }
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
    for (size_t d = 0; d < 3; d++) {
        for (size_t i = 0; i < 4; i++)
            add(s, disk[i], devs[d] ? "device" : NULL, devs[d]);
        if (devs[d])
            add(s, "disk_busy_percent", "device", devs[d]);
    }
    const char *ifs[] = {NULL, "eth0", "ib0"};
    for (size_t d = 0; d < 3; d++) {
        add(s, "net_sent_bytes_per_s", ifs[d] ? "interface" : NULL, ifs[d]);
        add(s, "net_recv_bytes_per_s", ifs[d] ? "interface" : NULL, ifs[d]);
        if (ifs[d])
            add(s, "net_link_speed_bytes_per_s", "interface", ifs[d]);
    }
    const char *gpu[] = {"gpu_util_percent", "gpu_mem_used_bytes",      "gpu_mem_free_bytes",
                         "gpu_power_watts",  "gpu_energy_joules",       "gpu_temp_celsius",
                         "gpu_sm_clock_mhz", "gpu_pcie_tx_bytes_per_s", "gpu_pcie_rx_bytes_per_s"};
    for (int g = 0; g < gpus; g++) {
        snprintf(num, sizeof num, "%d", g);
        for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++)
            add(s, gpu[i], "gpu", num);
        tp_gpu_info info = {.index = g, .mem_total_bytes = (uint64_t)GPU_MEM_BYTES};
        snprintf(info.name, sizeof info.name, "Synthetic GPU 80GB");
        snprintf(info.uuid, sizeof info.uuid, "GPU-synthetic-%d", g);
        snprintf(info.energy_source, sizeof info.energy_source, "counter");
        tp_sink_gpu(s, &info);
    }
}

typedef struct rank_gen {
    uint32_t main_thread, comm_thread;
    int rank;
    uint64_t next_step_ns;
    int64_t epoch;
    uint64_t next_sample_ns; /* GEN_RUN_STACK_HZ: this rank's next stack sample */
    int32_t main_tid;
} rank_gen;

/* GEN_RUN_STACK_HZ: the sampling period (0: no stacks), and the frames a
 * sample's stack is made of (innermost first: the phase's function, then
 * the loop and the module). */
static uint64_t sample_period_ns;
static bool paced; /* the change of pace has come: dataloader_next reads the store */
enum {
    FRAME_CACHE,
    FRAME_STORE,
    FRAME_TO,
    FRAME_FWD,
    FRAME_BWD,
    FRAME_OPT,
    FRAME_LOOP,
    FRAME_MODULE,
    NFRAMES
};
static uint32_t frames[NFRAMES];
static const int32_t frame_lines[NFRAMES] = {12, 15, 40, 88, 210, 131, 55, 70};

static void make_frames(tp_sink *s)
{
    const char *text[NFRAMES] = {
        "read_cache\ndata.py", "read_store\ndata.py",       "to\ntrain.py",
        "forward\nmodel.py",   "run_backward\nautograd.py", "step\nadamw.py",
        "train\ntrain.py",     "<module>\ntrain.py"};
    for (int i = 0; i < NFRAMES; i++)
        frames[i] = tp_sink_frame(s, text[i]);
}

/* The samples of r's main thread over [from, to) in phase (a name id),
 * its stack's innermost frame leaf. */
static void emit_samples(tp_sink *s, rank_gen *r, uint64_t from, uint64_t to, uint32_t phase,
                         int leaf)
{
    if (!sample_period_ns)
        return;
    uint32_t f[3] = {frames[leaf], frames[FRAME_LOOP], frames[FRAME_MODULE]};
    int32_t l[3] = {frame_lines[leaf], frame_lines[FRAME_LOOP], frame_lines[FRAME_MODULE]};
    uint32_t state = TP_STACK_STATE_KNOWN | TP_STACK_STATE_ON_CPU;
    for (; r->next_sample_ns < to; r->next_sample_ns += sample_period_ns)
        if (r->next_sample_ns >= from)
            tp_sink_stack(s, r->main_thread, r->next_sample_ns, r->main_tid, phase, state, f, l, 3);
}

static uint32_t ids_names[7];

static void make_ranks(tp_sink *s, rank_gen *r, int nranks, int first)
{
    const char *names[] = {"dataloader_next", "to_device",      "train_batch",   "forward",
                           "backward",        "optimizer_step", "reduce_metrics"};
    for (int i = 0; i < 7; i++)
        ids_names[i] = tp_sink_name(s, names[i]);
    for (int i = 0; i < nranks; i++) {
        tp_thread_info t = {0};
        t.pid = 1000 + i;
        t.tid = 1000 + i;
        t.rank = first + i;
        t.local_rank = i;
        t.world_size = 64;
        snprintf(t.name, sizeof t.name, "MainThread");
        r[i].main_thread = tp_sink_thread(s, &t);
        r[i].main_tid = t.tid;
        t.tid = 2000 + i;
        snprintf(t.name, sizeof t.name, "gloo");
        r[i].comm_thread = tp_sink_thread(s, &t);
        r[i].rank = first + i;
        r[i].epoch = -1;
    }
}

static bool slow_node; /* GEN_RUN_SLOW_NODE=1: every rank of this node is slow */

/* One step of a rank starting at t (ns since start); returns its length. */
static uint64_t emit_step(tp_sink *s, rank_gen *r, uint64_t t, uint64_t step_ns, unsigned *seed)
{
    double jitter = 1 + (rand_r(seed) % 100) / 1000.0;
    uint64_t input =
        (uint64_t)((double)step_ns * 0.10 * jitter * (r->rank == 13 || slow_node ? 2.5 : 1.0));
    uint64_t to = step_ns / 50, fwd = step_ns * 3 / 10, bwd = step_ns * 4 / 10, opt = step_ns / 20;
    if (r->epoch < 0 || t / 3600000000000ull != (uint64_t)r->epoch) {
        r->epoch = (int64_t)(t / 3600000000000ull);
        tp_sink_mark(s, r->main_thread, TP_MARK_EPOCH, t, r->epoch);
    }
    tp_sink_mark(s, r->main_thread, TP_MARK_STEP, t, 0);
    tp_sink_mark(s, r->main_thread, TP_MARK_SAMPLES, t, 32);
    uint64_t a = t;
    tp_sink_interval(s, r->main_thread, ids_names[0], 0, a, a + input);
    emit_samples(s, r, a, a + input, ids_names[0], paced ? FRAME_STORE : FRAME_CACHE);
    a += input;
    tp_sink_interval(s, r->main_thread, ids_names[1], 0, a, a + to);
    emit_samples(s, r, a, a + to, ids_names[1], FRAME_TO);
    a += to;
    uint64_t train0 = a;
    tp_sink_interval(s, r->main_thread, ids_names[3], 1, a, a + fwd);
    emit_samples(s, r, a, a + fwd, ids_names[3], FRAME_FWD);
    a += fwd;
    for (int b = 0; b < 4; b++) /* buckets all-reduced while backward runs */
        tp_sink_interval(s, r->comm_thread, ids_names[6], 0, a + bwd * (uint64_t)b / 4,
                         a + bwd * (uint64_t)(b + 1) / 4 + step_ns / 100);
    tp_sink_interval(s, r->main_thread, ids_names[4], 1, a, a + bwd + step_ns / 100);
    emit_samples(s, r, a, a + bwd + step_ns / 100, ids_names[4], FRAME_BWD);
    a += bwd + step_ns / 100;
    tp_sink_interval(s, r->main_thread, ids_names[5], 1, a, a + opt);
    emit_samples(s, r, a, a + opt, ids_names[5], FRAME_OPT);
    a += opt;
    tp_sink_interval(s, r->main_thread, ids_names[2], 0, train0, a);
    return a - t;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 10) {
        fprintf(
            stderr,
            "usage: gen_run OUT.db HOURS INTERVAL_S CORES GPUS [RANKS STEP_S AGENT FIRST_RANK]\n");
        return 2;
    }
    const char *slow = getenv("GEN_RUN_SLOW_NODE");
    slow_node = slow && strcmp(slow, "1") == 0;
    double hours = atof(argv[2]), interval = atof(argv[3]);
    int cores = atoi(argv[4]), gpus = atoi(argv[5]);
    int nranks = argc == 10 ? atoi(argv[6]) : 0, first = argc == 10 ? atoi(argv[9]) : 0;
    double step_s = argc == 10 ? atof(argv[7]) : 1;
    const char *agent = argc == 10 ? argv[8] : "bench-node";
    if (nranks < 0 || nranks > 64 || step_s <= 0) {
        fprintf(stderr, "gen_run: RANKS must be 0 to 64 and STEP_S positive\n");
        return 2;
    }
    char err[512];
    tp_writer *w = tp_writer_create(argv[1], true, agent, err, sizeof err);
    if (!w) {
        fprintf(stderr, "gen_run: %s\n", err);
        return 1;
    }
    tp_sink *s = tp_sink_new(0);
    make_series(s, cores, gpus);
    rank_gen ranks[64] = {0};
    make_ranks(s, ranks, nranks, first);
    const char *hz = getenv("GEN_RUN_STACK_HZ");
    if (hz && atof(hz) > 0) {
        sample_period_ns = (uint64_t)(1e9 / atof(hz));
        make_frames(s);
    }
    uint64_t step_ns = (uint64_t)(step_s * 1e9);
    unsigned rank_seed = (unsigned)first + 7;
    uint64_t regions = 0;
    tp_sink_meta(s, "command", "python train.py --synthetic");
    tp_sink_meta(s, "status", "finished");
    char buf[64];
    snprintf(buf, sizeof buf, "%.0f", hours * 3600e9);
    tp_sink_meta(s, "duration_ns", buf);
    tp_sink_meta(s, "exit_status", "0");
    snprintf(buf, sizeof buf, "%g", interval);
    tp_sink_meta(s, "interval_s", buf);
    /* nodes of one job start within a second of each other */
    snprintf(buf, sizeof buf, "%lld", 1795000000000000000ll + (long long)first * 10000000ll);
    tp_sink_meta(s, "start_wall_ns", buf);
    tp_sink_meta(s, "clock_uncertainty_ns", "200");
    tp_sink_meta(s, "env.SLURM_JOB_ID", "4242");
    uint64_t ticks = (uint64_t)(hours * 3600 / interval);
    uint64_t tick_ns = (uint64_t)(interval * 1e9);
    unsigned seed = 1;
    tp_batch b = {0};
    const char *pace = getenv("GEN_RUN_PACE_AT");
    double pace_at = pace ? atof(pace) : 0;
    for (uint64_t t = 0; t < ticks; t++) {
        if (pace_at > 0 && pace_at < 1 && t == (uint64_t)(pace_at * (double)ticks)) {
            step_ns = step_ns * 3 / 2;
            paced = true;
        }
        double previous = 0;
        for (size_t i = 0; i < nids; i++) {
            const series_gen *g = &ids[i];
            double wave = 0.5 + 0.45 * sin((double)t / 600.0 + (double)i),
                   noise = (rand_r(&seed) % 100) / 2000.0; /* 0 to 0.05 */
            double v =
                g->total > 0 ? g->total - previous : g->lo + (g->hi - g->lo) * (wave + noise);
            tp_sink_sample(s, g->id, t * tick_ns, v);
            previous = v;
        }
        for (int r = 0; r < nranks; r++)
            while (ranks[r].next_step_ns < (t + 1) * tick_ns) {
                uint64_t len = emit_step(s, &ranks[r], ranks[r].next_step_ns, step_ns, &rank_seed);
                ranks[r].next_step_ns += len > step_ns ? len : step_ns;
                regions += 10;
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
    if (!tp_summary_store_save(argv[1], err, sizeof err)) { /* as `record` does at the end */
        fprintf(stderr, "gen_run: %s\n", err);
        return 1;
    }
    printf("{\"series\": %zu, \"samples\": %llu, \"regions\": %llu}\n", nids,
           (unsigned long long)(ticks * nids), (unsigned long long)regions);
    tp_batch_free(&b);
    tp_sink_free(s);
    return 0;
}
