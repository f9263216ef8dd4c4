"""skorch's NeuralNetClassifier.fit with its default internal validation
split, then predict; prints skorch's counts (a callback of the script's,
and its history)."""

import json

import numpy as np
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback
from torch import nn


class Counts(Callback):
    def initialize(self):
        self.train_batches = self.valid_batches = self.epochs = 0
        return self

    def on_batch_end(self, net, batch=None, training=None, **kw):
        if training:
            self.train_batches += 1
        else:
            self.valid_batches += 1

    def on_epoch_end(self, net, **kw):
        self.epochs += 1


rng = np.random.default_rng(0)
X = rng.standard_normal((1000, 20)).astype("float32")
y = rng.integers(0, 3, 1000).astype("int64")
counts = Counts()
net = NeuralNetClassifier(
    nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3)),
    criterion=nn.CrossEntropyLoss,
    max_epochs=3,
    lr=0.05,
    batch_size=32,
    callbacks=[counts],
    verbose=0,
)
net.fit(X, y)
net.predict(X[:100])
print(
    json.dumps(
        {
            "train_batches": counts.train_batches,
            "valid_batches": counts.valid_batches,
            "epochs": counts.epochs,
            "history_batches": sum(len(h["batches"]) for h in net.history),
        }
    )
)
