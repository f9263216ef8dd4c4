"""What the parts of the PyTorch instrumentation share: each thread's state,
the step tracker, the region ids, and how many samples a batch holds."""

import functools
from collections.abc import Mapping

import torch

from trainprof import _native
from trainprof.runtime import device_memory as _memory
from trainprof.steps import marks as _marks
from trainprof.steps import state as _state
from trainprof.steps.loop_state import Loop
from trainprof.steps.step_optimizer import StepOptimizer
from trainprof.steps.tracker import StepTracker

# What the patches' hot paths call first: this thread's ThreadState (one call
# and a dict lookup, where a threading.local costs ~550 instructions an
# attribute; python/trainprof/_per_thread.c)
per_thread = _native.per_thread


class _Marks:
    """The step tracker's sink: trainprof._native's marks, and the evaluate
    spans it decides late."""

    step, step_at, step_end_at = _marks.step, _marks.step_at, _native.step_end_at
    epoch_at, now_ns = _native.epoch_at, _native.now_ns

    @staticmethod
    def evaluate_span(start_ns, end_ns):
        _native.span(R_EVALUATE, start_ns, end_ns)

    @staticmethod
    def evaluations_in_training_mode(n):
        _native.fact(f"evaluate.training_mode={n}")

    @staticmethod
    def loader_fetched_elsewhere():
        _native.fact("loader.prefetched=1")


# What the training loop has shown, process-wide (every thread's step tracker's)
loop = Loop()


class ThreadState:
    """One thread's instrumentation state, per_thread(ThreadState): made at
    the thread's first instrumented call, gone with the thread. Plain
    attributes (__slots__): the module calls read them on every call."""

    __slots__ = (
        "depth",
        "calls",
        "generation",
        "hook_region",
        "train_batch",
        "batch_model",
        "optimizer_step",
        "optimizer_stepped",
        "closure_again",
        "forward_seen",
        "device_times",
        "in_comm_hook",
        "in_funcol",
        "in_pause",
        "in_compile",
        "pending",
        "fetch_ns",
        "tracker",
        "traced",
    )

    def __init__(self):
        self.depth = 0  # 1 inside a module's timed call (see trainprof.patches.forward.TimedCall)
        self.calls = 0  # module calls open on this thread, as the global hooks counted them
        self.generation = 0  # the hooks' registration these counts belong to
        self.hook_region = None  # the region (forward or loss) the global hooks opened
        self.train_batch = False  # a train_batch region is open
        self.batch_model = 0  # id() of the module whose forward opened it
        self.optimizer_step = False  # an optimizer_step region is open
        self.optimizer_stepped = False  # an optimizer step ended since GradScaler.step began
        self.closure_again = False  # in an optimizer's second or later call of step()'s closure
        # an outermost call with gradients on since the step or backward began
        self.forward_seen = False
        self.device_times = None  # trainprof.patches.device.DeviceTimes, made on first use
        self.in_comm_hook = False  # inside a timed DDP communication hook
        self.in_funcol = False  # inside a timed functional collective (trainprof.patches.funcol)
        self.in_pause = False  # inside a timed checkpoint or evaluation (see timed_pause)
        self.in_compile = False  # inside a compile region (Dynamo's start callback, not its end)
        # a counted batch's (dim 0, dim 1) that waits for its forward's end (SampleDim)
        self.pending = None
        # now_ns() at the first DataLoader fetch since a framework's callback last
        # took it (only kept while one marks the steps): where its step began
        self.fetch_ns = None
        # this thread's step tracker (trainprof.steps.tracker): the patches are
        # its sources of events, _Marks the sink of its marks
        self.tracker = StepTracker(_Marks, loop, _state)
        self.traced = False  # Dynamo traces the code that asked (see _fresh)


# the C paths (python/trainprof/_thread_state.c) read its slots straight,
# and the tracker's and the loop's (_tracker_events.c)
_native._thread_state_setup(ThreadState)
_native._tracker_setup(StepTracker, Loop, StepOptimizer, _Marks, _state, _memory)


def tracker():
    """This thread's step tracker (for the cold paths: the hot ones take it
    from their ThreadState)."""
    return per_thread(ThreadState).tracker


R_NEXT = _native.region(_native.PHASE_DATALOADER_NEXT)
R_TRAIN = _native.region(_native.PHASE_TRAIN_BATCH)
R_FORWARD = _native.region(_native.PHASE_FORWARD)
R_LOSS = _native.region(_native.PHASE_LOSS)
R_BACKWARD = _native.region(_native.PHASE_BACKWARD)
R_OPTIM = _native.region(_native.PHASE_OPTIMIZER_STEP)
R_SCHED = _native.region(_native.PHASE_STEP_LR_SCHEDULERS)
R_TO = _native.region(_native.PHASE_TO_DEVICE)
R_FROM = _native.region(_native.PHASE_FROM_DEVICE)
R_REDUCE = _native.region(_native.PHASE_REDUCE_METRICS)
# what is not training, named where a framework says it (trainprof.frameworks.lightning)
R_EVALUATE = _native.region(_native.PHASE_EVALUATE)
R_SANITY = _native.region(_native.PHASE_SANITY_CHECK)
R_CHECKPOINT = _native.region(_native.PHASE_CHECKPOINT)
R_COMPILE = _native.region(_native.PHASE_COMPILE)
begin, end = _native.begin, _native.end

