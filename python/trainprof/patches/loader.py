"""The DataLoader's passes (trainprof.torch.instrument applies them): each
iter() of a loader is a pass whose role the step tracker tells (the
training's, an evaluation's, another's), and the training pass's fetches are
dataloader_next, its steps' marks and its samples. The loader classes that
make their own passes are passes too: Accelerate's dispatcher, torchdata's
StatefulDataLoader, a DataLoader subclass's own __iter__ (an infinite
loader over a persistent iterator, a background prefetcher), and
webdataset's pipelines over a DataLoader (its WebLoader)."""

import functools
import sys
import weakref

import torch
from torch.utils.data.dataloader import _BaseDataLoaderIter

from trainprof import _native
from trainprof.patches.common import (
    R_NEXT,
    R_TRAIN,
    ThreadState,
    begin,
    count_samples,
    count_shape,
    end,
    per_thread,
    sample_shape,
)
from trainprof.patches.device import device_poll, timed_threads
from trainprof.patches.distributed import tell_rank
from trainprof.patches.forward import QUIET, QUIET_AGAIN, discovery_start
from trainprof.patches.loop import _end_train_batch, _timed
from trainprof.runtime import bottleneck as _bottleneck
from trainprof.startup.swallowed import swallowed
from trainprof.steps import facts as _facts
from trainprof.steps import marks as _marks
from trainprof.steps import state as _state
from trainprof.steps.framework_loop import wrap_method

_loader_passes = weakref.WeakKeyDictionary()  # DataLoader -> iter() calls so far
_grad_enabled = torch.is_grad_enabled


def _patch_dataloader():
    from torch.utils.data import dataloader as dl

    orig_iter = dl.DataLoader.__iter__

    @functools.wraps(orig_iter)
    def __iter__(self):
        if _makes_own_passes(type(self)):
            # called by the subclass's own pass, or made for its own use
            # (an infinite loader's persistent iterator): fetched as is
            it = orig_iter(self)
            it._trainprof_main = None
            return it
        caller = sys._getframe(1)
        if _webdataset_patched and _webdataset_stage(caller):
            it = orig_iter(self)  # the pipeline's pass is the one timed and counted
            it._trainprof_main = None
            return it
        owner = _accelerate_loader(caller)
        if owner == "DataLoaderDispatcher" and _dispatcher_patched:
            # the dispatcher's own pass is the one timed and counted
            it = orig_iter(self)
            it._trainprof_main = None
            return it
        # a DataLoaderShard hands each batch out one fetch later
        return _begin_pass(self, orig_iter, owner == "DataLoaderShard", True)

    dl.DataLoader.__iter__ = __iter__
    dl._BaseDataLoaderIter.__next__ = _handing_out(dl._BaseDataLoaderIter.__next__)
    orig_get = dl.DataLoader._get_iterator

    @functools.wraps(orig_get)
    def _get_iterator(self):
        it = orig_get(self)
        cls = type(self)
        if cls._get_iterator is not _get_iterator or _makes_own_passes(cls):
            # made for the subclass's own pass (a reset()), or for its own
            # _get_iterator to wrap (PyG's loaders): that is the pass
            it._trainprof_main = None
        return it

    dl.DataLoader._get_iterator = _get_iterator
    _patch_subclasses(dl.DataLoader)


# Modules whose DataLoader subclasses have passes of their own making, patched
# by name (patch_dispatcher, patch_stateful_loader, _accelerate_loader)
_OWN_PATCHES = ("accelerate.", "torchdata.")
_own_iter_codes = set()  # the code of each subclass's own __iter__ made a pass


def _makes_own_passes(cls):
    """Whether cls's __iter__ is a subclass's own, made a pass by _own_pass."""
    return getattr(cls.__iter__, "__trainprof_own_pass__", False)


def _patch_subclasses(base):
    """Makes the own __iter__ of every DataLoader subclass a pass (_own_pass):
    those defined from now on (base's __init_subclass__, which a library's
    class creation runs, so it never raises), and those already defined."""

    def __init_subclass__(cls, **kwargs):
        super(base, cls).__init_subclass__(**kwargs)
        try:
            _own_pass(cls)
        except Exception as e:  # noqa: BLE001 - said; the class stays as it was
            swallowed("making a DataLoader subclass's __iter__ a pass", e)

    base.__init_subclass__ = classmethod(__init_subclass__)
    todo = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        _own_pass(cls)


