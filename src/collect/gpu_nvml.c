/* gpu_nvml.c: per-GPU metrics through NVML, loaded with dlopen.
 *
 * libnvidia-ml.so.1 (then libnvidia-ml.so; $TRAINPROF_NVML_LIB overrides) is
 * opened at run time; the newest versioned symbol is tried first (nvmlInit_v2,
 * then nvmlInit). Fast readings (utilization, memory, power, energy,
 * temperature, SM clock) are taken on the sampling tick. PCIe throughput takes
 * about 20 ms per call inside the driver, so a helper thread reads it on its
 * own cadence and never stalls the tick.
 *
 * Energy comes from the total-energy counter (mJ, Volta and newer) where the
 * GPU supports it, otherwise from power integrated over the real timestamps of
 * the readings (trapezoids). A reading a GPU does not support is recorded as
 * unavailable once; a GPU that falls off the bus stops being sampled. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/metric_catalog.h"
#include "clock.h"
#include "collect/collector.h"
#include "collect/nvml_api.h"
#include "util/labels.h"

#define NVML_MAX_GPUS 64

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
    M_N
};

static const char *const metric_names[M_N] = {
    TP_METRIC_GPU_UTIL_PERCENT,        TP_METRIC_GPU_MEM_USED_BYTES,
    TP_METRIC_GPU_MEM_FREE_BYTES,      TP_METRIC_GPU_POWER_WATTS,
    TP_METRIC_GPU_ENERGY_JOULES,       TP_METRIC_GPU_TEMP_CELSIUS,
    TP_METRIC_GPU_SM_CLOCK_MHZ,        TP_METRIC_GPU_PCIE_TX_BYTES_PER_S,
    TP_METRIC_GPU_PCIE_RX_BYTES_PER_S,
};

typedef struct nvml_lib {
    void *handle;
    nvml_shutdown_fn shutdown;
    nvml_error_string_fn error_string;
    nvml_count_fn count;
    nvml_handle_fn handle_by_index;
    nvml_string_fn name, uuid;
    nvml_driver_version_fn driver_version;
    nvml_util_fn utilization;
    nvml_memory_fn memory;
    nvml_memory_v2_fn memory_v2; /* NULL: the driver has no v2, v1 is read */
    nvml_uint_fn power;
    nvml_ull_fn total_energy;
    nvml_uint_arg_fn temperature, clock, pcie;
} nvml_lib;

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    int index;
    atomic_bool lost;
    bool energy_counter;
    unsigned long long energy_start_mj;
    double energy_j; /* power-integral mode */
    double prev_power_w;
    uint64_t prev_power_ns;
    uint32_t series[M_N]; /* 0: not supported */
} nvml_gpu;

typedef struct nvml_collector {
    tp_collector base;
    tp_sink *sink;
    nvml_lib lib;
    nvml_gpu gpus[NVML_MAX_GPUS];
    unsigned int ngpus;
    pthread_t slow_thread;
    bool slow_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
} nvml_collector;

/* Resolves the first of the given symbol names that the library exports. */
static void *find_symbol(void *h, const char *newest, const char *base)
{
    void *f = newest ? dlsym(h, newest) : NULL;
    return f ? f : dlsym(h, base);
}

