"""The three runs of `trainprof bottleneck`, as seen from inside the training.

`trainprof bottleneck` runs the script three times with TRAINPROF_BOTTLENECK
set to `asis`, `replay` or `loader` (and TRAINPROF_BOTTLENECK_STEPS and
TRAINPROF_BOTTLENECK_WARMUP). Each fetch from the training DataLoader passes
through `on_fetch`:

- asis: the script runs unchanged and stops after warm-up + steps fetches;
- replay: the first batch is kept and handed out again for every later fetch
  (same object: same shapes, dtypes and device handling by the script), so
  the training runs without its input pipeline: the training limit. The
  batch's tensors remember what the script's first .to()/.cuda() of them
  gave, and later moves hand that back: the replayed batch lives on the
  device the script moves it to, with no host-to-device copy per step;
- loader: at the first fetch the loader alone is iterated warm-up + steps
  times, each batch discarded, and the process stops: the input limit.

Stopping is os._exit(0) right after a step mark: the events are already in
shared memory, so nothing recorded is lost.
"""

import os

MODE = os.environ.get("TRAINPROF_BOTTLENECK")
ACTIVE = MODE in ("asis", "replay", "loader")  # one of `trainprof bottleneck`'s runs


def _whole(name, default):
    """The whole number in the environment's `name` (`trainprof bottleneck`
    sets it, checked), else default: a value set by hand that is no number
    (it stopped the whole instrumentation at its import) costs nothing."""
    value = os.environ.get(name, "")
    return int(value) if value.isascii() and value.isdigit() else default


STEPS = _whole("TRAINPROF_BOTTLENECK_STEPS", 200)
WARMUP = _whole("TRAINPROF_BOTTLENECK_WARMUP", 20)


_fetches = 0
_cached = None
_have_cached = False
_replayed_ids = frozenset()  # id() of the tensors inside the replayed batch
_moved = {}  # (tensor id, method, arguments) -> the tensor the first move gave


def active():
    return ACTIVE


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
        global _replayed_ids
        _cached, _have_cached = batch, True
        _replayed_ids = frozenset(id(t) for t in _tensors_in(batch))
    return batch


def _tensors_in(batch, depth=0):
    """The tensors in a batch made of tuples, lists, dicts and dataclass-like
    objects with a __dict__, to a depth of 4."""
    import torch

    if isinstance(batch, torch.Tensor):
        yield batch
    elif depth < 4:
        if isinstance(batch, dict):
            items = batch.values()
        elif isinstance(batch, (list, tuple)):
            items = batch
        else:
            items = getattr(batch, "__dict__", {}).values()
        for item in items:
            yield from _tensors_in(item, depth + 1)


def memoized_move(orig, name):
    """Wraps a Tensor move (`to`, `cuda`): a tensor of the replayed batch moved
    the same way again gets the first move's result instead of a new copy."""

    def move(self, *args, **kwargs):
        if id(self) not in _replayed_ids:
            return orig(self, *args, **kwargs)
        try:
            key = (id(self), name, args, tuple(sorted(kwargs.items())))
            hash(key)
        except TypeError:  # an unhashable argument: move it for real
            return orig(self, *args, **kwargs)
        moved = _moved.get(key)
        if moved is None:
            moved = _moved[key] = orig(self, *args, **kwargs)
        return moved

    return move
