"""The objective: ``candle_model_train`` and the implementations behind it.

``CANDLE_MODEL_IMPL`` (or ``[study].impl``) chooses how one point is evaluated:

* ``py``: import ``module:function`` once per worker and call ``function(params)`` in-process;
* ``app``: fork a command in the run's directory, parameters in ``params.json``, output in
  ``model.log``, a hard timeout; the result is ``result.txt`` or the last ``IMPROVE_RESULT``;
* ``echo``: run nothing; the value is the sum of squares of the numeric parameters.

A model returns a number, or a dict (or Keras ``History``) from which ``MODEL_RETURN`` picks
the value. Anything else, NaN included, is a failed evaluation with its reason; it never
raises out of :meth:`Objective.evaluate`.
"""

import contextvars
import json
import math
import os
import signal
import subprocess
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .algorithm import import_dotted
from .errors import ConfigError

IMPLEMENTATIONS = ("py", "app", "echo")
LOG_TAIL_LINES = 20


@dataclass
class RunContext:
    """Where one evaluation runs: ids and its run directory (made on first use)."""

    exp_id: str
    run_id: str
    model_name: str
    expdir: Path

    @property
    def run_dir(self):
        """``EXPDIR/run/RUN_ID``, created when first asked for."""
        path = Path(self.expdir) / "run" / self.run_id
        path.mkdir(parents=True, exist_ok=True)
        return path


_current_run = contextvars.ContextVar("emews_current_run", default=None)


def current_run():
    """The :class:`RunContext` of the evaluation running in this thread (``None`` outside)."""
    return _current_run.get()


@dataclass
class Outcome:
    """What became of one evaluation."""

    value: float
    status: str = "done"
    error: str | None = None
    log_tail: str | None = None
    started: float = 0.0
    finished: float = 0.0
    extra: dict = field(default_factory=dict)


class EvaluationFailed(Exception):
    """An evaluation that produced no usable value; ``log_tail`` is kept in the store."""

    def __init__(self, reason, log_tail=None):
        super().__init__(reason)
        self.log_tail = log_tail


def extract_value(result, model_return="val_loss"):
    """The number to minimize from what a model returned (number, dict or Keras History)."""
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
            result = result[-1]
    if isinstance(result, bool) or not isinstance(result, (int, float)) and \
            not hasattr(result, "__float__"):
        raise EvaluationFailed(f"the model returned a non-numeric result: {result!r:.200}")
    value = float(result)
    if math.isnan(value):
        raise EvaluationFailed("the model returned NaN")
    return value


def tail(path, lines=LOG_TAIL_LINES):
    """The last ``lines`` lines of a text file ('' when it is missing)."""
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


