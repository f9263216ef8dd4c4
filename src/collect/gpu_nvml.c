/* gpu_nvml.c: per-GPU metrics through NVML, loaded with dlopen (nvml_load.c).
 *
 * Fast readings (utilization, memory, power and its enforced limit, energy,
 * temperature, SM clock, clock event reasons) are taken on the sampling tick.
 * What is slow, or must be read more often than the tick (the PCIe byte
 * counters, which wrap every 4 GiB), or needs two samples a second apart
 * (GPM) runs on a thread of its own (nvml_slow.c) and never stalls the
 * tick.
 *
 * Energy comes from the total-energy counter (mJ, Volta and newer) where the
 * GPU supports it, across the counter's restarts, otherwise from power
 * integrated over the real timestamps of the readings (trapezoids). A reading
 * a GPU does not support is recorded as unavailable once; a GPU whose
 * readings fail for good (lost, reset needed, driver gone) stops being
 * sampled. In MIG mode the card's utilization is unavailable, and each
 * instance's UUID and memory go to meta gpu.N.mig. docs/gpu.md says what
 * each figure means and how it was checked. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/metric_catalog.h"
#include "clock.h"
#include "collect/nvml_collector.h"
#include "util/labels.h"
#include "core/run_keys.h"

#define metric_names tp_nvml_metric_names

static void note_unsupported(nvml_collector *c, nvml_gpu *g, int metric, nvmlReturn_t r)
{
    char source[32], reason[160];
    snprintf(source, sizeof source, "nvml gpu%d", g->index);
    snprintf(reason, sizeof reason, "%s: %s", metric_names[metric], tp_nvml_error(&c->lib, r));
    tp_sink_unavailable(c->sink, source, reason);
}

#define reading_failed tp_nvml_reading_failed

#define emit tp_nvml_emit

/* A cumulative energy sample, stamped with the time of its own read (or of
 * the power reading it integrates), not the tick's: the tick's time is taken
 * before the whole sweep, and on a loaded machine the read came up to a few
 * hundred ms later, which gave an epoch shorter than the tick half its
 * energy or twice it. power_ns is when power_w was read. */
static void sample_energy(nvml_collector *c, nvml_gpu *g, uint64_t power_ns, bool have_power,
                          double power_w)
{
    if (g->energy_counter) {
        unsigned long long mj;
        nvmlReturn_t r = c->lib.total_energy(g->dev, &mj);
        uint64_t read_ns = tp_clock_mono_ns();
        if (r != NVML_SUCCESS) {
            reading_failed(c, g, r);
            return;
        }
        if (mj < g->energy_last_mj) { /* the counter started again (a driver reload, a reset) */
            g->energy_before_j += (double)(g->energy_last_mj - g->energy_seg_start_mj) / 1000.0;
            g->energy_seg_start_mj = 0;
        }
        g->energy_last_mj = mj;
        emit(c, g, M_ENERGY, read_ns,
             g->energy_before_j + (double)(mj - g->energy_seg_start_mj) / 1000.0);
        return;
    }
    if (!have_power)
        return;
    if (g->prev_power_ns && power_ns > g->prev_power_ns)
        g->energy_j +=
            (g->prev_power_w + power_w) / 2.0 * (double)(power_ns - g->prev_power_ns) / 1e9;
    g->prev_power_w = power_w;
    g->prev_power_ns = power_ns;
    emit(c, g, M_ENERGY, power_ns, g->energy_j);
}

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
        for (unsigned k = 0; k < g->nmig; k++)
            if (g->mig_series[k] && read_memory(&c->lib, g->mig_dev[k], &mem) == NVML_SUCCESS)
                tp_sink_sample(c->sink, g->mig_series[k], now_ns, (double)mem.used);
        bool have_power = false;
        double power_w = 0;
        uint64_t power_ns = 0;
        if (g->series[M_POWER] && (r = c->lib.power(g->dev, &v)) == NVML_SUCCESS) {
            power_ns = tp_clock_mono_ns();
            have_power = true;
            power_w = v / 1000.0;
            emit(c, g, M_POWER, now_ns, power_w);
        } else if (g->series[M_POWER])
            reading_failed(c, g, r);
        if (g->series[M_ENERGY])
            sample_energy(c, g, power_ns, have_power, power_w);
        if (g->series[M_TEMP] &&
            (r = c->lib.temperature(g->dev, NVML_TEMPERATURE_GPU, &v)) == NVML_SUCCESS)
            emit(c, g, M_TEMP, now_ns, v);
        if (g->series[M_CLOCK] && (r = c->lib.clock(g->dev, NVML_CLOCK_SM, &v)) == NVML_SUCCESS)
            emit(c, g, M_CLOCK, now_ns, v);
        unsigned long long reasons;
        if (g->series[M_CLOCK_REASONS] &&
            (r = c->lib.clock_reasons(g->dev, &reasons)) == NVML_SUCCESS)
            emit(c, g, M_CLOCK_REASONS, now_ns, (double)(reasons & 0xffffffffULL));
        if (g->series[M_POWER_LIMIT] && (r = c->lib.power_limit(g->dev, &v)) == NVML_SUCCESS)
            emit(c, g, M_POWER_LIMIT, now_ns, v / 1000.0);
    }
}

