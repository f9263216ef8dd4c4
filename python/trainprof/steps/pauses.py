"""The step tracker's rules for what is no training: evaluations (another
loader's pass, outermost module calls under no_grad) and pauses (a
checkpoint's save, an evaluation a framework names), and where they end the
open step. Their rules are in trainprof.steps.tracker's docstring, with the
rest; StepTracker holds the state (its __slots__) that these methods read
and set. Imports nothing."""


class PauseRules:
    """StepTracker's evaluations and pauses (a base with no state of its own:
    the C paths read the tracker's slots by offset)."""

    __slots__ = ()

    def _evaluation_may_begin(self, grad):
        """Another loader's pass begins: it may be an evaluation inside the
        open step, after its work (the step ends where the pass began, if it
        is one), between the training loader's passes, or before any
        training (no step open). Where updates mark the steps, one under
        no_grad after an update is a pause, as a no_grad call's."""
        loop = self.loop
        if self.switches.manual_steps or self.paused:  # a framework's evaluation: named
            return False
        if loop.main_loader is None:
            ends_step = False
            if grad:  # a pass that may train, in a loop whose updates mark the steps
                return False
            if loop.backwards or loop.step_optimizer is not None:
                self._evaluation_pause()  # where updates mark the steps, as a no_grad call
                return False
        else:
            ends_step = self.epoch_open and not self.step_closed  # else no step is open
        if ends_step and (self.fetched_only is not False or self.last_batch):
            return False
        if self.eval_since is None:
            self.eval_since, self.eval_ends_step = self.sink.now_ns(), ends_step
        return True

    def other_stopped(self):
        """A pass that loader_iter called "eval" came to its end with no
        training work or fetch in it: an evaluation, and where it began
        inside a step, the step ended where it began."""
        t = self.eval_since
        if t is not None:
            self.eval_since = None
            if self.eval_ends_step:
                self.sink.step_end_at(t)
            self.sink.evaluate_span(t, self.sink.now_ns())

    def module_call(self):
        """An outermost module call with gradients off (an evaluation's).
        The first after the open step's update begins an evaluation pause
        (nanoGPT's estimate_loss): the step ends here, and the pause is an
        evaluate span up to the next training work, fetch or checkpoint.
        Not while another loader's pass may be the evaluation (eval_since)."""
        self.fetched_only = False
        self._evaluation_pause()

    def _evaluation_pause(self):
        if self.eval_since is None and self._may_pause():
            t = self.sink.now_ns()
            self._pause(t)
            self.eval_from = t
            if self.loop.main_loader is None:
                self.reopen_at = 0  # the next step begins with the next training work

    def _may_pause(self):
        """Right after the open step's update, in steps that we mark."""
        if self.out_of_step or self.switches.manual_steps:
            return False
        if self.loop.main_loader is None:  # updates mark the steps
            return self.open_pending is not None
        return self.after_update and not self.step_closed

    def _pause(self, t):
        """A pause begins at t: the step ended (where updates mark the steps,
        at its update already: the next one waits for the pause's end)."""
        self.out_of_step = True
        if self.loop.main_loader is None:
            self.open_pending = None
        else:
            self.sink.step_end_at(t)

    def _end_evaluation(self, t):
        t_from, self.eval_from = self.eval_from, None
        if t_from is not None:
            self.sink.evaluate_span(t_from, t)

    def pause_begins(self):
        """A pause in the training begins: a checkpoint being saved, an
        evaluation a framework names. After the open step's update it is no
        part of the step: the step ends here (once, however many pauses
        follow one another)."""
        self.paused = True
        if self.eval_from is not None:  # an evaluation pause ends where the save begins
            self._end_evaluation(self.sink.now_ns())
        if self._may_pause():
            self._pause(self.sink.now_ns())

    def pause_ends(self):
        """Where updates end the steps, the next one begins at the last
        pause's end, once work follows (a training fetch begins it where the
        DataLoader marks them)."""
        self.paused = False
        if self.out_of_step and self.loop.main_loader is None:
            self.reopen_at = self.sink.now_ns()

    def _work_after_pause(self):
        self.out_of_step = False
        if self.eval_from is not None or self.reopen_at is not None:
            now = self.sink.now_ns()
            self._end_evaluation(now)
            if self.reopen_at is not None:
                t, self.reopen_at = self.reopen_at, None
                self._step(t or now)
