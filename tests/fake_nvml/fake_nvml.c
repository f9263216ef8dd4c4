/* fake_nvml.c: a stand-in libnvidia-ml for machines without an NVIDIA GPU.
 *
 * Exports the NVML symbols trainprof resolves, with readings that follow
 * simple known formulas so tests can check what was recorded:
 *   utilization = 50 + 10*index %, memory used = (index+1) GiB of 80 GiB with
 *   512 MiB more reserved by the driver (v1's `used` counts it, v2's does not),
 *   power = 300 W + 10 W*index, temperature = 60 + index C, SM clock 1980 MHz,
 *   PCIe tx = (index+1)*1000 KB/s, rx = (index+1)*2000 KB/s,
 *   total energy = 1e6 mJ + power * elapsed time since nvmlInit.
 * Built twice: the full library, and with -DFAKE_NVML_OLD an old driver with
 * no _v2 symbols and no total-energy counter.
 * Environment:
 *   FAKE_NVML_GPUS=N             number of GPUs (default 2)
 *   FAKE_NVML_INIT_FAIL=1        nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_NOT_SUPPORTED=a,b  these functions return NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_LOST_AFTER=N       after N utilization reads GPU 1 is lost
 *   FAKE_NVML_PCIE_DELAY_MS=N    each PCIe read sleeps N ms (default 20) */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define EXPORT   __attribute__((visibility("default")))
#define GIB      (1024ULL * 1024 * 1024)
#define RESERVED (512ULL << 20)

static struct timespec started;
static int util_reads;
static int pcie_calls_by_tid[2]; /* [0]: from the watched thread, [1]: others */
static pid_t watched_tid;

/* Test hook: count PCIe reads made by thread tid from now on. */
EXPORT void fake_nvml_watch_thread(pid_t tid)
{
    __atomic_store_n(&watched_tid, tid, __ATOMIC_RELAXED);
    __atomic_store_n(&pcie_calls_by_tid[0], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pcie_calls_by_tid[1], 0, __ATOMIC_RELAXED);
}

/* Test hook: PCIe reads by the watched thread (which) or by others. */
EXPORT int fake_nvml_pcie_calls(int others)
{
    return __atomic_load_n(&pcie_calls_by_tid[others ? 1 : 0], __ATOMIC_RELAXED);
}

static int gpu_count(void)
{
    const char *v = getenv("FAKE_NVML_GPUS");
    return v ? atoi(v) : 2;
}

static int not_supported(const char *fn)
{
    const char *list = getenv("FAKE_NVML_NOT_SUPPORTED");
    return list && strstr(list, fn) != NULL;
}

static int index_of(nvmlDevice_t d) { return (int)(long)d - 1; }

static int lost(nvmlDevice_t d)
{
    const char *v = getenv("FAKE_NVML_LOST_AFTER");
    return v && index_of(d) == 1 && __atomic_load_n(&util_reads, __ATOMIC_RELAXED) > atoi(v);
}

static __attribute__((unused)) double elapsed_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

#define CHECK(fn, dev)         \
    do {                       \
        if (lost(dev))         \
            return 15;         \
        if (not_supported(fn)) \
            return 3;          \
    } while (0)

static nvmlReturn_t do_init(void)
{
    if (getenv("FAKE_NVML_INIT_FAIL"))
        return 12; /* NVML_ERROR_DRIVER_NOT_LOADED */
    clock_gettime(CLOCK_MONOTONIC, &started);
    return 0;
}

static nvmlReturn_t do_count(unsigned int *n)
{
    *n = (unsigned int)gpu_count();
    return 0;
}

static nvmlReturn_t do_handle(unsigned int i, nvmlDevice_t *d)
{
    if ((int)i >= gpu_count())
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = (nvmlDevice_t)(long)(i + 1);
    return 0;
}

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { return do_count(n); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    return do_handle(i, d);
}
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    CHECK("nvmlDeviceGetTotalEnergyConsumption", d);
    *mj = 1000000ULL + (unsigned long long)((300.0 + 10.0 * index_of(d)) * elapsed_s() * 1000.0);
    return 0;
}
#endif
EXPORT nvmlReturn_t nvmlInit(void) { return do_init(); }
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return do_count(n); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
    return do_handle(i, d);
}
EXPORT nvmlReturn_t nvmlShutdown(void) { return 0; }

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case 3: return "Not Supported";
    case 12: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n)
{
    snprintf(buf, n, "999.99-fake");
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n)
{
    snprintf(buf, n, "Fake GPU %d", index_of(d));
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n)
{
    snprintf(buf, n, "GPU-fake-%04d", index_of(d));
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    __atomic_add_fetch(&util_reads, 1, __ATOMIC_RELAXED);
    CHECK("nvmlDeviceGetUtilizationRates", d);
    u->gpu = 50u + 10u * (unsigned)index_of(d);
    u->memory = 20;
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    CHECK("nvmlDeviceGetMemoryInfo", d);
    m->total = 80 * GIB;
    m->used = (unsigned long long)(index_of(d) + 1) * GIB + RESERVED;
    m->free = m->total - m->used;
    return 0;
}

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    CHECK("nvmlDeviceGetMemoryInfo_v2", d);
    if (m->version != (unsigned int)(sizeof *m | (2u << 24)))
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    m->total = 80 * GIB;
    m->reserved = RESERVED;
    m->used = (unsigned long long)(index_of(d) + 1) * GIB;
    m->free = m->total - m->reserved - m->used;
    return 0;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    CHECK("nvmlDeviceGetPowerUsage", d);
    *mw = 300000u + 10000u * (unsigned)index_of(d);
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
    CHECK("nvmlDeviceGetTemperature", d);
    (void)sensor;
    *t = 60u + (unsigned)index_of(d);
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    CHECK("nvmlDeviceGetClockInfo", d);
    *mhz = type == 1 ? 1980u : 0u;
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *kbs)
{
    CHECK("nvmlDeviceGetPcieThroughput", d);
    __atomic_add_fetch(
        &pcie_calls_by_tid[gettid() == __atomic_load_n(&watched_tid, __ATOMIC_RELAXED) ? 0 : 1], 1,
        __ATOMIC_RELAXED);
    const char *v = getenv("FAKE_NVML_PCIE_DELAY_MS");
    long ms = v ? atol(v) : 20;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    *kbs = (unsigned)(index_of(d) + 1) * (counter == 0 ? 1000u : 2000u);
    return 0;
}
