"""Every epoch of a Keras model the runner trains, reported: :func:`reporting_epochs`.

::

    runner: with reporting_epochs(MODEL_RETURN): module.run(params)
              keras.Model.fit(..., callbacks=[..., EpochReports])   (fit wrapped meanwhile)
    each epoch's end: logs[MODEL_RETURN] at step epoch + 1, every numeric log as a metric
      under py (a run of emews in this process): emews.report; Pruned -> stop_training
      under app / container: the line "EMEWS_REPORT {json}" on stdout (the worker reads it)

A fit whose callback was told to stop raises :class:`emews.Pruned` once it returns, unless the
model catches it; the objective is stored ``pruned`` either way. A model that is not Keras, or
an epoch without ``MODEL_RETURN`` in its logs, reports nothing.
"""

import contextlib
import contextvars
import functools
import json
import sys
import threading

from emews import Pruned, report
from emews.plugin import REPORT_LINE, Report, in_run

KERAS_MODULES = ("keras", "tf_keras")
_fit_lock = threading.Lock()
_model_return = contextvars.ContextVar("emews_keras_model_return", default=None)


def epoch_report(model_return, epoch, logs):
    """The :class:`Report` of an epoch's ``logs`` (``None`` without ``model_return``)."""
    numbers = {}
    for name, value in (logs or {}).items():
        try:
            numbers[str(name)] = float(value)
        except (TypeError, ValueError):
            continue
    if model_return not in numbers:
        return None
    return Report(epoch + 1, numbers[model_return], numbers)


def send(one):
    """Report ``one``: through ``emews.report`` in a run of emews (may raise Pruned), else as
    an output line."""
    if in_run():
        report(one.value, one.step, **one.metrics)
    else:
        print(REPORT_LINE + json.dumps(one.to_wire()), flush=True)


def callback_class(keras):
    """The callback class of the Keras module ``keras`` (``keras`` or ``tf_keras``)."""

    class EpochReports(keras.callbacks.Callback):
        """Reports each epoch's end; stops training when the run was pruned."""

        def __init__(self, model_return):
            super().__init__()
            self.model_return, self.pruned = model_return, None

        def on_epoch_end(self, epoch, logs=None):
            one = epoch_report(self.model_return, epoch, logs)
            if one is None:
                return
            try:
                send(one)
            except Pruned as exc:
                self.pruned = exc
                self.model.stop_training = True

    return EpochReports


def _install(keras):
    """Wrap the Keras module ``keras``'s ``Model.fit`` (once): within
    :func:`reporting_epochs`, a fit gets the callback; elsewhere it is Keras's own."""
    with _fit_lock:
        fit = keras.Model.fit
        if getattr(fit, "emews_reports", False):
            return
        epoch_reports = callback_class(keras)

        @functools.wraps(fit)
        def reporting_fit(self, *args, **kwargs):
            model_return = _model_return.get()
            if model_return is None:
                return fit(self, *args, **kwargs)
            callback = epoch_reports(model_return)
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), callback]
            history = fit(self, *args, **kwargs)
            if callback.pruned is not None:
                raise callback.pruned
            return history

        reporting_fit.emews_reports = True
        keras.Model.fit = reporting_fit


@contextlib.contextmanager
def reporting_epochs(model_return):
    """While the body runs (in this thread), every ``keras.Model.fit`` gets the
    epoch-reporting callback, when Keras is imported (a model module that imports it at its
    top, as CANDLE's do: Keras is never imported for a model that does not use it); a pruned
    fit raises :class:`emews.Pruned` when it returns. Keras 3 (``keras``) and Keras 2
    (``tf_keras``: ``tf.keras`` under ``TF_USE_LEGACY_KERAS=1``, as candle_lib needs) both."""
    loaded = [sys.modules[name] for name in KERAS_MODULES if name in sys.modules]
    if not loaded:
        yield
        return
    for keras in loaded:
        _install(keras)
    token = _model_return.set(model_return)
    try:
        yield
    finally:
        _model_return.reset(token)