# True while torch.compile's Dynamo traces (a constant it folds: code behind
# it adds nothing to the graph), False when the code runs
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


class _NoFlag:
    _is_compiling_flag = False


# The hot paths (a module's timed call, backward) ask without a call: in
# eager code is_compiling() is torch.compiler._is_compiling_flag (torch.export's
# non-strict tracing sets it), and while Dynamo traces, per_thread's stand-in
# says so (ThreadState.traced). They call is_compiling() first only where
# that can't be relied on (ASK_COMPILING: a torch without the flag, or one
# that refused the stand-in), two Python calls each.
COMPILER = getattr(torch, "compiler", None)
if not hasattr(COMPILER, "_is_compiling_flag"):
    COMPILER = _NoFlag
ASK_COMPILING = COMPILER is _NoFlag
# the flag the C paths read (python/trainprof/_thread_state.h); none: they
# leave every call to their twins, which ask
_native._compiling_flag(None if ASK_COMPILING else COMPILER)

# What each recording call gives back, for its stand-in while Dynamo traces
_NATIVE_CALLS = {
    "begin": None,
    "end": None,
    "span": None,
    "now_ns": 0,
    "step": None,
    "epoch": None,
    "samples": None,
    "device_time": None,
}


def _fresh(cls):
    """per_thread's stand-in while Dynamo traces: an object of the traced
    code's own, never the thread's (no mark comes from traced code); a
    ThreadState says that it is traced."""
    made = cls()
    if cls is ThreadState:
        made.traced = True
    return made


def trace_recording_as_nothing(_dynamo=None):
    """Where torch.compile traces a patched call (a collective, a to(), a
    backward inside a compiled function), the recording calls in it become
    nothing in the graph instead of breaking the graph in two: Dynamo can't
    trace a C extension's functions. Eager calls are unchanged (the stand-ins
    only apply while tracing). Nothing on torch < 2.5 (the breaks stay)."""
    global ASK_COMPILING
    substitute = getattr(getattr(torch, "compiler", None), "substitute_in_graph", None)
    if substitute is None:
        ASK_COMPILING = True
        _native._compiling_flag(None)
        return
    for name, result in _NATIVE_CALLS.items():

        def nothing(*args, _result=result, **kwargs):
            return _result

        try:
            substitute(getattr(_native, name), skip_signature_check=True)(nothing)
        except (TypeError, ValueError, RuntimeError):  # refused: that call breaks the graph
            pass
    try:
        substitute(per_thread, skip_signature_check=True)(_fresh)
    except (TypeError, ValueError, RuntimeError):  # per_thread would break graphs
        ASK_COMPILING = True
        _native._compiling_flag(None)


def first_tensor(batch, depth=0):
    """The batch's first tensor with a dimension (of a tuple, list or dict,
    three levels down at most), or None."""
    if isinstance(batch, torch.Tensor):
        return batch if batch.ndim else None
    if depth == 0 and type(batch) in (tuple, list) and batch:  # (inputs, labels): no recursion
        first = batch[0]
        if isinstance(first, torch.Tensor) and first.ndim:
            return first
    if depth < 3:
        items = batch.values() if isinstance(batch, dict) else batch
        if isinstance(batch, (list, tuple, dict)):
            for item in items:
                found = first_tensor(item, depth + 1)
                if found is not None:
                    return found
    return None


class SampleDim:
    """Which dimension of a batch's first tensor counts its samples:
    the first, unless a module that reads its input sequence-first (an
    RNN, LSTM or GRU, or a MultiheadAttention, with batch_first=False:
    torch.nn's default) was seen consuming a batch whose second dimension
    was that module's batch (pytorch/examples' word_language_model feeds
    (35 tokens, 20 sequences)). Learned while the global module hooks look
    (trainprof.patches.forward's discovery), once per process; the batches counted
    meanwhile wait for their forward's end (local.pending)."""

    seq_first = False
    looking = False  # the discovery hooks are in (set by trainprof.patches.forward)
    SEQ_FIRST_MODULES = (torch.nn.RNNBase, torch.nn.MultiheadAttention)


def seen_module_input(module, args):
    """An inner module call, seen by the discovery hooks: where it reads
    sequence-first and its batch is the pending batch's second dimension
    (and not its first), the samples are counted on dimension 1 from now on."""
    pending = per_thread(ThreadState).pending
    if (
        pending is None
        or not isinstance(module, SampleDim.SEQ_FIRST_MODULES)
        or getattr(module, "batch_first", True)
        or not args
    ):
        return
    x = args[0]
    if isinstance(x, torch.Tensor) and x.ndim == 3 and x.shape[1] == pending[1] != pending[0]:
        SampleDim.seq_first = True


