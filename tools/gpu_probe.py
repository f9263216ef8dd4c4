"""What a machine's NVIDIA GPU and its PyTorch say, measured directly, for
docs/gpu.md: the ground truth the recorder's GPU paths are checked against.
Run by tools/gpu-check.sh on a machine with a GPU (pynvml and a CUDA torch);
prints one JSON object.

  - NVML: identity (UUID, MIG mode), the enforced power limit, clock event
    reasons idle and busy, the cumulative PCIe byte counters (field values
    197, 198) against bytes a pinned copy moved, GPM support and its SM
    activity, occupancy and tensor activity while a bf16 matrix product runs,
    the compute processes NVML lists against this process's pid.
  - torch: the device's UUID as its properties carry it.
  - NCCL (world size 1): when a collective's future completes and when the
    host returns from it, against the GPU work it waited for, and
    ProcessGroupNCCL's own duration (_enable_collectives_timing)."""

import json
import os
import time

import pynvml as N
import torch

out = {}
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
dev = torch.device("cuda", 0)
props = torch.cuda.get_device_properties(0)
out["torch_uuid"] = str(getattr(props, "uuid", None))
out["nvml_uuid"] = N.nvmlDeviceGetUUID(h)
out["name"] = N.nvmlDeviceGetName(h)
out["visible"] = os.environ.get("CUDA_VISIBLE_DEVICES")


def attempt(key, fn):
    try:
        out[key] = fn()
    except Exception as e:  # noqa: BLE001 - record what the driver refused
        out[key] = "error: %s" % e


attempt("mig_mode", lambda: list(N.nvmlDeviceGetMigMode(h)))
attempt("enforced_power_limit_mw", lambda: N.nvmlDeviceGetEnforcedPowerLimit(h))
attempt("power_limit_mw", lambda: N.nvmlDeviceGetPowerManagementLimit(h))
attempt("clock_reasons_idle", lambda: hex(N.nvmlDeviceGetCurrentClocksEventReasons(h)))
attempt("gpm_support", lambda: N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)


def pcie_counters():
    vals = N.nvmlDeviceGetFieldValues(
        h, [N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES]
    )
    return [(v.nvmlReturn, v.valueType, v.value.ullVal, v.timestamp) for v in vals]


# PCIe: 16 copies of 256 MiB host to device from pinned memory (4 GiB)
host = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
gpu = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
torch.cuda.synchronize()
attempt("pcie_before", pcie_counters)
t0 = time.time()
spot = []
for i in range(16):
    gpu.copy_(host, non_blocking=True)
    if i == 8:
        spot.append(N.nvmlDeviceGetPcieThroughput(h, N.NVML_PCIE_UTIL_RX_BYTES))
torch.cuda.synchronize()
out["h2d_seconds"] = time.time() - t0
attempt("pcie_after", pcie_counters)
out["h2d_bytes"] = 16 * (256 << 20)
out["pcie_spot_rx_kb_s"] = spot
# the counters over time: 1 s of copies (bytes counted here), then 1 s idle
timeline, moved = [], 0
t0 = time.time()
while time.time() - t0 < 2:
    if time.time() - t0 < 1:
        gpu.copy_(host, non_blocking=True)
        moved += 256 << 20
    torch.cuda.synchronize()
    timeline.append((round(time.time() - t0, 3), moved, pcie_counters()))
    time.sleep(0.02)
out["pcie_timeline"] = timeline

# busy: bf16 products for 3 s; GPM samples 1 s apart, clock reasons
x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
end = time.time() + 3
gpm = {}
try:
    s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
except Exception as e:  # noqa: BLE001
    s1 = s2 = None
    gpm["error"] = str(e)
first = True
while time.time() < end:
    for _ in range(20):
        x @ x
    if first and s1 is not None and time.time() > end - 2:
        N.nvmlGpmSampleGet(h, s1)
        first = False
    torch.cuda.synchronize()
attempt("clock_reasons_busy", lambda: hex(N.nvmlDeviceGetCurrentClocksEventReasons(h)))
if s1 is not None and not first:
    N.nvmlGpmSampleGet(h, s2)
    req = N.c_nvmlGpmMetricsGet_t()
    req.version = N.NVML_GPM_METRICS_GET_VERSION
    req.sample1, req.sample2 = s1, s2
    ids = [
        N.NVML_GPM_METRIC_GRAPHICS_UTIL,
        N.NVML_GPM_METRIC_SM_UTIL,
        N.NVML_GPM_METRIC_SM_OCCUPANCY,
        N.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    ]
    req.numMetrics = len(ids)
    for i, m in enumerate(ids):
        req.metrics[i].metricId = m
    try:
        N.nvmlGpmMetricsGet(req)
        gpm["busy"] = {
            m: (req.metrics[i].nvmlReturn, req.metrics[i].value) for i, m in enumerate(ids)
        }
    except Exception as e:  # noqa: BLE001
        gpm["error"] = str(e)
out["gpm"] = gpm
attempt("util_busy", lambda: N.nvmlDeviceGetUtilizationRates(h).gpu)
attempt(
    "compute_procs",
    lambda: [(p.pid, p.usedGpuMemory) for p in N.nvmlDeviceGetComputeRunningProcesses(h)],
)
out["my_pid"] = os.getpid()

# NCCL, world size 1
import torch.distributed as dist  # noqa: E402

os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
pg = dist.distributed_c10d._get_default_group()
attempt("enable_timing", lambda: str(pg._enable_collectives_timing()))
t = torch.ones(1 << 28, device=dev)  # 1 GiB
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):
    a.record()
    torch.cuda._sleep(200_000_000)
    b.record()
    b.synchronize()
out["sleep_ms"] = a.elapsed_time(b)
nccl = {}
for rnd in range(2):
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # the collective waits for this on the device
    fired = []
    t0 = time.perf_counter()
    w = dist.all_reduce(t, async_op=True)
    t_call = time.perf_counter() - t0
    w.get_future().add_done_callback(
        lambda f, fired=fired, t0=t0: fired.append(time.perf_counter() - t0)
    )
    nccl_done0 = w.is_completed()
    w.wait()
    t_wait = time.perf_counter() - t0
    torch.cuda.synchronize()
    t_sync = time.perf_counter() - t0
    try:
        dur = w._get_duration()
    except Exception as e:  # noqa: BLE001
        dur = "error: %s" % e
    # blocking form, between CUDA events on the current stream
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    t1 = time.perf_counter()
    dist.all_reduce(t)
    t_block = time.perf_counter() - t1
    e1.record()
    e1.synchronize()
    nccl[rnd] = {
        "call_ms": t_call * 1e3,
        "future_fired_ms": [f * 1e3 for f in fired],
        "completed_at_return": nccl_done0,
        "wait_ms": t_wait * 1e3,
        "sync_ms": t_sync * 1e3,
        "nccl_duration_ms": dur,
        "blocking_host_ms": t_block * 1e3,
        "blocking_events_ms": e0.elapsed_time(e1),
    }
out["nccl"] = nccl
dist.destroy_process_group()
print(json.dumps(out, indent=1, default=str))
