/* nvml_load.c: opening libnvidia-ml with dlopen and resolving its symbols,
 * so that trainprof has no build-time dependency on the CUDA toolkit. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/nvml_collector.h"

/* Resolves the first of the given symbol names that the library exports. */
static void *find_symbol(void *h, const char *newest, const char *base)
{
    void *f = newest ? dlsym(h, newest) : NULL;
    return f ? f : dlsym(h, base);
}

/* Stores a symbol into a function pointer. ISO C has no cast between object
 * and function pointers; POSIX guarantees they have the same size. */
#define LOAD(dst, newest, base)                    \
    do {                                           \
        void *sym_ = find_symbol(h, newest, base); \
        memcpy(&(dst), &sym_, sizeof(dst));        \
    } while (0)

bool tp_nvml_load(nvml_lib *lib, char *why, size_t cap)
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
    LOAD(lib->init, "nvmlInit_v2", "nvmlInit");
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
    LOAD(lib->power_limit, NULL, "nvmlDeviceGetEnforcedPowerLimit");
    LOAD(lib->total_energy, NULL, "nvmlDeviceGetTotalEnergyConsumption");
    /* renamed in driver 535; the old name stays exported */
    LOAD(lib->clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
         "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(lib->temperature, NULL, "nvmlDeviceGetTemperature");
    LOAD(lib->clock, NULL, "nvmlDeviceGetClockInfo");
    LOAD(lib->pcie, NULL, "nvmlDeviceGetPcieThroughput");
    LOAD(lib->field_values, NULL, "nvmlDeviceGetFieldValues");
    LOAD(lib->mig_mode, NULL, "nvmlDeviceGetMigMode");
    LOAD(lib->mig_count, NULL, "nvmlDeviceGetMaxMigDeviceCount");
    LOAD(lib->mig_handle, NULL, "nvmlDeviceGetMigDeviceHandleByIndex");
    LOAD(lib->processes, "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetComputeRunningProcesses_v2");
    LOAD(lib->gpm_support, NULL, "nvmlGpmQueryDeviceSupport");
    LOAD(lib->gpm_alloc, NULL, "nvmlGpmSampleAlloc");
    LOAD(lib->gpm_free, NULL, "nvmlGpmSampleFree");
    LOAD(lib->gpm_get, NULL, "nvmlGpmSampleGet");
    LOAD(lib->gpm_metrics, NULL, "nvmlGpmMetricsGet");
    const char *missing = !lib->init              ? "nvmlInit"
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

const char *tp_nvml_error(const nvml_lib *lib, nvmlReturn_t r)
{
    const char *s = lib->error_string ? lib->error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}
