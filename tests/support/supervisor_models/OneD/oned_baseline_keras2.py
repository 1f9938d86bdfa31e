# Mirrors Supervisor's models/OneD/oned_baseline_keras2.py (abridged: its comments and the
# unreachable code after its return left out): candle.finalize_parameters on IBenchmark, a
# deterministic 1D function of x, and a Keras History holding val_loss. Like the original, it
# points CANDLE_DATA_DIR at $HOME/improve_data_dir when it is imported.
import os

import candle
from oned import IBenchmark

os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
os.environ['CANDLE_DATA_DIR'] = os.environ['HOME'] + '/improve_data_dir'

file_path = os.path.dirname(os.path.realpath(__file__))


def initialize_parameters():
    i_bmk = IBenchmark(file_path, 'oned_default_model.txt', 'keras', prog='oned_baseline',
                       desc='IMPROVE Benchmark')
    gParameters = candle.finalize_parameters(i_bmk)
    return gParameters


import numpy as np  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402,F401
import tensorflow as tf  # noqa: E402


def func(x, n=1):
    y = 0.02 * x + 0.5 * np.sin(1 * x + 0.1) + 0.75 * np.cos(0.25 * x - 0.3)
    print("oned: f(x=%0.3f) => y=%0.3f" % (x, y))
    return y


def run(params):
    print("running third party code")
    x = params['x']
    y = func(x)
    print("IMPROVE_RESULT: " + str(y))
    print("returning training metrics: ", y)
    h = tf.keras.callbacks.History()
    h.history.setdefault('val_loss')
    y_array = np.ndarray(2)
    y_array.fill(y)
    h.history['val_loss'] = y_array
    return h


def main():
    params = initialize_parameters()
    run(params)


if __name__ == "__main__":
    main()
