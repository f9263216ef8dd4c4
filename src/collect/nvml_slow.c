/* nvml_slow.c: the NVML readings that don't fit the sampling tick, on the
 * collector's own thread:
 *   - the cumulative PCIe byte counters, every 50 ms: on an H100 (driver
 *     580) they are 32-bit (valueType unsigned int) and wrap every 4 GiB,
 *     which PCIe Gen5 x16 moves in 68 ms, so they are read more often than
 *     that and their wraps undone; their rates over each second are the
 *     PCIe series (meta gpu_pcie_source "counter");
 *   - once a second, GPM (Hopper and newer): SM activity, SM occupancy and
 *     tensor activity between this second's sample and the last one;
 *   - once a second, PCIe throughput where the GPU has no counters: a
 *     reading the driver takes over 20 ms (a spot reading, not an average:
 *     gpu_pcie_source "spot");
 *   - once a second, the compute processes on each GPU (meta
 *     gpu.N.processes, pids as NVML sees them), so that the analysis tells
 *     the job's GPUs from others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "collect/nvml_collector.h"
#include "core/run_keys.h"

static const unsigned int gpm_ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                       NVML_GPM_METRIC_ANY_TENSOR_UTIL};
static const int gpm_metrics[] = {M_SM_ACTIVE, M_SM_OCCUPANCY, M_TENSOR_ACTIVE};

void tp_nvml_slow_setup(nvml_collector *c, nvml_gpu *g, const char *labels)
{
    const nvml_lib *lib = &c->lib;
    nvmlGpmSupport_t support = {.version = NVML_GPM_SUPPORT_VERSION};
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (lib->gpm_support && lib->gpm_alloc && lib->gpm_get && lib->gpm_metrics && lib->gpm_free)
        r = lib->gpm_support(g->dev, &support);
    if (r == NVML_SUCCESS && !support.isSupportedDevice)
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS && !c->gpm_request &&
        !(c->gpm_request = calloc(1, sizeof *c->gpm_request)))
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS && lib->gpm_alloc(&g->gpm_sample[0]) == NVML_SUCCESS &&
        lib->gpm_alloc(&g->gpm_sample[1]) == NVML_SUCCESS) {
        g->gpm = true;
        for (size_t i = 0; i < 3; i++)
            g->series[gpm_metrics[i]] =
                tp_sink_series(c->sink, tp_nvml_metric_names[gpm_metrics[i]], labels);
        return;
    }
    char source[32], reason[160];
    snprintf(source, sizeof source, "nvml gpu%d", g->index);
    snprintf(reason, sizeof reason, "GPM (SM activity, occupancy, tensor activity): %s",
             r == NVML_SUCCESS ? "no sample buffer" : tp_nvml_error(lib, r));
    tp_sink_unavailable(c->sink, source, reason);
}

/* GPM: this second's sample, and the metrics since the last one. */
static void gpm_round(nvml_collector *c, nvml_gpu *g)
{
    const nvml_lib *lib = &c->lib;
    int next = g->gpm_have ? 1 - g->gpm_last : 0;
    nvmlReturn_t r = lib->gpm_get(g->dev, g->gpm_sample[next]);
    if (r != NVML_SUCCESS) {
        tp_nvml_reading_failed(c, g, r);
        return;
    }
    uint64_t now = tp_clock_mono_ns();
    int prev = g->gpm_last;
    g->gpm_last = next;
    if (g->gpm_have < 2)
        g->gpm_have++;
    if (g->gpm_have < 2)
        return;
    nvmlGpmMetricsGet_t *q = c->gpm_request;
    q->version = NVML_GPM_METRICS_GET_VERSION;
    q->numMetrics = 3;
    q->sample1 = g->gpm_sample[prev];
    q->sample2 = g->gpm_sample[next];
    for (size_t i = 0; i < 3; i++) {
        memset(&q->metrics[i], 0, sizeof q->metrics[i]);
        q->metrics[i].metricId = gpm_ids[i];
    }
    if ((r = lib->gpm_metrics(q)) != NVML_SUCCESS) {
        tp_nvml_reading_failed(c, g, r);
        return;
    }
    for (size_t i = 0; i < 3; i++)
        if (q->metrics[i].nvmlReturn == NVML_SUCCESS && q->metrics[i].value >= 0 &&
            q->metrics[i].value <= 100.5)
            tp_nvml_emit(c, g, gpm_metrics[i], now, q->metrics[i].value);
}

/* The spot reading of PCIe throughput (KB/s over the driver's 20 ms). */
static void pcie_spot(nvml_collector *c, nvml_gpu *g)
{
    unsigned int kbs;
    for (int k = 0; k < 2 && !atomic_load(&g->lost); k++) {
        int m = k == 0 ? M_PCIE_TX : M_PCIE_RX;
        if (!g->series[m])
            continue;
        nvmlReturn_t r =
            c->lib.pcie(g->dev, k == 0 ? NVML_PCIE_UTIL_TX_BYTES : NVML_PCIE_UTIL_RX_BYTES, &kbs);
        if (r == NVML_SUCCESS)
            tp_nvml_emit(c, g, m, tp_clock_mono_ns(), kbs * 1024.0);
        else
            tp_nvml_reading_failed(c, g, r);
    }
}