class Objective:
    """A configured evaluator: turns a point's JSON into an :class:`Outcome`."""

    def __init__(self, impl="py", objective=None, app=None, model_name="model",
                 model_return="val_loss", timeout=None, expdir=".", exp_id="EXP000"):
        if impl not in IMPLEMENTATIONS:
            raise ConfigError("[study].impl (CANDLE_MODEL_IMPL)",
                              f"must be one of {list(IMPLEMENTATIONS)}", impl)
        self.impl, self.model_name, self.model_return = impl, model_name, model_return
        self.timeout, self.expdir, self.exp_id = timeout, Path(expdir), exp_id
        self.app = list(app or [])
        self.function = None
        if impl == "py":
            if not objective:
                raise ConfigError("[study].objective", "the py implementation needs "
                                  "'module:function'", objective)
            self.function = import_dotted(objective, "[study].objective")
            if not callable(self.function):
                raise ConfigError("[study].objective", "must name a callable", objective)
        if impl == "app" and not self.app:
            raise ConfigError("[study].app", "the app implementation needs a command list",
                              app)

    def evaluate(self, params_json, run_id):
        """Evaluate one point; never raises."""
        started = time.time()
        try:
            params = json.loads(params_json)
            context = RunContext(self.exp_id, run_id, self.model_name, self.expdir)
            value = getattr(self, f"_run_{self.impl}")(params, params_json, context)
            outcome = Outcome(value)
        except EvaluationFailed as exc:
            outcome = Outcome(math.nan, "failed", str(exc), exc.log_tail)
        except Exception as exc:  # noqa: BLE001 - a model's exception is a failed evaluation
            traceback.print_exc()
            outcome = Outcome(math.nan, "failed", f"{type(exc).__name__}: {exc}",
                              "".join(traceback.format_exc().splitlines(True)[-LOG_TAIL_LINES:]))
        outcome.started, outcome.finished = started, time.time()
        return outcome

    def _run_echo(self, params, params_json, context):
        return float(sum(float(v) ** 2 for v in params.values()
                         if isinstance(v, (int, float))))

    def _run_py(self, params, params_json, context):
        token = _current_run.set(context)
        try:
            return extract_value(self.function(params), self.model_return)
        finally:
            _current_run.reset(token)

    def _run_app(self, params, params_json, context):
        run_dir = context.run_dir
        params_file = run_dir / "params.json"
        params_file.write_text(params_json)
        env = dict(os.environ, EMEWS_PARAMS_FILE=str(params_file), EMEWS_RUN_DIR=str(run_dir),
                   EXP_ID=context.exp_id, RUN_ID=context.run_id, MODEL_NAME=context.model_name,
                   MODEL_RETURN=self.model_return)
        log = run_dir / "model.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(self.app, cwd=run_dir, env=env, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                kill_group(process)
                raise EvaluationFailed(f"timed out after {self.timeout} s", tail(log)) from None
        if code != 0:
            raise EvaluationFailed(f"the model exited with status {code}", tail(log))
        return read_app_result(run_dir, log)


def kill_group(process, grace=5.0):
    """SIGTERM a process group, then SIGKILL it if it has not ended within ``grace`` s."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def read_app_result(run_dir, log):
    """The value an app run reported: ``result.txt``, else its last ``IMPROVE_RESULT`` line."""
    result_file = Path(run_dir) / "result.txt"
    if result_file.exists():
        text = result_file.read_text().strip()
    else:
        lines = [line for line in tail(log, 10_000).splitlines()
                 if line.startswith("IMPROVE_RESULT")]
        if not lines:
            raise EvaluationFailed("the model wrote no result.txt and no IMPROVE_RESULT line",
                                   tail(log))
        text = lines[-1].split(None, 1)[1] if len(lines[-1].split()) > 1 else ""
    try:
        return extract_value(float(text))
    except ValueError:
        raise EvaluationFailed(f"the model's result is not a number: {text!r:.200}",
                               tail(log)) from None


def from_env(expdir=None):
    """An :class:`Objective` configured from Supervisor's environment variables."""
    impl = os.environ.get("CANDLE_MODEL_IMPL", "py")
    return Objective(impl=impl, objective=os.environ.get("EMEWS_OBJECTIVE"),
                     app=json.loads(os.environ["EMEWS_APP"]) if "EMEWS_APP" in os.environ else None,
                     model_name=os.environ.get("MODEL_NAME", "model"),
                     model_return=os.environ.get("MODEL_RETURN", "val_loss"),
                     expdir=expdir or os.environ.get("TURBINE_OUTPUT", "."))


_env_objective = None


def candle_model_train(params_json, exp_id, run_id, model_name):
    """Supervisor's entry point: evaluate one point, return the value as a string ('NaN' on failure).

    The implementation and its settings come from the environment (``CANDLE_MODEL_IMPL``,
    ``EMEWS_OBJECTIVE``, ``EMEWS_APP``, ``MODEL_RETURN``, ``TURBINE_OUTPUT``).
    """
    global _env_objective
    if _env_objective is None:
        _env_objective = from_env()
    _env_objective.exp_id, _env_objective.model_name = exp_id, model_name
    outcome = _env_objective.evaluate(params_json, run_id)
    return "NaN" if outcome.status != "done" else repr(outcome.value)
