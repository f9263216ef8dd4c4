"""trainprof: a profiler for neural-network training.

Run a training command under ``trainprof record -o run.db -- python train.py``
and read the result with ``trainprof report run.db``. PyTorch scripts need no
change: under ``record`` the DataLoader, forward, backward, optimizer and
scheduler steps, device transfers and collectives are timed automatically
(see ``trainprof.torch``). Mark your own code with::

    import trainprof

    with trainprof.region("augment"):
        ...

    @trainprof.region("evaluate")
    def evaluate(model): ...

    trainprof.step()      # an explicit step boundary (turns automatic steps off)
    trainprof.epoch(3)    # the start of epoch 3 (turns automatic epochs off)
    trainprof.samples(64) # a batch of 64 samples in this step (turns automatic counts off)

Outside ``trainprof record`` every call returns at once.
"""

import functools

from trainprof import _native
from trainprof._native import Region, active, dropped, region
from trainprof._version import __version__
from trainprof.steps import marks as _marks
from trainprof.steps import state as _state

TYPE_CHECKING = False  # typing is not imported at run time: the script may not import it
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])


def step() -> None:
    """Marks a step boundary; from now on steps are only marked by hand."""
    _state.manual_steps = "script"
    _marks.step()


def epoch(n: int) -> None:
    """Marks the start of epoch n; from now on epochs are only marked by hand."""
    _state.manual_epochs = "script"
    _native.epoch(n)


def samples(n: int) -> None:
    """A batch of n samples belongs to the current step: call it once per
    batch (each micro-batch of gradient accumulation), which also gives the
    micro-batches per step. From now on samples are only counted by hand."""
    _state.manual_samples = True
    _native.samples(n)


def _decorate(reg: "Region", func: "_F") -> "_F":
    @functools.wraps(func)
    def wrapper(*args: "Any", **kwargs: "Any") -> "Any":
        with reg:
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]  # the same signature, wrapped


_native._set_decorator_factory(_decorate)

__all__ = ["Region", "__version__", "active", "dropped", "epoch", "region", "samples", "step"]
