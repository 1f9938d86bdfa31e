"""Reading what a model left: its value (number, dict, History, result file) and its log tail.

Log tails are bounded: at most :data:`TAIL_BYTES` from the end of the output, read with a
seek (never the whole file), decoded with ``errors="replace"`` and with lone surrogates escaped,
so that a tail can always be stored in SQLite or sent as JSON.
"""

import math
import os
from pathlib import Path

from .base import EvaluationFailed

TAIL_BYTES = 64 * 1024
RESULT_SEARCH_BYTES = 1024 * 1024  # how far from the end of a log IMPROVE_RESULT is looked for


def extract_value(result, model_return="val_loss", epoch="last"):
    """The number to minimize from what a model returned (number, dict or Keras History).

    From a per-epoch list, ``epoch`` picks the ``last`` value, or the ``min`` or ``max``.
    """
    history = getattr(result, "history", None)
    if isinstance(history, dict):
        result = history
    if isinstance(result, dict):
        if model_return not in result:
            raise EvaluationFailed(f"MODEL_RETURN {model_return!r} is not among the returned "
                                   f"keys {sorted(result)}")
        result = result[model_return]
        if isinstance(result, (list, tuple)):
            if not result:
                raise EvaluationFailed(f"{model_return!r} is empty")
            result = [_number(v) for v in result]
            result = {"last": result[-1], "min": min(result), "max": max(result)}[epoch]
    return _number(result)


class Value(float):
    """The value to minimize, carrying the model's final ``metrics`` (name -> number)."""

    def __new__(cls, value, metrics=None):
        self = super().__new__(cls, value)
        self.metrics = dict(metrics or {})
        return self


def final_metrics(result):
    """The last epoch's value of every numeric key of a dict or Keras ``History`` result
    (``{}`` for a plain number; a :class:`Value`'s own metrics): what the store keeps beside
    the value to minimize."""
    if isinstance(result, Value):
        return dict(result.metrics)
    history = getattr(result, "history", None)
    if isinstance(history, dict):
        result = history
    if not isinstance(result, dict):
        return {}
    metrics = {}
    for name, value in result.items():
        if isinstance(value, (list, tuple)):
            value = value[-1] if value else None
        if isinstance(value, (bool, str, bytes)):
            continue
        try:
            metrics[str(name)] = float(value)
        except (TypeError, ValueError):
            continue  # not a number (an array, None, ...): not a metric
    return metrics


def _number(result):
    if isinstance(result, (bool, str)) or not hasattr(result, "__float__"):
        raise EvaluationFailed(f"the model returned a non-numeric result: {result!r:.200}")
    value = float(result)
    if not math.isfinite(value):
        raise EvaluationFailed(f"the model returned {'NaN' if math.isnan(value) else value}")
    return value


def safe_text(text):
    """``text`` with lone surrogates escaped (``\\udcff``): always encodable as UTF-8."""
    if text is None:
        return None
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def decode_tail(data, limit=TAIL_BYTES):
    """The last ``limit`` bytes of ``data`` as safe text."""
    return safe_text(bytes(data[-limit:]).decode("utf-8", errors="replace"))


def tail(path, limit=TAIL_BYTES):
    """The last ``limit`` bytes of a file as safe text ('' when it is missing)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - limit, 0))
            return decode_tail(handle.read(limit), limit)
    except OSError:
        return ""


def read_app_result(run_dir, log):
    """The value an app run reported: ``result.txt``, else its last ``IMPROVE_RESULT`` line."""
    result_file = Path(run_dir) / "result.txt"
    if not result_file.exists():
        return read_improve_result(log)
    return _parse_result(result_file.read_text(errors="replace").strip(), log)


def read_improve_result(log):
    """The value on the last ``IMPROVE_RESULT <value>`` line of ``log`` (its last MiB)."""
    lines = [line for line in tail(log, RESULT_SEARCH_BYTES).splitlines()
             if line.startswith("IMPROVE_RESULT")]
    if not lines:
        raise EvaluationFailed("the model wrote no result.txt and no IMPROVE_RESULT line",
                               tail(log))
    return _parse_result(lines[-1][len("IMPROVE_RESULT"):].strip(), log)


def _parse_result(text, log):
    try:
        return extract_value(float(text))
    except ValueError:
        raise EvaluationFailed(f"the model's result is not a number: {text!r:.200}",
                               tail(log)) from None
