/* fake_nvml.c: a stand-in libnvidia-ml for machines without an NVIDIA GPU.
 *
 * Exports the NVML symbols trainprof resolves, with the readings and the
 * assumptions fake_nvml.h states (units, error codes, field values, clock
 * event reasons, GPM, MIG, processes); total energy = 1e6 mJ + power *
 * elapsed time since nvmlInit. Built twice: the full library, and with
 * -DFAKE_NVML_OLD an old driver with no _v2 symbols, no total-energy counter,
 * no field values, clock reasons, GPM, MIG or process lists.
 * Environment:
 *   FAKE_NVML_GPUS=N             number of GPUs (default 2)
 *   FAKE_NVML_INIT_FAIL=1        nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED (9)
 *   FAKE_NVML_COUNT_FAIL=1       nvmlDeviceGetCount fails (999) after a good init
 *   FAKE_NVML_REASONS_UNTIL_S=S  clock event reasons only for the first S seconds, none after
 *   FAKE_NVML_THERMAL_WHILE=path every GPU is held back by heat (SW thermal slowdown)
 *                                while path exists (a training tells when it throttles)
 *   FAKE_NVML_NOT_SUPPORTED=a,b  these functions return NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_LOST_AFTER=N       after N utilization reads GPU 1 fails with
 *   FAKE_NVML_LOST_CODE=C        code C (default 15, GPU is lost)
 *   FAKE_NVML_PCIE_DELAY_MS=N    each PCIe spot read sleeps N ms (default 20)
 *   FAKE_NVML_ENERGY_RESET_S=X   the energy counter starts again from 0 after X s
 *   FAKE_NVML_MIG=1              GPU 0 is in MIG mode, with 2 instances
 *   FAKE_NVML_PIDS=a,b           the compute processes on GPU 0
 *   FAKE_NVML_PCIE_32BIT=1       the PCIe counters are 32-bit (valueType 1) and
 *                                wrap, as an H100's are (64-bit by default) */
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

#include "fake_nvml.h"

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

static int inits, shutdowns;

/* Test hook: nvmlInit calls that succeeded, less nvmlShutdown calls. */
EXPORT int fake_nvml_init_balance(void)
{
    return __atomic_load_n(&inits, __ATOMIC_RELAXED) -
           __atomic_load_n(&shutdowns, __ATOMIC_RELAXED);
}

/* Test hook: NVML calls made for GPU 1 after it failed for good. */
static int calls_after_lost;
EXPORT int fake_nvml_calls_after_lost(void)
{
    return __atomic_load_n(&calls_after_lost, __ATOMIC_RELAXED);
}

static int mig_on(void) { return getenv("FAKE_NVML_MIG") != NULL; }

static __attribute__((unused)) double elapsed_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

static int lost_code(void)
{
    const char *v = getenv("FAKE_NVML_LOST_CODE");
    return v ? atoi(v) : 15;
}

#define CHECK(fn, dev)                                                  \
    do {                                                                \
        if (lost(dev)) {                                                \
            __atomic_add_fetch(&calls_after_lost, 1, __ATOMIC_RELAXED); \
            return lost_code();                                         \
        }                                                               \
        if (not_supported(fn))                                          \
            return 3;                                                   \
    } while (0)

static nvmlReturn_t do_init(void)
{
    if (getenv("FAKE_NVML_INIT_FAIL"))
        return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
    clock_gettime(CLOCK_MONOTONIC, &started);
    __atomic_add_fetch(&inits, 1, __ATOMIC_RELAXED);
    return 0;
}

static nvmlReturn_t do_count(unsigned int *n)
{
    if (getenv("FAKE_NVML_COUNT_FAIL"))
        return 999; /* NVML_ERROR_UNKNOWN */
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
    double t = elapsed_s(), base = 1e6;
    const char *reset = getenv("FAKE_NVML_ENERGY_RESET_S");
    if (reset && t > atof(reset)) /* the counter started again from 0 */
        t -= atof(reset), base = 0;
    *mj = (unsigned long long)(base + FAKE_POWER_MW(index_of(d)) * t);
    return 0;
}
#endif
EXPORT nvmlReturn_t nvmlInit(void) { return do_init(); }
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return do_count(n); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
    return do_handle(i, d);
}
EXPORT nvmlReturn_t nvmlShutdown(void)
{
    __atomic_add_fetch(&shutdowns, 1, __ATOMIC_RELAXED);
    return 0;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 16: return "Reset Required";
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
    if ((long)d > 100) { /* a MIG instance of GPU 0 */
        snprintf(buf, n, "MIG-fake-0000-%ld", (long)d - 101);
        return 0;
    }
    snprintf(buf, n, "GPU-fake-%04d", index_of(d));
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    __atomic_add_fetch(&util_reads, 1, __ATOMIC_RELAXED);
    CHECK("nvmlDeviceGetUtilizationRates", d);
    if (mig_on() && index_of(d) == 0)
        return 3; /* not supported in MIG mode */
    u->gpu = FAKE_UTIL_PERCENT(index_of(d));
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
    if (m->version != (unsigned int)(sizeof *m | (2u << 24)))
        return 25;       /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    if ((long)d > 100) { /* a MIG instance: its own memory */
        m->total = FAKE_MIG_MEM_GIB * GIB;
        m->reserved = 0;
        m->used = GIB;
        m->free = m->total - m->used;
        return 0;
    }
    CHECK("nvmlDeviceGetMemoryInfo_v2", d);
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
    *mw = FAKE_POWER_MW(index_of(d));
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
    CHECK("nvmlDeviceGetTemperature", d);
    (void)sensor;
    *t = FAKE_TEMP_C(index_of(d));
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    CHECK("nvmlDeviceGetClockInfo", d);
    *mhz = type == 1 ? FAKE_SM_CLOCK_MHZ : 0u;
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
    *kbs = counter == 0 ? FAKE_PCIE_SPOT_TX_KBS(index_of(d)) : FAKE_PCIE_SPOT_RX_KBS(index_of(d));
    return 0;
}

