"""TensorBoard: event files (torch.utils.tensorboard's SummaryWriter) in the
script's own log folder (tracker.tensorboard.log_dir), else in
runs/trainprof-<time>-<command>; scalars by step, the answer as text, and
the html page copied beside them."""

import os
import shutil
import time

from trainprof.trackers.log import fact


def log(figures):
    from torch.utils.tensorboard import SummaryWriter

    folder = fact(figures, "tracker.tensorboard.log_dir")
    if folder is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = os.path.join("runs", f"{figures.name}-{stamp}")
    writer = SummaryWriter(log_dir=folder)
    try:
        for step, at, values in figures.points:
            for key, value in values.items():
                writer.add_scalar(key, value, global_step=step, walltime=at)
        for key, value in figures.final.items():
            writer.add_scalar(key, value, global_step=figures.last_step)
        writer.add_text("trainprof/verdict", figures.verdict, global_step=figures.last_step)
        writer.add_text("trainprof/answer", figures.answer, global_step=figures.last_step)
    finally:
        writer.close()
    shutil.copyfile(figures.html, os.path.join(folder, "trainprof-report.html"))
    return f"TensorBoard folder {folder}"