def _own_pass(cls):
    """Wraps cls's own __iter__ (one it defines, not inherits) so that each
    call is a pass of the loader: an infinite loader's generator over its
    persistent iterator (ultralytics', timm's), a background prefetcher's
    (the DataLoaderX), a thin override returning torch's iterator. What it
    returns is the pass: torch's iterator is marked as DataLoader.__iter__
    marks it; anything else is fetched through a _DispatchedPass, on the
    thread that iterates it. The torch iterators the subclass makes for
    itself are fetched as is (DataLoader.__iter__, _get_iterator)."""
    own = cls.__dict__.get("__iter__")
    if own is None or not callable(own) or hasattr(own, "__trainprof_wrapped__"):
        return
    if (cls.__module__ or "").startswith(_OWN_PATCHES):
        return
    code = getattr(own, "__code__", None)
    if code is not None:
        _own_iter_codes.add(code)

    @functools.wraps(own)
    def __iter__(self):
        caller = sys._getframe(1)
        if caller.f_code in _own_iter_codes and caller.f_locals.get("self") is self:
            return own(self)  # a subclass's own __iter__ calling its base's: one pass
        made = own(self)
        if isinstance(made, _BaseDataLoaderIter):  # torch's own iterator, handed on
            return _begin_pass(self, lambda _loader: made, False, True)
        return _begin_pass(self, lambda _loader: _DispatchedPass(made), False, False)

    __iter__.__trainprof_wrapped__ = own
    __iter__.__trainprof_own_pass__ = True
    cls.__iter__ = __iter__


def _begin_pass(loader, iter_of, ahead, sized, settings=None):
    """A pass of loader begins: its role told by the tracker, its iterator
    iter_of(loader) marked for _handing_out (ahead: it hands each batch out
    one fetch after fetching it; sized: its batches' samples can be told
    from its batch size and sampler; settings: the DataLoader whose settings
    are the training loader's, loader itself by default)."""
    grad = _grad_enabled()
    model = _facts.train_model() if grad and _facts.train_model is not None else None
    training = model is not None and model.training
    role = per_thread(ThreadState).tracker.loader_iter(loader, grad, training)
    it = iter_of(loader)
    if not isinstance(it, (_BaseDataLoaderIter, _DispatchedPass)):
        # a subclass's _get_iterator wrapping torch's (PyG's NeighborLoader):
        # fetched through its wrapper, whose __next__ is not torch's
        it, sized = _DispatchedPass(it), False
    tell_rank()  # a process group made without init_process_group (a device mesh)
    # a new loop may call a module not seen yet: look for as long as at
    # the start for a new DataLoader, briefly for another pass of one,
    # and only at its passes 2, 3, 5, 9, 17...: every look puts each
    # module call of its steps on torch's slow path, and a training
    # model first called later is found by its backward (forward_unseen)
    try:
        passes = _loader_passes.get(loader, 0)
        _loader_passes[loader] = passes + 1
    except TypeError:  # a DataLoader subclass that can't be weakly referenced
        passes = 0
    if passes & (passes - 1) == 0:
        discovery_start(QUIET if passes == 0 else QUIET_AGAIN)
    it._trainprof_main = role == "main"
    it._trainprof_eval = role == "eval"
    if role == "main":
        it._trainprof_ahead = ahead
        it._trainprof_held = None
        _facts.note_loader(loader if settings is None else settings)
        try:
            it._trainprof_len = len(it) if sized else len(loader)
        except TypeError:  # an IterableDataset without __len__
            it._trainprof_len = -1
        it._trainprof_sizes = _batch_sizes(loader) if sized else None
    return it


