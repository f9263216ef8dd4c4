/* metric_catalog.c: names, units and meanings of the recorded metrics. */
#include "core/metric_catalog.h"

#include <string.h>

static const tp_metric_def catalog[] = {
    {"cpu_util_percent", TP_UNIT_PERCENT, "cpu",
     "CPU time not idle or iowait, averaged over all cores (no label) or per core (cpu)"},
    {"host_mem_used_bytes", TP_UNIT_BYTES, "mem", "MemTotal - MemAvailable"},
    {"host_mem_available_bytes", TP_UNIT_BYTES, "mem", "MemAvailable"},
    {"swap_used_bytes", TP_UNIT_BYTES, "mem", "SwapTotal - SwapFree"},
    {"disk_read_iops", TP_UNIT_OPS_PER_S, "disk", "completed reads per second"},
    {"disk_write_iops", TP_UNIT_OPS_PER_S, "disk", "completed writes per second"},
    {"disk_read_bytes_per_s", TP_UNIT_BYTES_PER_S, "disk", "bytes read per second"},
    {"disk_write_bytes_per_s", TP_UNIT_BYTES_PER_S, "disk", "bytes written per second"},
    {"disk_busy_percent", TP_UNIT_PERCENT, "disk",
     "share of time the disk had a request in flight (iostat's %util; a disk that serves "
     "many at once, an NVMe or an array, can be at 100 % below its limit)"},
    {"net_sent_bytes_per_s", TP_UNIT_BYTES_PER_S, "net",
     "bytes sent per second (interface or InfiniBand port)"},
    {"net_recv_bytes_per_s", TP_UNIT_BYTES_PER_S, "net",
     "bytes received per second (interface or InfiniBand port)"},
    {"net_link_speed_bytes_per_s", TP_UNIT_BYTES_PER_S, "net",
     "the link's speed, each way (/sys/class/net/NAME/speed, an InfiniBand port's rate)"},
    {"proc_cpu_percent", TP_UNIT_PERCENT, "proc",
     "CPU used by the command's process tree, 100 = one core"},
    {"proc_rss_bytes", TP_UNIT_BYTES, "proc", "resident memory of the process tree"},
    {"proc_read_bytes_per_s", TP_UNIT_BYTES_PER_S, "proc",
     "storage reads of the process tree (read_bytes of /proc/PID/io)"},
    {"proc_write_bytes_per_s", TP_UNIT_BYTES_PER_S, "proc",
     "storage writes of the process tree (write_bytes of /proc/PID/io)"},
    {"proc_count", TP_UNIT_COUNT, "proc", "processes in the tree"},
    {"proc_threads", TP_UNIT_COUNT, "proc", "threads in the tree"},
    {"pressure_cpu_some_percent", TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for CPU"},
    {"pressure_io_some_percent", TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for I/O"},
    {"pressure_io_full_percent", TP_UNIT_PERCENT, "pressure",
     "share of time all non-idle tasks waited for I/O"},
    {"pressure_memory_some_percent", TP_UNIT_PERCENT, "pressure",
     "share of time some task waited for memory"},
    {"pressure_memory_full_percent", TP_UNIT_PERCENT, "pressure",
     "share of time all non-idle tasks waited for memory"},
    {"cpu_energy_joules", TP_UNIT_JOULES, "rapl", "RAPL energy since the run started, per domain"},
    {"gpu_util_percent", TP_UNIT_PERCENT, "nvml", "share of time a kernel ran on the GPU"},
    {"gpu_mem_used_bytes", TP_UNIT_BYTES, "nvml", "GPU memory used"},
    {"gpu_mem_free_bytes", TP_UNIT_BYTES, "nvml", "GPU memory free"},
    {"gpu_power_watts", TP_UNIT_WATTS, "nvml", "board power draw"},
    {"gpu_energy_joules", TP_UNIT_JOULES, "nvml", "GPU energy since the run started"},
    {"gpu_temp_celsius", TP_UNIT_CELSIUS, "nvml", "GPU core temperature"},
    {"gpu_sm_clock_mhz", TP_UNIT_MHZ, "nvml", "SM clock"},
    {"gpu_pcie_tx_bytes_per_s", TP_UNIT_BYTES_PER_S, "nvml", "PCIe bytes sent by the GPU"},
    {"gpu_pcie_rx_bytes_per_s", TP_UNIT_BYTES_PER_S, "nvml", "PCIe bytes received by the GPU"},
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
