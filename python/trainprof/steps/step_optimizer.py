"""Which optimizer's updates end the steps where no DataLoader marks them
(trainprof.steps.tracker): the first one to step, until another steps in a
row for long with none of its updates between (Adam's stage, then
L-BFGS's, both optimizers kept). Imports weakref alone."""

import weakref

# Another optimizer's updates in a row that hand it the role: at least this
# many, and more than twice as many as the others ever made between two of
# the step optimizer's (a WGAN's critic steps 5 times a generator's step:
# with the generator first, its steps stay the generator's).
TAKE_OVER_MIN = 16
TAKE_OVER_MAX = 4096  # times kept at most: an optimizer that steps this often takes it


class StepOptimizer:
    """The optimizer whose updates end the steps (held weakly, as the
    tracker holds every optimizer), and the updates of the others since its
    last one. Plain attributes (__slots__): the C paths read ref and others
    by offset (python/trainprof/_tracker_events.c)."""

    __slots__ = ("ref", "other", "other_times", "others", "others_most")

    def __init__(self, optimizer):
        self.ref = weakref.ref(optimizer)  # the step optimizer while it lives
        self.other = None  # weakref: the other optimizer that stepped last
        self.other_times = []  # its updates' times since the step optimizer's last
        self.others = 0  # updates of any other optimizer since the step optimizer's last
        self.others_most = 0  # the most of those between two of its updates

    def owner_stepped(self):
        """The step optimizer's update, others having stepped since its last
        (the tracker calls it only then: a step's cost)."""
        self.others_most = max(self.others_most, self.others)
        self.others, self.other, self.other_times = 0, None, []

    def other_stepped(self, optimizer, t):
        """Another optimizer's update at t. Where it takes the role now, the
        times of its updates before this one since the step optimizer's last
        (each ended a step too), oldest first; else None."""
        self.others += 1
        if self.other is None or self.other() is not optimizer:
            self.other, self.other_times = weakref.ref(optimizer), []
        self.other_times.append(t)
        need = min(max(TAKE_OVER_MIN, 2 * self.others_most + 1), TAKE_OVER_MAX)
        if len(self.other_times) < need:
            return None
        earlier = self.other_times[:-1]
        self.ref = self.other
        self.others, self.other, self.other_times, self.others_most = 0, None, [], 0
        return earlier
