/* metric_catalog.h: every metric trainprof records, with its unit and meaning.
 *
 * The single source of truth for metric names: collectors, the run file's
 * metric table, report formatting and docs/metrics.md all follow it. */
#ifndef TP_CORE_METRIC_CATALOG_H
#define TP_CORE_METRIC_CATALOG_H

#include <stddef.h>

/* The metrics' names. Code names a metric by these, never by a literal:
 * a misspelt name does not compile (tests/py/test_layers.py holds it). */
#define TP_METRIC_CPU_UTIL_PERCENT             "cpu_util_percent"
#define TP_METRIC_CPU_STEAL_PERCENT            "cpu_steal_percent"
#define TP_METRIC_HOST_MEM_USED_BYTES          "host_mem_used_bytes"
#define TP_METRIC_HOST_MEM_AVAILABLE_BYTES     "host_mem_available_bytes"
#define TP_METRIC_SWAP_USED_BYTES              "swap_used_bytes"
#define TP_METRIC_DISK_READ_IOPS               "disk_read_iops"
#define TP_METRIC_DISK_WRITE_IOPS              "disk_write_iops"
#define TP_METRIC_DISK_READ_BYTES_PER_S        "disk_read_bytes_per_s"
#define TP_METRIC_DISK_WRITE_BYTES_PER_S       "disk_write_bytes_per_s"
#define TP_METRIC_DISK_BUSY_PERCENT            "disk_busy_percent"
#define TP_METRIC_NET_SENT_BYTES_PER_S         "net_sent_bytes_per_s"
#define TP_METRIC_NET_RECV_BYTES_PER_S         "net_recv_bytes_per_s"
#define TP_METRIC_NET_LINK_SPEED_BYTES_PER_S   "net_link_speed_bytes_per_s"
#define TP_METRIC_PROC_CPU_PERCENT             "proc_cpu_percent"
#define TP_METRIC_PROC_RSS_BYTES               "proc_rss_bytes"
#define TP_METRIC_PROC_READ_BYTES_PER_S        "proc_read_bytes_per_s"
#define TP_METRIC_PROC_WRITE_BYTES_PER_S       "proc_write_bytes_per_s"
#define TP_METRIC_PROC_COUNT                   "proc_count"
#define TP_METRIC_PROC_THREADS                 "proc_threads"
#define TP_METRIC_PROC_CPU_WAIT_PERCENT        "proc_cpu_wait_percent"
#define TP_METRIC_PROC_BLOCKED                 "proc_blocked"
#define TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT "step_thread_cpu_wait_percent"
#define TP_METRIC_STEP_THREAD_CPU_PERCENT      "step_thread_cpu_percent"
#define TP_METRIC_PRESSURE_CPU_SOME_PERCENT    "pressure_cpu_some_percent"
#define TP_METRIC_PRESSURE_IO_SOME_PERCENT     "pressure_io_some_percent"
#define TP_METRIC_PRESSURE_IO_FULL_PERCENT     "pressure_io_full_percent"
#define TP_METRIC_PRESSURE_MEMORY_SOME_PERCENT "pressure_memory_some_percent"
#define TP_METRIC_PRESSURE_MEMORY_FULL_PERCENT "pressure_memory_full_percent"
#define TP_METRIC_CPU_ENERGY_JOULES            "cpu_energy_joules"
#define TP_METRIC_GPU_UTIL_PERCENT             "gpu_util_percent"
#define TP_METRIC_GPU_MEM_USED_BYTES           "gpu_mem_used_bytes"
#define TP_METRIC_GPU_MEM_FREE_BYTES           "gpu_mem_free_bytes"
#define TP_METRIC_GPU_POWER_WATTS              "gpu_power_watts"
#define TP_METRIC_GPU_ENERGY_JOULES            "gpu_energy_joules"
#define TP_METRIC_GPU_TEMP_CELSIUS             "gpu_temp_celsius"
#define TP_METRIC_GPU_SM_CLOCK_MHZ             "gpu_sm_clock_mhz"
#define TP_METRIC_GPU_PCIE_TX_BYTES_PER_S      "gpu_pcie_tx_bytes_per_s"
#define TP_METRIC_GPU_PCIE_RX_BYTES_PER_S      "gpu_pcie_rx_bytes_per_s"
#define TP_METRIC_GPU_CLOCK_EVENT_REASONS      "gpu_clock_event_reasons"
/* Its bits that slow the GPU down (nvml.h's nvmlClocksEventReason*): the
 * software power cap, a hardware slowdown, sync boost, software and hardware
 * thermal limits, the power brake. Idle (1) and the clock settings are not. */
#define TP_GPU_REASON_POWER_CAP   0x4u
#define TP_GPU_REASON_HW_SLOWDOWN 0x8u
#define TP_GPU_REASON_SYNC_BOOST  0x10u
#define TP_GPU_REASON_SW_THERMAL  0x20u
#define TP_GPU_REASON_HW_THERMAL  0x40u
#define TP_GPU_REASON_POWER_BRAKE 0x80u
#define TP_GPU_REASONS_SLOWDOWN   0xfcu
/* Of those, the ones that say something is wrong with the GPU's cooling or
 * power (a power cap under a heavy load is the GPU doing its job) */
#define TP_GPU_REASONS_TROUBLE              0xe8u
#define TP_METRIC_GPU_POWER_LIMIT_WATTS     "gpu_power_limit_watts"
#define TP_METRIC_GPU_SM_ACTIVE_PERCENT     "gpu_sm_active_percent"
#define TP_METRIC_GPU_SM_OCCUPANCY_PERCENT  "gpu_sm_occupancy_percent"
#define TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT "gpu_tensor_active_percent"
/* The training's GPU memory allocator (PyTorch's caching allocator), per
 * process {pid}, at step boundaries (trainprof.h's tp_device_memory) */
#define TP_METRIC_CUDA_ALLOCATED_BYTES      "cuda_allocated_bytes"
#define TP_METRIC_CUDA_RESERVED_BYTES       "cuda_reserved_bytes"
#define TP_METRIC_CUDA_PEAK_ALLOCATED_BYTES "cuda_peak_allocated_bytes"
#define TP_METRIC_CUDA_PEAK_RESERVED_BYTES  "cuda_peak_reserved_bytes"
#define TP_METRIC_CUDA_CAPACITY_BYTES       "cuda_capacity_bytes"
#define TP_METRIC_CUDA_ALLOC_RETRIES        "cuda_alloc_retries"
#define TP_METRIC_CUDA_OOMS                 "cuda_ooms"

typedef enum tp_unit {
    TP_UNIT_PERCENT,
    TP_UNIT_BYTES,
    TP_UNIT_BYTES_PER_S,
    TP_UNIT_OPS_PER_S,
    TP_UNIT_COUNT,
    TP_UNIT_WATTS,
    TP_UNIT_JOULES,
    TP_UNIT_CELSIUS,
    TP_UNIT_MHZ,
} tp_unit;

typedef struct tp_metric_def {
    const char *name;
    tp_unit unit;
    const char *source; /* collector that produces it */
    const char *help;
} tp_metric_def;

/* The catalogue, in report order. */
const tp_metric_def *tp_metric_catalog(size_t *count);

/* Looks a metric up by name; NULL when unknown. */
const tp_metric_def *tp_metric_find(const char *name);

/* The unit's name as stored in the run file ("percent", "bytes_per_s", ...). */
const char *tp_unit_name(tp_unit unit);

#endif
