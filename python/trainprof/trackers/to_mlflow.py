"""MLflow: the script's run (tracker.mlflow.run_id, at its tracking URI),
else a run named after the command in MLFLOW_EXPERIMENT_ID or
MLFLOW_EXPERIMENT_NAME's experiment (the default one otherwise); metrics by
step, the answer as tags, the html page as an artifact under trainprof/."""

import os
import time

from trainprof.trackers.log import fact

_BATCH = 1000  # MLflow's most metrics a log_batch takes


def log(figures):
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    uri = fact(figures, "tracker.mlflow.uri")
    client = MlflowClient(tracking_uri=uri) if uri else MlflowClient()
    run_id = fact(figures, "tracker.mlflow.run_id")
    opened = run_id is None
    if opened:
        experiment = os.environ.get("MLFLOW_EXPERIMENT_ID")
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME")
        if not experiment and name:
            found = client.get_experiment_by_name(name)
            experiment = found.experiment_id if found else client.create_experiment(name)
        run_id = client.create_run(experiment or "0", run_name=figures.name).info.run_id
    metrics = [
        Metric(key, float(value), int(at * 1000), step)
        for step, at, values in figures.points
        for key, value in values.items()
    ]
    now = int(time.time() * 1000)
    metrics += [Metric(k, float(v), now, figures.last_step) for k, v in figures.final.items()]
    for i in range(0, len(metrics), _BATCH):
        client.log_batch(run_id, metrics=metrics[i : i + _BATCH])
    tags = {
        "trainprof.verdict": figures.verdict,
        "trainprof.answer": figures.answer[:5000],
        "trainprof.run_file": figures.run_file,
    }
    client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
    client.log_artifact(run_id, figures.html, artifact_path="trainprof")
    if opened:
        client.set_terminated(run_id)
    return f"MLflow run {run_id}" + (" (opened by trainprof)" if opened else "")
