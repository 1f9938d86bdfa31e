"""A small CANDLE-compliant Keras model for the fidelity tests (mirrors the shape of
Benchmarks' nt3_baseline_keras2.py: initialize_parameters, then run(params) -> History).

It fits a one-layer network to a fixed line for ``epochs`` epochs (Keras 3, on the CPU, a
second or two) and writes each epoch it began to ``output_dir/epochs.txt``.
"""

import os

import candle
import keras
import numpy as np

file_path = os.path.dirname(os.path.realpath(__file__))


class EpochLog(keras.callbacks.Callback):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def on_epoch_begin(self, epoch, logs=None):
        with open(self.path, "a") as log:
            log.write(f"{epoch + 1}\n")


def initialize_parameters(default_model="curve_default_model.txt"):
    learning_rate = {"name": "learning_rate", "type": float}
    return candle.finalize_parameters(candle.Benchmark(
        file_path, default_model, "keras", prog="curve", additional_definitions=[learning_rate],
        required=["model_name", "epochs"]))


def run(params):
    keras.utils.set_random_seed(1)
    x = np.linspace(-1, 1, 64, dtype="float32").reshape(-1, 1)
    y = 3 * x + 1
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(params["learning_rate"]), loss="mse")
    return model.fit(x, y, validation_data=(x, y), epochs=params["epochs"], verbose=0,
                     callbacks=[EpochLog(os.path.join(params["output_dir"], "epochs.txt"))])
