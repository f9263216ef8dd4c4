"""The public API as a user's typed script calls it: `mypy --strict` over
this file (make test-python-style) holds trainprof's types (py.typed, the
stub of its extension) to what the docs promise."""

import trainprof


@trainprof.region("evaluate")
def evaluate(scale: float) -> float:
    return scale * 2.0


def train(batches: int) -> int:
    trainprof.epoch(0)
    for _ in range(batches):
        with trainprof.region("augment") as r:
            name: str = r.name
            assert name == "augment"
        trainprof.samples(64)
        trainprof.step()
    halved: float = evaluate(0.5)  # the decorator keeps the function's type
    active: bool = trainprof.active()
    dropped: int = trainprof.dropped()
    version: str = trainprof.__version__
    return int(halved) + int(active) + dropped + len(version)