def _handing_out(orig_next):
    """The __next__ of an iterator that _begin_pass marked, around its own
    orig_next: the training loader's fetches are dataloader_next, its steps'
    marks and its samples (an iterator marked _trainprof_main None is
    fetched as is)."""
    fetch = _timed(R_NEXT, orig_next)

    @functools.wraps(orig_next)
    def __next__(self):
        main = getattr(self, "_trainprof_main", False)
        if main is None:
            return orig_next(self)
        local = per_thread(ThreadState)
        tracker = local.tracker
        if local.fetch_ns is None and _state.manual_steps in _state.FRAMEWORK_LOOPS:
            local.fetch_ns = _native.now_ns()
        if main:
            local.forward_seen = False
            if local.train_batch:
                _end_train_batch(local)
            if timed_threads:  # some thread timed the device
                device_poll(local)
            fetched_only = tracker.fetched_only
            began_step = tracker.fetch()
        try:
            if main and _bottleneck.ACTIVE:  # its passes are no peeks, and may end in _exit
                tracker.confirm_training_pass()
                batch = _bottleneck.on_fetch(lambda: fetch(self), _marks.step, count_samples)
            else:  # fetch(self), inline: once a step
                begin(R_NEXT)
                try:
                    batch = orig_next(self)
                finally:
                    end(R_NEXT)
        except StopIteration:
            if main:
                _main_stopped(self, tracker, fetched_only, began_step)
            elif getattr(self, "_trainprof_eval", False):
                self._trainprof_eval = False
                tracker.other_stopped()
            raise
        if main:
            if not _state.manual_steps:  # the batch's samples
                sizes = self._trainprof_sizes
                n = 0
                if sizes is not None and not _state.manual_samples:
                    # batch k of a pass holds min(size, total - (k - 1) * size)
                    size, total, drop_last = sizes
                    n = size if drop_last else min(size, total - (self._num_yielded - 1) * size)
                if self._trainprof_ahead:  # the batch before is handed out now
                    _hand_out_ahead(self, n, batch)
                elif n > 0:
                    _native.samples(n)
                else:  # its first tensor's size
                    count_samples(batch)
            # loops that know the length (Lightning's) fetch no further: the
            # last step ends with its optimizer step, not with a next fetch
            tracker.fetched(self._num_yielded == self._trainprof_len)
        return batch

    # the training pass's fetches in C (python/trainprof/_loader_next.c); this
    # __next__ is its twin, for every other case: keep the two in step
    return _native.handing_out(orig_next, __next__)


def _main_stopped(it, tracker, fetched_only, began_step):
    """The training pass it ended (StopIteration) instead of giving a batch:
    a batch it held back is handed out now (the loader's last), and the
    tracker told (fetched_only and began_step: what it said before and at
    the fetch)."""
    if it._trainprof_held is not None:
        _count_held(it._trainprof_held)
        it._trainprof_held = None
    tracker.fetch_stopped(fetched_only, began_step)


def _hand_out_ahead(it, n, batch):
    """A batch of a pass that hands each out one fetch after fetching it
    came (n: its samples, 0 where the batch tells them): held, and the one
    before counted."""
    held = it._trainprof_held
    it._trainprof_held = n if n > 0 else (sample_shape(batch),)
    if held is not None:
        _count_held(held)


_native._loader_next_setup(
    {
        "state": _state,
        "timed_threads": timed_threads,
        "device_poll": device_poll,
        "count_samples": count_samples,
        "stopped": _main_stopped,
        "ahead": _hand_out_ahead,
        "train": R_TRAIN,
        "train_id": _native._region_id(R_TRAIN),
        "next_id": _native._region_id(R_NEXT),
        "bottleneck": _bottleneck.ACTIVE,
    }
)


def _accelerate_loader(caller):
    """The name of the Accelerate loader class ("DataLoaderShard",
    "DataLoaderDispatcher") whose __iter__ is caller, else None. A
    DataLoaderShard (Hugging Face's Trainer's too) fetches each batch one
    ahead of the one it hands out: counted at its fetch, an epoch's first
    step would count two batches and its last none. Read once per iter()
    from the caller's frame: nothing imported."""
    if caller.f_code.co_name != "__iter__":
        return None
    if caller.f_globals.get("__name__") != "accelerate.data_loader":
        return None
    for c in type(caller.f_locals.get("self")).__mro__:
        if c.__name__ in ("DataLoaderShard", "DataLoaderDispatcher"):
            return c.__name__
    return None


class _DispatchedPass:
    """A pass of Accelerate's DataLoaderDispatcher as the script iterates it
    (the default for an IterableDataset): process 0 fetches every process's
    batches, a round ahead, and broadcasts them; each process is handed its
    slice. Its fetches are what each rank waits on for its batch and its
    samples are that slice, on every rank (the loader it wraps, iterated on
    process 0 only, is fetched as is)."""

    def __init__(self, batches):
        self._batches = batches
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _next(self):
        batch = next(self._batches)
        self._num_yielded += 1
        return batch


