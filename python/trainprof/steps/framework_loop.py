"""Steps and epochs where a framework's own loop tells them: the marks that
the Keras and Ignite adapters make from their framework's callbacks and
events (trainprof.frameworks.keras, trainprof.frameworks.ignite). No torch here: Keras may run
on JAX or TensorFlow.

A step is the framework's training step (one optimizer update, as the
framework counts them). It begins at the first DataLoader fetch since the
last step began, where the PyTorch instrumentation saw one (torch.py keeps
its time while a framework marks the steps), else where the framework says
the batch begins; it ends where the next one begins, or at a pause (an
evaluation, a checkpoint: FrameworkLoop.pause), or where the epoch or the
training ends. The automatic tracker (trainprof.steps.tracker) marks nothing
meanwhile; a script that marks its own steps (trainprof.step()) keeps them,
and the framework's adapter then marks none.
"""

import functools
import sys
import threading

from trainprof import _native
from trainprof.steps import marks as _marks
from trainprof.steps import state as _state

R_EVALUATE = _native.region(_native.PHASE_EVALUATE)
R_CHECKPOINT = _native.region(_native.PHASE_CHECKPOINT)


def taken_fetch():
    """The time of the first DataLoader fetch since the last call, or None
    (no fetch, or PyTorch not instrumented)."""
    common = sys.modules.get("trainprof.patches.common")
    if common is None:
        return None
    local = common.per_thread(common.ThreadState)
    t, local.fetch_ns = local.fetch_ns, None
    return t


def end_train_batch():
    """Ends PyTorch's train_batch region where the framework's batch ends
    (its optimizer is not torch.optim's, whose step would end it)."""
    tp_torch = sys.modules.get("trainprof.torch")
    if tp_torch is not None and getattr(tp_torch, "_installed", False):
        common = sys.modules["trainprof.patches.common"]
        tp_torch._end_train_batch(common.per_thread(common.ThreadState))


class _PauseDepth(threading.local):
    depth = 0


class FrameworkLoop:
    """One framework's marks. name: its entry in _state.FRAMEWORK_LOOPS."""

    def __init__(self, name):
        self.name = name
        self.step_open = False
        self.before_step_end = None  # called before the open step ends
        self._pauses = _PauseDepth()

    def claim(self):
        """The framework's loop runs: it marks the steps and the epochs,
        unless the script (or another framework) already does."""
        if _state.manual_steps is False:
            _state.manual_steps = self.name
        if _state.manual_epochs is False:
            _state.manual_epochs = self.name
        taken_fetch()  # a fetch before is none of its steps'

    def release(self):
        """The loop the framework ran was not the training (no update in
        it): the automatic tracker marks the steps again."""
        if _state.manual_steps == self.name:
            _state.manual_steps = False
        if _state.manual_epochs == self.name:
            _state.manual_epochs = False
        taken_fetch()

    def marks_steps(self):
        return _state.manual_steps == self.name

    def begin_step(self, at=None):
        """A training batch begins: a step begins at `at` (a now_ns() where
        the framework says its fetch began), else at the DataLoader fetch
        seen since the last step began, else now."""
        if not self.marks_steps():
            return
        fetched = taken_fetch()
        if at is None:
            at = fetched
        if at is not None:
            _marks.step_at(at)
        else:
            _marks.step()
        self.step_open = True

    def end_step(self):
        """The open step ends here (an epoch's end, a pause, the training's end),
        once what it still owes (before_step_end: samples counted late) is told."""
        if self.step_open:
            if self.before_step_end is not None:
                self.before_step_end()
            self.step_open = False
            if self.marks_steps():
                _native.step_end_at(_native.now_ns())

    def epoch(self, n):
        """Epoch n begins (numbered from 0)."""
        self.end_step()
        taken_fetch()
        if _state.manual_epochs == self.name:
            _native.epoch(int(n))

    def in_pause(self):
        return self._pauses.depth > 0

    def pause(self, fn, region):
        """fn timed as region (an evaluation, a checkpoint): a pause in the
        training that ends the open step where it begins; once, however the
        pauses nest (a save inside an evaluation, evaluate inside predict).
        Its DataLoader fetches begin no step."""
        pauses = self._pauses

        @functools.wraps(fn)
        def paused(*args, **kwargs):
            if pauses.depth:
                return fn(*args, **kwargs)
            self.end_step()
            pauses.depth = 1
            _native.begin(region)
            try:
                return fn(*args, **kwargs)
            finally:
                _native.end(region)
                pauses.depth = 0
                taken_fetch()

        paused.__trainprof_wrapped__ = fn
        return paused


def wrap_method(cls, name, make):
    """Sets cls.name to make(cls.name), once (a wrapper keeps the original
    as __trainprof_wrapped__); nothing where cls has no such method."""
    method = getattr(cls, name, None)
    if method is None or hasattr(method, "__trainprof_wrapped__"):
        return False
    setattr(cls, name, make(method))
    return True
