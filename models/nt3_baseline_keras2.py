"""NT3 on bundled data: a CANDLE-compliant Keras tumour/normal classifier.

CANDLE's Pilot1 NT3 benchmark tells normal from tumour tissue with a 1-D convolutional network
over RNA-seq expression profiles. This model keeps NT3's architecture and parameter names
(``conv`` triplets of filters/kernel/stride, ``pool``, ``dense``, ``dropout``, ``activation``,
``out_activation``, ``loss``, ``optimizer``, ``learning_rate``, ``epochs``, ``batch_size``)
and trains on the Wisconsin breast-cancer data that ships inside scikit-learn (569 tumours,
30 features of their cell nuclei, malignant or benign), so nothing is downloaded.

It is a CANDLE model like any other: ``initialize_parameters()`` reads
``nt3_default_model.txt`` (and the command line) through ``candle``, ``run(params)`` trains
and returns the Keras ``History``; ``python nt3_baseline_keras2.py --epochs 3`` trains it alone.
"""

import os

try:
    import candle
except ModuleNotFoundError:  # run alone without candle_lib: emews' stand-in
    from emews.models import candle_compat as candle

file_path = os.path.dirname(os.path.realpath(__file__))

additional_definitions = [
    {"name": "pool", "nargs": "+", "type": int, "help": "max-pooling length after each conv"},
    {"name": "classes", "type": int, "default": 2, "help": "number of classes"},
    {"name": "test_size", "type": float, "default": 0.25, "help": "validation fraction"},
]

required = ["model_name", "conv", "pool", "dense", "activation", "out_activation", "loss",
            "optimizer", "metrics", "epochs", "batch_size", "learning_rate", "dropout",
            "classes"]


class BenchmarkNT3(candle.Benchmark):
    """NT3's parameter definitions."""

    def set_locals(self):
        self.required = set(required)
        self.additional_definitions = additional_definitions


def initialize_parameters(default_model="nt3_default_model.txt"):
    """The model's parameters: default-model file, then the command line."""
    benchmark = BenchmarkNT3(file_path, default_model, "keras", prog="nt3_baseline",
                             desc="1-D convolutional tumour/normal classifier (NT3)")
    return candle.finalize_parameters(benchmark)


def keras_module():
    """Keras, or an ImportError naming the pip extra that brings it."""
    try:
        import keras
    except ImportError as exc:
        raise ImportError(f"NT3 needs Keras ({exc}): pip install 'emews-hpo[keras]'") from None
    return keras


def load_data(params):
    """Standardized train and validation splits, features as 1-D sequences, one-hot labels."""
    keras = keras_module()
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=params["test_size"], stratify=y, random_state=int(params["rng_seed"]))
    scaler = StandardScaler().fit(x_train)
    x_train, x_test = (scaler.transform(part)[..., None].astype("float32")
                       for part in (x_train, x_test))
    classes = int(params["classes"])
    return (x_train, keras.utils.to_categorical(y_train, classes),
            x_test, keras.utils.to_categorical(y_test, classes))


def build_model(params, features):
    """NT3's network: conv/pool blocks, then dense layers with dropout, then the classifier."""
    keras = keras_module()
    layers = keras.layers

    conv, pools = list(params["conv"]), list(params["pool"])
    stack = [keras.Input((features, 1))]
    for block, start in enumerate(range(0, len(conv) - 2, 3)):
        filters, kernel, stride = conv[start:start + 3]
        if filters <= 0:
            continue
        stack.append(layers.Conv1D(filters, kernel, strides=stride, padding="same",
                                   activation=params["activation"]))
        pool = pools[min(block, len(pools) - 1)] if pools else 1
        if pool > 1:
            stack.append(layers.MaxPooling1D(pool, padding="same"))
    stack.append(layers.Flatten())
    for units in params["dense"]:
        if units > 0:
            stack.append(layers.Dense(units, activation=params["activation"]))
            if params["dropout"] > 0:
                stack.append(layers.Dropout(params["dropout"]))
    stack.append(layers.Dense(int(params["classes"]), activation=params["out_activation"]))
    return keras.Sequential(stack)


def run(params):
    """Train on the training split, validate on the rest; return the Keras History."""
    keras = keras_module()

    keras.utils.set_random_seed(int(params["rng_seed"]))
    x_train, y_train, x_test, y_test = load_data(params)
    model = build_model(params, x_train.shape[1])
    optimizer = keras.optimizers.get({"class_name": params["optimizer"],
                                      "config": {"learning_rate": params["learning_rate"]}})
    model.compile(loss=params["loss"], optimizer=optimizer, metrics=[params["metrics"]])
    return model.fit(x_train, y_train, batch_size=int(params["batch_size"]),
                     epochs=int(params["epochs"]), verbose=2,
                     validation_data=(x_test, y_test),
                     callbacks=[candle.TerminateOnTimeOut(params["timeout"])])


def main():
    """Train once with the default-model file and the command line."""
    history = run(initialize_parameters())
    print("val_loss", history.history["val_loss"][-1])


if __name__ == "__main__":
    main()
