"""The marks of a DataLoader pass that may be a validation, held back from
the recorder until the pass shows it trains (trainprof.steps.tracker puts
one in its sink's place). Imports nothing."""

HELD_MAX_MARKS = 1024  # marks held at most; then they go
# a first pass's marks held at most this long: the recorder's live view and
# its stall rule wait for none longer (an evaluation-only script)
HELD_MAX_NS = 60_000_000_000

# a later pass's previous where the updates marked the steps before it (no
# DataLoader had fed the training: warm-up steps on the script's own batches)
FROM_UPDATES = "the updates"


class HeldMarks:
    """The marks of a pass that may be a validation, held until it shows it
    trains (a sink in the tracker's sink's place). The run's first pass
    while nothing has trained yet: a validation before the training,
    iterated with gradients on, reads as the training's first pass until
    another loader's pass trains. Given to the sink, at their times, once
    training work shows (a forward in training mode, a backward, an update;
    before it runs, so that a process that dies in it has them), the same
    loader's next pass begins, the process ends, HELD_MAX_MARKS are held or
    HELD_MAX_NS passed; dropped where another loader takes the training
    role, the pass then an evaluate span.

    A later pass of another dataset's loader with the model in training
    mode (previous: the training loader before it) is a new training loader
    (a new dataset each epoch) or a validation with neither eval() nor
    no_grad: held until a backward or an update (a forward in training mode
    is no sign: the model is in it all along), HELD_MAX_MARKS are held or the
    process ends, and dropped, an evaluate span with the training loader
    back, where its pass ends or another loader's begins first. So is the
    first pass of a loader iterated between two steps that the updates
    marked (previous FROM_UPDATES), the updates marking them again where it
    is dropped."""

    __slots__ = ("sink", "marks", "epochs", "began", "ended", "previous")

    def __init__(self, sink, began, previous=None):
        self.sink = sink
        self.marks = []  # (the sink's method, its arguments)
        self.epochs = 0  # epoch marks held
        self.began = began  # the pass's iter()
        self.ended = None  # its end (StopIteration), once it came
        # a later pass's: the training loader before it (LoaderRef), or FROM_UPDATES
        self.previous = previous

    def now_ns(self):
        return self.sink.now_ns()

    def step(self):
        self.marks.append(("step_at", (self.sink.now_ns(),)))

    def step_at(self, t):
        self.marks.append(("step_at", (t,)))

    def step_end_at(self, t):
        self.marks.append(("step_end_at", (t,)))

    def epoch_at(self, n, t):
        self.epochs += 1
        self.marks.append(("epoch_at", (n, t)))

    def evaluate_span(self, t0, t1):
        self.marks.append(("evaluate_span", (t0, t1)))

    # the run's facts go at once: they are no marks
    def evaluations_in_training_mode(self, n):
        self.sink.evaluations_in_training_mode(n)

    def loader_fetched_elsewhere(self):
        self.sink.loader_fetched_elsewhere()

    def full(self):
        """Held as many marks, or (the first pass) as long, as it may."""
        if len(self.marks) >= HELD_MAX_MARKS:
            return True
        return self.previous is None and self.sink.now_ns() - self.began >= HELD_MAX_NS
