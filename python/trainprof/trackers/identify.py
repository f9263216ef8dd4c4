"""Inside the training: the tracking runs the script opens, told to the
recorder (lib/facts.h's tracker.* facts) so that `record --log-to` logs
into them once the training has ended. Installed by trainprof._autoload
where TRAINPROF_LOG_TO names trackers; each hook waits for the script to
import the tracker's library (trainprof.startup.after_import): nothing is
imported here, and the script's calls return what they returned."""

import functools
import os
import sys

from trainprof import _native
from trainprof.startup.swallowed import swallowed

_told = set()  # the trackers whose run this process told (the first run of each)


def _tell(tracker, facts):
    """facts (key, value) of tracker's run, once per process, from the first
    rank only; a value that is not printable ASCII or too long is left out
    (the run is then one of trainprof's own)."""
    if tracker in _told or os.environ.get("RANK", "0") != "0":
        return  # a distributed training's tracker is its first rank's
    _told.add(tracker)
    for key, value in [("tracker.python", sys.executable), *facts]:
        if value is None:
            continue
        try:
            _native.fact(f"{key}={value}")
        except (ValueError, KeyError):
            pass


def _after(function, note):
    """function, which then calls note(its result, its arguments)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        result = function(*args, **kwargs)
        try:
            note(result, args, kwargs)
        except Exception as e:  # noqa: BLE001 - said; the script's call returned
            swallowed("noting the tracker's run", e)
        return result

    wrapper.__trainprof__ = True
    return wrapper


def _wrap(owner, name, note):
    function = getattr(owner, name, None)
    if function is not None and not getattr(function, "__trainprof__", False):
        setattr(owner, name, _after(function, note))


def follow_mlflow(mlflow):
    """mlflow.start_run (the fluent API: Hugging Face's MLflowCallback, a
    script's own) and MlflowClient.create_run (Lightning's MLFlowLogger)."""

    def started(run, args, kwargs):
        _tell(
            "mlflow",
            [
                ("tracker.mlflow.run_id", run.info.run_id),
                ("tracker.mlflow.uri", mlflow.get_tracking_uri()),
            ],
        )

    _wrap(mlflow, "start_run", started)
    client = getattr(getattr(mlflow, "tracking", None), "MlflowClient", None)
    if client is not None:

        def created(run, args, kwargs):
            self = args[0]
            uri = getattr(self, "tracking_uri", None) or getattr(self, "_tracking_uri", None)
            _tell(
                "mlflow",
                [("tracker.mlflow.run_id", run.info.run_id), ("tracker.mlflow.uri", uri)],
            )

        _wrap(client, "create_run", created)


def follow_wandb(wandb):
    """wandb.init: the run's id, project, entity, its folder and mode."""

    def started(run, args, kwargs):
        if run is None or not hasattr(run, "id"):
            return  # disabled, or a run of another process
        settings = getattr(run, "settings", None)
        _tell(
            "wandb",
            [
                ("tracker.wandb.run_id", run.id),
                ("tracker.wandb.project", getattr(run, "project", None)),
                ("tracker.wandb.entity", getattr(run, "entity", None) or None),
                ("tracker.wandb.dir", getattr(settings, "root_dir", None)),
                ("tracker.wandb.mode", getattr(settings, "mode", None)),
            ],
        )

    _wrap(wandb, "init", started)


def follow_tensorboard(module):
    """torch.utils.tensorboard's SummaryWriter: its log folder."""
    writer = getattr(module, "SummaryWriter", None)
    if writer is None:
        return
    init = writer.__init__
    if getattr(init, "__trainprof__", False):
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            _tell("tensorboard", [("tracker.tensorboard.log_dir", self.get_logdir())])
        except Exception as e:  # noqa: BLE001 - said; the writer was made
            swallowed("noting the tracker's run", e)

    __init__.__trainprof__ = True
    writer.__init__ = __init__


def install(names):
    """Follows the trackers of names (a comma-separated list) once the
    script imports them."""
    from trainprof.startup.after_import import after_import

    wanted = {n.strip() for n in names.split(",")}
    if "mlflow" in wanted:
        after_import("mlflow", follow_mlflow)
    if "wandb" in wanted:
        after_import("wandb", follow_wandb)
    if "tensorboard" in wanted:
        after_import("torch.utils.tensorboard", follow_tensorboard)
