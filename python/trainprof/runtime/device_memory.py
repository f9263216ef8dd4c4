"""The training's GPU memory, as its allocator keeps it, at step boundaries.

Where the model's parameters live on a CUDA device (trainprof.steps.facts
notes it at the first training forward), each step mark may take one reading
of PyTorch's caching allocator (torch.cuda.memory_stats of that device):
allocated and reserved now (at a step boundary: the weights, gradients and
optimizer state, no batch's activations), their peaks, the device's
capacity, the allocator's retries and out-of-memory count. It goes to the
recorder as one event (trainprof.h's tp_device_memory), and on to the run
file as the cuda_* series (docs/metrics.md).

What it costs the training: a clock read per step mark, and a reading
(torch.cuda.memory_stats builds a dict of ~100 entries) at most every
_EVERY_NS, and never more often than _COST_SHARE times its own cost: under
0.1 % of the training's time however slow the reading is.

What it never does: initialize CUDA (only a model already on the GPU turns it
on), synchronize, or reset the allocator's peaks (the script's own
torch.cuda.max_memory_allocated, a framework's memory logging, stay as they
were). The peaks are therefore the process's own since it began, or since
the script last reset them."""

from trainprof import _native
from trainprof.startup.swallowed import swallowed

_EVERY_NS = 100_000_000
_COST_SHARE = 1000

_KEYS = (
    "allocated_bytes.all.current",
    "reserved_bytes.all.current",
    "allocated_bytes.all.peak",
    "reserved_bytes.all.peak",
)

_memory_stats = None  # torch.cuda.memory_stats once enabled, else None
on = False  # _memory_stats is not None: steps/marks.py reads it at every mark
_device = None
_capacity = -1
_next_ns = 0


def enable(torch, device):
    """Reads the allocator of device (a torch.device of type cuda) from now
    on: called once its first training forward shows the model there."""
    global _memory_stats, _device, _capacity, on
    if _memory_stats is not None:
        return
    try:
        _capacity = int(torch.cuda.get_device_properties(device).total_memory)
        _device = device
        _memory_stats = torch.cuda.memory_stats
        on = True
    except Exception as e:  # noqa: BLE001 - said; a device torch can't describe
        swallowed("reading the GPU's memory", e)


def after_step():
    """At a step mark: a reading where its time has come."""
    if _memory_stats is None:
        return
    now = _native.now_ns()
    if now >= _next_ns:
        read(now)


def read(now=None):
    """One reading now, sent to the recorder (also at an out-of-memory, its
    last figures). Never raises; a failing reading turns readings off."""
    global _memory_stats, _next_ns, on
    stats = _memory_stats
    if stats is None:
        return
    if now is None:
        now = _native.now_ns()
    try:
        s = stats(_device)
        figures = [int(s.get(k, -1)) for k in _KEYS]
        figures += [
            _capacity,
            int(s.get("num_alloc_retries", -1)),
            int(s.get("num_ooms", -1)),
        ]
        _native.device_memory(*figures)
    except Exception as e:  # noqa: BLE001 - said; the training goes on without it
        _memory_stats = None
        on = False
        swallowed("reading the GPU's memory", e)
        return
    _next_ns = now + max(_EVERY_NS, (_native.now_ns() - now) * _COST_SHARE)


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = r"([0-9.]+) ?(B|KiB|MiB|GiB|TiB)"


def out_of_memory_figures(message):
    """From PyTorch's out-of-memory message ("CUDA out of memory. Tried to
    allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which
    1.02 GiB is free. ..."): (tried, free) in bytes, each None where the
    message does not say."""

    import re  # only at an out-of-memory (torch has imported it by then)

    def size(pattern):
        m = re.search(pattern, message)
        return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else None

    return size("Tried to allocate " + _SIZE), size("of which " + _SIZE + " is free")


def is_out_of_memory(type_name, message):
    """Whether an exception is the GPU allocator's out-of-memory
    (torch.OutOfMemoryError, torch.cuda.OutOfMemoryError, or a RuntimeError
    with CUDA's words on older torch)."""
    return type_name.endswith("OutOfMemoryError") or "CUDA out of memory" in message