def flush_samples():
    """Counts the batch that waited for its forward's end (see SampleDim)."""
    local = per_thread(ThreadState)
    pending = local.pending
    if pending is not None:
        local.pending = None
        _native.samples(pending[1] if SampleDim.seq_first else pending[0])


def count_samples(batch):
    """Adds a batch to the current step's: its samples (0 when its size is
    not visible: see first_tensor and SampleDim), and one to its batches
    (micro-batches)."""
    if _state.manual_samples:  # the script counts them
        return
    count_shape(sample_shape(batch))


def sample_shape(batch):
    """The shape that tells a batch's samples: its first tensor's, else
    what a batch of another kind tells (told_samples), None where nothing
    does."""
    x = first_tensor(batch)
    return x.shape if x is not None else told_samples(batch)


def told_samples(batch):
    """The samples of a batch that is no tensor, tuple, list or dict, as a
    shape of one dimension: a mapping's first tensor's (transformers'
    BatchEncoding is a UserDict, a collator's batch over an IterableDataset),
    else the count the batch keeps of itself (PyG: a NodeLoader's
    mini-batch, batch_size seed nodes; a graph DataLoader's Batch,
    num_graphs graphs), else its seeds' ids (PyG: a LinkLoader's
    input_id, its seed edges), else those its parts keep (PyG's HeteroData:
    the seed node type's batch_size, or the seed edge type's input_id).
    None where none is told; never raises (a batch's attributes are the
    script's)."""
    if batch is None or isinstance(batch, (torch.Tensor, tuple, list, dict)):
        return None
    try:
        if isinstance(batch, Mapping):
            for value in batch.values():
                x = first_tensor(value, 1)
                if x is not None:
                    return x.shape
            return None
        n = _seeds_kept(batch, "num_graphs")
        if n:
            return (n,)
        for name in ("node_stores", "edge_stores"):
            parts = getattr(batch, name, None)
            if isinstance(parts, list):
                for part in parts:
                    n = _seeds_kept(part)
                    if n:
                        return (n,)
    except Exception:  # noqa: BLE001 - a batch whose attributes raise tells nothing
        pass
    return None


def _seeds_kept(obj, *counts):
    """The seeds obj keeps count of (batch_size, then each of counts, then
    the length of its 1-D input_id), or 0."""
    for name in ("batch_size", *counts):
        n = getattr(obj, name, None)
        if type(n) is int and n > 0:
            return n
    seeds = getattr(obj, "input_id", None)
    if isinstance(seeds, torch.Tensor) and seeds.ndim == 1:
        return seeds.numel()
    return 0


def count_shape(shape):
    """count_samples of a batch whose first tensor has this shape (None:
    it has none), counted now: a batch held back by a loader that fetches
    ahead (patches.loop) is counted when it is handed out."""
    if _state.manual_samples:
        return
    flush_samples()
    if shape is None:
        _native.samples(0)
    elif len(shape) < 2:
        _native.samples(shape[0])
    elif SampleDim.seq_first:
        _native.samples(shape[1])
    elif SampleDim.looking:
        per_thread(ThreadState).pending = (shape[0], shape[1])
    else:
        _native.samples(shape[0])


# count_samples of a training call's plain tensor, in C (_batch_samples.c):
# a change to count_samples, count_shape or SampleDim is a change to its C too
_native._batch_samples_setup(torch.Tensor, SampleDim, _state)


def timed_pause(fn, region):
    """fn (torch.save, Trainer.save_checkpoint, Trainer.evaluate) timed as
    region, a pause in the training told to the step tracker; once however
    the pauses nest (the torch.save calls inside a framework's save)."""

    @functools.wraps(fn)
    def pause(*args, **kwargs):
        if is_compiling():
            return fn(*args, **kwargs)
        local = per_thread(ThreadState)
        if local.in_pause:
            return fn(*args, **kwargs)
        local.in_pause = True
        local.tracker.pause_begins()
        begin(region)
        try:
            return fn(*args, **kwargs)
        finally:
            end(region)
            local.in_pause = False
            local.tracker.pause_ends()

    pause.__trainprof_wrapped__ = fn
    return pause


def time_compilations(dynamo):
    """Dynamo's compilations (its outermost, on the thread that compiles:
    the first call of compiled code, a lazily compiled backward) timed as
    compile. torch._dynamo.reset() drops these callbacks."""
    handler = getattr(dynamo, "callback_handler", None)
    if handler is None or not hasattr(handler, "register_start_callback"):
        return

    def started(_args):
        local = per_thread(ThreadState)
        if not local.in_compile:
            local.in_compile = True
            begin(R_COMPILE)

    def ended(_args):
        local = per_thread(ThreadState)
        if local.in_compile:
            local.in_compile = False
            end(R_COMPILE)

    handler.register_start_callback(started)
    handler.register_end_callback(ended)
