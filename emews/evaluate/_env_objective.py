"""Supervisor's way in: an objective from environment variables, and ``candle_model_train``.

Swift/T's embedded Python (``swift/emews_objective.swift``) calls :func:`candle_model_train`
once per point; ``swift/prepare_study.py`` calls :func:`from_env` to check the settings first.
"""

import json
import os

from .._config import SCHEMA
from ..core._criteria import OBJECTIVE
from .._errors import ConfigError
from .._validation import env_flag
from ._objective import Objective


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
