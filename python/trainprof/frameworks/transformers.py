"""Hugging Face's Trainer names what is not training, once the script
imports transformers.trainer: Trainer._save_checkpoint (the model's weights,
the optimizer's and scheduler's states, the RNG states) is one checkpoint,
and Trainer.evaluate (each evaluation, eval_steps' among them) an evaluate
region; both are pauses that end a step when they follow its update. Its
steps, the global steps, are the step tracker's (trainprof.steps.tracker): the
micro-batches that it fetches before each update are one step."""

from trainprof.patches.common import R_CHECKPOINT, R_EVALUATE, timed_pause


def patch_trainer(trainer_module):
    trainer = getattr(trainer_module, "Trainer", None)
    if trainer is None:
        return
    for name, region in (("_save_checkpoint", R_CHECKPOINT), ("evaluate", R_EVALUATE)):
        method = getattr(trainer, name, None)
        if method is not None and not hasattr(method, "__trainprof_wrapped__"):
            setattr(trainer, name, timed_pause(method, region))
