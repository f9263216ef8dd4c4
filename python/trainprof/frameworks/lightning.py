"""PyTorch Lightning tells its own loop: a callback that Lightning loads from
this package's entry points (the groups lightning.pytorch.callbacks_factory
and pytorch_lightning.callbacks_factory, read when a Trainer is made), so
that a script needs no change. Under ``trainprof record`` only; elsewhere the
factories return no callback.

What it marks, from Lightning's hooks:
- a step is one optimizer update, Lightning's global step: it begins at the
  fetch of its first batch (the first DataLoader fetch before
  on_train_batch_start where global_step moved since the step began) and
  ends at the next step's first fetch, or where validation or the epoch
  ends (a gradient accumulation's micro-batches are one step, as Lightning
  counts them); its samples are its batches' (trainprof.torch's batch size);
- an epoch begins at on_train_epoch_start, numbered as Lightning numbers it;
- ``sanity_check``: the validation batches Lightning runs before training;
- ``evaluate``: each validation (mid-epoch ones too), test and predict pass;
- ``checkpoint``: Trainer.save_checkpoint (ModelCheckpoint's saves).
The DataLoader and optimizer patches then mark no steps or epochs of their
own; the phases inside a step (dataloader_next, forward, backward,
optimizer_step, ...) are theirs as ever. A script that marks its own steps
(trainprof.step()) keeps them: the callback then marks none.
"""

import os
import sys

from trainprof import _native
from trainprof.startup.swallowed import swallowed
from trainprof.steps import facts as _facts
from trainprof.steps import marks as _marks
from trainprof.steps import state as _state
from trainprof.steps.framework_loop import taken_fetch as _taken_fetch


def callbacks():
    """Entry point of lightning.pytorch.callbacks_factory."""
    return _callbacks("lightning.pytorch")


def callbacks_pl():
    """Entry point of pytorch_lightning.callbacks_factory."""
    return _callbacks("pytorch_lightning")


def _callbacks(package):
    tp_torch = sys.modules.get("trainprof.torch")
    if (
        not os.environ.get("TRAINPROF_SOCKET")
        or tp_torch is None
        or not getattr(tp_torch, "_installed", False)
    ):
        return []  # not under record, or PyTorch not instrumented
    base = getattr(sys.modules.get(package), "Callback", None)
    if base is None:
        return []
    global _common
    from trainprof.patches import common as _common  # torch is in: Lightning imported it

    if _state.manual_steps is False:
        _state.manual_steps = "lightning"
    if _state.manual_epochs is False:
        _state.manual_epochs = "lightning"
    return [type("TrainprofCallback", (_Hooks, base), {})()]


class _Hooks:
    """The callback's hooks (mixed into Lightning's Callback class of the
    package that loaded it). Lightning calls them on the thread that runs
    the loop."""

    def __init__(self):
        super().__init__()
        self.step_open = False
        self.step_global = -1  # trainer.global_step when the open step began
        self.phase = None  # the open named phase's region id

    # ---- steps and epochs --------------------------------------------------

    def on_train_epoch_start(self, trainer, pl_module):
        self._end_step()
        _taken_fetch()
        try:  # the training loader's settings, for the advice (Lightning's own loop
            loader = trainer.train_dataloader  # iterates it, not the script)
        except Exception as e:  # noqa: BLE001 - said; a trainer may raise anything here
            swallowed("reading Lightning's train_dataloader", e)
            loader = None
        if hasattr(loader, "num_workers"):  # one DataLoader (not several combined)
            _facts.note_loader(loader)
        if _state.manual_epochs == "lightning":
            _native.epoch(int(trainer.current_epoch))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if _state.manual_steps != "lightning":
            return
        fetched = _taken_fetch()
        if not self.step_open or trainer.global_step != self.step_global:
            if fetched is None:
                _marks.step()
            else:
                _marks.step_at(fetched)
            self.step_open, self.step_global = True, trainer.global_step
        _common.count_samples(batch)

    def on_train_epoch_end(self, trainer, pl_module):
        self._end_step()

    def on_train_end(self, trainer, pl_module):
        self._end_step()

    def _end_step(self):
        if self.step_open:
            self.step_open = False
            if _state.manual_steps == "lightning":
                _native.step_end_at(_native.now_ns())

    # ---- what is not training ------------------------------------------------

    def on_sanity_check_start(self, trainer, pl_module):
        self._begin_phase(_common.R_SANITY)

    def on_sanity_check_end(self, trainer, pl_module):
        self._end_phase(_common.R_SANITY)

    def on_validation_start(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._end_step()  # a validation mid-epoch ends the step before it
            self._begin_phase(_common.R_EVALUATE)

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._end_phase(_common.R_EVALUATE)

    def on_test_start(self, trainer, pl_module):
        self._begin_phase(_common.R_EVALUATE)

    def on_test_end(self, trainer, pl_module):
        self._end_phase(_common.R_EVALUATE)

    def on_predict_start(self, trainer, pl_module):
        self._begin_phase(_common.R_EVALUATE)

    def on_predict_end(self, trainer, pl_module):
        self._end_phase(_common.R_EVALUATE)

    def setup(self, trainer, pl_module, stage):
        save = trainer.save_checkpoint
        if not getattr(save, "__trainprof_wrapped__", None):
            trainer.save_checkpoint = _common.timed_pause(save, _common.R_CHECKPOINT)

    def _begin_phase(self, region):
        if self.phase is None:  # phases don't nest: the outer one holds
            self.phase = region
            _native.begin(region)

    def _end_phase(self, region):
        if self.phase == region:
            self.phase = None
            _native.end(region)
            _taken_fetch()  # its fetches begin no training step


_common = None  # trainprof.patches.common, once a callback is made
