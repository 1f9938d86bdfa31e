"""Reading what a model left: its value (number, dict, History, result file) and its log tail.

Log tails are bounded: at most :data:`TAIL_BYTES` from the end of the output, read with a
seek (never the whole file), decoded with ``errors="replace"`` and with lone surrogates escaped,
so that a tail can always be stored in SQLite or sent as JSON.
"""

import csv
import io
import json
import math
import os
import sys
from pathlib import Path

from ..core._criteria import OBJECTIVE, objective_names
from ._base import EvaluationFailed

TAIL_BYTES = 64 * 1024
RESULT_SEARCH_BYTES = 1024 * 1024  # how far from the end of a log IMPROVE_RESULT is looked for


def extract_value(result, model_return=OBJECTIVE, epoch="last"):
    """The number to minimize from what a model returned (number, dict or Keras History).

    From a per-epoch list, ``epoch`` picks the ``last`` value, or the ``min`` or ``max``.
    """
    result = _unwrap(result)
    if isinstance(result, dict):
        if model_return not in result:
            raise EvaluationFailed(f"MODEL_RETURN {model_return!r} is not among the returned "
                                   f"keys {sorted(result)}")
        result = result[model_return]
        if hasattr(result, "tolist"):   # NumPy's: Supervisor's OneD fills its History with one
            result = result.tolist()
        if isinstance(result, (list, tuple)):
            if not result:
                raise EvaluationFailed(f"{model_return!r} is empty")
            result = [_number(v) for v in result]
            result = {"last": result[-1], "min": min(result), "max": max(result)}[epoch]
    return _number(result)


class Value(float):
    """The value to minimize, carrying the model's final ``metrics`` (name -> number) and, in
    a study of several objectives, every one of them (``objectives``, in order; the value is
    the first)."""

    def __new__(cls, value, metrics=None, objectives=()):
        self = super().__new__(cls, value)
        self.metrics = dict(metrics or {})
        self.objectives = [float(v) for v in objectives]
        return self


def extract(result, model_return=OBJECTIVE, epoch="last"):
    """What a model returned as a :class:`Value`: the value of each objective that
    ``model_return`` names (one, or a comma-separated list: see :func:`extract_value`), and
    the final metrics (a :class:`Value` as it is: the CANDLE runner's). A missing or
    non-finite objective of several fails the run naming it."""
    if isinstance(result, Value):
        return result
    names = objective_names(model_return)
    if len(names) == 1:
        return Value(extract_value(result, names[0], epoch), final_metrics(result))
    if not isinstance(_unwrap(result), dict):
        raise EvaluationFailed(f"the model returned {result!r:.80}, not a dict or History "
                               f"holding the objectives {', '.join(names)}")
    values = []
    for name in names:
        try:
            values.append(extract_value(result, name, epoch))
        except EvaluationFailed as exc:
            raise EvaluationFailed(f"objective {name!r}: {exc}", exc.log_tail) from None
    return Value(values[0], final_metrics(result), values)


def final_metrics(result):
    """The last epoch's value of every numeric key of a dict or Keras ``History`` result
    (``{}`` for a plain number; a :class:`Value`'s own metrics): what the store keeps beside
    the value to minimize."""
    if isinstance(result, Value):
        return dict(result.metrics)
    result = _unwrap(result)
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


def _unwrap(result):
    """A Keras ``History``'s dict of per-epoch lists; anything else as it is."""
    history = getattr(result, "history", None)
    return history if isinstance(history, dict) else result


def _number(result):
    if isinstance(result, (bool, str)) or not hasattr(result, "__float__"):
        raise EvaluationFailed(f"the model returned a non-numeric result: {result!r:.200}")
    value = float(result)
    if not math.isfinite(value):
        raise EvaluationFailed(f"the model returned {'NaN' if math.isnan(value) else value}")
    return value


def safe_text(text):
    """``text`` with lone surrogates escaped (``\\udcff``): always encodable as UTF-8."""
    return None if text is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


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


def read_app_result(run_dir, log, model_return=None):
    """The value an app run reported: ``result.txt`` (``run_dir`` None, a container's run:
    none), else its last ``IMPROVE_RESULT`` line; with several objectives (``model_return`` a
    comma-separated list), see :func:`read_labelled_results`."""
    result_file = None if run_dir is None else Path(run_dir) / "result.txt"
    if model_return and len(objective_names(model_return)) > 1:
        return read_labelled_results(result_file, log, objective_names(model_return))
    if result_file is None or not result_file.exists():
        return read_improve_result(log, model_return)
    return parse_result(result_file.read_text(errors="replace"), model_return, log)


def read_labelled_results(result_file, log, names):
    """The objectives ``names`` of an app run, as a :class:`Value`: each from the last line
    labelled with its name (``IMPROVE_RESULT params 12345`` in ``log``, or ``params 12345`` in
    ``result_file`` when given, which wins); a run lacking one fails naming it."""
    lines = _improve_lines(log)
    if result_file is not None and result_file.exists():
        lines += result_file.read_text(errors="replace").splitlines()
    values = []
    for name in names:
        labelled = [line for line in lines if _label(line) == name]
        if not labelled:
            raise EvaluationFailed(f"objective {name!r}: the model reported no result line "
                                   f"labelled {name!r} (IMPROVE_RESULT {name} <value>)",
                                   tail(log))
        try:
            values.append(parse_result(labelled[-1], name, log))
        except EvaluationFailed as exc:
            raise EvaluationFailed(f"objective {name!r}: {exc}", exc.log_tail) from None
    return Value(values[0], objectives=values)


