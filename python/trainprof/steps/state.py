"""Process-wide switches shared by the public API and the auto-instrumentation."""

# Who marks the steps (and the epochs) instead of the automatic tracker:
# False (nobody: the DataLoader and optimizer patches do), "script" (the
# script calls trainprof.step() / trainprof.epoch() itself) or one of
# FRAMEWORK_LOOPS (that framework's own loop, through its adapter:
# trainprof.frameworks.lightning's callback, frameworks.keras's, frameworks.ignite's event handlers).
# The automatic marks stop, so the two never mix; the script's own marks
# also stop a framework's.
manual_steps: "bool | str" = False
manual_epochs: "bool | str" = False
FRAMEWORK_LOOPS = ("lightning", "keras", "ignite")
# The script counts its samples itself (trainprof.samples()): none are
# counted from the batches any more.
manual_samples: bool = False
