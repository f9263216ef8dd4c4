"""Process-wide switches shared by the public API and the auto-instrumentation."""

# Who marks the steps (and the epochs) instead of the automatic tracker:
# False (nobody: the DataLoader and optimizer patches do), "script" (the
# script calls trainprof.step() / trainprof.epoch() itself) or "lightning"
# (PyTorch Lightning's own loop, through trainprof._lightning's callback).
# The automatic marks stop, so the two never mix; the script's own marks
# also stop a framework's.
manual_steps = False
manual_epochs = False
# The script counts its samples itself (trainprof.samples()): none are
# counted from the batches any more.
manual_samples = False
