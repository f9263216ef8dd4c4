"""Keras's fit with no callback of the script's: Keras dispatches its
batch-end callbacks asynchronously while no callback has a batch-end hook.
Prints whether the training's CallbackList did (its _async_train), as Keras
itself decided it, and the steps (the optimizer's iterations)."""

import json

import keras
import numpy as np
from keras.src.callbacks import callback_list

lists = []
init = callback_list.CallbackList.__init__


def recorded(self, *args, **kwargs):  # the script's own look at Keras's choice
    init(self, *args, **kwargs)
    lists.append(self)


callback_list.CallbackList.__init__ = recorded
rng = np.random.default_rng(0)
x = rng.standard_normal((512, 16)).astype("float32")
y = rng.integers(0, 4, 512)
model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)]
)
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
iterations = model.optimizer.iterations
print(
    json.dumps(
        {
            "async_train": bool(lists[0]._async_train),
            "iterations": int(iterations.numpy() if hasattr(iterations, "numpy") else iterations),
        }
    )
)
