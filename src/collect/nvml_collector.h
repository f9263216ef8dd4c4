/* nvml_collector.h: the NVML collector's own state, shared by its files:
 * gpu_nvml.c (set-up and the readings on the sampling tick), nvml_load.c
 * (the library and its symbols) and nvml_slow.c (the readings too slow for
 * the tick, on a thread of their own: GPM, the PCIe spot reading, the
 * processes on each GPU). */
#ifndef TP_COLLECT_NVML_COLLECTOR_H
#define TP_COLLECT_NVML_COLLECTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect/collector.h"
#include "collect/nvml_api.h"

#define NVML_MAX_GPUS 64
#define NVML_MAX_PIDS 32 /* processes remembered per GPU */
#define NVML_MAX_MIG  8  /* MIG instances per GPU (an H100 has at most 7) */

enum {
    M_UTIL,
    M_MEM_USED,
    M_MEM_FREE,
    M_POWER,
    M_ENERGY,
    M_TEMP,
    M_CLOCK,
    M_PCIE_TX,
    M_PCIE_RX,
    M_CLOCK_REASONS,
    M_POWER_LIMIT,
    M_SM_ACTIVE,
    M_SM_OCCUPANCY,
    M_TENSOR_ACTIVE,
    M_N
};

extern const char *const tp_nvml_metric_names[M_N];

typedef struct nvml_lib {
    void *handle;
    nvml_init_fn init;
    nvml_shutdown_fn shutdown;
    nvml_error_string_fn error_string;
    nvml_count_fn count;
    nvml_handle_fn handle_by_index;
    nvml_string_fn name, uuid;
    nvml_driver_version_fn driver_version;
    nvml_util_fn utilization;
    nvml_memory_fn memory;
    nvml_memory_v2_fn memory_v2; /* NULL: the driver has no v2, v1 is read */
    nvml_uint_fn power, power_limit;
    nvml_ull_fn total_energy, clock_reasons;
    nvml_uint_arg_fn temperature, clock, pcie;
    nvml_fields_fn field_values;
    nvml_mig_mode_fn mig_mode;
    nvml_uint_fn mig_count;
    nvml_mig_handle_fn mig_handle;
    nvml_procs_fn processes;
    nvml_gpm_support_fn gpm_support;
    nvml_gpm_alloc_fn gpm_alloc;
    nvml_gpm_free_fn gpm_free;
    nvml_gpm_get_fn gpm_get;
    nvml_gpm_metrics_fn gpm_metrics;
} nvml_lib;

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    int index;
    atomic_bool lost;
    bool energy_counter;
    unsigned long long energy_seg_start_mj, energy_last_mj; /* this stretch of the counter */
    double energy_before_j; /* counter mode: joules of earlier stretches (before a reset) */
    double energy_j;        /* power-integral mode */
    double prev_power_w;
    uint64_t prev_power_ns;
    bool pcie_counter;              /* cumulative PCIe byte counters; else the slow spot reading */
    unsigned long long pcie_raw[2]; /* the counters' last readings (slow thread) */
    unsigned long long pcie_total[2];   /* bytes since the first reading, wraps undone */
    long long pcie_raw_us;              /* the last reading's own timestamp, 0 before it */
    unsigned long long pcie_emitted[2]; /* pcie_total when a rate was last emitted */
    long long pcie_emitted_us;
    bool gpm; /* GPM metrics supported */
    nvmlGpmSample_t gpm_sample[2];
    int gpm_have; /* samples taken so far (0, 1, then 2) */
    int gpm_last; /* the newer sample */
    bool mig;     /* MIG mode on: the whole card's utilization is not reported */
    nvmlDevice_t mig_dev[NVML_MAX_MIG]; /* its instances, in meta gpu.N.mig's order */
    uint32_t mig_series[NVML_MAX_MIG];  /* each one's gpu_mem_used_bytes {gpu, mig} */
    unsigned int nmig;
    unsigned int pids[NVML_MAX_PIDS];
    unsigned int npids;
    uint32_t series[M_N]; /* 0: not supported */
} nvml_gpu;

typedef struct nvml_collector {
    tp_collector base;
    tp_sink *sink;
    nvml_lib lib;
    nvml_gpu gpus[NVML_MAX_GPUS];
    unsigned int ngpus;
    nvmlGpmMetricsGet_t *gpm_request; /* large: allocated once, for the slow thread */
    pthread_t slow_thread;
    bool slow_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
} nvml_collector;

/* Opens the library ($TRAINPROF_NVML_LIB, else libnvidia-ml.so.1, then
 * libnvidia-ml.so) and resolves its symbols, the newest version of each
 * first. False with the reason when NVML can't be used at all. */
bool tp_nvml_load(nvml_lib *lib, char *why, size_t cap);

const char *tp_nvml_error(const nvml_lib *lib, nvmlReturn_t r);

/* A failed reading. The codes after which no later call can succeed (the
 * GPU lost or needing a reset, the driver gone or mismatched, NVML no longer
 * initialized) end the GPU's sampling, said once; others skip the reading. */
void tp_nvml_reading_failed(nvml_collector *c, nvml_gpu *g, nvmlReturn_t r);

void tp_nvml_emit(nvml_collector *c, nvml_gpu *g, int m, uint64_t now_ns, double v);

/* Reads the cumulative PCIe byte counters (field values 197 TX and 198 RX)
 * into fields; false when the GPU has none. */
bool tp_nvml_read_pcie(const nvml_lib *lib, nvmlDevice_t dev, nvmlFieldValue_t fields[2]);

/* A wrap of 4 GiB takes 68 ms at PCIe Gen5 x16's 63 GB/s a way; a read of
 * the counters cost 178 us on an H100 (bench/nvml_contention.py) */
#define NVML_FAST_ROUND_MS 50

/* The readings of the slow thread: set-up (what each GPU supports), one
 * round (every 50 ms: the PCIe counters; each_second: the rest), and the
 * samples' release. */
void tp_nvml_slow_setup(nvml_collector *c, nvml_gpu *g, const char *labels);
void tp_nvml_slow_round(nvml_collector *c, bool each_second);
void tp_nvml_slow_free(nvml_collector *c);

#endif
