"""A CANDLE Keras model that keeps checkpoints with the real candle_lib's ``CandleCkptKeras``
and restarts from them (``ckpt_restart_mode = "auto"``), as candle_lib's ckpt_utils docstring
shows (Benchmarks' models that checkpoint follow it): ``J = ckpt.restart(model)``, then
``fit(initial_epoch=J["epoch"], callbacks=[ckpt, ...])``.

For the test of resuming: on its first attempt only (the file ``killed`` in ``data_dir`` says
it was), it kills itself with SIGKILL as epoch ``kill_before`` begins, after the epochs before
it were checkpointed and reported. Each epoch it begins goes to ``data_dir/epochs.txt``.
"""

import os
import signal

import candle
import numpy as np
from tensorflow import keras      # tf_keras: candle_lib needs TF_USE_LEGACY_KERAS=1

file_path = os.path.dirname(os.path.realpath(__file__))


class KillOnce(keras.callbacks.Callback):
    def __init__(self, params):
        super().__init__()
        self.kill_before, self.data_dir = params["kill_before"], params["data_dir"]

    def on_epoch_begin(self, epoch, logs=None):
        with open(os.path.join(self.data_dir, "epochs.txt"), "a") as log:
            log.write(f"{epoch + 1}\n")
        marker = os.path.join(self.data_dir, "killed")
        if epoch + 1 == self.kill_before and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


class CkptBenchmark(candle.Benchmark):
    """The model's definitions, set as Benchmarks' models set them (``set_locals``)."""

    def set_locals(self):
        self.required = {"model_name", "epochs"}
        self.additional_definitions = [{"name": "learning_rate", "type": float},
                                       {"name": "kill_before", "type": int}]


def initialize_parameters(default_model="ckpt_default_model.txt"):
    return candle.finalize_parameters(CkptBenchmark(file_path, default_model, "keras",
                                                    prog="ckpt"))


def run(params):
    keras.utils.set_random_seed(2)
    x = np.linspace(-1, 1, 32, dtype="float32").reshape(-1, 1)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(params["learning_rate"]), loss="mse")
    ckpt = candle.CandleCkptKeras(params, verbose=False)
    ckpt.set_model(model)
    restarted = ckpt.restart(model)          # None on a first attempt
    return model.fit(x, x ** 2, validation_data=(x, x ** 2), epochs=params["epochs"],
                     initial_epoch=restarted["epoch"] if restarted else 0, verbose=0,
                     callbacks=[ckpt, KillOnce(params)])
