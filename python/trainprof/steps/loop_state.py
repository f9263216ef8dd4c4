"""What the training loop has shown, process-wide, that every thread's step
tracker reads (trainprof.steps.tracker), and how a DataLoader is told to be
like the training's. Imports weakref alone."""

import weakref


def _weak(obj):
    """A callable giving obj back while it lives (a weak reference), or for
    good where obj takes none (a list as a dataset: the script's own)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


class LoaderRef:
    """A DataLoader the trackers keep in mind (the training's, the one
    before a later pass) without keeping it alive: a loader with persistent
    workers the script let go of would keep them, its dataset and their
    memory, until the interpreter's exit, where multiprocessing ends them by
    SIGTERM instead of the loader's own orderly shutdown. What same_kind
    asks of it is kept as read when it was first iterated (a DataLoader's
    batch size and sampler can't be set again)."""

    __slots__ = ("_loader", "_dataset", "batch_size", "sampler_type")

    def __init__(self, loader):
        self._loader = _weak(loader)
        dataset = getattr(loader, "dataset", None)
        self._dataset = None if dataset is None else _weak(dataset)
        self.batch_size = getattr(loader, "batch_size", None)
        self.sampler_type = type(getattr(loader, "sampler", None))

    def refers_to(self, loader):
        """Whether this is loader (never, once that loader is gone)."""
        return self._loader() is loader

    def dataset(self):
        """Its dataset while it lives, else None."""
        return None if self._dataset is None else self._dataset()


def same_kind(loader, ref):
    """Whether loader reads as the training loader ref (a LoaderRef) did:
    the same dataset object, batch size and kind of sampler (an
    evaluation's loader over the training set is most often unshuffled, or
    batched otherwise)."""
    dataset = ref.dataset()
    return (
        dataset is not None
        and getattr(loader, "dataset", None) is dataset
        and getattr(loader, "batch_size", None) == ref.batch_size
        and type(getattr(loader, "sampler", None)) is ref.sampler_type
    )


class Loop:
    """What the training loop has shown, process-wide (changed under the GIL).
    Plain attributes (__slots__): the C paths read them by offset
    (python/trainprof/_tracker_events.c)."""

    __slots__ = (
        "main_loader",
        "step_optimizer",
        "first_work_ns",
        "epochs",
        "work_between_fetches",
        "updates_between_fetches",
        "updates",
        "backwards",
        "evaluations_training",
        "fetcher",
        "prefetched",
    )

    def __init__(self):
        self.main_loader = None  # LoaderRef: the training DataLoader (the first one iterated)
        self.step_optimizer = None  # StepOptimizer: the optimizer whose updates end steps
        self.first_work_ns = None  # the first training forward's time
        self.epochs = 0  # epochs marked
        self.work_between_fetches = False  # a training fetch found work since the last
        self.updates_between_fetches = False  # a training fetch found an update since the last
        self.updates = 0  # updates seen (a framework's adapter tells a training loop by them)
        self.backwards = 0  # backward calls seen (and optimizer steps begun)
        self.evaluations_training = 0  # evaluations run with gradients on, the model training
        self.fetcher = None  # the tracker whose thread fetched the training loader's last pass
        # the training loader is fetched on another thread than the training's
        # (a background prefetching thread): updates mark the steps, for good
        self.prefetched = False