_DispatchedPass.__next__ = _handing_out(_DispatchedPass._next)
_dispatcher_patched = False


def _as_passes(iter_of, sized):
    """A maker for wrap_method: an __iter__ whose call is a pass of the
    loader, its iterator iter_of(orig, loader) (sized: as _begin_pass's)."""

    def make(orig):
        @functools.wraps(orig)
        def __iter__(self):
            return _begin_pass(self, lambda loader: iter_of(orig, loader), False, sized)

        __iter__.__trainprof_wrapped__ = orig
        return __iter__

    return make


def patch_dispatcher(module):
    """after_import("accelerate.data_loader") callback: DataLoaderDispatcher's
    passes are the loader's passes (_DispatchedPass)."""
    global _dispatcher_patched
    make = _as_passes(lambda orig, loader: _DispatchedPass(orig(loader)), False)
    if wrap_method(getattr(module, "DataLoaderDispatcher", None), "__iter__", make):
        _dispatcher_patched = True


def patch_stateful_loader(module):
    """after_import("torchdata.stateful_dataloader") callback: its
    StatefulDataLoader (torchtitan's loader) makes its own iter(), which
    torch's DataLoader.__iter__ never saw: its passes had no role, so no
    epochs, and steps only from the updates. Its passes are the loader's
    passes as a DataLoader's (its iterator a _BaseDataLoaderIter, fetched
    through the same __next__)."""
    make = _as_passes(lambda orig, loader: orig(loader), True)
    wrap_method(getattr(module, "StatefulDataLoader", None), "__iter__", make)


_webdataset_patched = False


def _webdataset_stage(caller):
    """Whether caller, the frame iterating a DataLoader, is webdataset's
    DataPipeline.invoke making its first stage's pass (inside the pipeline's
    own pass, patch_webdataset_pipeline). Read once per iter()."""
    return (
        caller.f_code.co_name == "invoke"
        and caller.f_globals.get("__name__") == "webdataset.pipeline"
    )


def patch_webdataset_pipeline(module):
    """after_import("webdataset.pipeline") callback: a DataPipeline whose
    first stage is a DataLoader (webdataset's WebLoader, re-batching its
    batches with .unbatched().shuffle(n).batched(b), or cutting its epochs
    at .with_epoch(n)) hands out the training's batches. Each iter() of it
    is the loader's pass, fetched through a _DispatchedPass (its settings
    the DataLoader's); the DataLoader's pass inside it is fetched as is.
    Counted at the DataLoader, each of its batches was a step, and an epoch
    ended with its pass, before the batches still in the pipeline's shuffle
    buffer: 3 steps an epoch where the script made 4. A pipeline of other
    stages (a dataset's, in the DataLoader's workers) is left as it is."""
    global _webdataset_patched
    from torch.utils.data import DataLoader

    def make(orig):
        @functools.wraps(orig)
        def __iter__(self):
            stages = getattr(self, "pipeline", None)
            first = stages[0] if isinstance(stages, list) and stages else None
            if not isinstance(first, DataLoader):
                return orig(self)
            made = lambda pipeline: _DispatchedPass(orig(pipeline))  # noqa: E731
            return _begin_pass(self, made, False, False, settings=first)

        __iter__.__trainprof_wrapped__ = orig
        return __iter__

    if wrap_method(getattr(module, "DataPipeline", None), "__iter__", make):
        _webdataset_patched = True


def _count_held(held):
    """Counts a held-back batch: its samples (an int) or, in a 1-tuple, the
    shape that tells them."""
    if isinstance(held, tuple):
        count_shape(held[0])
    else:
        _native.samples(held)


def _batch_sizes(loader):
    """(batch_size, samples in a pass, drop_last) of a map-style DataLoader
    that batches by batch_size, else None: its batch k then holds
    min(batch_size, samples - (k - 1) * batch_size), whatever shape its
    collate gives the tensors (an RNN's (seq, batch) among them)."""
    size = loader.batch_size
    if not size or getattr(loader, "_dataset_kind", 0) != 0:  # 0: _DatasetKind.Map
        return None
    try:
        return size, len(loader.sampler), bool(loader.drop_last)
    except TypeError:
        return None
