"""The three runs of `trainprof bottleneck`, as seen from inside the training.

`trainprof bottleneck` runs the script three times with TRAINPROF_BOTTLENECK
set to `asis`, `replay` or `loader` (and TRAINPROF_BOTTLENECK_STEPS and
TRAINPROF_BOTTLENECK_WARMUP). Each fetch from the training DataLoader passes
through `on_fetch`:

- asis: the script runs unchanged and stops after warm-up + steps fetches;
- replay: the first batch is kept and handed out again for every later fetch
  (same object: same shapes, dtypes and device handling by the script), so
  the training runs without its input pipeline: the training limit;
- loader: at the first fetch the loader alone is iterated warm-up + steps
  times, each batch discarded, and the process stops: the input limit.

Stopping is os._exit(0) right after a step mark: the events are already in
shared memory, so nothing recorded is lost.
"""

import os

MODE = os.environ.get("TRAINPROF_BOTTLENECK")
STEPS = int(os.environ.get("TRAINPROF_BOTTLENECK_STEPS", "200"))
WARMUP = int(os.environ.get("TRAINPROF_BOTTLENECK_WARMUP", "20"))

_fetches = 0
_cached = None
_have_cached = False


def active():
    return MODE in ("asis", "replay", "loader")


def on_fetch(fetch, step, samples_of):
    """Called for each fetch from the training loader; `fetch()` gets the next
    batch for real, `step()` marks a step. Returns the batch to hand out."""
    global _fetches, _cached, _have_cached
    _fetches += 1
    if _fetches > WARMUP + STEPS:
        os._exit(0)
    if MODE == "loader":
        samples_of(fetch())
        for _ in range(WARMUP + STEPS - 1):
            step()
            try:
                batch = fetch()
            except StopIteration:
                break
            samples_of(batch)
        step()
        os._exit(0)
    if MODE == "replay" and _have_cached:
        return _cached
    batch = fetch()
    if MODE == "replay":
        _cached, _have_cached = batch, True
    return batch