/* The compute processes NVML lists on g: new pids join g's list, which the
 * run's meta then carries. */
static void processes(nvml_collector *c, nvml_gpu *g)
{
    nvmlProcessInfo_t procs[NVML_MAX_PIDS];
    unsigned int n = NVML_MAX_PIDS;
    nvmlReturn_t r = c->lib.processes(g->dev, &n, procs);
    if (r != NVML_SUCCESS || n > NVML_MAX_PIDS)
        return; /* NVML_ERROR_INSUFFICIENT_SIZE: more than we keep; the next round may fit */
    bool changed = false;
    for (unsigned i = 0; i < n; i++) {
        bool known = false;
        for (unsigned j = 0; j < g->npids && !known; j++)
            known = g->pids[j] == procs[i].pid;
        if (!known && g->npids < NVML_MAX_PIDS)
            g->pids[g->npids++] = procs[i].pid, changed = true;
    }
    if (!changed)
        return;
    char key[32], list[NVML_MAX_PIDS * 11 + 1];
    size_t used = 0;
    for (unsigned j = 0; j < g->npids; j++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", j ? "," : "", g->pids[j]);
    tp_meta_key_gpu(key, sizeof key, g->index, TP_META_GPU_PROCESSES);
    tp_sink_meta(c->sink, key, list);
}

bool tp_nvml_read_pcie(const nvml_lib *lib, nvmlDevice_t dev, nvmlFieldValue_t fields[2])
{
    memset(fields, 0, 2 * sizeof *fields);
    fields[0].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
    fields[1].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
    if (!lib->field_values || lib->field_values(dev, 2, fields) != NVML_SUCCESS)
        return false;
    for (int k = 0; k < 2; k++)
        if (fields[k].nvmlReturn != NVML_SUCCESS ||
            (fields[k].valueType != NVML_VALUE_TYPE_UNSIGNED_INT &&
             fields[k].valueType != NVML_VALUE_TYPE_UNSIGNED_LONG_LONG))
            return false;
    return true;
}

/* One reading of g's PCIe counters into its totals: a 32-bit counter's
 * wrap is undone (one wrap at most between two readings 50 ms apart); a
 * 64-bit counter that went back was reset, and adds nothing this once. */
static void pcie_read(nvml_collector *c, nvml_gpu *g)
{
    nvmlFieldValue_t f[2];
    if (!tp_nvml_read_pcie(&c->lib, g->dev, f))
        return;
    for (int k = 0; k < 2; k++) {
        bool narrow = f[k].valueType == NVML_VALUE_TYPE_UNSIGNED_INT;
        unsigned long long raw = narrow ? f[k].value.uiVal : f[k].value.ullVal;
        if (g->pcie_raw_us)
            g->pcie_total[k] += narrow                  ? (uint32_t)(raw - g->pcie_raw[k])
                                : raw >= g->pcie_raw[k] ? raw - g->pcie_raw[k]
                                                        : 0;
        g->pcie_raw[k] = raw;
    }
    if (!g->pcie_raw_us)
        g->pcie_emitted_us = f[0].timestamp;
    g->pcie_raw_us = f[0].timestamp;
}

/* The bytes per second the totals moved since the last rates. */
static void pcie_rates(nvml_collector *c, nvml_gpu *g, uint64_t now_ns)
{
    long long us = g->pcie_raw_us - g->pcie_emitted_us;
    if (us <= 0)
        return;
    for (int k = 0; k < 2; k++) {
        tp_nvml_emit(c, g, k ? M_PCIE_RX : M_PCIE_TX, now_ns,
                     (double)(g->pcie_total[k] - g->pcie_emitted[k]) * 1e6 / (double)us);
        g->pcie_emitted[k] = g->pcie_total[k];
    }
    g->pcie_emitted_us = g->pcie_raw_us;
}

void tp_nvml_slow_round(nvml_collector *c, bool each_second)
{
    uint64_t now = tp_clock_mono_ns();
    for (unsigned i = 0; i < c->ngpus; i++) {
        nvml_gpu *g = &c->gpus[i];
        if (atomic_load(&g->lost))
            continue;
        if (g->pcie_counter)
            pcie_read(c, g);
        if (!each_second)
            continue;
        if (g->pcie_counter)
            pcie_rates(c, g, now);
        if (g->gpm && !atomic_load(&g->lost))
            gpm_round(c, g);
        if (!g->pcie_counter && c->lib.pcie && !atomic_load(&g->lost))
            pcie_spot(c, g);
        if (c->lib.processes && !atomic_load(&g->lost))
            processes(c, g);
    }
}

void tp_nvml_slow_free(nvml_collector *c)
{
    for (unsigned i = 0; i < c->ngpus; i++)
        for (int k = 0; k < 2; k++)
            if (c->gpus[i].gpm_sample[k] && c->lib.gpm_free)
                c->lib.gpm_free(c->gpus[i].gpm_sample[k]);
    free(c->gpm_request);
}
