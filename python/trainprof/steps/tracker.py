"""The step tracker: where a training loop's steps and epochs begin and end,
decided from what the loop does. No torch here: the PyTorch patches
(trainprof.torch, trainprof.patches.forward) are its sources of events, and its marks go
to a sink (trainprof._native under record; a list in tests/py/test_steps.py,
whose event tables are the specification).

A step is one optimizer update: what the frameworks call the global step.
Several optimizers stepped on one batch (a GAN's two) are one step, the
batch's (Lightning's global_step counts each optimizer's under manual
optimization).
The events:
- loader_iter(loader, grad, model_training): a DataLoader pass begins
  (grad: gradients were on; model_training: and the model trained so far
  was in training mode); the first loader iterated with gradients on (before
  any optimizer step marked steps) is the training loader, its passes the
  epochs;
- fetch() before a training batch is fetched; fetched(samples, last) once it
  came; fetch_stopped() when the pass ended instead (StopIteration);
  other_stopped(it) when another loader's pass ended;
- forward(training) (an outermost module call with gradients on; training:
  the module is in training mode), backward(), optimizer_begins();
- update(optimizer): an optimizer step ended (or a GradScaler skipped it);
- pause_begins() and pause_ends(): around a checkpoint's save (torch.save, a
  framework's save) or an evaluation a framework names;
- exit(): the process ends.

The rules, each decided late where it must be (the sink's *_at marks carry
the time the boundary really was):
- A training fetch after an update begins a step; one after work but before
  any update of the open step is a micro-batch of it (gradient accumulation),
  once the loop has shown updates between fetches; until then it is
  undecided: an update after it makes it a micro-batch, the epoch's end with
  none a step of its own (a loop with no optimizer). Fetches in a row with no
  work between are one step once the loop has worked between fetches (the
  micro-batches that Hugging Face's Trainer fetches first); until then they
  are undecided too, settled by the work after them.
- A pass's epoch, and its first step, are kept until the pass shows it is
  one (a second fetch, or work): a pass that yields a batch and is left
  for a new pass of the same loader is a peek (`next(iter(loader))`), and
  marks nothing.
- A loop that stops at the loader's length ends its last step with that
  batch's update, not with a next fetch.
- Another loader's pass begun after the open step's work and run to its end
  with no training forward, backward, update or training fetch in it is an
  evaluation: the step ended where it began (step_end), and the pass is an
  evaluate span. So is one begun between the training loader's passes (the
  validation after each epoch, a test after the training) or before any
  training, in no step.
  A loader iterated under no_grad is never the training loader (a
  validation before the training); nor is the first one iterated, once
  another's pass trains while it never did (one iterated with gradients on):
  its pass, its marks held until then (HeldMarks), is an evaluate span.
  A new loader iterated between the training loader's passes, with
  gradients on and the model in training mode, is the training's next pass
  (a new dataset each epoch: progressive resizing, a curriculum).
- Where no DataLoader fed the training before the first update, each update
  of that optimizer (another that then steps alone for long takes its place,
  from the first of those updates: trainprof.steps.step_optimizer) ends a
  step, the first one beginning at the run's first training forward; the
  next begins 1 ns after the update, once training work shows it (a pause
  in between moves its start to the pause's end).
  Until a DataLoader is iterated between two of those steps, gradients on
  and the model training (warm-up steps on batches the script made, then
  the training's loader): it is the training loader from then on, its pass
  held until it trains; one that never does is an evaluation, and the
  updates mark the steps again.
- A pause (a checkpoint, a framework's evaluation, outermost module calls
  under no_grad) after the open step's update ends the step where it begins;
  one mid-step stays in it. The no_grad calls' pause is an evaluate span.
"""

from trainprof.steps.held_marks import FROM_UPDATES, HeldMarks
from trainprof.steps.loop_state import LoaderRef, same_kind
from trainprof.steps.pauses import PauseRules
from trainprof.steps.state import FRAMEWORK_LOOPS
from trainprof.steps.step_optimizer import StepOptimizer

UNDECIDED_MAX = 1024  # fetches held undecided at most; then they are steps


