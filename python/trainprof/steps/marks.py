"""Every step mark the Python face makes, followed by the GPU memory reading
whose time has come (trainprof.runtime.device_memory): one place, so that no
way of marking steps (the step tracker, a framework's callbacks, the
script's own trainprof.step()) goes without it."""

from trainprof import _native
from trainprof.runtime import device_memory as _memory


def step() -> None:
    """A step boundary now."""
    _native.step()
    if _memory.on:  # a model on a CUDA device: its allocator's reading, when due
        _memory.after_step()


def step_at(t_ns: int) -> None:
    """A step boundary at an earlier _native.now_ns()."""
    _native.step_at(t_ns)
    if _memory.on:
        _memory.after_step()