/* The slow path (nvml_slow.c), off the tick: every 50 ms where a GPU has
 * PCIe counters, else once a second. */
static void *slow_loop(void *arg)
{
    nvml_collector *c = arg;
    bool counters = false;
    for (unsigned i = 0; i < c->ngpus; i++)
        counters = counters || c->gpus[i].pcie_counter;
    long period_ns = counters ? NVML_FAST_ROUND_MS * 1000000L : 1000000000L;
    uint64_t last_second = 0;
    pthread_mutex_lock(&c->stop_lock);
    while (!c->stop) {
        pthread_mutex_unlock(&c->stop_lock);
        uint64_t now = tp_clock_mono_ns();
        bool each_second = !last_second || now - last_second >= 1000000000ULL;
        if (each_second)
            last_second = now;
        tp_nvml_slow_round(c, each_second);
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += period_ns;
        deadline.tv_sec += deadline.tv_nsec / 1000000000L;
        deadline.tv_nsec %= 1000000000L;
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
    tp_nvml_slow_free(c);
    if (c->lib.shutdown)
        c->lib.shutdown();
    dlclose(c->lib.handle);
    free(c);
}

/* ---- setup ----------------------------------------------------------- */

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
            g->energy_seg_start_mj = g->energy_last_mj = mj;
            return NVML_SUCCESS;
        }
        return probe(c, g, M_POWER); /* integrate power instead */
    case M_TEMP:
        return lib->temperature ? lib->temperature(g->dev, NVML_TEMPERATURE_GPU, &v)
                                : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_CLOCK:
        return lib->clock ? lib->clock(g->dev, NVML_CLOCK_SM, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
    case M_PCIE_TX:
    case M_PCIE_RX: {
        nvmlFieldValue_t f[2];
        if (tp_nvml_read_pcie(lib, g->dev, f)) {
            g->pcie_counter = true;
            return NVML_SUCCESS;
        }
        return lib->pcie
                   ? lib->pcie(g->dev,
                               m == M_PCIE_TX ? NVML_PCIE_UTIL_TX_BYTES : NVML_PCIE_UTIL_RX_BYTES,
                               &v)
                   : NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    case M_CLOCK_REASONS: {
        unsigned long long reasons;
        return lib->clock_reasons ? lib->clock_reasons(g->dev, &reasons)
                                  : NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    case M_POWER_LIMIT:
        return lib->power_limit ? lib->power_limit(g->dev, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    return NVML_ERROR_NOT_SUPPORTED; /* the GPM metrics: nvml_slow.c sets them up */
}

/* A GPU in MIG mode: each instance's UUID and memory, in meta gpu.N.mig
 * ("UUID=total bytes", comma-separated), so that a process driving an
 * instance maps to its GPU, and its memory used (gpu_mem_used_bytes
 * {gpu, mig: its place in that list}) is judged against the instance's. */
static void mig_instances(nvml_collector *c, nvml_gpu *g)
{
    unsigned int n = 0;
    if (!c->lib.mig_count || !c->lib.mig_handle || c->lib.mig_count(g->dev, &n) != NVML_SUCCESS)
        return;
    char list[NVML_MAX_MIG * 120] = "", key[32];
    size_t used = 0;
    for (unsigned i = 0; i < n && i < NVML_MAX_MIG; i++) {
        nvmlDevice_t mig;
        char uuid[96];
        nvmlMemory_v2_t mem;
        if (c->lib.mig_handle(g->dev, i, &mig) != NVML_SUCCESS || !c->lib.uuid ||
            c->lib.uuid(mig, uuid, sizeof uuid) != NVML_SUCCESS)
            continue; /* no instance at this index */
        unsigned long long total = read_memory(&c->lib, mig, &mem) == NVML_SUCCESS ? mem.total : 0;
        int w =
            snprintf(list + used, sizeof list - used, "%s%s=%llu", used ? "," : "", uuid, total);
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
        char gpu[16], k[16], labels[TP_LABELS_MAX];
        snprintf(gpu, sizeof gpu, "%d", g->index);
        snprintf(k, sizeof k, "%u", g->nmig);
        tp_labels2(labels, sizeof labels, TP_LABEL_GPU, gpu, TP_LABEL_MIG, k);
        g->mig_dev[g->nmig] = mig;
        g->mig_series[g->nmig++] =
            total ? tp_sink_series(c->sink, metric_names[M_MEM_USED], labels) : 0;
    }
    tp_meta_key_gpu(key, sizeof key, g->index, TP_META_GPU_MIG);
    tp_sink_meta(c->sink, key, list);
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
    tp_labels1(labels, sizeof labels, TP_LABEL_GPU, num);
    unsigned int mig = 0, mig_pending = 0;
    g->mig = c->lib.mig_mode && c->lib.mig_mode(g->dev, &mig, &mig_pending) == NVML_SUCCESS &&
             mig == NVML_DEVICE_MIG_ENABLE;
    for (int m = 0; m <= M_POWER_LIMIT; m++) {
        nvmlReturn_t r = probe(c, g, m);
        if (r == NVML_SUCCESS)
            g->series[m] = tp_sink_series(c->sink, metric_names[m], labels);
        else if (m == M_UTIL && g->mig)
            tp_sink_unavailable(c->sink, "nvml", "gpu_util_percent: unavailable: MIG");
        else if (m != M_MEM_FREE)
            note_unsupported(c, g, m, r);
    }
    tp_sink_meta(c->sink, TP_META_PCIE_SOURCE,
                 g->pcie_counter        ? "counter"
                 : g->series[M_PCIE_TX] ? "spot"
                                        : "none");
    if (g->mig)
        mig_instances(c, g);
    tp_nvml_slow_setup(c, g, labels);
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
    if (!tp_nvml_load(&c->lib, why, sizeof why)) {
        tp_sink_unavailable(env->sink, "nvml", why);
        free(c);
        return NULL;
    }
    nvmlReturn_t r = c->lib.init();
    bool initialized = r == NVML_SUCCESS;
    unsigned int count = 0;
    if (initialized)
        r = c->lib.count(&count);
    if (r != NVML_SUCCESS || count == 0) {
        if (!initialized)
            snprintf(why, sizeof why, "NVML init failed: %s", tp_nvml_error(&c->lib, r));
        else if (r != NVML_SUCCESS)
            snprintf(why, sizeof why, "NVML could not count the GPUs: %s",
                     tp_nvml_error(&c->lib, r));
        else
            snprintf(why, sizeof why, "NVML found no GPUs");
        tp_sink_unavailable(env->sink, "nvml", why);
        if (initialized && c->lib.shutdown) /* every successful init is shut down */
            c->lib.shutdown();
        dlclose(c->lib.handle);
        free(c);
        return NULL;
    }
    char driver[96];
    if (c->lib.driver_version && c->lib.driver_version(driver, sizeof driver) == NVML_SUCCESS)
        tp_sink_meta(env->sink, TP_META_DRIVER_VERSION, driver);
    for (unsigned i = 0; i < count && c->ngpus < NVML_MAX_GPUS; i++) {
        nvml_gpu *g = &c->gpus[c->ngpus];
        g->index = (int)i;
        if ((r = c->lib.handle_by_index(i, &g->dev)) != NVML_SUCCESS) {
            char source[32];
            snprintf(source, sizeof source, "nvml gpu%u", i);
            tp_sink_unavailable(env->sink, source, tp_nvml_error(&c->lib, r));
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
