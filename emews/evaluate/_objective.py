"""The objective: one configured evaluator that turns a point's JSON into an :class:`Outcome`.

::

    evaluate(params_json, run_id, cancelled)
      -> RunContext(exp_id, run_id, model_name, expdir, model_env)
      -> a segment of population-based training: its start checkpoint (.handoff)
      -> implementation.run(params, params_json, context, Watch(timeout, grace, cancelled))
           (.py, .app, .container or Echo: see the package's docstring)
      -> Outcome(value, metrics=...) | Outcome(NaN, "failed", reason, log_tail)
         | Outcome(NaN, "cancelled")

Supervisor's way in: Swift/T's embedded Python (``swift/emews_objective.swift``) calls
:func:`candle_model_train` once per point; ``swift/prepare_study.py`` calls :func:`from_env` to
check the settings first.
"""

import json
import math
import os
import time
import traceback
from pathlib import Path

from .._config import IMPLEMENTATIONS, RETURN_EPOCHS, SCHEMA
from ..core._criteria import OBJECTIVE
from ..core._segments import split
from .._errors import ConfigError
from .._status import Status
from .._validation import env_flag
from . import _process as process
from ._app import MODEL_RUNNER, App
from ._base import ONE_RANK, Cancelled, EvaluationFailed, Implementation, RunContext
from ._container import Container
from ._handoff import prepare
from ._outcome import Outcome
from ._py import Py
from ._reporting import Pruned
from ._model_output import Value, decode_tail, safe_text


class Echo(Implementation):
    """``echo``: run nothing; the value is the sum of squares of the numeric parameters (a
    stand-in model for testing the machinery)."""

    def run(self, params, params_json, context, watch):
        return float(sum(float(v) ** 2 for v in params.values()
                         if isinstance(v, (int, float))))


class Objective:
    """A configured evaluator: turns a point's JSON into an :class:`Outcome`.

    ``model_env`` maps Supervisor's environment variables to strings: the model's settings
    (``FRAMEWORK``, ``CANDLE_DATA_DIR``, the container's ``CANDLE_IMAGE``, ...; see
    :meth:`from_config`). ``model_return`` names the value to minimize, or several objectives
    as a comma-separated list (each is extracted, in order, into the outcome's ``objectives``).
    ``timeout`` (``SH_TIMEOUT``) kills isolated ``py``, ``app`` and ``container`` runs alike
    (:mod:`.process`); ``isolate`` runs ``py`` objectives in a child process (see
    :mod:`emews.evaluate._py`); ``grace`` is the time between SIGTERM and SIGKILL.
    """

    def __init__(self, impl="py", objective=None, app=None, model_name="model",
                 model_return=OBJECTIVE, timeout=None, expdir=".", exp_id="EXP000",
                 model_env=None, isolate=True, grace=process.KILL_GRACE):
        self.model_env = {key: str(value) for key, value in (model_env or {}).items()}
        if impl in ("py", "app") and self.model_env.get("CANDLE_MODEL_TYPE") == "SINGULARITY":
            impl = "container"  # as Supervisor's workflow.sh sets CANDLE_MODEL_IMPL
        if impl not in IMPLEMENTATIONS:
            raise ConfigError("[study].impl (CANDLE_MODEL_IMPL)",
                              f"must be one of {list(IMPLEMENTATIONS)}", impl)
        self.impl, self.model_name, self.model_return = impl, model_name, model_return
        timeout = float(timeout or 0)   # Supervisor's "no timeout": empty, 0 or negative
        self.timeout = timeout if timeout > 0 else None
        self.expdir, self.exp_id = Path(expdir), exp_id
        self.isolate, self.grace = bool(isolate), grace
        self.model_env.setdefault("MODEL_NAME", model_name)
        self.model_env.setdefault("MODEL_RETURN", model_return)
        self.epoch = self.model_env.get("MODEL_RETURN_EPOCH") or "last"
        if self.epoch not in RETURN_EPOCHS:
            raise ConfigError("[model].return_epoch (MODEL_RETURN_EPOCH)",
                              f"must be one of {list(RETURN_EPOCHS)}", self.epoch)
        if impl == "py":
            self.implementation = Py(objective or f"{MODEL_RUNNER}:train", model_return,
                                     self.epoch, self.isolate)
        elif impl == "app":
            self.implementation = App(app, self.model_env)
        elif impl == "container":
            self.implementation = Container(self.model_env, self.expdir)
        else:
            self.implementation = Echo()

    @classmethod
    def from_config(cls, cfg, expdir):
        """The objective a resolved :class:`~emews._config.Config` describes, for ``expdir``."""
        study = cfg.study
        env = {setting.env: getattr(cfg.model, key) for key, setting in SCHEMA["model"].items()
               if setting.env and getattr(cfg.model, key) is not None}
        env.update(CANDLE_CONTAINER_ARGS=json.dumps(cfg.model.container_args),
                   CANDLE_DATA_DIR=study.data_dir)
        if cfg.system.langs_app:
            env["EMEWS_LANGS_APP"] = cfg.system.langs_app
        return cls(impl=study.impl, objective=study.objective, app=study.app,
                   model_name=study.model_name, model_return=",".join(cfg.criteria.names),
                   timeout=study.timeout, expdir=expdir, exp_id=Path(expdir).name,
                   model_env=env, isolate=study.isolate)

    def evaluate(self, params_json, run_id, cancelled=None, report=None, resources=None):
        """Evaluate one point; never raises.

        ``cancelled`` and ``report`` make the run's :class:`~.process.Watch`: when
        ``cancelled()`` (polled about every 0.1 s, though not in a ``py`` run that is not
        isolated) returns True, the outcome is ``cancelled``; when ``report(Report)`` answers
        True, it is ``pruned`` with the last reported value. ``resources``
        (:class:`~.base.Resources`, default: one rank) is what the pool gave the run.
        """
        started = time.time()
        try:
            params, segment = split(json.loads(params_json))
            context = RunContext(self.exp_id, run_id, self.model_name, self.expdir,
                                 dict(self.model_env), resources or ONE_RANK)
            if segment is not None:   # population-based training: its start checkpoint
                params_json = json.dumps(params)
                prepare(context, segment)
            watch = process.Watch(self.timeout, self.grace, cancelled, report)
            value = self.implementation.run(params, params_json, context, watch)
            outcome = (Outcome(float(value), metrics=value.metrics, objectives=value.objectives)
                       if isinstance(value, Value) else Outcome(float(value)))
        except Pruned as exc:
            outcome = Outcome(exc.value, Status.PRUNED, str(exc))
        except Cancelled as exc:
            outcome = Outcome(math.nan, "cancelled", "cancelled", safe_text(exc.log_tail))
        except EvaluationFailed as exc:
            outcome = Outcome(math.nan, "failed", safe_text(str(exc)), safe_text(exc.log_tail))
        except Exception as exc:  # noqa: BLE001 - never raise out of an evaluation
            traceback.print_exc()
            outcome = Outcome(math.nan, "failed", safe_text(f"{type(exc).__name__}: {exc}"),
                              decode_tail(traceback.format_exc().encode("utf-8",
                                                                        "backslashreplace")))
        outcome.started, outcome.finished = started, time.time()
        return outcome

    def close(self):
        """Stop the processes this objective keeps (the nanny children); safe to call twice."""
        self.implementation.close()


