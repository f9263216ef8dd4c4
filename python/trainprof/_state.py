"""Process-wide switches shared by the public API and the auto-instrumentation."""

# Set when the script marks steps or epochs itself: the automatic marks from
# the DataLoader then stop, so the two never mix.
manual_steps = False
manual_epochs = False
