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
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_TEMPERATURE_GPU = 0,
    NVML_CLOCK_SM = 1,
    NVML_PCIE_UTIL_TX_BYTES = 0,
    NVML_PCIE_UTIL_RX_BYTES = 1,
};

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

#endif