#ifndef FAKE_NVML_OLD
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    union {
        double d;
        unsigned int ui;
        unsigned long long ull;
    } value;
} fieldValue;

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, fieldValue *v)
{
    CHECK("nvmlDeviceGetFieldValues", d);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double t = elapsed_s();
    for (int k = 0; k < n; k++) {
        v[k].timestamp = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
        v[k].latencyUsec = 0;
        int narrow = getenv("FAKE_NVML_PCIE_32BIT") != NULL;
        v[k].valueType = narrow ? 1 : 3;
        v[k].nvmlReturn = 0;
        unsigned long long bytes = 0;
        if (v[k].fieldId == 197)
            bytes = (unsigned long long)(FAKE_PCIE_TX_BYTES_PER_S(index_of(d)) * t);
        else if (v[k].fieldId == 198)
            bytes = (unsigned long long)(FAKE_PCIE_RX_BYTES_PER_S(index_of(d)) * t);
        else
            v[k].nvmlReturn = 3;
        if (narrow)
            v[k].value.ui = (unsigned int)bytes; /* wraps every 4 GiB */
        else
            v[k].value.ull = bytes;
    }
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
    CHECK("nvmlDeviceGetCurrentClocksEventReasons", d);
    *r = FAKE_CLOCK_REASONS(index_of(d));
    const char *until = getenv("FAKE_NVML_REASONS_UNTIL_S"); /* held back that long, then free */
    if (until && elapsed_s() > atof(until))
        *r = 0;
    const char *thermal = getenv("FAKE_NVML_THERMAL_WHILE");
    if (thermal && access(thermal, F_OK) == 0)
        *r |= 0x20ULL; /* nvmlClocksEventReasonSwThermalSlowdown */
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
    CHECK("nvmlDeviceGetEnforcedPowerLimit", d);
    *mw = FAKE_POWER_LIMIT_MW;
    return 0;
}

/* GPM: a sample remembers its GPU; metrics need two samples of one GPU. */
typedef struct {
    int gpu;
} gpm_sample;

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, unsigned int *support)
{
    CHECK("nvmlGpmQueryDeviceSupport", d);
    if (support[0] != 1)
        return 25;
    support[1] = 1;
    return 0;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(gpm_sample **s)
{
    *s = calloc(1, sizeof **s);
    return *s ? 0 : 20; /* NVML_ERROR_MEMORY */
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(gpm_sample *s)
{
    free(s);
    return 0;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, gpm_sample *s)
{
    CHECK("nvmlGpmSampleGet", d);
    s->gpu = index_of(d) + 1;
    return 0;
}

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    char *names[3];
} gpm_metric;

typedef struct {
    unsigned int version, numMetrics;
    gpm_sample *sample1, *sample2;
    gpm_metric metrics[];
} gpm_request;

EXPORT nvmlReturn_t nvmlGpmMetricsGet(gpm_request *q)
{
    if (q->version != 1)
        return 25;
    if (!q->sample1 || !q->sample2 || q->sample1 == q->sample2 || !q->sample1->gpu ||
        q->sample1->gpu != q->sample2->gpu)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    int i = q->sample1->gpu - 1;
    for (unsigned k = 0; k < q->numMetrics; k++) {
        gpm_metric *m = &q->metrics[k];
        m->nvmlReturn = 0;
        switch (m->metricId) {
        case 2: m->value = FAKE_GPM_SM_ACTIVE(i); break;
        case 3: m->value = FAKE_GPM_SM_OCCUPANCY; break;
        case 5: m->value = FAKE_GPM_TENSOR_ACTIVE; break;
        default: m->nvmlReturn = 3;
        }
    }
    return 0;
}

/* MIG: GPU 0's instances are handles 101 and 102. */
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current,
                                         unsigned int *pending)
{
    CHECK("nvmlDeviceGetMigMode", d);
    *current = *pending = mig_on() && index_of(d) == 0;
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n)
{
    *n = mig_on() && index_of(d) == 0 ? 7 : 0;
    return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int k,
                                                        nvmlDevice_t *mig)
{
    if (!mig_on() || index_of(d) != 0 || k >= FAKE_MIG_INSTANCES)
        return 6; /* NVML_ERROR_NOT_FOUND */
    *mig = (nvmlDevice_t)(long)(101 + k);
    return 0;
}

typedef struct {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
} process_info;

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
                                                            process_info *out)
{
    CHECK("nvmlDeviceGetComputeRunningProcesses_v3", d);
    const char *list = index_of(d) == 0 ? getenv("FAKE_NVML_PIDS") : NULL;
    unsigned int count = 0;
    for (const char *p = list; p && *p;) {
        unsigned int pid = (unsigned int)strtoul(p, (char **)&p, 10);
        if (count < *n)
            out[count] = (process_info){pid, 1ULL << 30, 0, 0};
        count++;
        while (*p == ',')
            p++;
    }
    if (count > *n) {
        *n = count;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    *n = count;
    return 0;
}
#endif
