"""Keras 3 tells its own loop, on any backend (torch, JAX, TensorFlow), once
the script imports keras. Keras has no entry point for callbacks, so
Model.fit is wrapped to add one callback after the script's (theirs and
their order untouched); Model.evaluate and Model.predict are evaluate
pauses, Model.save and Model.save_weights (ModelCheckpoint's saves among
their callers) checkpoint pauses.

What it marks (trainprof.steps.framework_loop's rules):
- a step is one call of Keras's train function (a batch; steps_per_execution
  batches where that is set), as on_train_batch_begin tells it;
- an epoch begins at on_epoch_begin, numbered as Keras numbers it;
- the samples of a step are its batches', as Keras's data adapter sizes
  them (arrays, a DataLoader: batch_size, and the last batch's remainder),
  else counted from the batches the training iterator yields (the first
  array's first dimension; on the torch and JAX backends).
On the torch backend the phases are PyTorch's (dataloader_next, forward,
backward; train_batch ends with the update) and Keras's optimizer's apply
is optimizer_step. On JAX and TensorFlow the train step runs compiled: only
steps, epochs, samples and the named pauses are seen, and the run's facts
say so (framework=keras, framework.backend) for the report.
"""

import functools
import sys
import threading

from trainprof import _native
from trainprof.startup.swallowed import swallowed
from trainprof.steps import state as _state
from trainprof.steps.facts import send as send_facts
from trainprof.steps.framework_loop import (
    R_CHECKPOINT,
    R_EVALUATE,
    FrameworkLoop,
    end_train_batch,
    wrap_method,
)

loop = FrameworkLoop("keras")


class _Fit(threading.local):
    depth = 0  # fit calls open on this thread (a subclass's fit calling super's)
    callback = None  # the open fit's callback, while it waits for its training iterator


_fit = _Fit()


def patch_keras(keras):
    """after_import("keras") callback."""
    model = getattr(keras, "Model", None)
    base = getattr(getattr(keras, "callbacks", None), "Callback", None)
    if model is None or base is None:
        return
    backend = _backend_name(keras)
    callback_class = type("TrainprofCallback", (_Hooks, base), {})
    wrap_method(model, "fit", lambda fit: _wrap_fit(fit, callback_class, backend))
    for name in ("evaluate", "predict"):
        wrap_method(model, name, lambda fn: loop.pause(fn, R_EVALUATE))
    for name in ("save", "save_weights"):
        wrap_method(model, name, lambda fn: loop.pause(fn, R_CHECKPOINT))
    _patch_epoch_iterator()
    if backend == "torch":
        _patch_optimizer(keras)


def _backend_name(keras):
    try:
        return str(keras.backend.backend())
    except Exception as e:  # noqa: BLE001 - said; Keras versions differ here
        swallowed("reading Keras's backend", e)
        return "unknown"


def _wrap_fit(fit, callback_class, backend):
    import inspect

    try:
        position = list(inspect.signature(fit).parameters).index("callbacks")
    except (TypeError, ValueError):
        position = None

    @functools.wraps(fit)
    def wrapped(self, *args, **kwargs):
        if _fit.depth:
            return fit(self, *args, **kwargs)
        loop.claim()
        send_facts((("framework", "keras"), ("framework.backend", backend)))
        callback = callback_class()
        if position is not None and len(args) >= position:  # args[0] is x: self is not in args
            args = list(args)
            args[position - 1] = _with(args[position - 1], callback)
        else:
            kwargs["callbacks"] = _with(kwargs.get("callbacks"), callback)
        _fit.depth += 1
        _fit.callback = callback
        loop.before_step_end = callback.give_counted
        try:
            return fit(self, *args, **kwargs)
        finally:
            _fit.depth -= 1
            _fit.callback = None
            loop.end_step()
            loop.before_step_end = None

    wrapped.__trainprof_wrapped__ = fit
    return wrapped


def _with(callbacks, ours):
    """The script's callbacks with ours after them; a CallbackList of the
    script's own is left as it is (ours then sees nothing)."""
    if callbacks is None:
        return [ours]
    if isinstance(callbacks, (list, tuple)):
        return [*callbacks, ours]
    return callbacks


def _patch_epoch_iterator():
    """The first EpochIterator a fit makes is its training data: the
    callback reads its data adapter's batch sizes (internal to Keras: where
    it is missing, steps have no samples)."""
    module = sys.modules.get("keras.src.trainers.epoch_iterator")
    iterator = getattr(module, "EpochIterator", None)
    if iterator is None or "__init__" not in iterator.__dict__:
        return

    def make(init):
        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            callback = _fit.callback
            if callback is not None:
                _fit.callback = None
                callback.training_data(self)

        __init__.__trainprof_wrapped__ = init
        return __init__

    wrap_method(iterator, "__init__", make)


