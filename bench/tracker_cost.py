"""What the step tracker's Python costs a step, in instructions (callgrind),
for the loop shapes whose events take the Python methods rather than the
C paths (python/trainprof/_tracker_events.c): steps that the updates mark
(no DataLoader: nanoGPT's get_batch), a GAN's two optimizers, and, for
scale, a training loader's steady steps as the Python twins do them. The
tracker is driven alone, as tests/py/test_steps.py drives it, with a sink
whose marks do nothing (the recorder's are C): each shape is run for N1 and
N2 steps under callgrind and the difference is divided by N2 - N1.

    python3 bench/tracker_cost.py [--steps 2000,22000]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

# the child: one shape, a number of steps (argv), no torch
CHILD = r"""
import sys, types
from trainprof.steps.loop_state import Loop
from trainprof.steps.tracker import StepTracker

class Sink:
    t = 0
    def now_ns(self): return self.t
    def step(self): pass
    def step_at(self, t): pass
    def step_end_at(self, t): pass
    def epoch_at(self, n, t): pass
    def evaluate_span(self, t0, t1): pass
    def evaluations_in_training_mode(self, n): pass
    def loader_fetched_elsewhere(self): pass

class Optimizer: pass

shape, steps = sys.argv[1], int(sys.argv[2])
sink = Sink()
tracker = StepTracker(sink, Loop(), types.SimpleNamespace(manual_steps=False, manual_epochs=False))
a, b = Optimizer(), Optimizer()
loader = types.SimpleNamespace(dataset=object(), batch_size=8)
if shape == "loader":
    tracker.loader_iter(loader, True, True)
for i in range(steps):
    sink.t += 10
    if shape == "loader":
        tracker.fetch(); tracker.fetched(False)
    tracker.forward(True); tracker.backward(); tracker.update(a)
    if shape == "gan":
        tracker.forward(True); tracker.backward(); tracker.update(b)
tracker.exit()
"""

SHAPES = {
    "updates": "no DataLoader: each update of the optimizer ends a step",
    "gan": "no DataLoader, two optimizers a step (a GAN's): the first one's end them",
    "loader": "the training loader's steps, in the Python twins (the C paths' peer)",
}


def instructions(shape, steps):
    """callgrind's instruction count for the child run for steps steps."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            + [sys.executable, "-c", CHILD, shape, str(steps)],
            capture_output=True,
            text=True,
            check=True,
        )
    m = re.search(r"Collected : (\d+)", r.stderr)
    if not m:
        raise SystemExit(f"tracker_cost: no count from callgrind:\n{r.stderr[-2000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", default="2000,22000", help="N1,N2 (default 2000,22000)")
    args = ap.parse_args()
    try:
        n1, n2 = (int(x) for x in args.steps.split(","))
    except ValueError:
        sys.exit(f"tracker_cost: --steps {args.steps!r}: two whole numbers, N1,N2")
    if not 0 <= n1 < n2:
        sys.exit(f"tracker_cost: --steps {args.steps!r}: N1 must be below N2")
    print(f"instructions a step, the tracker alone ({n2 - n1} steps, callgrind):")
    for shape, what in SHAPES.items():
        per_step = (instructions(shape, n2) - instructions(shape, n1)) / (n2 - n1)
        print(f"  {shape:8} {per_step:8.0f}  {what}")


if __name__ == "__main__":
    main()
