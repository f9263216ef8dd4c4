"""Loaded at interpreter start by trainprof-autoload.pth, only under
``trainprof record`` (TRAINPROF_SOCKET set): instruments PyTorch right after
the script imports it (never before: a script that doesn't import torch
doesn't load it). TRAINPROF_AUTO=0 turns this off. Never raises."""

import os
import sys


def _instrument(_torch):
    try:
        from trainprof import torch as tp_torch

        tp_torch.instrument()
    except Exception as e:  # noqa: BLE001 - said below; the training must go on
        print(f"trainprof: warning: PyTorch auto-instrumentation failed: {e}", file=sys.stderr)


def _start_stacks():
    """Samples this process's Python stacks at TRAINPROF_STACKS Hz (set by
    ``trainprof record``), in a thread of the extension that never takes the
    GIL; again in each forked child (a DataLoader worker). At 0 (stacks off)
    the thread reads no stack unless the recorder asks for one sample of
    every thread (a stall): it only looks for the request once a second."""
    try:
        hz = float(os.environ.get("TRAINPROF_STACKS", ""))
    except ValueError:
        return
    if not 0 <= hz <= 1000:
        return
    from trainprof import _native

    _native._start_stacks(hz)
    os.register_at_fork(after_in_child=lambda: _native._start_stacks(hz))


def _adapter(module_name, function):
    """A framework adapter's patch, run once the script imports the framework."""

    def patch(framework):
        try:
            module = __import__(f"trainprof.{module_name}", fromlist=[function])
            getattr(module, function)(framework)
        except Exception as e:  # noqa: BLE001 - said below; the training must go on
            print(
                f"trainprof: warning: instrumenting {framework.__name__} failed: {e}",
                file=sys.stderr,
            )

    return patch


def _install():
    if os.environ.get("TRAINPROF_AUTO", "1") == "0":
        return
    from trainprof.startup.after_import import after_import

    after_import("torch", _instrument)
    # frameworks whose loops tell their steps, on any backend (Keras on JAX
    # imports no torch); each only once the script imports it
    after_import("keras", _adapter("frameworks.keras", "patch_keras"))
    after_import("ignite.engine", _adapter("frameworks.ignite", "patch_engine"))
    after_import("skorch.net", _adapter("frameworks.skorch", "patch_net"))


try:
    _install()
except Exception as e:  # noqa: BLE001 - said below; the training must go on, but without timings the user must know why
    print(f"trainprof: warning: PyTorch auto-instrumentation not installed: {e}", file=sys.stderr)
try:
    from trainprof.startup import process_end as _process_end

    _process_end.install()
except Exception as e:  # noqa: BLE001 - said below; the training must go on
    print(f"trainprof: warning: process ends not followed: {e}", file=sys.stderr)
try:
    if os.environ.get("TRAINPROF_LOG_TO"):  # record --log-to: the script's tracking runs
        from trainprof.trackers import identify as _trackers

        _trackers.install(os.environ["TRAINPROF_LOG_TO"])
except Exception as e:  # noqa: BLE001 - said below; the training must go on
    print(f"trainprof: warning: tracking runs not followed: {e}", file=sys.stderr)
try:
    _start_stacks()
except Exception as e:  # noqa: BLE001 - said below; the training must go on
    print(f"trainprof: warning: stack sampling not started: {e}", file=sys.stderr)