def _patch_optimizer(keras):
    """On the torch backend, Keras's optimizer's apply (its update of the
    variables) is optimizer_step, and the train_batch ends with it."""
    optimizer = getattr(getattr(keras, "optimizers", None), "Optimizer", None)
    if optimizer is None:
        return
    region = _native.region(_native.PHASE_OPTIMIZER_STEP)

    def make(apply):
        @functools.wraps(apply)
        def timed(*args, **kwargs):
            _native.begin(region)
            try:
                return apply(*args, **kwargs)
            finally:
                _native.end(region)
                end_train_batch()  # the batch's update: its train_batch ends, as torch.optim's

        timed.__trainprof_wrapped__ = apply
        return timed

    wrap_method(optimizer, "apply", make)


class _Hooks:
    """The callback's hooks (mixed into keras.callbacks.Callback), called on
    the thread that runs fit. No batch-end hook: Keras dispatches those on
    another thread only while no callback has one (JAX), and the script's
    training must stay as it is."""

    def __init__(self):
        super().__init__()
        self.sizes = None  # (batch_size, batches, last batch's size) of the training data
        self.counted = 0  # samples counted from the yielded batches, not yet given to a step
        # where Keras's loop reads the batch before on_train_batch_begin (torch),
        # not inside the train function (JAX)
        self.fetched_outside = True

    def training_data(self, epoch_iterator):
        """fit's EpochIterator: the batch sizes from its data adapter, else
        (batch size unknown: a generator, a PyDataset) a count of what its
        iterator yields, where that is plain Python (torch, JAX)."""
        adapter = getattr(epoch_iterator, "data_adapter", None)
        try:
            size, batches = adapter.batch_size, adapter.num_batches
            last = adapter.partial_batch_size if adapter.has_partial_batch else size
        except (AttributeError, NotImplementedError):  # an adapter without sizes (a generator's)
            size = batches = last = None
        if size and batches:
            self.sizes = (int(size), int(batches), int(last or size))
            return
        get_iterator = getattr(epoch_iterator, "_get_iterator", None)
        if get_iterator is None or "tensorflow" in type(epoch_iterator).__module__:
            return  # TensorFlow reads its dataset inside a tf.function: left alone

        self.fetched_outside = "jax" not in type(epoch_iterator).__module__

        def counted():
            for batch in get_iterator():
                self.counted += _first_dimension(batch)
                yield batch

        epoch_iterator._get_iterator = counted

    def give_counted(self):
        if self.counted and loop.marks_steps() and not _state.manual_samples:
            _native.samples(self.counted)
        self.counted = 0

    def on_train_begin(self, logs=None):
        end_train_batch()  # Keras built the model with a training call: no step's
        self.counted = 0  # and read a batch to build it

    def on_epoch_begin(self, epoch, logs=None):
        loop.epoch(epoch)
        self.counted = 0

    def on_train_batch_begin(self, batch, logs=None):
        if not loop.marks_steps():  # the script marks its own steps
            return
        if not self.fetched_outside:
            self.give_counted()  # what the last step's train function read (JAX)
        loop.begin_step()
        if _state.manual_samples:  # and counts its samples
            return
        if self.sizes is not None:
            size, batches, last = self.sizes
            spe = max(1, int(getattr(self.model, "steps_per_execution", 1) or 1))
            for k in range(batch, batch + spe):
                if k >= batches:
                    break
                _native.samples(last if k == batches - 1 else size)
        elif self.fetched_outside:
            self.give_counted()  # what the loop fetched before the batch (torch)

    def on_epoch_end(self, epoch, logs=None):
        loop.end_step()

    def on_train_end(self, logs=None):
        loop.end_step()


def _first_dimension(batch, depth=0):
    """Samples in a batch Keras yields: the first dimension of its first
    array (x of (x, y, sample_weight); the first value of a dict)."""
    shape = getattr(batch, "shape", None)
    if shape is not None:
        try:
            return int(shape[0]) if len(shape) else 0
        except (TypeError, ValueError):
            return 0
    if depth < 3:
        items = batch.values() if isinstance(batch, dict) else batch
        if isinstance(items, (list, tuple)) or isinstance(batch, dict):
            for item in items:
                n = _first_dimension(item, depth + 1)
                if n:
                    return n
    return 0
