"""trainprof: a profiler for neural-network training.

Run a training command under ``trainprof record -o run.db -- python train.py``
and read the result with ``trainprof report run.db``. Mark your own code with::

    import trainprof

    with trainprof.region("augment"):
        ...

    @trainprof.region("evaluate")
    def evaluate(model): ...

    trainprof.step()      # an explicit step boundary
    trainprof.epoch(3)    # the start of epoch 3

Outside ``trainprof record`` every call returns at once.
"""

import functools

from . import _native
from ._native import Region, active, dropped, epoch, region, step
from ._version import __version__


def _decorate(reg, func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with reg:
            return func(*args, **kwargs)

    return wrapper


_native._set_decorator_factory(_decorate)

__all__ = ["Region", "__version__", "active", "dropped", "epoch", "region", "step"]
