"""Callbacks torch's threads hold, let go before the interpreter ends
(trainprof/patches/held_callbacks.py): the hazard on this torch, and the
timed DDP hook handing over one held callback a bucket."""

import os
import signal
import subprocess

from conftest import PYTHON

# A future's callback that the thread completing it still holds as the
# script ends: its callback sleeps (the GIL let go, as gloo's thread is when
# it is descheduled), the main thread meanwhile leaves. HELD=1 hands the
# callback over through trainprof's held(), as its communication timing does.
HELD_AT_EXIT = """
import os, threading, time, torch
from trainprof.patches.held_callbacks import held

running = threading.Event()
def callback(f):
    running.set()
    time.sleep(0.3)
fut = torch.futures.Future()
fut.then(held(callback) if os.environ["HELD"] == "1" else callback)
threading.Thread(target=fut.set_result, args=(1,), daemon=True).start()
running.wait()
"""


def test_a_callback_a_thread_of_torch_holds_at_exit_is_let_go_first(tmp_path):
    """A callback on a work's future (how trainprof times DDP's all-reduce and
    work left under way) is dropped by the thread that completed it, which
    takes the GIL for that; once the interpreter is finalizing, that thread
    is ended and the process aborts. A DDP rank died so beside CPU-heavy
    work, at the end of a finished training. With trainprof's held(), the
    process waits for the callback to be let go before it finalizes."""
    script = tmp_path / "held.py"
    script.write_text(HELD_AT_EXIT)

    def run(held):
        return subprocess.run(
            [PYTHON, script],
            env=dict(os.environ, HELD=held),
            capture_output=True,
            text=True,
            timeout=60,
        )

    # The hazard, on this torch: the process aborts. How depends on where the
    # finalizing interpreter meets the thread: the thread's forced unwind
    # ("terminate called without an active exception"), or the main thread's
    # last collection finding the GIL taken from it ("Fatal Python error").
    # It is a race (about half the runs abort on this machine's kind, idle),
    # so it is run until it shows, 8 times at most.
    for _ in range(8):
        bare = run("0")
        if bare.returncode != 0:
            break
    assert bare.returncode == -signal.SIGABRT, (bare.returncode, bare.stderr)
    assert any(
        sign in bare.stderr
        for sign in ("terminate called without an active exception", "Fatal Python error")
    ), bare.stderr
    held = run("1")
    assert held.returncode == 0, held.stderr


def test_the_timed_ddp_hook_hands_over_one_held_callback_a_bucket(monkeypatch):
    """The hook trainprof registers on a DDP: the all-reduce's own future and
    one callback on it (not torch's default hook's then() and one more),
    held until running it lets it go; DDP gets the bucket's tensor."""
    import torch
    from trainprof.patches import distributed, held_callbacks

    class Group:
        def size(self):
            return 2

    class Work:
        def get_future(self):
            return work

    class Bucket:
        tensor = torch.ones(4)

        def buffer(self):
            return self.tensor

    work = torch.futures.Future()
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda t, group, async_op: Work())
    hook = distributed._timed_comm_hook(distributed._run_slot)
    before = len(held_callbacks._held)
    fut = hook(distributed._HookSlot(Group(), distributed._allreduce_hook), Bucket())
    half = torch.full((4,), 0.5)
    assert torch.equal(Bucket.tensor, half)  # divided by the group's size first
    assert len(held_callbacks._held) == before + 1
    work.set_result([Bucket.tensor])  # the all-reduce's value: a list of one tensor
    assert torch.equal(fut.wait(), half)
    assert len(held_callbacks._held) == before