def read_improve_result(log, model_return=None):
    """The value of the last ``IMPROVE_RESULT [<metric>] <value>`` line of ``log`` (its last
    MiB); when lines are labelled, the last one labelled ``model_return`` wins. As in
    Supervisor's model.sh (``awk -v FS=IMPROVE_RESULT``), the marker may be anywhere on the line
    and the text after it is the result."""
    texts = [text for text in _improve_lines(log) if text.strip(" :")]
    if not texts:
        raise EvaluationFailed("the model wrote no result.txt and no IMPROVE_RESULT line",
                               tail(log))
    if model_return:
        texts = [text for text in texts if _label(text) == model_return] or texts
    return parse_result(texts[-1], model_return, log)


NOT_A_RESULT = {"none": "None", "nan": "NaN", "inf": "inf", "+inf": "inf", "-inf": "-inf",
                "infinity": "inf", "-infinity": "-inf", "": "nothing"}


def _improve_lines(log):
    """What follows ``IMPROVE_RESULT`` on each line of ``log``'s last MiB that has it."""
    return [line.split("IMPROVE_RESULT", 2)[1] for line in
            tail(log, RESULT_SEARCH_BYTES).splitlines() if "IMPROVE_RESULT" in line]


def _tokens(text):
    return [token.strip("'\"") for token in text.replace(":", " ").split()]


def _label(text):
    tokens = _tokens(text)
    return tokens[0] if len(tokens) == 2 else None


def parse_result(text, model_return=None, log=None):
    """A reported result: ``<value>``, ``<metric> <value>`` (``val_loss 0.123``,
    ``val_loss: 0.123``) or ``'<value>'``, optionally after ``IMPROVE_RESULT``; the label is
    not checked. ``None``, ``nan`` and ``inf`` (any case, signed) fail the evaluation with that
    reason. models/README.md compares this with Supervisor's model.sh.
    """
    text = text.strip()
    if text.startswith("IMPROVE_RESULT"):
        text = text[len("IMPROVE_RESULT"):].strip()
    tokens = _tokens(text)
    token = tokens[-1] if len(tokens) in (1, 2) else text
    if token.lower() in NOT_A_RESULT:
        raise EvaluationFailed(f"the model reported {NOT_A_RESULT[token.lower()]} as its "
                               f"result: {text!r:.200}", tail(log) if log else None)
    try:
        return extract_value(float(token))
    except ValueError:
        raise EvaluationFailed(f"the model's result is not a number: {text!r:.200}",
                               tail(log) if log else None) from None


def write_run_command(run_dir, command):
    """``RUN_DIR/run_command.txt``: the command's words joined by spaces, as Supervisor's
    model.sh leaves it (``echo "${MODEL_CMD[@]}"``)."""
    (Path(run_dir) / "run_command.txt").write_text(" ".join(command) + "\n", encoding="utf-8")


def append_output_csv(run_dir, params, run_id, value):
    """Append ``params``' values, ``run_id`` and ``value`` (CSV-quoted where needed) to
    ``RUN_DIR/../output.csv``, as Supervisor's model.sh does after a successful run
    (models/README.md says how its line differs)."""
    run_dir = Path(run_dir)
    line = io.StringIO()
    fields = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
              for v in params.values()]
    csv.writer(line, lineterminator="\n").writerow(fields + [run_id, repr(float(value))])
    # one write to a file opened for appending: concurrent runs never interleave a line
    fd = os.open(run_dir.parent / "output.csv", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.getvalue().encode("utf-8"))
    finally:
        os.close(fd)


def main(args):
    """``python -m emews.evaluate record-run RUN_DIR RUN_ID -- COMMAND...``: read the result of
    a run (``result.txt``, else ``model.log``'s ``IMPROVE_RESULT``), rewrite ``result.txt`` as
    the number, and write ``run_command.txt`` and ``output.csv`` (:func:`append_output_csv`).
    The Model Shell's Supervisor call uses it.
    Exit status 1 (the reason on stderr) when there is no number."""
    if len(args) < 3 or args[2] != "--":
        print("usage: python -m emews.evaluate record-run RUN_DIR RUN_ID -- COMMAND...",
              file=sys.stderr)
        return 2
    run_dir, run_id, command = Path(args[0]), args[1], args[3:]
    try:
        value = read_app_result(run_dir, run_dir / "model.log",
                                os.environ.get("MODEL_RETURN") or None)
        params = json.loads((run_dir / "params.json").read_text(encoding="utf-8"))
    except EvaluationFailed as exc:
        (run_dir / "result.txt").unlink(missing_ok=True)
        print(f"emews.evaluate record-run: error: {exc}", file=sys.stderr, flush=True)
        return 1
    (run_dir / "result.txt").write_text(f"{value!r}\n")
    print(f"IMPROVE_RESULT: {value!r}", flush=True)
    write_run_command(run_dir, command)
    append_output_csv(run_dir, params if isinstance(params, dict) else {}, run_id, value)
    return 0
