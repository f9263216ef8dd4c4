"""The step tracker's rules as tables of events and the marks they must give,
with no torch: trainprof.steps.tracker is driven the way the PyTorch patches drive
it, and its marks go to a list. Each event takes one tick of a fake clock,
so a mark's time is the index of the event it was decided at (late marks
keep the time of the event they belong to).

Events (one character each, spaces ignored):
  i  the training DataLoader's iter()     v  another DataLoader's iter(), under no_grad
  a  that iter() with gradients on        V  that other pass came to its end
  t  that iter() with gradients on and the model in training mode
  r  that, where it is not the training's (a loader of the script's own mid-step)
  n  a new loader like the training's (its dataset and batch size) iterated
  m  that, with the model in eval mode (gradients on)
  b  a training batch fetched
  B  the pass's last batch, by its length  S  a fetch that ended the pass
  f  a training forward (gradients on)    e  an evaluation's call (no_grad)
  g  a module call with gradients on, the model in eval mode
  w  backward                             u  optimizer A's step
  o  optimizer B's step                   c  a checkpoint saved (torch.save)
  p  a framework's evaluation begins      P  it ends (Trainer.evaluate, skorch's)
  x  the process ends
Marks: e<n>@t epoch n, s@t step, /@t step end, ev-<t1>@t0 an evaluate span.
"""

import subprocess
import sys
import types

import pytest
from trainprof.steps.held_marks import HELD_MAX_NS
from trainprof.steps.loop_state import Loop
from trainprof.steps.tracker import UNDECIDED_MAX, StepTracker


class Sink:
    def __init__(self):
        self.t = 0
        self.marks = []
        self.training_mode = 0  # evaluations run in training mode, as last told
        self.prefetched = False  # told the loader is fetched on another thread

    def now_ns(self):
        return self.t

    def step(self):
        self.marks.append(("s", self.t))

    def step_at(self, t):
        self.marks.append(("s", t))

    def step_end_at(self, t):
        self.marks.append(("/", t))

    def epoch_at(self, n, t):
        self.marks.append((f"e{n}", t))

    def evaluate_span(self, t0, t1):
        self.marks.append((f"ev-{t1}", t0))

    def evaluations_in_training_mode(self, n):
        self.training_mode = n

    def loader_fetched_elsewhere(self):
        self.prefetched = True


class Optimizer:  # held weakly by the tracker, as torch's are
    pass


def run(events, manual_steps=False, manual_epochs=False):
    """The marks the events give, in time order, as 'e0@0 s@1 ...'."""
    sink = Sink()
    switches = types.SimpleNamespace(manual_steps=manual_steps, manual_epochs=manual_epochs)
    tracker = StepTracker(sink, Loop(), switches)
    dataset = object()
    training_loader, other_loader = types.SimpleNamespace(dataset=dataset, batch_size=8), object()
    optimizers = {"u": Optimizer(), "o": Optimizer()}
    for event in events.replace(" ", ""):
        if event == "i":
            assert tracker.loader_iter(training_loader) == "main"
        elif event in "vat":  # the training loader where the loop has shown none yet
            role = tracker.loader_iter(other_loader, grad=event != "v", model_training=event == "t")
            assert event != "t" or role == "main" or tracker.paused
        elif event == "r":
            assert tracker.loader_iter(other_loader, grad=True, model_training=True) is None
        elif event in "nm":
            like = types.SimpleNamespace(dataset=dataset, batch_size=8)
            role = tracker.loader_iter(like, model_training=event == "n")
            assert (role == "main") == (event == "n")
        elif event == "V":
            tracker.other_stopped()
        elif event in "bBS":
            fetched_only = tracker.fetched_only
            began = tracker.fetch()
            if event == "S":
                tracker.fetch_stopped(fetched_only, began)
            else:
                tracker.fetched(event == "B")
        elif event == "f":
            tracker.forward(True)
        elif event == "g":
            tracker.forward(False)
        elif event == "e":
            tracker.module_call()
        elif event == "w":
            tracker.backward()
        elif event in "uo":
            tracker.optimizer_begins()
            tracker.update(optimizers[event])
        elif event == "c":
            tracker.pause_begins()
            tracker.pause_ends()
        elif event == "p":
            tracker.pause_begins()
        elif event == "P":
            tracker.pause_ends()
        elif event == "x":
            tracker.exit()
        else:
            raise ValueError(event)
        sink.t += 1
    return " ".join(f"{kind}@{t}" for kind, t in sorted(sink.marks, key=lambda m: m[1]))


