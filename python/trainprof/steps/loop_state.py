"""What the training loop has shown, process-wide, that every thread's step
tracker reads (trainprof.steps.tracker), and how a DataLoader is told to be
like the training's. Imports nothing."""


def same_kind(a, b):
    """Whether DataLoader a reads as the training loader b did: the same
    dataset object, batch size and kind of sampler (an evaluation's loader
    over the training set is most often unshuffled, or batched otherwise)."""
    dataset = getattr(b, "dataset", None)
    return (
        dataset is not None
        and getattr(a, "dataset", None) is dataset
        and getattr(a, "batch_size", None) == getattr(b, "batch_size", None)
        and type(getattr(a, "sampler", None)) is type(getattr(b, "sampler", None))
    )


class Loop:
    """What the training loop has shown, process-wide (changed under the GIL)."""

    def __init__(self):
        self.main_loader = None  # the training DataLoader (the first one iterated)
        self.step_optimizer = None  # weakref: the optimizer whose updates end steps
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
