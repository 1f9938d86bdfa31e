"""EQ/Py-compatible queues between the model-exploration (ME) thread and whoever evaluates.

The ME thinks it is in control: it puts parameter strings with :func:`OUT_put` and blocks for
result strings with :func:`IN_get`. The evaluating side (the Python master, or Swift/T's
``EQPy.swift``) reads with :func:`output_q_get` and answers with ``input_q.put``::

      ME thread                         evaluating side (master / Swift/T)
      ---------                         ----------------------------------
      OUT_put("Params")  -- output_q -> output_q_get()
      IN_get()           <- input_q --  input_q.put(settings_file)
      OUT_put(points)    -- output_q -> output_q_get() ; evaluate
      IN_get()           <- input_q --  input_q.put(results)
      ...
      OUT_put("DONE"); OUT_put(final)   output_q_get() x 2
      (ME raises)        EQPY_ABORT, traceback  -> output_q_get() x 2

Wire format (this module is the only place that writes or reads it):

* points: JSON objects joined by ``;``. A ``;`` inside a JSON string is written ``\\u003b``,
  so splitting on ``;`` is always safe.
* batch results: one number per point, in order, joined by ``;``; failures are ``NaN``.
* async results: ``index:value`` pairs joined by ``;``. Points are numbered 0, 1, 2, ... in the
  order the ME put them on the queue, over the whole run.
* several objectives: a result may be a JSON list of numbers instead of one number
  (``[0.25,-1200.0]``, ``null`` for NaN), each objective to minimize (those to maximize
  negated), in the order of ``[study] objectives``; a study with constraints writes them this
  way too. Decoded, it is an :class:`~emews.core._vector.Objectives`: a float (the first
  objective, so an ME that reads one number per result, :func:`IN_get_results`, gets the
  first objective) that carries every value. An ME reading the text (:func:`IN_get`) sees the
  lists. (How far a point breaks each constraint travels with the in-process answer only.)
* ``DONE`` (or ``FINAL``) ends the run; the next message is the final message.

Within one process the master answers with an :class:`Answer`, the values themselves:
:func:`IN_get` writes it as the text above for a classic EQ/Py ME, while the ME driver reads the
values (:func:`IN_get_answer`, with the master's verdict on the limits), so no result is
written as text and parsed back on rank 0. Text answers (from Swift/T) are read by both.

One study runs per process at a time: :func:`init` makes fresh queues.
"""

import importlib
import json
import math
import queue
import sys
import threading
import traceback

from ._vector import Objectives, json_numbers, nan_for_none

EQPY_ABORT = "EQPY_ABORT"
DONE = "DONE"
FINAL = "FINAL"
PARAMS = "Params"
END_MESSAGES = (DONE, FINAL)

input_q = queue.SimpleQueue()
output_q = queue.SimpleQueue()
_finished = threading.Event()
_bound = threading.local()   # an ME thread's own queues: a thread left from an earlier study
                             # never reads or writes the queues of the next one
_STOP = object()
_thread = None               # the current study's ME thread
ME_EXIT_WAIT = 30.0          # seconds a finished study waits for its ME thread to end


class Stopped(Exception):
    """Raised in an ME thread by :func:`IN_get` once its study has ended without it."""

# Classic EQ/Py ME modules ``import eqpy``: that name is this module, so they run unchanged.
sys.modules.setdefault("eqpy", sys.modules[__name__])


def OUT_put(string_params):
    """Put a message from the ME onto the output queue."""
    if str(string_params) in END_MESSAGES:
        getattr(_bound, "finished", _finished).set()
    getattr(_bound, "output_q", output_q).put(string_params)


class Answer:
    """The master's answer to a message of points, as values: batch results in the order of
    the points, or ``(index, value)`` pairs when ``tagged`` (async); with the master's
    ``verdict`` on the study's limits (a :class:`~emews.core._algorithm.Verdict`, which only
    the ME driver reads; ``None`` in an answer decoded from text)."""

    __slots__ = ("values", "tagged", "verdict")

    def __init__(self, values, tagged=False, verdict=None):
        self.values, self.tagged, self.verdict = values, tagged, verdict

    def floats(self):
        """The values as floats, or ``(index, value)`` pairs with the value a float (a float
        of its own kind, a :class:`~emews.core._algorithm.PrunedResult`, kept as it is)."""
        if self.tagged:
            return [(index, value if isinstance(value, float) else float(value))
                    for index, value in self.values]
        return [value if isinstance(value, float) else float(value) for value in self.values]

    def text(self):
        """The answer in the wire format."""
        return encode_tagged(self.values) if self.tagged else encode_results(self.values)


def _answer():
    message = getattr(_bound, "input_q", input_q).get()
    if message is _STOP:
        raise Stopped("the study ended")
    return message


def IN_get():
    """Block until the evaluating side answers; return its string.

    Raises :class:`Stopped` when the study ended without waiting for the ME (see :func:`stop`).
    """
    message = _answer()
    return message.text() if isinstance(message, Answer) else message


