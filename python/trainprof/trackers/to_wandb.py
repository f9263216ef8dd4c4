"""Weights & Biases: the script's run resumed (tracker.wandb.run_id, in its
project, folder and mode), else a run named after the command (WANDB_*
settings apply); metrics against trainprof/step (define_metric: the
script's own step counter is left alone), the run's figures and the answer
in its summary, and the html page as an artifact."""

from trainprof.trackers.log import fact


def log(figures):
    import wandb

    options = {
        "project": fact(figures, "tracker.wandb.project"),
        "entity": fact(figures, "tracker.wandb.entity"),
        "dir": fact(figures, "tracker.wandb.dir"),
        "mode": fact(figures, "tracker.wandb.mode"),
    }
    run_id = fact(figures, "tracker.wandb.run_id")
    if run_id:
        options.update(id=run_id, resume="allow")
    else:
        options.update(name=figures.name, project=options["project"] or "trainprof")
    run = wandb.init(**{k: v for k, v in options.items() if v is not None})
    try:
        run.define_metric("trainprof/step")
        run.define_metric("trainprof/*", step_metric="trainprof/step")
        for step, _, values in figures.points:
            run.log({"trainprof/step": step, **values})
        run.summary.update(
            {
                **figures.final,
                "trainprof/verdict": figures.verdict,
                "trainprof/answer": figures.answer,
            }
        )
        artifact = wandb.Artifact(f"trainprof-report-{run.id}", type="trainprof-report")
        artifact.add_file(figures.html)
        run.log_artifact(artifact)
    finally:
        run.finish()
    return f"W&B run {run.id}" + ("" if run_id else " (opened by trainprof)")
