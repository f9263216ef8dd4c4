/* nvml_api.h: the few NVML types and functions trainprof uses, declared here
 * so that there is no build-time dependency on the CUDA toolkit. The library
 * is loaded with dlopen at run time (see gpu_nvml.c); values follow nvml.h of
 * the NVIDIA Management Library. */
#ifndef TP_COLLECT_NVML_API_H
#define TP_COLLECT_NVML_API_H

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_TEMPERATURE_GPU = 0,
    NVML_CLOCK_SM = 1,
    NVML_PCIE_UTIL_TX_BYTES = 0,
    NVML_PCIE_UTIL_RX_BYTES = 1,
    /* nvmlDeviceGetFieldValues: cumulative PCIe bytes, sent and received */
    NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197,
    NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_DEVICE_MIG_ENABLE = 1,
    /* GPM metric ids: percent of time the SMs were busy, of warps resident
     * against the maximum, of time any tensor pipe was busy */
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRICS_GET_VERSION = 1,
    NVML_GPM_SUPPORT_VERSION = 1,
};

/* Clock event reasons (nvmlDeviceGetCurrentClocksEventReasons): why the
 * clocks are below their maximum. Idle, the application clock setting and
 * the display's are no slowdown; the others are. */
#define NVML_CLOCK_REASON_GPU_IDLE        0x1ULL
#define NVML_CLOCK_REASON_APP_SETTING     0x2ULL
#define NVML_CLOCK_REASON_SW_POWER_CAP    0x4ULL
#define NVML_CLOCK_REASON_HW_SLOWDOWN     0x8ULL
#define NVML_CLOCK_REASON_SYNC_BOOST      0x10ULL
#define NVML_CLOCK_REASON_SW_THERMAL      0x20ULL
#define NVML_CLOCK_REASON_HW_THERMAL      0x40ULL
#define NVML_CLOCK_REASON_HW_POWER_BRAKE  0x80ULL
#define NVML_CLOCK_REASON_DISPLAY_SETTING 0x100ULL
#define NVML_CLOCK_REASONS_SLOWDOWN                                                               \
    (NVML_CLOCK_REASON_SW_POWER_CAP | NVML_CLOCK_REASON_HW_SLOWDOWN |                             \
     NVML_CLOCK_REASON_SYNC_BOOST | NVML_CLOCK_REASON_SW_THERMAL | NVML_CLOCK_REASON_HW_THERMAL | \
     NVML_CLOCK_REASON_HW_POWER_BRAKE)

typedef union nvmlValue_t {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_t {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* microseconds since 1970 when the value was read */
    long long latencyUsec; /* how old the value was when read */
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

/* GPU performance monitoring (Hopper and newer): two samples in time, and
 * the metrics between them. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef struct nvmlGpmMetric_t {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvmlGpmMetric_t;

#define NVML_GPM_METRIC_MAX 477 /* nvml.h's array size; only numMetrics are read */
typedef struct nvmlGpmMetricsGet_t {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct nvmlGpmSupport_t {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* nvmlDeviceGetComputeRunningProcesses_v3's entries (v2's are alike). */
typedef struct nvmlProcessInfo_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlUtilization_t {
    unsigned int gpu;    /* percent of time a kernel ran */
    unsigned int memory; /* percent of time memory was read or written */
} nvmlUtilization_t;

typedef struct nvmlMemory_t {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2 (drivers from 510): `used` leaves out what the
 * driver and firmware reserve, as nvidia-smi shows it; v1's `used` counts it. */
typedef struct nvmlMemory_v2_t {
    unsigned int version;                           /* NVML_MEMORY_V2 */
    unsigned long long total, reserved, free, used; /* bytes */
} nvmlMemory_v2_t;

#define NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

/* Function pointer types, one per symbol used. */
typedef nvmlReturn_t (*nvml_init_fn)(void);
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvml_driver_version_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_count_fn)(unsigned int *);
typedef nvmlReturn_t (*nvml_handle_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_string_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_memory_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvml_memory_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*nvml_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_ull_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_uint_arg_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvml_fields_fn)(nvmlDevice_t, int, nvmlFieldValue_t *);
typedef nvmlReturn_t (*nvml_mig_mode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvml_mig_handle_fn)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_procs_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvml_gpm_support_fn)(nvmlDevice_t, nvmlGpmSupport_t *);
typedef nvmlReturn_t (*nvml_gpm_alloc_fn)(nvmlGpmSample_t *);
typedef nvmlReturn_t (*nvml_gpm_free_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_get_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_metrics_fn)(nvmlGpmMetricsGet_t *);

#endif
