"""swallowed: what trainprof catches so that the training goes on, said.

Code that runs inside the training never lets its own failure reach the
script, but an error caught and dropped without a word hides a broken
feature (on torch 2.11 a missing profiler call made capture windows vanish
unseen). Where a catch can't be narrowed to the errors it expects, it hands
what it caught here: one warning line on stderr for each place, once."""

import sys

_said = set()


def swallowed(where, error):
    """Says once, on stderr, that where failed with error and that the
    training goes on without it. Never raises."""
    if where in _said:
        return
    _said.add(where)
    try:
        text = str(error).replace("\n", " ")[:200]
        print(
            f"trainprof: warning: {where} failed ({type(error).__name__}: {text}); "
            "the training goes on without it",
            file=sys.stderr,
        )
    except Exception:  # noqa: BLE001 - a closed stderr or an error's own __str__
        pass