def IN_get_results():
    """Like :func:`IN_get`, for batch results: the values, as floats (NaN for a failure)."""
    return IN_get_answer().floats()


def IN_get_tagged():
    """Like :func:`IN_get`, for async results: ``(index, value)`` pairs, values as floats."""
    return IN_get_answer(tagged=True).floats()


def IN_get_answer(tagged=False):
    """Like :func:`IN_get`, as an :class:`Answer`: the master's own, or a text answer decoded
    (async results when ``tagged``)."""
    message = _answer()
    if isinstance(message, Answer):
        return message
    return Answer(decode_tagged(message) if tagged else decode_results(message), tagged)


def stop(wait=ME_EXIT_WAIT):
    """End the current ME thread's wait: its next (or current) :func:`IN_get` raises.

    Then wait up to ``wait`` seconds for the thread to end: an ME still computing its next
    points when the study ends (a GP's fit, in scipy's C++) must not be inside native code when
    the interpreter exits, or the process aborts ("terminate called without an active
    exception") after the study has finished.
    """
    input_q.put(_STOP)
    if _thread is not None and _thread is not threading.current_thread():
        _thread.join(wait)


def output_q_get():
    """Block for the ME's next message.

    Returns :data:`EQPY_ABORT` and then the traceback once the ME thread has died.
    """
    return output_q.get()


def output_q_poll(timeout):
    """The ME's next message if one comes within ``timeout`` seconds, else ``None``."""
    try:
        return output_q.get(timeout=timeout) if timeout > 0 else output_q.get_nowait()
    except queue.Empty:
        return None


def init(pkg):
    """Import the ME module ``pkg`` (a name or a module) and run its ``run()`` in a daemon thread
    (``pkg`` may also be the function to run itself).

    Returns the thread.
    """
    global input_q, output_q, _finished, _thread
    input_q, output_q, _finished = queue.SimpleQueue(), queue.SimpleQueue(), threading.Event()
    module = importlib.import_module(pkg) if isinstance(pkg, str) else pkg
    run = module.run if hasattr(module, "run") else module
    _thread = threading.Thread(target=_run_me, args=(run, input_q, output_q, _finished),
                               name="emews-ME", daemon=True)
    _thread.start()
    return _thread


def _run_me(run, in_q, out_q, finished):
    _bound.input_q, _bound.output_q, _bound.finished = in_q, out_q, finished
    try:
        run()
    except BaseException:  # noqa: BLE001 - every death of the ME must reach the evaluating side
        out_q.put(EQPY_ABORT)
        out_q.put(traceback.format_exc())
        return
    if not finished.is_set():
        out_q.put(EQPY_ABORT)
        out_q.put("the ME's run() returned without sending DONE\n")


# --- wire format -------------------------------------------------------------------------

NEXT = ",\x1f"   # POINT_JSON's item separator: a control character, which its strings escape
POINT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(NEXT, ": "))


def encode_points(points):
    """Encode a list of dicts as JSON objects joined by ``;``, in one encoder call for them all
    (most of a call's cost for a small dict is its set-up), cut where one ends."""
    text = POINT_JSON.encode(points)[1:-1].replace(";", "\\u003b").replace("}" + NEXT + "{", "};{")
    if text.count(";") != len(points) - 1:   # a point holding a list of objects
        text = ";".join(POINT_JSON.encode(point).replace(";", "\\u003b") for point in points)
    return text.replace(NEXT, ", ")


def split_points(message):
    """Split a points message into one JSON string per point (empty message: no points)."""
    return [part for part in message.split(";") if part.strip()] if message else []


def decode_points(message):
    """Decode a points message into a list of dicts."""
    return [json.loads(part) for part in split_points(message)]


def format_value(value):
    """Format one result as the wire writes it (``NaN`` for a failure; a JSON list for an
    :class:`~emews.core._vector.Objectives`)."""
    if isinstance(value, Objectives):
        return json.dumps(json_numbers(value.values), separators=(",", ":"))
    value = float(value)
    return "NaN" if math.isnan(value) else repr(value)


def parse_value(text):
    """Parse one result (a number, or a JSON list of them: an
    :class:`~emews.core._vector.Objectives`); anything else becomes NaN."""
    if isinstance(text, str) and text.lstrip().startswith("["):
        try:
            values = json.loads(text)
            return Objectives(nan_for_none(values))
        except (TypeError, ValueError):
            return math.nan
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def encode_results(values):
    """Encode batch results, in the order of the points."""
    return ";".join(format_value(v) for v in values)


def decode_results(message):
    """Decode batch results into floats."""
    return [parse_value(part) for part in message.split(";")] if message else []


def encode_tagged(pairs):
    """Encode async results: ``(index, value)`` pairs."""
    return ";".join(f"{index}:{format_value(value)}" for index, value in pairs)


def decode_tagged(message):
    """Decode async results into ``(index, value)`` pairs."""
    pairs = []
    for part in message.split(";") if message else []:
        index, _, value = part.partition(":")
        pairs.append((int(index), parse_value(value)))
    return pairs