class StepTracker(PauseRules):
    """One thread's view of the loop (trainprof.patches.common keeps one a
    thread, with the same sink, loop and switches). Plain attributes
    (__slots__): the patches call it several times a step. The C paths do
    what fetch, fetched, forward, backward and update do in a pass's steady
    steps, and what forward (or backward) and update do where the updates
    mark the steps (_open_pending_step, the step optimizer's update), on
    these slots themselves (python/trainprof/_tracker_events.c, which names
    each state it takes): a change to one of those methods is a change to
    its C too."""

    __slots__ = (
        "sink",
        "loop",
        "switches",
        "fetched_only",
        "updated",
        "after_update",
        "out_of_step",
        "reopen_at",
        "eval_from",
        "open_pending",
        "undecided",
        "undecided_wait_update",
        "last_batch",
        "step_closed",
        "epoch_open",
        "eval_since",
        "eval_ends_step",
        "paused",
        "pending_epoch",
        "pending_step",
        "held",
        "update_ns",
    )

    def __init__(self, sink, loop, switches):
        # step(), step_at(t), step_end_at(t), epoch_at(n, t), evaluate_span(t0, t1),
        # evaluations_in_training_mode(n), loader_fetched_elsewhere(), now_ns()
        self.sink = sink
        self.loop = loop
        self.switches = switches  # .manual_steps, .manual_epochs (trainprof.steps.state)
        # since the last training fetch: None before the pass's first, True while
        # no work (forward, backward, optimizer step) ran after it, then False
        self.fetched_only = None
        self.updated = False  # an update since the open step began
        self.after_update = False  # no work or training fetch since the last update
        self.out_of_step = False  # a pause ended the step, and nothing began one since
        # where updates mark steps: when the next one begins (0: at the next work)
        self.reopen_at = None
        self.eval_from = None  # when an evaluation pause (no_grad calls after an update) began
        # where updates mark steps: when the step after the last update began
        # (opened by the next training work, unless a pause comes first)
        self.open_pending = None
        self.undecided = None  # times of fetches not yet known to begin a step, or None
        self.undecided_wait_update = False  # those wait for an update (else for work)
        self.last_batch = False  # the training iterator just yielded its last batch, by its length
        self.step_closed = False  # that batch's update ended its step: the next fetch marks none
        self.epoch_open = False  # the training loader is between its iter() and its end
        self.eval_since = None  # when a possible evaluation pass began (see other loader)
        self.eval_ends_step = False  # that pass began inside a step: its end ends the step
        self.paused = False  # inside a pause told by pause_begins (a framework's evaluation)
        self.pending_epoch = None  # time of a pass's iter() whose epoch is not yet shown
        self.pending_step = None  # time of that pass's first fetch
        self.held = None  # the first pass's marks while nothing trained (HeldMarks)
        self.update_ns = 0  # where the training loader marks the steps: its last update's time

    # ---- marks -----------------------------------------------------------------

    def _step(self, t=None):
        self.updated = False
        if t is None:
            self.sink.step()
        else:
            self.sink.step_at(t)
        if self.held is not None and self.held.full():
            self._give_held()

    def _give_held(self):
        """The held first pass trained, or must be let go: its marks to the sink
        (none where another thread trains: _fetched_elsewhere)."""
        held, self.held = self.held, None
        self.sink = held.sink
        if self.loop.prefetched:
            return
        for name, args in held.marks:
            getattr(self.sink, name)(*args)

    def _drop_held(self):
        """The held pass was an evaluation: another loader takes the
        training role from the first pass, or a later one ended (or was
        left) untrained, its training loader the one before it again. Its
        marks go, its fetches left undecided too, and its time is an
        evaluate span."""
        held, self.held = self.held, None
        self.sink = held.sink
        self.loop.epochs -= held.epochs
        self.undecided = None
        if held.previous is not None:
            if held.previous is FROM_UPDATES:  # they mark the steps again,
                self.loop.main_loader = None  # the next from the next training work
                self.out_of_step, self.reopen_at = True, 0
                self.last_batch = self.step_closed = False
            else:
                self.loop.main_loader = held.previous
            self.epoch_open = False
            self.loop.evaluations_training += 1  # the report says how to run it
            self.sink.evaluations_in_training_mode(self.loop.evaluations_training)
        self.sink.evaluate_span(held.began, held.ended or self.sink.now_ns())

    def confirm_training_pass(self):
        """The pass is the training's, as a caller that knows says
        (bottleneck's runs, which may end in os._exit): its epoch and first
        step go in now, held or not."""
        self.confirm_pass()
        if self.held is not None:
            self._give_held()

    def confirm_pass(self):
        """The pass is real: its epoch and its first step go in, at their
        times (none where another thread trains: _fetched_elsewhere)."""
        if self.loop.prefetched:
            self.pending_epoch = self.pending_step = None
            return
        t_epoch, self.pending_epoch = self.pending_epoch, None
        if t_epoch is not None and not self.switches.manual_epochs:
            self.sink.epoch_at(self.loop.epochs, t_epoch)
            self.loop.epochs += 1
        t_step, self.pending_step = self.pending_step, None
        if t_step is not None:
            self._step(t_step)

    def _settle(self):
        """Fetches still undecided, with nothing after them that joined them
        to a step: each was a step, marked at its time."""
        times, self.undecided = self.undecided, None
        if times and (self.undecided_wait_update or self.fetched_only) and not self.loop.prefetched:
            for t in times:
                self._step(t)

    def _undecided_fetch(self, wait_update):
        if self.undecided is None:
            self.undecided = []
        self.undecided_wait_update = wait_update
        self.undecided.append(self.sink.now_ns())
        if len(self.undecided) >= UNDECIDED_MAX:
            self._settle()

    # ---- the training loader -------------------------------------------------------

    def loader_iter(self, loader, grad=True, model_training=False):
        """A DataLoader pass begins (grad: with gradients on; model_training:
        the model trained so far is in training mode): "main" for the
        training loader, "eval" for another's pass that may be an
        evaluation, else None."""
        loop = self.loop
        grad = grad and not self.paused  # iterated in a told pause: no training
        if (
            self.held is not None
            and self.held.previous is not None
            and not loop.main_loader.refers_to(loader)
        ):
            self._drop_held()  # a later pass left untrained for another's: an evaluation
        if (
            loop.main_loader is None
            and loop.step_optimizer is None
            and not loop.prefetched
            and grad
            and self.switches.manual_steps not in FRAMEWORK_LOOPS
        ):  # the framework says
            loop.main_loader = LoaderRef(loader)
            if not loop.backwards and not loop.updates and self.held is None:
                self.held = HeldMarks(self.sink, self.sink.now_ns())
                self.sink = self.held
        elif (
            loop.main_loader is not None
            and not loop.main_loader.refers_to(loader)
            and grad
            and (
                (
                    not self.epoch_open
                    and (
                        same_kind(loader, loop.main_loader) or not loop.backwards or model_training
                    )
                )
                or (model_training and self._pass_left_for(loader))
            )
        ):
            # a new DataLoader for the next pass (the next epoch, its dataset
            # the same or, the model training, a new one), or the training's:
            # the first one iterated never trained (an evaluation)
            previous, loop.main_loader = loop.main_loader, LoaderRef(loader)
            if self.held is not None and not loop.backwards:
                self._drop_held()
            elif loop.backwards and not same_kind(loader, previous):
                # the model in training mode: a new dataset's loader, or a
                # validation with neither eval() nor no_grad, until it trains
                self.held = HeldMarks(self.sink, self.sink.now_ns(), previous)
                self.sink = self.held
        elif self._loader_between_updates(grad, model_training):
            self._steps_to_the_loader(loader)
        if loop.main_loader is None or not loop.main_loader.refers_to(loader):
            return "eval" if self._evaluation_may_begin(grad) else None
        if self.held is not None and self.held.ended is not None:  # its next pass: it was one
            self._give_held()
        now = self.sink.now_ns()
        if self.pending_epoch is not None:  # the last pass gave a batch at most: a peek
            self.pending_epoch = self.pending_step = None
        elif self.epoch_open and self._step_updated():
            # the last pass left before its end (islice, a break at a count)
            # after its step's update: that step ends here, not with the epoch
            self._settle()
            self.sink.step_end_at(now)
            now += 1  # the epoch's mark after it, never tied
        self.last_batch = self.step_closed = False
        self.epoch_open = True
        self._settle()
        self.fetched_only = None  # the pass's first fetch begins a step
        self.pending_epoch = now
        return "main"

    def _loader_between_updates(self, grad, model_training):
        """Whether a DataLoader iterated now, where the updates have marked
        the steps so far (no DataLoader fed the training before its first
        update), may take their marking over: gradients on, the model
        training, and between two steps (after an update, no training work
        since). Not one iterated mid-step: the script's own (a batch of
        negatives, a replay buffer)."""
        loop = self.loop
        return (
            loop.main_loader is None
            and loop.step_optimizer is not None
            and grad
            and model_training
            and self.held is None
            and not (loop.prefetched or self.switches.manual_steps)
            and (self.open_pending is not None or self.out_of_step)
        )

    def _steps_to_the_loader(self, loader):
        """The updates marked the steps so far (warm-up steps on batches the
        script made): loader is the training's from now on, its fetches the
        steps' boundaries and its passes the epochs, once its pass trains;
        until then its marks are held, and a pass that ends, or is left,
        untrained (a validation with neither eval() nor no_grad) gives the
        marking back to the updates (_drop_held)."""
        now = self.sink.now_ns()
        if self.eval_from is not None:  # no_grad calls after the update: they end here
            self._end_evaluation(now)
        self.loop.main_loader = LoaderRef(loader)
        self.open_pending = self.reopen_at = None
        self.out_of_step = self.after_update = False
        self.held = HeldMarks(self.sink, now, FROM_UPDATES)
        self.sink = self.held

    def _step_updated(self):
        """The open step that the training loader's fetches mark had its
        update, and nothing ended it yet."""
        return (
            self.updated
            and not (self.step_closed or self.out_of_step or self.switches.manual_steps)
            and self.loop.main_loader is not None
        )

    def _pass_left_for(self, loader):
        """Whether the training loader's open pass, which has fetched, was
        left for loader, a new one like it (its dataset, batch size and kind
        of sampler) iterated with the model training: a break at a count
        with a new DataLoader each epoch, a loader resumed from another's
        state. Not a loader zipped with the training's, whose iter() comes
        before either fetches."""
        loop = self.loop
        return (
            self.epoch_open
            and self.fetched_only is not None
            and loop.backwards > 0
            and same_kind(loader, loop.main_loader)
        )

    def fetch(self):
        """A training batch is about to be fetched. Returns whether a step
        begins at it (now, or once its pass shows it is one)."""
        if self.held is not None and self.held.full():
            self._give_held()
        fetched_only = self.fetched_only
        if fetched_only is False:
            self.loop.work_between_fetches = True
            if self.undecided and not self.undecided_wait_update:
                self.undecided = None  # work followed them: they were one step
        elif fetched_only and self.pending_epoch is not None:
            self.confirm_pass()  # a second fetch: no peek
        self.fetched_only = True
        self.eval_since = None
        self.last_batch = False
        if self.eval_from is not None:
            self._end_evaluation(self.sink.now_ns())
        self.after_update = self.out_of_step = False
        self.reopen_at = None
        if self.updated:
            self.loop.updates_between_fetches = True
        if self.switches.manual_steps:
            self.step_closed = False
            return False
        if fetched_only is None:
            self.loop.fetcher = self  # the thread that fetches it (_fetched_elsewhere)
            self.pending_step = self.sink.now_ns()
            return True
        if self.step_closed:  # by the last batch's update: this fetch ends the pass
            self.step_closed = False
            return False
        if fetched_only:  # right after a fetch: the same step once the loop is known
            if not self.loop.work_between_fetches:
                self._undecided_fetch(wait_update=False)
            return False
        if self.updated:
            self._step()
            return True
        if not self.loop.updates_between_fetches:
            self._undecided_fetch(wait_update=True)  # a micro-batch, or a loop with no update
        return False

    def fetched(self, last):
        """The batch came; last: it was the pass's last, by the loader's length."""
        self.last_batch = last and not self.switches.manual_steps

    def fetch_stopped(self, fetched_only_before, began_step):
        """The pass ended (StopIteration) instead of giving a batch, which is
        no fetch; began_step: what fetch() returned for it. Where no step
        began there, the batches before end their step with their update."""
        if self.pending_epoch is not None:
            self.confirm_pass()
        if self.held is not None:
            self.held.ended = self.sink.now_ns()
        self.fetched_only = fetched_only_before
        self.epoch_open = False
        if not began_step and not self.switches.manual_steps:
            self.last_batch = True
        if self.held is not None and self.held.previous is not None:
            self._drop_held()  # a later pass that never trained: an evaluation

    # ---- work ------------------------------------------------------------------------

    def _work_marks(self):
        """Training work (a forward with gradients on, a backward, an
        optimizer step) shows a pass is real, ends a pause, and opens the
        step that an update left pending. forward() and backward() reset
        fetched_only and after_update themselves, and call this only where
        one of those is to be done (they run several times a step)."""
        if self.open_pending is not None:
            self._open_pending_step()
        elif self.out_of_step:
            self._work_after_pause()
        if self.pending_epoch is not None:
            if self._loader_elsewhere():
                self._fetched_elsewhere()
            else:
                self.confirm_pass()

    def _loader_elsewhere(self):
        """Whether the training loader's passes are fetched on another thread
        than this one, which trains."""
        fetcher = self.loop.fetcher
        return (
            fetcher is not None
            and fetcher is not self
            and self.loop.main_loader is not None
            and not self.switches.manual_steps
        )

    def _fetched_elsewhere(self):
        """The training loader is fetched on another thread than this one,
        which trains (a background thread that prefetches its batches into a
        queue: prefetch_generator's BackgroundGenerator): its fetches are no
        step boundaries, its passes run ahead of the training. From now on
        this thread's updates mark the steps, as where no DataLoader feeds
        the training (the first from the first training forward); no thread
        marks the loader's passes, held marks go unsent, and the fetches
        stay dataloader_next on their thread."""
        loop = self.loop
        loop.prefetched = True
        loop.main_loader = None
        self.sink.loader_fetched_elsewhere()  # the report says why there are no epochs
        self.pending_epoch = self.pending_step = None
        self.epoch_open = False
        self.undecided = None

    def forward(self, training):
        """An outermost module call with gradients on. Returns whether the
        model's training calls count the batches: no DataLoader marks the
        steps, nor does the script."""
        self.fetched_only = self.after_update = False  # training work (_work_marks)
        if self.open_pending is not None or self.out_of_step or self.pending_epoch is not None:
            self._work_marks()
        if not training:
            return False
        self.eval_since = None  # a training forward: no evaluation pass
        # given before the forward runs: a death in it has them (a later
        # pass's wait for a backward: its model trains throughout)
        if self.held is not None and self.held.previous is None:
            self._give_held()
        loop = self.loop
        if loop.first_work_ns is None:  # where updates mark the steps, the first's start
            loop.first_work_ns = self.sink.now_ns()
            if self._loader_elsewhere():  # before its batch is counted
                self._fetched_elsewhere()
        return loop.main_loader is None and not self.switches.manual_steps

    def backward(self):
        self.loop.backwards += 1
        if self.held is not None:
            self._give_held()
        self.fetched_only = self.after_update = False  # training work (_work_marks)
        if self.open_pending is not None or self.out_of_step or self.pending_epoch is not None:
            self._work_marks()
        self.eval_since = None

    optimizer_begins = backward  # the same event

    def update(self, optimizer):
        """optimizer's step ended, or a GradScaler skipped it: one update."""
        self.updated = self.after_update = True
        self.loop.updates += 1
        if self.held is not None:
            self._give_held()
        if self.undecided and self.undecided_wait_update:
            self.undecided = None  # they were this update's micro-batches
        if self.last_batch:  # the training loader's last batch: its step ends here
            self.last_batch, self.step_closed = False, True
            self._step()
        loop = self.loop
        if loop.main_loader is not None:
            if loop.fetcher is not self and self._loader_elsewhere():
                self._fetched_elsewhere()
            else:
                self.update_ns = self.sink.now_ns()  # the run's last step may end here (exit)
        if loop.main_loader is None and not self.switches.manual_steps:
            stepping = loop.step_optimizer
            owner = stepping.ref() if stepping is not None else None  # a step's: no method
            if owner is None:
                if stepping is None and loop.first_work_ns is not None:
                    self._step(loop.first_work_ns)  # the first step began there
                loop.step_optimizer, owner = StepOptimizer(optimizer), optimizer
            elif owner is optimizer:
                if stepping.others:  # others stepped since its last update
                    stepping.owner_stepped()
            else:
                earlier = stepping.other_stepped(optimizer, self.sink.now_ns())
                if earlier is not None:  # it took the role: its earlier updates ended steps
                    for t in earlier:
                        self.sink.step_end_at(t)
                        self._step(t + 1)
                    owner = optimizer
            if owner is optimizer:  # the step ends; the next begins with the next work,
                t = self.sink.now_ns()  # 1 ns on, so that the two marks never tie
                self.sink.step_end_at(t)
                self.open_pending = t + 1
                self.updated = False

    def _open_pending_step(self):
        t, self.open_pending = self.open_pending, None
        self._step(t)

    def exit(self):
        if self.pending_epoch is not None and self.fetched_only is False:
            self.confirm_pass()
        self._settle()
        if self.held is not None:
            self._give_held()
        if self.epoch_open and self._step_updated():
            # a loop that fetches no more (next(it) for a count of steps,
            # islice): its last step ends with its update
            self.sink.step_end_at(self.update_ns)
        if self.eval_from is not None:  # the run's last evaluation (nanoGPT's after its loop)
            self._end_evaluation(self.sink.now_ns())