static const char *nvml_error(const nvml_lib *lib, nvmlReturn_t r)
{
    const char *s = lib->error_string ? lib->error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

static void note_unsupported(nvml_collector *c, nvml_gpu *g, int metric, nvmlReturn_t r)
{
    char source[32], reason[160];
    snprintf(source, sizeof source, "nvml gpu%d", g->index);
    snprintf(reason, sizeof reason, "%s: %s", metric_names[metric], nvml_error(&c->lib, r));
    tp_sink_unavailable(c->sink, source, reason);
}

/* A failed reading: GPU lost ends its sampling; others are skipped quietly. */
static void reading_failed(nvml_collector *c, nvml_gpu *g, nvmlReturn_t r)
{
    if (r == NVML_ERROR_GPU_IS_LOST && !atomic_exchange(&g->lost, true)) {
        char source[32];
        snprintf(source, sizeof source, "nvml gpu%d", g->index);
        tp_sink_unavailable(c->sink, source, "GPU is lost (fell off the bus); sampling stopped");
    }
}

static void emit(nvml_collector *c, nvml_gpu *g, int m, uint64_t now_ns, double v)
{
    if (g->series[m])
        tp_sink_sample(c->sink, g->series[m], now_ns, v);
}

static void sample_energy(nvml_collector *c, nvml_gpu *g, uint64_t now_ns, bool have_power,
                          double power_w)
{
    if (g->energy_counter) {
        unsigned long long mj;
        nvmlReturn_t r = c->lib.total_energy(g->dev, &mj);
        if (r != NVML_SUCCESS)
            reading_failed(c, g, r);
        else if (mj >= g->energy_start_mj)
            emit(c, g, M_ENERGY, now_ns, (double)(mj - g->energy_start_mj) / 1000.0);
        return;
    }
    if (!have_power)
        return;
    if (g->prev_power_ns && now_ns > g->prev_power_ns)
        g->energy_j +=
            (g->prev_power_w + power_w) / 2.0 * (double)(now_ns - g->prev_power_ns) / 1e9;
    g->prev_power_w = power_w;
    g->prev_power_ns = now_ns;
    emit(c, g, M_ENERGY, now_ns, g->energy_j);
}

#define NVML_ERROR_FUNCTION_NOT_FOUND 13

/* Device memory as nvidia-smi shows it: through nvmlDeviceGetMemoryInfo_v2,
 * whose `used` leaves out what the driver and firmware reserve (about 480 MiB
 * on an H100, which v1 counts as used: an idle GPU looked half a GiB busy).
 * Falls back to v1 (filling `used`, `free` and `total`, `reserved` 0) where
 * the driver has no v2 or refuses it. */
static nvmlReturn_t read_memory(const nvml_lib *lib, nvmlDevice_t dev, nvmlMemory_v2_t *out)
{
    if (lib->memory_v2) {
        memset(out, 0, sizeof *out);
        out->version = NVML_MEMORY_V2;
        nvmlReturn_t r = lib->memory_v2(dev, out);
        if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            return r;
    }
    if (!lib->memory)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlMemory_t m;
    nvmlReturn_t r = lib->memory(dev, &m);
    if (r == NVML_SUCCESS)
        *out = (nvmlMemory_v2_t){.total = m.total, .free = m.free, .used = m.used};
    return r;
}

static void nvml_sample(tp_collector *base, uint64_t now_ns)
{
    nvml_collector *c = (nvml_collector *)base;
    for (unsigned i = 0; i < c->ngpus; i++) {
        nvml_gpu *g = &c->gpus[i];
        if (atomic_load(&g->lost))
            continue;
        nvmlReturn_t r = NVML_SUCCESS;
        nvmlUtilization_t u;
        nvmlMemory_v2_t mem;
        unsigned int v;
        if (g->series[M_UTIL] && (r = c->lib.utilization(g->dev, &u)) == NVML_SUCCESS)
            emit(c, g, M_UTIL, now_ns, u.gpu);
        else if (g->series[M_UTIL])
            reading_failed(c, g, r);
        if (g->series[M_MEM_USED] && (r = read_memory(&c->lib, g->dev, &mem)) == NVML_SUCCESS) {
            emit(c, g, M_MEM_USED, now_ns, (double)mem.used);
            emit(c, g, M_MEM_FREE, now_ns, (double)mem.free);
        } else if (g->series[M_MEM_USED])
            reading_failed(c, g, r);
        bool have_power = false;
        double power_w = 0;
        if (g->series[M_POWER] && (r = c->lib.power(g->dev, &v)) == NVML_SUCCESS) {
            have_power = true;
            power_w = v / 1000.0;
            emit(c, g, M_POWER, now_ns, power_w);
        } else if (g->series[M_POWER])
            reading_failed(c, g, r);
        if (g->series[M_ENERGY])
            sample_energy(c, g, now_ns, have_power, power_w);
        if (g->series[M_TEMP] &&
            (r = c->lib.temperature(g->dev, NVML_TEMPERATURE_GPU, &v)) == NVML_SUCCESS)
            emit(c, g, M_TEMP, now_ns, v);
        if (g->series[M_CLOCK] && (r = c->lib.clock(g->dev, NVML_CLOCK_SM, &v)) == NVML_SUCCESS)
            emit(c, g, M_CLOCK, now_ns, v);
    }
}

/* The slow path: PCIe throughput for every GPU, once a second, off the tick. */
static void *slow_loop(void *arg)
{
    nvml_collector *c = arg;
    pthread_mutex_lock(&c->stop_lock);
    while (!c->stop) {
        pthread_mutex_unlock(&c->stop_lock);
        for (unsigned i = 0; i < c->ngpus; i++) {
            nvml_gpu *g = &c->gpus[i];
            unsigned int kbs;
            for (int k = 0; k < 2 && !atomic_load(&g->lost); k++) {
                int m = k == 0 ? M_PCIE_TX : M_PCIE_RX;
                if (!g->series[m])
                    continue;
                nvmlReturn_t r = c->lib.pcie(
                    g->dev, k == 0 ? NVML_PCIE_UTIL_TX_BYTES : NVML_PCIE_UTIL_RX_BYTES, &kbs);
                if (r == NVML_SUCCESS)
                    emit(c, g, m, tp_clock_mono_ns(), kbs * 1024.0);
                else
                    reading_failed(c, g, r);
            }
        }
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += 1;
        pthread_mutex_lock(&c->stop_lock);
        while (!c->stop && pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &deadline) == 0)
            ;
    }
    pthread_mutex_unlock(&c->stop_lock);
    return NULL;
}

