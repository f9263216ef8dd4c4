"""PyTorch auto-instrumentation: the Timings of an unchanged training script.

``instrument()`` patches a few PyTorch entry points so that each emits a
trainprof region (names as in the report):

- ``dataloader_next``: ``next()`` on a DataLoader iterator. The first
  DataLoader iterated is the training loader: each ``next()`` on it marks a
  step boundary and each ``iter()`` of it starts an epoch (unless the script
  calls ``trainprof.step()`` / ``trainprof.epoch()`` itself). Fetches in a
  row with no forward, backward or optimizer step between them (Hugging
  Face's Trainer fetches a gradient accumulation's micro-batches first,
  through Accelerate's loader that fetches one ahead) are one step, once the
  loop has worked between two fetches; the loader's end (StopIteration)
  leaves a step open for the next optimizer step to end.
- ``train_batch``: from the first forward after a batch is fetched to the end
  of the optimizer step (or the next fetch), with ``forward`` (the outermost
  module call: each module called outermost gets a timed call of its own, so
  that other module calls keep torch's fast path; see
  trainprof.patches.forward.TimedCall), ``loss`` (a loss module's outermost
  call: torch.nn's losses, called on the model's output), ``backward``
  (``Tensor.backward``) and ``optimizer_step`` inside it. Where ``optimizer.step(closure)`` runs the
  forward and backward itself (Lightning's automatic optimization, LBFGS),
  optimizer_step times what the optimizer does after each call of the
  closure, and the closure's forward and backward are train_batch's. A
  ``GradScaler.step`` that skips the optimizer's step (inf or NaN gradients)
  ends the train_batch, and the step where optimizer steps mark them, all
  the same.
- ``step_lr_schedulers``: ``LRScheduler.step``.
- ``to_device``: ``Tensor.to`` / ``.cuda`` moving a CPU tensor to another device.
- ``from_device``: ``.item()``, ``.cpu()``, ``.tolist()``, ``.numpy()`` of a
  tensor on a GPU (or another accelerator).
- ``reduce_metrics``: ``torch.distributed`` communication: collectives
  (all_reduce, all_gather, broadcast, reduce_scatter, barrier and their
  variants, FSDP2's all_gather_single and reduce_scatter_single among them)
  and point to point (send, recv, isend, irecv, batch_isend_irecv); work
  left under way (async_op=True, isend) is timed to its completion, on the
  thread that completes it. And DistributedDataParallel's gradient
  all-reduce: from the moment a bucket's
  communication hook is called to the moment its future completes (the
  default all-reduce hook is registered at the first forward unless the
  script registers its own, which is then timed the same way; set
  TRAINPROF_DDP_HOOK=0 to leave DDP alone). Those spans overlap backward.

These are host times: when the CPU entered and left the region. Where the
work runs on a CUDA device (``to_device`` to a CUDA device; ``train_batch`` of
a model whose parameters are on one) the region gets a device time too: a
CUDA event is recorded on the current stream at its begin and at its end, and
the elapsed time between them is read once the end event has completed, which
this module checks at each step and each timed region, never waiting (no
synchronize is added; at exit the last few are waited for). Regions begun
while a CUDA graph is being captured get none. TRAINPROF_DEVICE_TIMES=all
times ``forward``, ``backward`` and ``optimizer_step`` on the device too (two
more events each per step); TRAINPROF_DEVICE_TIMES=0 turns device times off.

Under ``trainprof record`` this module is applied when torch is imported; call
``instrument()`` to apply it by hand. Nothing is patched otherwise.
"""

import atexit

import torch

from trainprof.frameworks.transformers import patch_trainer
from trainprof.patches.common import (
    R_CHECKPOINT,
    time_compilations,
    timed_pause,
    trace_recording_as_nothing,
    tracker,
)
from trainprof.patches.device import DEVICE_TIMES, flush_device_times
from trainprof.patches.device import patch_graph_capture as _patch_graph_capture
from trainprof.patches.distributed import patch_distributed as _patch_distributed
from trainprof.patches.distributed import patch_spawn as _patch_spawn
from trainprof.patches.forward import patch_modules as _patch_modules
from trainprof.patches.loader import (
    _patch_dataloader,
    patch_dispatcher,
    patch_stateful_loader,
    patch_webdataset_pipeline,
)
from trainprof.patches.loop import (
    _end_train_batch,  # noqa: F401 (framework adapters call it)
    _patch_backward,
    _patch_optimizer,
    _patch_schedulers,
    _patch_transfers,
    _patch_workers,
)
from trainprof.runtime import ops as _ops
from trainprof.startup.after_import import after_import

_installed = False


def _tracker_exit():
    """At exit: the exiting thread's step tracker settles what it held."""
    tracker().exit()


def instrument():
    """Applies the auto-instrumentation once; returns False if it already was."""
    global _installed
    if _installed:
        return False
    _installed = True
    for patch in (
        _patch_dataloader,
        _patch_workers,
        _patch_modules,
        _patch_backward,
        _patch_optimizer,
        _patch_schedulers,
        _patch_transfers,
        _patch_distributed,
        _patch_spawn,
        _patch_graph_capture,
    ):
        patch()
    # Dynamo only traces once the script has imported it (torch.compile does)
    after_import("torch._dynamo", trace_recording_as_nothing)
    after_import("torch._dynamo", time_compilations)
    torch.save = timed_pause(torch.save, R_CHECKPOINT)
    # Hugging Face's Trainer names its checkpoints and evaluations
    after_import("transformers.trainer", patch_trainer)
    # Accelerate's loader for an IterableDataset fetches for every process
    after_import("accelerate.data_loader", patch_dispatcher)
    # torchdata's StatefulDataLoader (torchtitan's) makes its own iter()
    after_import("torchdata.stateful_dataloader", patch_stateful_loader)
    # webdataset's WebLoader re-batches a DataLoader's batches: its pass is the loader's
    after_import("webdataset.pipeline", patch_webdataset_pipeline)
    _ops.install(torch)  # capture windows, when the recorder asks
    if DEVICE_TIMES:
        atexit.register(flush_device_times)
    atexit.register(_tracker_exit)
    return True
