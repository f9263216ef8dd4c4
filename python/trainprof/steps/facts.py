"""What the training script does, told to the recorder once each (lib/facts.h),
so that the advice fits the run: the model's dtype and device, the CUDA
compute capability and the device's UUID, autocast, torch.compile, and the
training DataLoader's settings. Read from objects the script already made; nothing imported that the
script did not import, nothing hooked.

`trainprof bottleneck`'s replay run writes the model's facts to its file too
(TRAINPROF_BOTTLENECK_FACTS), as key=value lines.
"""

import os
import weakref

from trainprof import _native
from trainprof.runtime import device_memory as _device_memory
from trainprof.startup.swallowed import swallowed

_BOTTLENECK_FACTS = os.environ.get("TRAINPROF_BOTTLENECK_FACTS")
if os.environ.get("TRAINPROF_BOTTLENECK") != "replay":
    _BOTTLENECK_FACTS = None

# True until the first training forward has noted the model (note_model).
wants_model = True
train_model = None  # weakref to the model noted: the first trained module with parameters
_loader_noted = False


def send(facts):
    """(key, value) pairs as facts of the run; a value that is not printable
    ASCII is left out. A key lib/facts.h does not list raises KeyError."""
    for key, value in facts:
        try:
            _native.fact(f"{key}={value}")
        except ValueError:  # a value that is not printable ASCII: left out
            pass


def note_model(module):
    """At the first outermost training forward: the first parameter's dtype
    and device type, the CUDA compute capability, whether autocast is on, and
    whether the model is torch.compile's."""
    global wants_model, train_model
    import torch  # the script's: this runs inside its forward

    param = next(module.parameters(), None)
    if param is None:
        return  # a parameterless wrapper: wait for the next forward
    wants_model = False
    try:
        train_model = weakref.ref(module)
    except TypeError:  # a module that can't be weakly referenced
        pass
    try:
        facts = [
            ("torch.version", torch.__version__),
            ("torch.cuda", getattr(torch.version, "cuda", None) or "none"),
            ("model.dtype", str(param.dtype).replace("torch.", "")),
            ("model.device", param.device.type),
            ("model.compiled", int(type(module).__name__ == "OptimizedModule")),
        ]
        if param.device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(param.device)
            facts.append(("model.capability", f"{major}.{minor}"))
            # the GPU this process drives, as NVML names it less its "GPU-"
            # or "MIG-": the recorder maps the rank to it (its thread_device)
            uuid = getattr(torch.cuda.get_device_properties(param.device), "uuid", None)
            if uuid is not None:
                facts.append(("cuda.device", str(uuid)))
            facts.append(("cuda.alloc_conf", os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")))
            _device_memory.enable(torch, param.device)
        try:
            on = torch.is_autocast_enabled(param.device.type)
        except (TypeError, RuntimeError):  # torch < 2.4 (no device argument), or a device
            on = None  # autocast does not know: say nothing
        if param.device.type == "cpu" and hasattr(torch, "is_autocast_cpu_enabled"):
            on = on or torch.is_autocast_cpu_enabled()
        if on is None and param.device.type == "cuda":
            on = torch.is_autocast_enabled()  # the old form is CUDA's
        if on is not None:
            facts.append(("model.autocast", int(bool(on))))
        if on:
            dtype = _autocast_dtype(torch, param.device.type)
            if dtype is not None:
                facts.append(("model.autocast_dtype", str(dtype).replace("torch.", "")))
        send(facts)
        if _BOTTLENECK_FACTS:
            names = {
                "model.dtype": "dtype",
                "model.device": "device",
                "model.capability": "capability",
                "model.autocast": "autocast",
                "model.autocast_dtype": "autocast_dtype",
            }
            with open(_BOTTLENECK_FACTS, "w") as f:
                f.write("".join(f"{names[k]}={v}\n" for k, v in facts if k in names))
    except Exception as e:  # noqa: BLE001 - said; never let the profiler break the training
        swallowed("noting the model's facts", e)


def _autocast_dtype(torch, device_type):
    """The dtype autocast runs device_type's work in now, or None where this
    torch can't say (get_autocast_dtype came in 2.4; the older per-device forms)."""
    get = getattr(torch, "get_autocast_dtype", None)
    if get is not None:
        try:
            return get(device_type)
        except (TypeError, RuntimeError):  # a device autocast doesn't know
            return None
    old = {"cuda": "get_autocast_gpu_dtype", "cpu": "get_autocast_cpu_dtype"}.get(device_type)
    return getattr(torch, old)() if old and hasattr(torch, old) else None


def note_loader(loader):
    """The training DataLoader's settings, at its first iteration."""
    global _loader_noted
    if _loader_noted:
        return
    _loader_noted = True
    try:
        facts = [
            ("loader.num_workers", loader.num_workers),
            ("loader.pin_memory", int(bool(loader.pin_memory))),
            ("loader.persistent_workers", int(bool(loader.persistent_workers))),
        ]
        if loader.num_workers > 0 and loader.prefetch_factor is not None:
            facts.append(("loader.prefetch_factor", loader.prefetch_factor))
        if loader.batch_size is not None:
            facts.append(("loader.batch_size", loader.batch_size))
        send(facts)
    except Exception as e:  # noqa: BLE001 - said; a DataLoader subclass's attributes may raise
        swallowed("noting the DataLoader's settings", e)
