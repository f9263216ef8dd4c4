/* nvml_shared.c: what the NVML collector's files share (nvml_collector.h):
 * the metrics' names, a reading that failed, a value emitted. Apart from
 * gpu_nvml.c and nvml_slow.c, which both call them, so that those two call
 * no circle. */
#include <stdatomic.h>
#include <stdio.h>

#include "collect/nvml_collector.h"
#include "core/metric_catalog.h"

const char *const tp_nvml_metric_names[M_N] = {
    TP_METRIC_GPU_UTIL_PERCENT,         TP_METRIC_GPU_MEM_USED_BYTES,
    TP_METRIC_GPU_MEM_FREE_BYTES,       TP_METRIC_GPU_POWER_WATTS,
    TP_METRIC_GPU_ENERGY_JOULES,        TP_METRIC_GPU_TEMP_CELSIUS,
    TP_METRIC_GPU_SM_CLOCK_MHZ,         TP_METRIC_GPU_PCIE_TX_BYTES_PER_S,
    TP_METRIC_GPU_PCIE_RX_BYTES_PER_S,  TP_METRIC_GPU_CLOCK_EVENT_REASONS,
    TP_METRIC_GPU_POWER_LIMIT_WATTS,    TP_METRIC_GPU_SM_ACTIVE_PERCENT,
    TP_METRIC_GPU_SM_OCCUPANCY_PERCENT, TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT,
};
static bool fatal(nvmlReturn_t r)
{
    return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED ||
           r == NVML_ERROR_DRIVER_NOT_LOADED || r == NVML_ERROR_LIB_RM_VERSION_MISMATCH ||
           r == NVML_ERROR_UNINITIALIZED || r == NVML_ERROR_GPU_NOT_FOUND;
}

void tp_nvml_reading_failed(nvml_collector *c, nvml_gpu *g, nvmlReturn_t r)
{
    if (fatal(r) && !atomic_exchange(&g->lost, true)) {
        char source[32], reason[160];
        snprintf(source, sizeof source, "nvml gpu%d", g->index);
        snprintf(reason, sizeof reason, "%s; sampling stopped",
                 r == NVML_ERROR_GPU_IS_LOST ? "GPU is lost (fell off the bus)"
                                             : tp_nvml_error(&c->lib, r));
        tp_sink_unavailable(c->sink, source, reason);
    }
}
void tp_nvml_emit(nvml_collector *c, nvml_gpu *g, int m, uint64_t now_ns, double v)
{
    if (g->series[m])
        tp_sink_sample(c->sink, g->series[m], now_ns, v);
}