TABLE = [
    # a plain loop: a step per batch, the one the last fetch begins included
    ("plain loop", "i bfwu bfwu bfwu S x", "e0@0 s@1 s@5 s@9 s@13"),
    ("two epochs", "i bfwu bfwu S i bfwu S x", "e0@0 s@1 s@5 s@9 e1@10 s@11 s@15"),
    # gradient accumulation: a fetch after work with no update joins the step,
    # decided late in the run's first update
    ("accumulation of 2", "i bfw bfwu bfw bfwu S x", "e0@0 s@1 s@8 s@15"),
    ("accumulation of 3", "i bfw bfw bfwu bfw bfw bfwu S x", "e0@0 s@1 s@11 s@21"),
    # no optimizer at all: each fetch was a step, settled at the pass's end
    ("no update ever", "i bf bf bf S x", "e0@0 s@1 s@3 s@5 s@7"),
    ("no update, then a new epoch", "i bf bf S i bf S x", "e0@0 s@1 s@3 s@5 e1@6 s@7 s@9"),
    # a peek at the first batch (next(iter(loader))) is no epoch and no step
    ("a peek", "i b i bfwu bfwu S x", "e0@2 s@3 s@7 s@11"),
    ("a peek each epoch", "i b i bfwu S i b i bfwu S x", "e0@2 s@3 s@7 e1@10 s@11 s@15"),
    ("a one-batch pass with work is no peek", "i bfwu i bfwu x", "e0@0 s@1 /@5 e1@6 s@6 /@9"),
    # a pass left after its step's update (islice, a break at a count) ends that step
    (
        "passes left at a count",
        "i bfwu bfwu i bfwu bfwu x",
        "e0@0 s@1 s@5 /@9 e1@10 s@10 s@14 /@17",
    ),
    # a pass left at a count for a new loader like it (a new DataLoader each
    # epoch; in the table any other loader is like the training's)
    ("a new loader after a break", "i bfwu bfwu n bfwu S x", "e0@0 s@1 s@5 /@9 e1@10 s@10 s@14"),
    ("a new loader each epoch", "i bfwu S n bfwu S x", "e0@0 s@1 s@5 e1@6 s@7 s@11"),
    # one like it mid-pass, the model in eval mode: an evaluation over the training set
    (
        "one like it, the model in eval mode",
        "i bfwu bfwu m V bfwu S x",
        "e0@0 s@1 s@5 /@9 ev-10@9 s@11 s@15",
    ),
    # a loop that fetches no more after its last update (next(it) for a count of steps)
    ("a count of next()", "i bfwu bfwu x", "e0@0 s@1 s@5 /@8"),
    ("one left before its update", "i bfwu bfw i bfwu x", "e0@0 s@1 s@5 e1@8 s@9 /@12"),
    # micro-batches fetched before their work (Hugging Face's Trainer)
    ("micro-batches fetched first", "i bb fwfwu bb fwfwu S x", "e0@0 s@1 s@8 s@15"),
    # a loop whose work is out of sight: a step per fetch, decided at the end
    ("work out of sight", "i bbb S x", "e0@0 s@1 s@2 s@3 s@4"),
    # an evaluation pass mid-epoch ends the step where it began
    # (the other loader's fetches are no events: the patches send none)
    ("evaluation mid-epoch", "i bfwu v ee V bfwu S x", "e0@0 s@1 /@5 ev-8@5 s@9 s@13"),
    ("an auxiliary loader with training work", "i bfwu a f V wu bfwu S x", "e0@0 s@1 s@10 s@14"),
    ("a pass left before its end stays in the step", "i bfwu v ee bfwu S x", "e0@0 s@1 s@8 s@12"),
    ("a pass before the step's work is none", "i b v ee V fwu bfwu S x", "e0@0 s@1 s@9 s@13"),
    # one between the training loader's passes, or after them: in no step
    (
        "evaluation after each epoch",
        "i bfwu S v ee V i bfwu S v e V x",
        "e0@0 s@1 s@5 ev-9@6 e1@10 s@11 s@15 ev-18@16",
    ),
    (
        "evaluation after a pass stopped at its length",
        "i bfwu Bfwu v ee V i bfwu Bfwu x",
        "e0@0 s@1 s@5 s@8 ev-12@9 e1@13 s@14 s@18 s@21",
    ),
    # a new dataset's loader each epoch: the model training, the next pass; in eval
    # mode (its validation), no training loader
    ("a new dataset each epoch", "i bfwu S t bfwu S x", "e0@0 s@1 s@5 e1@6 s@7 s@11"),
    # another dataset's pass, the model training, that never trains: a validation
    # with neither eval() nor no_grad (its marks held until a backward)
    (
        "a validation in training mode",
        "i bfwu S t bf bf S i bfwu S x",
        "e0@0 s@1 s@5 ev-11@6 e1@12 s@13 s@17",
    ),
    (
        "one left before its end",
        "i bfwu S t bf bf i bfwu S x",
        "e0@0 s@1 s@5 ev-11@6 e1@11 s@12 s@16",
    ),
    ("one the process ends in", "i bfwu S t bf x", "e0@0 s@1 s@5 e1@6 s@7"),
    (
        "a validation with gradients on",
        "i bfwu S a ee V i bfwu S x",
        "e0@0 s@1 s@5 ev-9@6 e1@10 s@11 s@15",
    ),
    # a framework's evaluation names itself (its own evaluate region): its pass is no other
    ("a framework's evaluation", "i bfwu p v ee V P bfwu S x", "e0@0 s@1 /@5 s@11 s@15"),
    (
        "a framework's, the model training",
        "i bfwu S p t ee V P i bfwu S x",
        "e0@0 s@1 s@5 e1@12 s@13 s@17",
    ),
    # a validation before the training: under no_grad, never the training loader;
    # with gradients on, the training loader until another's pass trains: its
    # pass's marks, held while nothing trained, then go, and it is an evaluate
    ("a validation first, under no_grad", "v ee V i bfwu bfwu S x", "ev-3@0 e0@4 s@5 s@9 s@13"),
    ("no DataLoader, then one under no_grad", "fwu v ee V fwu x", "s@0 /@2 ev-7@3 s@7 /@9"),
    (
        "a validation first, gradients on",
        "a b e b e S i bfwu bfwu S x",
        "ev-5@0 e0@6 s@7 s@11 s@15",
    ),
    (
        "a validation first, gradients on, the model in eval mode",
        "a bg bg S i bfwu bfwu S x",
        "ev-5@0 e0@6 s@7 s@11 s@15",
    ),
    # a first pass held while nothing trained: its marks go in as they would
    # have, once it trains, or its loader's next pass begins, or the process ends
    ("the first pass trains late", "i bg bg bfwu S x", "e0@0 s@1 s@9"),
    (
        "a forward-only first pass, then its next",
        "i bg bg S i bg S x",
        "e0@0 s@1 s@3 s@5 e1@6 s@7 s@9",
    ),
    # a loop that stops at the loader's length: the last update ends the step
    ("stops at its length", "i bfwu Bfwu i bfwu Bfwu x", "e0@0 s@1 s@5 s@8 e1@9 s@10 s@14 s@17"),
    # no DataLoader: updates end the steps, the first from the first forward
    ("no DataLoader", "fwu fwu fwu x", "s@0 /@2 s@3 /@5 s@6 /@8"),
    ("no DataLoader, accumulation", "fw fwu fw fwu x", "s@0 /@4 s@5 /@9"),
    ("no DataLoader, two optimizers (a GAN)", "fwu fwo fwu fwo x", "s@0 /@2 s@3 /@8 s@9"),
    # no DataLoader at first (warm-up steps on the script's own batches), then
    # one iterated between two steps, the model training: its fetches mark the
    # steps from then on, its passes the epochs; one that never trains is a
    # validation, the updates marking the steps again after it
    (
        "warm-up updates, then a DataLoader",
        "fwu fwu t bfwu bfwu S t bfwu S x",
        "s@0 /@2 s@3 /@5 e0@6 s@7 s@11 s@15 e1@16 s@17 s@21",
    ),
    ("a DataLoader after a save", "fwu c t bfwu S x", "s@0 /@2 e0@4 s@5 s@9"),
    (
        "an update, then a validation in training mode",
        "fwu t bf bf S fwu x",
        "s@0 /@2 ev-8@3 s@9 /@11",
    ),
    (
        "an update, no_grad calls, then a DataLoader",
        "fwu ee t bfwu S x",
        "s@0 /@2 ev-5@3 e0@5 s@6 s@10",
    ),
    (
        "a DataLoader iterated mid-step stays the script's",
        "fwu fw r u fwu x",
        "s@0 /@2 s@3 /@6 s@7 /@9",
    ),
    # outermost calls under no_grad after an update: an evaluation pause
    ("no DataLoader, an evaluation under no_grad", "fwu eee fwu x", "s@0 /@2 ev-6@3 s@6 /@8"),
    # the run's last evaluation, after its loop, ends with the run
    ("no DataLoader, a last evaluation", "fwu fwu ee x", "s@0 /@2 s@3 /@5 ev-8@6"),
    (
        "an evaluation under no_grad, then a fetch",
        "i bfwu ee bfwu S x",
        "e0@0 s@1 /@5 ev-7@5 s@7 s@11",
    ),
    ("an evaluation, then a save", "fwu ee c fwu x", "s@0 /@2 ev-5@3 s@5 /@8"),
    ("a no_grad call mid-step stays in it", "i bf e wu bfwu S x", "e0@0 s@1 s@6 s@10"),
    # a checkpoint after the update is no part of the step; one mid-step is
    ("a checkpoint after an update", "i bfwu c bfwu S x", "e0@0 s@1 /@5 s@6 s@10"),
    ("a checkpoint mid-step", "i bfw c u bfwu S x", "e0@0 s@1 s@6 s@10"),
    ("two saves in a row", "i bfwu cc bfwu S x", "e0@0 s@1 /@5 s@7 s@11"),
    ("the last batch's update, then a save", "i bfwu Bfwu c x", "e0@0 s@1 s@5 s@8"),
    ("no DataLoader, a checkpoint", "fwu fwu c fwu x", "s@0 /@2 s@3 /@5 s@6 /@9"),
    ("no DataLoader, two saves", "fwu fwu cc fwu x", "s@0 /@2 s@3 /@5 s@7 /@10"),
    ("no DataLoader, a last save", "fwu fwu c x", "s@0 /@2 s@3 /@5"),
]


