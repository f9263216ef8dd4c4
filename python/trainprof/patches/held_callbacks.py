"""Python callbacks that torch's own threads hold, let go before the
interpreter ends.

trainprof times communication through callbacks on a work's future (then()
and add_done_callback(): DDP's gradient all-reduce, work left under way).
The thread that completes the future (gloo's worker, the autograd engine's)
runs such a callback, then drops it, and dropping it takes the GIL (torch's
PythonFunctionGuard). Once the interpreter is finalizing, a thread that asks
for the GIL is ended with pthread_exit, whose forced unwind through that
destructor aborts the whole process: "terminate called without an active
exception", SIGABRT, a training that had finished. A rank of a DDP run did
so beside CPU-heavy work, its last step's callback still held by gloo's
thread as its main thread left the script.

So each such callback is counted until it is dropped, and at exit (an atexit
handler: the interpreter is whole then) the process waits for the last to
be dropped, MAX_WAIT_S at most (work that never completes keeps its own).
Where none is held, as at the end of a healthy run, it does not wait."""

import atexit
import time
import weakref

MAX_WAIT_S = 1.0

_held = set()  # weakrefs of the callbacks torch's threads hold
_registered = False


def held(callback):
    """callback, counted until torch's thread drops it (its last reference).
    Cheap: a weak reference and a set entry; the atexit wait is registered
    at the first one, so a process that never hands one over has none."""
    global _registered
    _held.add(weakref.ref(callback, _held.discard))
    if not _registered:
        _registered = True
        atexit.register(wait_for_held)
    return callback


def wait_for_held(max_wait_s=MAX_WAIT_S):
    """Waits, sleeping (the GIL let go, so those threads can take it), until
    no callback is held or max_wait_s has passed; how many are still held."""
    deadline = time.monotonic() + max_wait_s
    while _held and time.monotonic() < deadline:
        time.sleep(0.001)
    return len(_held)
