"""PyTorch Ignite tells its own loop, once the script imports ignite.engine:
Engine.run is wrapped, and an Engine run at the top (not inside another
Engine's event handler) gets event handlers after the script's.

Which Engine trains: the first one run at the top whose iteration did
training work (a backward or an optimizer update; trainprof.steps.tracker counts
them). While such a run is open, Ignite marks the steps and epochs instead
of the automatic tracker (trainprof.steps.framework_loop), the first step once
the work shows it is training:
- a step begins at the fetch of its batch (GET_BATCH_STARTED, or the
  iteration's start where the Engine reads no data) of an iteration that
  follows an update: a gradient accumulation's iterations are one step;
- an epoch begins at EPOCH_STARTED (numbered from 0: Ignite's epoch - 1);
- the samples are the batch's (engine.state.batch, as for other loops).
An Engine run inside another Engine's event handler, or at the top once
another Engine trains, is an evaluate pause; a run at the top with no
training work in it, before any Engine trained, was an evaluation too (its
span is told once it ends, and the automatic tracker marks steps again: a
script that trains in its own loop and evaluates with Ignite). Where the
script trained before any Engine ran, Ignite names its evaluations only.
"""

import functools
import threading
import weakref

from trainprof import _native
from trainprof.patches.common import count_samples
from trainprof.patches.common import loop as _torch_loop
from trainprof.steps import marks as _marks
from trainprof.steps.facts import send as send_facts
from trainprof.steps.framework_loop import R_EVALUATE, FrameworkLoop, wrap_method

loop = FrameworkLoop("ignite")


class _Running(threading.local):
    engines = ()  # the Engines whose run is open on this thread, outermost first


_running = _Running()
_trainer = None  # weakref to the Engine that trains, once one did
_attached = weakref.WeakSet()  # Engines that have our handlers


def patch_engine(engine_module):
    """after_import("ignite.engine") callback."""
    engine = getattr(engine_module, "Engine", None)
    events = getattr(engine_module, "Events", None)
    if engine is None or events is None:
        return
    wrap_method(engine, "run", lambda run: _wrap_run(run, events))


def _is_trainer(engine):
    return _trainer is not None and _trainer() is engine


def _work():
    return _torch_loop.updates, _torch_loop.backwards


def _wrap_run(run, events):
    evaluate = loop.pause(run, R_EVALUATE)

    @functools.wraps(run)
    def wrapped(self, *args, **kwargs):
        outer = _running.engines
        if self in outer:  # run again from its own handler: as it is
            return run(self, *args, **kwargs)
        trainer_known = _trainer is not None and _trainer() is not None
        if outer or (trainer_known and not _is_trainer(self)):
            return evaluate(self, *args, **kwargs)
        candidate = not trainer_known
        if candidate:
            _attach(self, events)
            if _work() == (0, 0):  # no training before: Ignite's loop may be it
                loop.claim()
        _running.engines = outer + (self,)
        t0, work = _native.now_ns(), _work()
        try:
            return run(self, *args, **kwargs)
        finally:
            _running.engines = outer
            if _is_trainer(self):
                loop.end_step()
            elif candidate and _trainer is None and work == _work():
                loop.release()
                _native.span(R_EVALUATE, t0, _native.now_ns())  # no training work: an evaluation

    wrapped.__trainprof_wrapped__ = run
    return wrapped


def _attach(engine, events):
    if engine in _attached:
        return
    _attached.add(engine)
    hooks = _Hooks()
    for event, handler in (
        (events.EPOCH_STARTED, hooks.epoch_started),
        (events.GET_BATCH_STARTED, hooks.get_batch_started),
        (events.ITERATION_STARTED, hooks.iteration_started),
        (events.ITERATION_COMPLETED, hooks.iteration_completed),
        (events.EPOCH_COMPLETED, hooks.epoch_completed),
    ):
        engine.add_event_handler(event, handler)


class _Hooks:
    """One Engine's event handlers: they mark while it is the trainer, and
    keep what its first step needs while it may become one."""

    def __init__(self):
        self.epoch_t = None  # when its open epoch began
        self.fetch_t = None  # when the open iteration's batch fetch began
        self.iteration_work = None  # _work() when the open iteration began
        self.step_updates = -1  # updates when the open step began
        self.first_t = None  # before it trains: when the iteration began (its fetch)
        self.first_batch = None  # and its batch

    def epoch_started(self, engine):
        self.epoch_t = _native.now_ns()
        if _is_trainer(engine):
            loop.epoch(engine.state.epoch - 1)

    def get_batch_started(self, engine):
        self.fetch_t = _native.now_ns()

    def iteration_started(self, engine):
        fetch_t, self.fetch_t = self.fetch_t, None
        if fetch_t is None:
            fetch_t = _native.now_ns()
        self.iteration_work = _work()
        if not _is_trainer(engine):
            self.first_t, self.first_batch = fetch_t, engine.state.batch
            return
        if not loop.marks_steps():
            return
        updates = _torch_loop.updates
        if not loop.step_open or updates != self.step_updates:
            loop.begin_step(fetch_t)
            self.step_updates = updates
        count_samples(engine.state.batch)

    def iteration_completed(self, engine):
        global _trainer
        if (
            _trainer is None
            and _running.engines[-1:] == (engine,)
            and _work() != self.iteration_work
        ):
            _trainer = weakref.ref(engine)  # it trains: its events mark from now on
            send_facts((("framework", "ignite"),))
            if loop.marks_steps():  # its first step, and its epoch, where they began
                if self.epoch_t is not None:
                    _native.epoch_at(engine.state.epoch - 1, self.epoch_t)
                _marks.step_at(self.first_t)
                loop.step_open = True
                self.step_updates = self.iteration_work[0]
                count_samples(self.first_batch)
        self.first_batch = None

    def epoch_completed(self, engine):
        if _is_trainer(engine):
            loop.end_step()