@pytest.mark.parametrize("name,events,marks", TABLE, ids=[t[0] for t in TABLE])
def test_marks(name, events, marks):
    assert run(events) == marks


def test_evaluations_in_training_mode_are_counted():
    """Each validation pass dropped for running untrained in training mode is
    told to the sink, as a count (a fact the report's advice reads)."""
    sink = Sink()
    switches = types.SimpleNamespace(manual_steps=False, manual_epochs=False)
    tracker = StepTracker(sink, Loop(), switches)
    train, val = types.SimpleNamespace(dataset=object()), object()
    for _ in range(2):
        tracker.loader_iter(train)
        for _ in range(2):
            tracker.fetch()
            tracker.fetched(False)
            tracker.forward(True)
            tracker.backward()
            tracker.update(object())
        tracker.fetch_stopped(tracker.fetched_only, tracker.fetch())
        assert tracker.loader_iter(val, model_training=True) == "main"
        tracker.fetch()
        tracker.forward(True)
        tracker.fetch_stopped(tracker.fetched_only, tracker.fetch())
    assert sink.training_mode == 2 and tracker.loop.main_loader.refers_to(train)


def test_a_loader_fetched_on_another_thread_leaves_the_steps_to_the_updates():
    """A background thread fetches the training loader's batches into a
    queue (prefetch_generator's BackgroundGenerator), running ahead of the
    thread that trains: its fetches are no step boundaries (no step was
    found at all: its first pass held, the training thread's updates not
    the steps' ends). The training thread's updates mark the steps, the
    first from its first forward; the fetching thread marks nothing."""
    sink = Sink()
    switches = types.SimpleNamespace(manual_steps=False, manual_epochs=False)
    loop = Loop()
    fetching, training = StepTracker(sink, loop, switches), StepTracker(sink, loop, switches)
    optimizer = Optimizer()
    assert fetching.loader_iter(object()) == "main"
    for _ in range(3):  # three batches ahead
        fetching.fetch()
        fetching.fetched(False)
        sink.t += 1
    for _ in range(3):
        training.forward(True)
        sink.t += 1
        training.backward()
        training.update(optimizer)
        sink.t += 1
        fetching.fetch()
        fetching.fetched(False)
    fetching.fetch_stopped(fetching.fetched_only, fetching.fetch())
    fetching.exit()
    training.exit()
    marks = " ".join(f"{kind}@{t}" for kind, t in sorted(sink.marks, key=lambda m: m[1]))
    assert marks == "s@3 /@4 s@5 /@6 s@7 /@8"
    assert loop.prefetched and loop.main_loader is None and sink.prefetched


