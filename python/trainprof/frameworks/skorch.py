"""skorch names its validation, once the script imports skorch: the steps
and epochs of NeuralNet.fit are the automatic tracker's (skorch iterates
a DataLoader and steps a torch.optim optimizer: one update per training
batch, one pass per epoch, as its history counts them), and its
validation pass each epoch (run_single_epoch with training=False) is an
evaluate pause, which ends a step that its update left open. Its inference
after fit (forward_iter: predict, predict_proba) is another DataLoader's
pass with no training in it: the tracker's evaluate (forward_iter is a
generator: a pause around its call would end before its first batch)."""

from trainprof.patches.common import R_EVALUATE, timed_pause
from trainprof.steps.facts import send as send_facts
from trainprof.steps.framework_loop import wrap_method


def patch_net(net_module):
    """after_import("skorch.net") callback."""
    net = getattr(net_module, "NeuralNet", None)
    if net is None:
        return
    wrap_method(net, "run_single_epoch", _validation_pause)
    wrap_method(net, "fit", _noting_framework)


def _validation_pause(run_single_epoch):
    evaluate = timed_pause(run_single_epoch, R_EVALUATE)

    def run(self, iterator, training, *args, **kwargs):
        if training or iterator is None:
            return run_single_epoch(self, iterator, training, *args, **kwargs)
        return evaluate(self, iterator, training, *args, **kwargs)

    run.__trainprof_wrapped__ = run_single_epoch
    run.__wrapped__ = run_single_epoch
    return run


def _noting_framework(fit):
    def noted(self, *args, **kwargs):
        send_facts((("framework", "skorch"),))
        return fit(self, *args, **kwargs)

    noted.__trainprof_wrapped__ = fit
    noted.__wrapped__ = fit
    return noted
