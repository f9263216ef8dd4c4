"""trainprof: a profiler for neural-network training.

Run a training command under ``trainprof record -o run.db -- python train.py`` and
read the result with ``trainprof report run.db``. This package is the Python face of
the profiler; the timing API (regions, steps, epochs) arrives with the Timings work.
"""

from ._version import __version__

__all__ = ["__version__"]