def from_env(expdir=None, isolate=None):
    """An :class:`Objective` configured from Supervisor's environment variables (those read
    below; ``SH_TIMEOUT`` empty, 0 or -1: no timeout; ``EMEWS_ISOLATE``: the default of
    ``isolate``, true), the model's settings every variable of the ``[model]`` table and a few
    more."""
    environ = os.environ
    names = [s.env for s in SCHEMA["model"].values() if s.env] + [
        "MODEL_NAME", "MODEL_RETURN", "CANDLE_DATA_DIR", "EMEWS_LANGS_APP",
        "CANDLE_CONTAINER_ARGS"]
    try:
        app = json.loads(environ["EMEWS_APP"]) if "EMEWS_APP" in environ else None
    except json.JSONDecodeError:
        raise ConfigError("EMEWS_APP", "must be a JSON list of strings",
                          environ["EMEWS_APP"]) from None
    try:
        timeout = float(environ.get("SH_TIMEOUT") or 0)
    except ValueError:
        raise ConfigError("SH_TIMEOUT", "must be a number of seconds",
                          environ["SH_TIMEOUT"]) from None
    return Objective(impl=environ.get("CANDLE_MODEL_IMPL", "py"),
                     objective=environ.get("EMEWS_OBJECTIVE"), app=app,
                     model_name=environ.get("MODEL_NAME", "model"),
                     model_return=environ.get("MODEL_RETURN", OBJECTIVE),
                     timeout=timeout, expdir=expdir or environ.get("TURBINE_OUTPUT", "."),
                     model_env={name: environ[name] for name in names if name in environ},
                     isolate=env_flag("EMEWS_ISOLATE", True) if isolate is None else isolate)


_env_objective = None


def candle_model_train(params_json, exp_id, run_id, model_name):
    """Supervisor's entry point: evaluate one point; the value as a string ('NaN' on failure).

    The implementation and its settings come from the environment (see :func:`from_env`).
    ``py`` runs here are NOT isolated unless ``EMEWS_ISOLATE=1``: in Swift/T's embedded Python,
    ``sys.executable`` is not always a Python interpreter that could start a nanny. ``app``
    and ``container`` runs are separate processes (with ``SH_TIMEOUT``) either way.
    """
    global _env_objective
    if _env_objective is None:
        _env_objective = from_env(isolate=env_flag("EMEWS_ISOLATE", False))
    _env_objective.exp_id, _env_objective.model_name = exp_id, model_name
    outcome = _env_objective.evaluate(params_json, run_id)
    return "NaN" if outcome.status != "done" else repr(outcome.value)
