"""A real, quick model: scikit-learn's MLPClassifier on the digits data that ships with it.

``train(params)`` fits on 75% of the 1,797 images and returns the validation log-loss
(``val_loss``) and accuracy (``val_accuracy``). Parameters: ``hidden_units``,
``learning_rate``, ``activation``, ``alpha`` and ``epochs`` (see ``digits_space.json``).
"""

import warnings
from functools import lru_cache


@lru_cache(maxsize=1)
def _data():
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError("the digits model needs scikit-learn: pip install 'emews-hpo[sklearn]'")
    x, y = load_digits(return_X_y=True)
    return train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y)


def train(params):
    """Fit the MLP with ``params``; return ``{"val_loss": ..., "val_accuracy": ...}``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.neural_network import MLPClassifier

    x_train, x_val, y_train, y_val = _data()
    model = MLPClassifier(hidden_layer_sizes=(int(params.get("hidden_units", 32)),),
                          activation=params.get("activation", "relu"),
                          learning_rate_init=float(params.get("learning_rate", 1e-3)),
                          alpha=float(params.get("alpha", 1e-4)),
                          max_iter=int(params.get("epochs", 30)), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, y_train)
    probabilities = model.predict_proba(x_val)
    return {"val_loss": float(log_loss(y_val, probabilities, labels=model.classes_)),
            "val_accuracy": float(accuracy_score(y_val, model.classes_[probabilities.argmax(1)]))}