static void nvml_destroy(tp_collector *base)
{
    nvml_collector *c = (nvml_collector *)base;
    if (c->slow_running) {
        pthread_mutex_lock(&c->stop_lock);
        c->stop = true;
        pthread_cond_signal(&c->stop_cond);
        pthread_mutex_unlock(&c->stop_lock);
        pthread_join(c->slow_thread, NULL);
    }
    pthread_mutex_destroy(&c->stop_lock);
    pthread_cond_destroy(&c->stop_cond);
    if (c->lib.shutdown)
        c->lib.shutdown();
    dlclose(c->lib.handle);
    free(c);
}

/* ---- setup ----------------------------------------------------------- */

/* Stores a symbol into a function pointer. ISO C has no cast between object
 * and function pointers; POSIX guarantees they have the same size. */
#define LOAD(dst, newest, base)                    \
    do {                                           \
        void *sym_ = find_symbol(h, newest, base); \
        memcpy(&(dst), &sym_, sizeof(dst));        \
    } while (0)

/* Opens the library and resolves its symbols. Returns false with the reason
 * when NVML can't be used at all. */
static bool load_library(nvml_lib *lib, nvml_init_fn *init, char *why, size_t cap)
{
    const char *override = getenv("TRAINPROF_NVML_LIB");
    const char *names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    if (override && *override) {
        lib->handle = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < 2 && !lib->handle; i++)
            lib->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib->handle) {
        snprintf(why, cap, "cannot load %s (no NVIDIA driver on this machine)",
                 override && *override ? override : "libnvidia-ml.so.1");
        return false;
    }
    void *h = lib->handle;
    LOAD(*init, "nvmlInit_v2", "nvmlInit");
    LOAD(lib->shutdown, NULL, "nvmlShutdown");
    LOAD(lib->error_string, NULL, "nvmlErrorString");
    LOAD(lib->count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    LOAD(lib->handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    LOAD(lib->name, NULL, "nvmlDeviceGetName");
    LOAD(lib->uuid, NULL, "nvmlDeviceGetUUID");
    LOAD(lib->driver_version, NULL, "nvmlSystemGetDriverVersion");
    LOAD(lib->utilization, NULL, "nvmlDeviceGetUtilizationRates");
    LOAD(lib->memory, NULL, "nvmlDeviceGetMemoryInfo");
    LOAD(lib->memory_v2, NULL, "nvmlDeviceGetMemoryInfo_v2");
    LOAD(lib->power, NULL, "nvmlDeviceGetPowerUsage");
    LOAD(lib->total_energy, NULL, "nvmlDeviceGetTotalEnergyConsumption");
    LOAD(lib->temperature, NULL, "nvmlDeviceGetTemperature");
    LOAD(lib->clock, NULL, "nvmlDeviceGetClockInfo");
    LOAD(lib->pcie, NULL, "nvmlDeviceGetPcieThroughput");
    const char *missing = !*init                  ? "nvmlInit"
                          : !lib->count           ? "nvmlDeviceGetCount"
                          : !lib->handle_by_index ? "nvmlDeviceGetHandleByIndex"
                                                  : NULL;
    if (missing) {
        snprintf(why, cap, "the NVML library has no %s", missing);
        dlclose(h);
        lib->handle = NULL;
        return false;
    }
    return true;
}

/* Takes one reading of metric m to learn whether the GPU supports it. */
static nvmlReturn_t probe(nvml_collector *c, nvml_gpu *g, int m)
{
    const nvml_lib *lib = &c->lib;
    nvmlUtilization_t u;
    nvmlMemory_v2_t mem;
    unsigned int v;
    unsigned long long mj;
    switch (m) {
    case M_UTIL:
        return lib->utilization ? lib->utilization(g->dev, &u) : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_MEM_USED:
    case M_MEM_FREE: return read_memory(lib, g->dev, &mem);
    case M_POWER: return lib->power ? lib->power(g->dev, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_ENERGY:
        if (lib->total_energy && lib->total_energy(g->dev, &mj) == NVML_SUCCESS) {
            g->energy_counter = true;
            g->energy_start_mj = mj;
            return NVML_SUCCESS;
        }
        return probe(c, g, M_POWER); /* integrate power instead */
    case M_TEMP:
        return lib->temperature ? lib->temperature(g->dev, NVML_TEMPERATURE_GPU, &v)
                                : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_CLOCK:
        return lib->clock ? lib->clock(g->dev, NVML_CLOCK_SM, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_PCIE_TX:
    case M_PCIE_RX:
        return lib->pcie
                   ? lib->pcie(g->dev,
                               m == M_PCIE_TX ? NVML_PCIE_UTIL_TX_BYTES : NVML_PCIE_UTIL_RX_BYTES,
                               &v)
                   : NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

/* Records a GPU's identity and registers the series of what it supports. */
static void setup_gpu(nvml_collector *c, nvml_gpu *g)
{
    tp_gpu_info info;
    memset(&info, 0, sizeof info);
    info.index = g->index;
    if (!c->lib.name || c->lib.name(g->dev, info.name, sizeof info.name) != NVML_SUCCESS)
        snprintf(info.name, sizeof info.name, "unknown");
    if (!c->lib.uuid || c->lib.uuid(g->dev, info.uuid, sizeof info.uuid) != NVML_SUCCESS)
        info.uuid[0] = '\0';
    nvmlMemory_v2_t mem;
    if (read_memory(&c->lib, g->dev, &mem) == NVML_SUCCESS)
        info.mem_total_bytes = mem.total;
    char num[16], labels[TP_LABELS_MAX];
    snprintf(num, sizeof num, "%d", g->index);
    tp_labels1(labels, sizeof labels, "gpu", num);
    for (int m = 0; m < M_N; m++) {
        nvmlReturn_t r = probe(c, g, m);
        if (r == NVML_SUCCESS)
            g->series[m] = tp_sink_series(c->sink, metric_names[m], labels);
        else if (m != M_MEM_FREE)
            note_unsupported(c, g, m, r);
    }
    snprintf(info.energy_source, sizeof info.energy_source, "%s",
             !g->series[M_ENERGY] ? "none"
             : g->energy_counter  ? "counter"
                                  : "power_integral");
    tp_sink_gpu(c->sink, &info);
}

tp_collector *tp_nvml_collector_new(const tp_collect_env *env)
{
    nvml_collector *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->sink = env->sink;
    char why[256];
    nvml_init_fn init;
    if (!load_library(&c->lib, &init, why, sizeof why)) {
        tp_sink_unavailable(env->sink, "nvml", why);
        free(c);
        return NULL;
    }
    nvmlReturn_t r = init();
    unsigned int count = 0;
    if (r == NVML_SUCCESS)
        r = c->lib.count(&count);
    if (r != NVML_SUCCESS || count == 0) {
        if (r != NVML_SUCCESS)
            snprintf(why, sizeof why, "NVML init failed: %s", nvml_error(&c->lib, r));
        else
            snprintf(why, sizeof why, "NVML found no GPUs");
        tp_sink_unavailable(env->sink, "nvml", why);
        if (r == NVML_SUCCESS && c->lib.shutdown)
            c->lib.shutdown();
        dlclose(c->lib.handle);
        free(c);
        return NULL;
    }
    char driver[96];
    if (c->lib.driver_version && c->lib.driver_version(driver, sizeof driver) == NVML_SUCCESS)
        tp_sink_meta(env->sink, "gpu_driver_version", driver);
    for (unsigned i = 0; i < count && c->ngpus < NVML_MAX_GPUS; i++) {
        nvml_gpu *g = &c->gpus[c->ngpus];
        g->index = (int)i;
        if ((r = c->lib.handle_by_index(i, &g->dev)) != NVML_SUCCESS) {
            char source[32];
            snprintf(source, sizeof source, "nvml gpu%u", i);
            tp_sink_unavailable(env->sink, source, nvml_error(&c->lib, r));
            continue;
        }
        setup_gpu(c, g);
        c->ngpus++;
    }
    c->base.name = "nvml";
    c->base.sample = nvml_sample;
    c->base.destroy = nvml_destroy;
    pthread_mutex_init(&c->stop_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->stop_cond, &attr);
    pthread_condattr_destroy(&attr);
    c->slow_running = pthread_create(&c->slow_thread, NULL, slow_loop, c) == 0;
    return &c->base;
}
