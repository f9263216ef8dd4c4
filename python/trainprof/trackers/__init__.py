"""trainprof's figures in the trackers people already look at (`trainprof
record --log-to mlflow,wandb,tensorboard`, docs/trackers.md).

Two halves, in two processes:

- inside the training (identify.py, only when record passes
  TRAINPROF_LOG_TO): once the script imports a tracker's library, its
  calls that open a run (mlflow.start_run, MlflowClient.create_run,
  wandb.init, SummaryWriter) are followed so that the run they opened is
  told to the recorder as facts (tracker.*). Nothing is imported, nothing
  is logged there: the training's hot path never sees a tracker.
- after the training (``python -m trainprof.trackers``, run by record once
  the run file is summarized, in the training's own interpreter where it
  told it): the run file's figures by step (``trainprof export --format
  steps``), its report's answer and its html page go into the script's own
  run, or into one named after the command where it opened none. Each
  tracker's library is imported there only, and a tracker that is missing
  or fails costs one warning line.
"""

TRACKERS = ("mlflow", "wandb", "tensorboard")
