/* fake_nvml.h: what the fake libnvidia-ml (fake_nvml.c) assumes of NVML,
 * and the readings it gives, in one place. Each assumption cites where it
 * comes from: nvml.h and NVML's API reference (docs.nvidia.com/deploy/
 * nvml-api), as the nvidia-ml-py bindings (13.615) restate them; "seen"
 * marks what a real H100 (driver 580.159.04) showed through tools/
 * gpu_probe.py on 2026-11-24 (docs/gpu.md).
 *
 * Units (nvml.h):
 *   power and the enforced power limit in milliwatts; total energy in
 *   millijoules since the driver loaded (Volta and newer); temperature in
 *   degrees C; clocks in MHz; memory in bytes; nvmlDeviceGetPcieThroughput
 *   in KB/s over a 20 ms window; the PCIe field values (197 TX, 198 RX) in
 *   bytes, cumulative, unsigned long long (valueType 3), with a timestamp in
 *   microseconds; GPM metrics in percent (0.0 to 100.0).
 * Error codes (nvml.h): 1 uninitialized, 3 not supported, 9 driver not
 *   loaded, 13 function not found, 15 GPU is lost, 16 reset required, 18
 *   library and driver versions mismatch, 25 argument version mismatch, 28
 *   GPU not found.
 * Clock event reasons (nvmlClocksEventReason*): 0x1 idle, 0x2 application
 *   clocks setting, 0x4 software power cap, 0x8 hardware slowdown, 0x10 sync
 *   boost, 0x20 software thermal, 0x40 hardware thermal, 0x80 power brake,
 *   0x100 display clock setting. Seen: 0x1 idle, 0x4 under bf16 products.
 * GPM (nvmlGpm*): nvmlGpmQueryDeviceSupport (version 1), two samples from
 *   nvmlGpmSampleGet, nvmlGpmMetricsGet (version 1) over them; metric 2 SM
 *   activity, 3 SM occupancy, 5 any tensor activity. Seen on the H100: 96 %,
 *   14 % and 94 % under bf16 products.
 * MIG: nvmlDeviceGetMigMode gives current and pending (1 enabled); in MIG
 *   mode the card's utilization is not supported; each instance has a
 *   handle (nvmlDeviceGetMigDeviceHandleByIndex), a "MIG-" UUID and its own
 *   memory. Never seen here: the H100 lent had MIG disabled.
 * Processes: nvmlDeviceGetComputeRunningProcesses_v3 fills pid, used memory,
 *   GPU and compute instance ids. Seen: the pid as the process's own
 *   namespace shows it (no container between them).
 *
 * The fake's readings, for GPU i (of FAKE_NVML_GPUS, default 2): */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#define FAKE_UTIL_PERCENT(i)        (50u + 10u * (unsigned)(i))
#define FAKE_MEM_USED_GIB(i)        ((i) + 1) /* of 80 GiB, 512 MiB more reserved */
#define FAKE_POWER_MW(i)            (300000u + 10000u * (unsigned)(i))
#define FAKE_POWER_LIMIT_MW         700000u
#define FAKE_TEMP_C(i)              (60u + (unsigned)(i))
#define FAKE_SM_CLOCK_MHZ           1980u
#define FAKE_PCIE_SPOT_TX_KBS(i)    (((i) + 1) * 1000u)
#define FAKE_PCIE_SPOT_RX_KBS(i)    (((i) + 1) * 2000u)
#define FAKE_PCIE_TX_BYTES_PER_S(i) (((i) + 1) * 1.0e9) /* the counters' rate */
#define FAKE_PCIE_RX_BYTES_PER_S(i) (((i) + 1) * 2.0e9)
/* GPU 0 runs free; GPU 1 is held at its power cap and a thermal limit */
#define FAKE_CLOCK_REASONS(i)  ((i) == 1 ? 0x24ULL : 0x0ULL)
#define FAKE_GPM_SM_ACTIVE(i)  (40.0 + 10.0 * (i))
#define FAKE_GPM_SM_OCCUPANCY  25.0
#define FAKE_GPM_TENSOR_ACTIVE 30.0
#define FAKE_MIG_INSTANCES     2 /* on GPU 0 under FAKE_NVML_MIG=1 */
#define FAKE_MIG_MEM_GIB       10

#endif