def test_the_scripts_own_steps_turn_the_automatic_ones_off():
    assert run("i bfwu bfwu S x", manual_steps="script") == "e0@0"
    assert run("fwu fwu x", manual_steps="script") == ""
    assert run("i bfwu bfwu S x", manual_epochs="script") == "s@1 s@5 s@9"


def test_lightnings_loop_is_lightnings():
    """Under Lightning's callback no DataLoader is the training's: no marks."""
    assert run("fwu fwu x", manual_steps="lightning", manual_epochs="lightning") == ""


def test_undecided_fetches_are_bounded():
    """A loop with no update keeps at most UNDECIDED_MAX fetches undecided:
    they are marked once that many wait, not only at the pass's end."""
    sink = Sink()
    tracker = StepTracker(
        sink, Loop(), types.SimpleNamespace(manual_steps=False, manual_epochs=False)
    )
    tracker.loader_iter(object())
    for _ in range(UNDECIDED_MAX + 2):
        tracker.fetch()
        tracker.fetched(False)
        tracker.forward(True)
        sink.t += 1
    assert len([m for m in sink.marks if m[0] == "s"]) == UNDECIDED_MAX + 1
    assert len(tracker.undecided) == 1


def test_a_held_first_pass_is_let_go_after_a_minute():
    """The first pass's marks are held while nothing trained (a validation
    before the training gives its role up to the loader that trains), but no
    longer than HELD_MAX_NS: an evaluation-only script's epoch and first step
    reach the recorder, whose live view and stall rule wait for them."""
    sink = Sink()
    tracker = StepTracker(
        sink, Loop(), types.SimpleNamespace(manual_steps=False, manual_epochs=False)
    )
    tracker.loader_iter(object())
    for _ in range(3):
        tracker.fetch()
        tracker.fetched(False)
        tracker.forward(False)
        sink.t += 1
    assert sink.marks == [] and tracker.held is not None
    sink.t += HELD_MAX_NS
    tracker.fetch()
    assert sink.marks[:2] == [("e0", 0), ("s", 0)] and tracker.held is None


def test_the_tracker_imports_no_torch():
    code = "import sys, trainprof.steps.tracker; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_another_optimizer_that_steps_alone_takes_the_steps_over():
    """Where updates mark the steps, the first optimizer to step owns them
    until another steps alone for long (Adam's stage, then L-BFGS's, both
    kept): from the first of its updates in that run, each ended a step."""
    marks = run("fwu fwu " + "fwo " * 17 + "x").split()
    assert marks[:5] == ["s@0", "/@2", "s@3", "/@5", "s@6"]
    # the first 15 marked late, when the 16th handed B the role
    assert marks[5:] == [m for k in range(17) for m in (f"/@{8 + 3 * k}", f"s@{9 + 3 * k}")][:-1]
    # a WGAN's critic (B) steps five times for each of the generator's steps
    # (A, which stepped first): the steps stay A's
    marks = run("fwu " + ("fwo " * 5 + "fwu ") * 4 + "x")
    assert marks == "s@0 /@2 s@3 /@20 s@21 /@38 s@39 /@56 s@57 /@74"
