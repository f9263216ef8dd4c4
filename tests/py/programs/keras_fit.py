"""Keras 3's fit with validation_data and a ModelCheckpoint, then evaluate and
predict, on the backend KERAS_BACKEND names; prints Keras's own counts (a
callback of the script's, and the optimizer's iterations). With argv[2]
"pydataset", the training data come from a keras.utils.PyDataset (batches of
a size Keras does not know before it reads them)."""

import json
import os
import sys

import keras
import numpy as np


class Counts(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.train_batches = self.test_batches = self.epochs = self.tests = self.predict_batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.train_batches += 1

    def on_test_batch_end(self, batch, logs=None):
        self.test_batches += 1

    def on_test_begin(self, logs=None):
        self.tests += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epochs += 1

    def on_predict_batch_end(self, batch, logs=None):
        self.predict_batches += 1


rng = np.random.default_rng(0)
x = rng.standard_normal((2048, 32)).astype("float32")
y = rng.integers(0, 4, 2048)
xv = rng.standard_normal((256, 32)).astype("float32")
yv = rng.integers(0, 4, 256)
model = keras.Sequential(
    [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)]
)
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
counts = Counts()
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ck = keras.callbacks.ModelCheckpoint(os.path.join(out, "m.keras"))


class Batches(keras.utils.PyDataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return x[i * 32 : (i + 1) * 32], y[i * 32 : (i + 1) * 32]


if sys.argv[2:] == ["pydataset"]:
    x_fit, y_fit, size = Batches(), None, None
else:
    x_fit, y_fit, size = x, y, 32
model.fit(
    x_fit,
    y_fit,
    batch_size=size,
    epochs=3,
    validation_data=(xv, yv),
    callbacks=[counts, ck],
    verbose=0,
)
model.evaluate(xv, yv, batch_size=32, verbose=0, callbacks=[counts])
model.predict(xv, batch_size=64, verbose=0, callbacks=[counts])
iterations = model.optimizer.iterations
iterations = int(iterations.numpy() if hasattr(iterations, "numpy") else iterations)
print(
    json.dumps(
        {
            "torch_imported": "torch" in sys.modules,
            "iterations": iterations,
            "train_batches": counts.train_batches,
            "epochs": counts.epochs,
            "test_batches": counts.test_batches,
            "tests": counts.tests,
            "predict_batches": counts.predict_batches,
        }
    )
)
