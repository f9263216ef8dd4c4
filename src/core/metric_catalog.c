/* metric_catalog.c: names, units and meanings of the recorded metrics. */
#include "core/metric_catalog.h"

#include <string.h>

static const tp_metric_def catalog[] = {
    {TP_METRIC_CPU_UTIL_PERCENT, TP_UNIT_PERCENT, "cpu",
     "CPU time not idle or iowait, averaged over all cores (no label) or per core (cpu)"},
    {TP_METRIC_CPU_STEAL_PERCENT, TP_UNIT_PERCENT, "cpu",
     "CPU time a virtual machine's hypervisor gave to others while its CPUs had work (steal), "
     "averaged over all cores; inside cpu_util_percent; where the kernel counts it"},
    {TP_METRIC_HOST_MEM_USED_BYTES, TP_UNIT_BYTES, "mem", "MemTotal - MemAvailable"},
    {TP_METRIC_HOST_MEM_AVAILABLE_BYTES, TP_UNIT_BYTES, "mem", "MemAvailable"},
    {TP_METRIC_SWAP_USED_BYTES, TP_UNIT_BYTES, "mem", "SwapTotal - SwapFree"},
    {TP_METRIC_DISK_READ_IOPS, TP_UNIT_OPS_PER_S, "disk", "completed reads per second"},
    {TP_METRIC_DISK_WRITE_IOPS, TP_UNIT_OPS_PER_S, "disk", "completed writes per second"},
    {TP_METRIC_DISK_READ_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "disk", "bytes read per second"},
    {TP_METRIC_DISK_WRITE_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "disk", "bytes written per second"},
    {TP_METRIC_DISK_BUSY_PERCENT, TP_UNIT_PERCENT, "disk",
     "share of time the disk had a request in flight (iostat's %util; a disk that serves "
     "many at once, an NVMe or an array, can be at 100 % below its limit); at most 100 %"},
    {TP_METRIC_NET_SENT_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "net",
     "bytes sent per second (interface or InfiniBand port)"},
    {TP_METRIC_NET_RECV_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "net",
     "bytes received per second (interface or InfiniBand port)"},
    {TP_METRIC_NET_LINK_SPEED_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "net",
     "the link's speed, each way (/sys/class/net/NAME/speed, an InfiniBand port's rate)"},
    {TP_METRIC_PROC_CPU_PERCENT, TP_UNIT_PERCENT, "proc",
     "CPU used by the command's process tree, 100 = one core"},
    {TP_METRIC_PROC_RSS_BYTES, TP_UNIT_BYTES, "proc", "resident memory of the process tree"},
    {TP_METRIC_PROC_READ_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "proc",
     "storage reads of the process tree (read_bytes of /proc/PID/io)"},
    {TP_METRIC_PROC_WRITE_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "proc",
     "storage writes of the process tree (write_bytes of /proc/PID/io)"},
    {TP_METRIC_PROC_COUNT, TP_UNIT_COUNT, "proc", "processes in the tree"},
    {TP_METRIC_PROC_THREADS, TP_UNIT_COUNT, "proc", "threads in the tree"},
    {TP_METRIC_PROC_CPU_WAIT_PERCENT, TP_UNIT_PERCENT, "proc",
     "time the tree's processes' main threads waited for a CPU (run queue), 100 = one thread "
     "all the time"},
    {TP_METRIC_PROC_BLOCKED, TP_UNIT_COUNT, "proc",
     "the tree's threads in uninterruptible sleep (state D: waiting on "
     "storage, a network filesystem or the kernel) when sampled; its mean is how many of them "
     "waited so, on average"},
    {TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, TP_UNIT_PERCENT, "proc",
     "time each traced process's step thread (the one that marks its steps) waited for a CPU "
     "(run queue), per process {pid}, 100 = all the time"},
    {TP_METRIC_STEP_THREAD_CPU_PERCENT, TP_UNIT_PERCENT, "proc",
     "time each traced process's step thread ran on a CPU, per process {pid}, 100 = all the "
     "time"},
    {TP_METRIC_PRESSURE_CPU_SOME_PERCENT, TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for CPU"},
    {TP_METRIC_PRESSURE_IO_SOME_PERCENT, TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for I/O"},
    {TP_METRIC_PRESSURE_IO_FULL_PERCENT, TP_UNIT_PERCENT, "pressure",
     "share of time all non-idle tasks waited for I/O"},
    {TP_METRIC_PRESSURE_MEMORY_SOME_PERCENT, TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for memory"},
    {TP_METRIC_PRESSURE_MEMORY_FULL_PERCENT, TP_UNIT_PERCENT, "pressure",
     "share of time all non-idle tasks waited for memory"},
    {TP_METRIC_CPU_ENERGY_JOULES, TP_UNIT_JOULES, "rapl",
     "RAPL energy since the run started, per domain"},
    {TP_METRIC_GPU_UTIL_PERCENT, TP_UNIT_PERCENT, "nvml", "share of time a kernel ran on the GPU"},
    {TP_METRIC_GPU_MEM_USED_BYTES, TP_UNIT_BYTES, "nvml", "GPU memory used"},
    {TP_METRIC_GPU_MEM_FREE_BYTES, TP_UNIT_BYTES, "nvml", "GPU memory free"},
    {TP_METRIC_GPU_POWER_WATTS, TP_UNIT_WATTS, "nvml", "board power draw"},
    {TP_METRIC_GPU_ENERGY_JOULES, TP_UNIT_JOULES, "nvml", "GPU energy since the run started"},
    {TP_METRIC_GPU_TEMP_CELSIUS, TP_UNIT_CELSIUS, "nvml", "GPU core temperature"},
    {TP_METRIC_GPU_SM_CLOCK_MHZ, TP_UNIT_MHZ, "nvml", "SM clock"},
    {TP_METRIC_GPU_PCIE_TX_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "nvml",
     "PCIe bytes sent by the GPU per second: from its cumulative counter between two ticks, or "
     "where the GPU has none a 20 ms spot reading once a second (meta gpu_pcie_source)"},
    {TP_METRIC_GPU_PCIE_RX_BYTES_PER_S, TP_UNIT_BYTES_PER_S, "nvml",
     "PCIe bytes received by the GPU per second (as gpu_pcie_tx_bytes_per_s)"},
    {TP_METRIC_GPU_CLOCK_EVENT_REASONS, TP_UNIT_COUNT, "nvml",
     "why the clocks were below their maximum, NVML's bitmask: 1 idle, 4 software power cap, "
     "8 hardware slowdown, 16 sync boost, 32 software thermal, 64 hardware thermal, 128 power "
     "brake"},
    {TP_METRIC_GPU_POWER_LIMIT_WATTS, TP_UNIT_WATTS, "nvml",
     "the power limit the driver enforces (the lowest of every limit set)"},
    {TP_METRIC_GPU_SM_ACTIVE_PERCENT, TP_UNIT_PERCENT, "nvml",
     "GPM (Hopper and newer): share of time the SMs were busy, over all SMs; "
     "gpu_util_percent counts any kernel on any SM"},
    {TP_METRIC_GPU_SM_OCCUPANCY_PERCENT, TP_UNIT_PERCENT, "nvml",
     "GPM: warps resident on the SMs against their maximum"},
    {TP_METRIC_GPU_TENSOR_ACTIVE_PERCENT, TP_UNIT_PERCENT, "nvml",
     "GPM: share of time any tensor-core pipe was busy"},
    {TP_METRIC_CUDA_ALLOCATED_BYTES, TP_UNIT_BYTES, "allocator",
     "bytes the training's CUDA caching allocator had allocated at a step boundary (the weights, "
     "gradients and optimizer state; no batch's activations), per process"},
    {TP_METRIC_CUDA_RESERVED_BYTES, TP_UNIT_BYTES, "allocator",
     "bytes the allocator held from the device then (allocated, and cached for reuse)"},
    {TP_METRIC_CUDA_PEAK_ALLOCATED_BYTES, TP_UNIT_BYTES, "allocator",
     "the most the allocator had allocated at once since the process began, or since the "
     "script last reset it (torch.cuda.max_memory_allocated)"},
    {TP_METRIC_CUDA_PEAK_RESERVED_BYTES, TP_UNIT_BYTES, "allocator",
     "the most it held from the device at once (torch.cuda.max_memory_reserved)"},
    {TP_METRIC_CUDA_CAPACITY_BYTES, TP_UNIT_BYTES, "allocator",
     "the device's memory as the training sees it (its total_memory)"},
    {TP_METRIC_CUDA_ALLOC_RETRIES, TP_UNIT_COUNT, "allocator",
     "times the allocator freed its cache to retry an allocation since the process began: "
     "memory pressure before any failure"},
    {TP_METRIC_CUDA_OOMS, TP_UNIT_COUNT, "allocator",
     "allocations the allocator could not serve (out of memory) since the process began"},
};

const tp_metric_def *tp_metric_catalog(size_t *count)
{
    *count = sizeof catalog / sizeof catalog[0];
    return catalog;
}

const tp_metric_def *tp_metric_find(const char *name)
{
    for (size_t i = 0; i < sizeof catalog / sizeof catalog[0]; i++)
        if (strcmp(catalog[i].name, name) == 0)
            return &catalog[i];
    return NULL;
}

const char *tp_unit_name(tp_unit unit)
{
    switch (unit) {
    case TP_UNIT_PERCENT: return "percent";
    case TP_UNIT_BYTES: return "bytes";
    case TP_UNIT_BYTES_PER_S: return "bytes_per_s";
    case TP_UNIT_OPS_PER_S: return "ops_per_s";
    case TP_UNIT_COUNT: return "count";
    case TP_UNIT_WATTS: return "watts";
    case TP_UNIT_JOULES: return "joules";
    case TP_UNIT_CELSIUS: return "celsius";
    case TP_UNIT_MHZ: return "mhz";
    }
    return "unknown";
}
