"""What the parts of the PyTorch instrumentation share: each thread's state,
the training loop's (which DataLoader or optimizer marks the steps), the
region ids, and how many samples a batch holds."""

import threading

import torch

from . import _native


class ThreadState(threading.local):
    """This thread's instrumentation state. The class attributes are the
    defaults, so reading one never raises: a getattr() default on a plain
    threading.local costs an AttributeError, about 0.6 us, and the module
    hooks read this state on every module call."""

    depth = 0  # 1 inside a module's timed call (see _torch_forward.TimedCall)
    calls = 0  # module calls open on this thread, as the global hooks counted them
    generation = 0  # the hooks' registration these counts belong to
    hook_forward = False  # the global hooks opened the forward being timed
    train_batch = False  # a train_batch region is open
    batch_model = 0  # id() of the module whose forward opened it
    optimizer_step = False  # an optimizer_step region is open
    optimizer_stepped = False  # an optimizer step ended since GradScaler.step began
    forward_seen = False  # an outermost call with gradients on since the step or backward began
    last_batch = False  # the main DataLoader's iterator just yielded its last batch (by its length)
    step_closed = False  # that batch's optimizer step ended its step: the next fetch marks none
    # since the main DataLoader's last fetch: None before the first, True while
    # no forward, backward or optimizer step has run after it, then False
    fetched_only = None
    # times (now_ns) of fetches that came right after a fetch before any loop
    # showed work between fetches: each began a step if no work follows them,
    # none did if work follows (micro-batches fetched first). Settled by the
    # next fetch after work, the next epoch, the process's end or a full list.
    undecided = None
    epoch_open = False  # the main DataLoader is between its iter() and its end
    # now_ns() at which another DataLoader began a pass while a step with work
    # was open (an evaluation mid-epoch, as the Trainer's eval_steps run): if
    # the pass ends with no training forward, backward or optimizer step in
    # it, the step ended there (tp_step_end_at) and the pass is no step's
    eval_since = None
    device_times = None  # _torch_device.DeviceTimes, made on first use
    in_comm_hook = False  # inside a timed DDP communication hook
    in_funcol = False  # inside a timed functional collective (_torch_funcol)
    # now_ns() at the first DataLoader fetch since a framework's callback last
    # took it (only kept while one marks the steps): where its step began
    fetch_ns = None


local = ThreadState()


class Training:
    """Which loop marks the steps and epochs (one per process; changed under
    the GIL)."""

    # the training DataLoader (the first one iterated)
    main_loader = None
    # No DataLoader before the first optimizer step (batches from a custom
    # iterator, as nanoGPT's get_batch): from then on each step of that
    # optimizer (held weakly: a new one takes over once it is gone; a second
    # one stepping in the same iteration, as a GAN's, marks nothing) ends a
    # training step (the first one began at the run's first training forward:
    # first_work_ns), and no DataLoader marks steps or epochs.
    step_optimizer = None
    # now_ns() of the first training forward while neither marks the steps:
    # where the first step began, should optimizer steps come to mark them
    first_work_ns = None
    epochs = 0
    # a fetch of the main DataLoader has found work done since the one before:
    # fetches with no work between them (a loop that fetches its gradient
    # accumulation's micro-batches first, as Hugging Face's Trainer does) are
    # one step, not one each. Before it is known, such fetches are undecided
    # (ThreadState.undecided) until the work after them shows which.
    work_between_fetches = False


R_NEXT = _native.region("dataloader_next")
R_TRAIN = _native.region("train_batch")
R_FORWARD = _native.region("forward")
R_BACKWARD = _native.region("backward")
R_OPTIM = _native.region("optimizer_step")
R_SCHED = _native.region("step_lr_schedulers")
R_TO = _native.region("to_device")
R_FROM = _native.region("from_device")
R_REDUCE = _native.region("reduce_metrics")
# what is not training, named where a framework says it (trainprof._lightning)
R_EVALUATE = _native.region("evaluate")
R_SANITY = _native.region("sanity_check")
R_CHECKPOINT = _native.region("checkpoint")
begin, end = _native.begin, _native.end

# True while torch.compile's Dynamo traces (a constant it folds: code behind
# it adds nothing to the graph), False when the code runs
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)

# What each recording call gives back, for its stand-in while Dynamo traces
_NATIVE_CALLS = {"begin": None, "end": None, "span": None, "now_ns": 0, "step": None,
                 "epoch": None, "samples": None, "device_time": None}


def trace_recording_as_nothing(_dynamo=None):
    """Where torch.compile traces a patched call (a collective, a to(), a
    backward inside a compiled function), the recording calls in it become
    nothing in the graph instead of breaking the graph in two: Dynamo can't
    trace a C extension's functions. Eager calls are unchanged (the stand-ins
    only apply while tracing). Nothing on torch < 2.5 (the breaks stay)."""
    substitute = getattr(getattr(torch, "compiler", None), "substitute_in_graph", None)
    if substitute is None:
        return
    for name, result in _NATIVE_CALLS.items():
        def nothing(*args, _result=result, **kwargs):
            return _result

        try:
            substitute(getattr(_native, name), skip_signature_check=True)(nothing)
        except (TypeError, ValueError, RuntimeError):  # refused: that call breaks the graph
            pass


def batch_size(batch, depth=0):
    """Samples in a batch: the first dimension of its first tensor, if any."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.ndim else 0
    if depth == 0 and type(batch) in (tuple, list) and batch:  # (inputs, labels): no recursion
        first = batch[0]
        if isinstance(first, torch.Tensor) and first.ndim:
            return first.shape[0]
    if depth < 3:
        if isinstance(batch, (list, tuple)):
            for item in batch:
                n = batch_size(item, depth + 1)
                if n:
                    return n
        elif isinstance(batch, dict):
            for item in batch.values():
                n = batch_size(item, depth + 1)
                if n:
                    return n
    return 0


def count_samples(batch):
    """Adds a batch's samples to the current step's."""
    n = batch_size(batch)
    if n:
        _native.samples(n)
