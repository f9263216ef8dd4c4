"""Whether the recorder's NVML reads slow a launch-bound training (needs an
NVIDIA GPU and a CUDA torch): the rate at which one thread launches tiny
kernels, alone and beside a thread reading NVML at the recorder's cadences:
the PCIe byte counters every 20 ms (nvmlDeviceGetFieldValues, what
nvml_slow.c does where a GPU has them), and the tick's readings every 100 ms
(utilization, memory, power, clock, clock event reasons).

    python3 bench/nvml_contention.py [ROUNDS]

Prints one JSON object: per configuration, the median over ROUNDS (default
7, in rotating order) of the launches per second, and its ratio to alone.
"""

import ctypes
import json
import statistics
import sys
import threading
import time

import torch

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


class Field(ctypes.Structure):
    _fields_ = [
        ("fieldId", ctypes.c_uint),
        ("scopeId", ctypes.c_uint),
        ("timestamp", ctypes.c_longlong),
        ("latencyUsec", ctypes.c_longlong),
        ("valueType", ctypes.c_int),
        ("nvmlReturn", ctypes.c_int),
        ("value", ctypes.c_ulonglong),
    ]


def counters():
    f = (Field * 2)()
    f[0].fieldId, f[1].fieldId = 197, 198
    nvml.nvmlDeviceGetFieldValues(dev, 2, f)


def tick():
    u, m, v = (ctypes.c_uint * 2)(), (ctypes.c_ulonglong * 3)(), ctypes.c_uint()
    r = ctypes.c_ulonglong()
    nvml.nvmlDeviceGetUtilizationRates(dev, u)
    nvml.nvmlDeviceGetMemoryInfo(dev, m)
    nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(v))
    nvml.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(v))
    nvml.nvmlDeviceGetCurrentClocksEventReasons(dev, ctypes.byref(r))


def reader(stop, fns):
    """Calls each (fn, period) at its period until stop is set (a C thread
    in the recorder; here a Python one, which only adds to its cost)."""
    due = [time.perf_counter()] * len(fns)
    while not stop.is_set():
        now = time.perf_counter()
        for i, (fn, period) in enumerate(fns):
            if now >= due[i]:
                fn()
                due[i] = now + period
        time.sleep(0.005)


def launches(seconds=2.0):
    x = torch.zeros(1, device="cuda")
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(200):
            x.add_(1)
        torch.cuda.synchronize()
        n += 200
    return n / seconds


def timed_call(fn, n=2000):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


CONFIGS = {
    "alone": [],
    "counters_20ms": [(counters, 0.02)],
    "counters_20ms_and_tick_100ms": [(counters, 0.02), (tick, 0.1)],
}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    launches(0.5)  # warm-up
    rates = {k: [] for k in CONFIGS}
    names = list(CONFIGS)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            stop = threading.Event()
            t = threading.Thread(target=reader, args=(stop, CONFIGS[name]), daemon=True)
            t.start()
            rates[name].append(launches())
            stop.set()
            t.join()
    alone = statistics.median(rates["alone"])
    print(
        json.dumps(
            {
                "field_values_call_us": timed_call(counters) * 1e6,
                "tick_calls_us": timed_call(tick, 500) * 1e6,
                "launches_per_s": {k: statistics.median(v) for k, v in rates.items()},
                "ratio_to_alone": {k: statistics.median(v) / alone for k, v in rates.items()},
                "rounds": rounds,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
