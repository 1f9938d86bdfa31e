"""The objective: ``candle_model_train`` and the implementations behind it.

``CANDLE_MODEL_IMPL`` (or ``[study].impl``) chooses how one point is evaluated:

* ``py``: import ``module:function`` once per worker and call ``function(params)`` in the
  worker's warm interpreter. Without an objective, the function is the CANDLE model runner
  (``emews.models.runner:train``), which trains the model that ``MODEL_NAME`` names.
* ``app``: fork the Model Shell in the run's directory: ``model.sh`` sources the site's
  ``langs-app`` settings (``EMEWS_LANGS_APP``), prepends ``APP_PYTHONPATH`` to ``PYTHONPATH``
  and execs the command (``[study].app``, by default the model runner). Output goes to
  ``model.log``; the result is ``result.txt`` or the last ``IMPROVE_RESULT`` line.
* ``container`` (also ``app`` with ``CANDLE_MODEL_TYPE=SINGULARITY``): the Model Shell runs
  ``singularity`` (or ``apptainer``) ``exec [--nv] --bind DATA:/candle_data_dir --bind
  RUN_DIR:/emews_run IMAGE ACTION.sh DEVICES /candle_data_dir --params_file
  /emews_run/params.json --experiment_id EXP --run_id RUN``; the result is the last
  ``IMPROVE_RESULT`` line of ``model.log``.
* ``echo``: run nothing; the value is the sum of squares of the numeric parameters.

Parameters never pass through a shell: they are in ``RUN_DIR/params.json`` and every command is
an argument list. ``BENCHMARK_TIMEOUT`` reaches the model as ``params['timeout']`` (a soft stop
at the end of an epoch); ``[study].timeout`` (``SH_TIMEOUT``) kills the run's process group.

A model returns a number, or a dict (or Keras ``History``) from which ``MODEL_RETURN`` picks
the value (the last epoch's, or ``MODEL_RETURN_EPOCH`` = ``min`` or ``max``). Anything else,
NaN included, is a failed evaluation with its reason and the tail of its log; it never raises
out of :meth:`Objective.evaluate`.
"""

import contextvars
import importlib.resources
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .algorithm import import_dotted
from .errors import ConfigError

IMPLEMENTATIONS = ("py", "app", "container", "echo")
MODEL_RUNNER = "emews.models.runner"
CONTAINER_RUNTIMES = ("singularity", "apptainer")
RETURN_EPOCHS = ("last", "min", "max")
LOG_TAIL_LINES = 20


@dataclass
class RunContext:
    """Where one evaluation runs: ids, its run directory (made on first use) and model settings.

    ``env`` holds the model's settings as Supervisor's environment variables (``MODEL_NAME``,
    ``FRAMEWORK``, ``CANDLE_DATA_DIR``, ...); a ``py`` objective reads them from here.
    """

    exp_id: str
    run_id: str
    model_name: str
    expdir: Path
    env: dict = field(default_factory=dict)

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


def _number(result):
    if isinstance(result, (bool, str)) or not hasattr(result, "__float__"):
        raise EvaluationFailed(f"the model returned a non-numeric result: {result!r:.200}")
    value = float(result)
    if not math.isfinite(value):
        raise EvaluationFailed(f"the model returned {'NaN' if math.isnan(value) else value}")
    return value


def tail(path, lines=LOG_TAIL_LINES):
    """The last ``lines`` lines of a text file ('' when it is missing)."""
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


def model_shell():
    """The path of ``model.sh``, the shell half of the Model Shell."""
    return str(importlib.resources.files("emews.models").joinpath("model.sh"))


class Objective:
    """A configured evaluator: turns a point's JSON into an :class:`Outcome`.

    ``model_env`` maps Supervisor's environment variables to strings: the model's settings
    (``FRAMEWORK``, ``MODEL_PYTHON_DIR``, ``BENCHMARK_TIMEOUT``, ``CANDLE_DATA_DIR``,
    ``EMEWS_LANGS_APP``, ``APP_PYTHONPATH``, the container's ``CANDLE_IMAGE``,
    ``MODEL_ACTION``, ``CANDLE_CONTAINER_RUNTIME``, ``CANDLE_CONTAINER_ARGS`` (a JSON list,
    default ``["--nv"]``), ...). ``timeout`` (``SH_TIMEOUT``) bounds an app or container run.
    """

    def __init__(self, impl="py", objective=None, app=None, model_name="model",
                 model_return="val_loss", timeout=None, expdir=".", exp_id="EXP000",
                 model_env=None):
        self.model_env = {key: str(value) for key, value in (model_env or {}).items()}
        if impl == "app" and self.model_env.get("CANDLE_MODEL_TYPE") == "SINGULARITY":
            impl = "container"
        if impl not in IMPLEMENTATIONS:
            raise ConfigError("[study].impl (CANDLE_MODEL_IMPL)",
                              f"must be one of {list(IMPLEMENTATIONS)}", impl)
        self.impl, self.model_name, self.model_return = impl, model_name, model_return
        self.timeout, self.expdir, self.exp_id = timeout, Path(expdir), exp_id
        self.model_env.setdefault("MODEL_NAME", model_name)
        self.model_env.setdefault("MODEL_RETURN", model_return)
        self.epoch = self.model_env.get("MODEL_RETURN_EPOCH") or "last"
        if self.epoch not in RETURN_EPOCHS:
            raise ConfigError("[model].return_epoch (MODEL_RETURN_EPOCH)",
                              f"must be one of {list(RETURN_EPOCHS)}", self.epoch)
        self.function = self.command = self.container = None
        if impl == "py":
            objective = objective or f"{MODEL_RUNNER}:train"
            self.function = import_dotted(objective, "[study].objective")
            if not callable(self.function):
                raise ConfigError("[study].objective", "must name a callable", objective)
        elif impl == "app":
            self.command = list(app or ["python3", "-u", "-m", MODEL_RUNNER])
        elif impl == "container":
            self.container = ContainerCommand.from_env(self.model_env)

    @classmethod
    def from_config(cls, cfg, expdir):
        """The objective a resolved :class:`~emews.config.Config` describes, for ``expdir``."""
        from .config import SCHEMA

        study = cfg.study
        env = {setting.env: cfg.model[key] for key, setting in SCHEMA["model"].items()
               if setting.env and cfg.model.get(key) is not None}
        env.update(CANDLE_CONTAINER_ARGS=json.dumps(cfg.model["container_args"]),
                   CANDLE_DATA_DIR=study["data_dir"])
        if cfg.system["langs_app"]:
            env["EMEWS_LANGS_APP"] = cfg.system["langs_app"]
        return cls(impl=study["impl"], objective=study["objective"], app=study["app"],
                   model_name=study["model_name"], model_return=study["model_return"],
                   timeout=study["timeout"], expdir=expdir, exp_id=Path(expdir).name,
                   model_env=env)

    def close(self):
        """Stop what this objective started (nothing, for now)."""

    def evaluate(self, params_json, run_id, cancelled=None):
        """Evaluate one point; never raises. ``cancelled`` is not polled yet."""
        started = time.time()
        try:
            params = json.loads(params_json)
            context = RunContext(self.exp_id, run_id, self.model_name, self.expdir,
                                 dict(self.model_env))
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
            return extract_value(self.function(params), self.model_return, self.epoch)
        finally:
            _current_run.reset(token)

    def _run_app(self, params, params_json, context):
        log = self._run_model_shell(self.command, params_json, context)
        return read_app_result(context.run_dir, log)

    def _run_container(self, params, params_json, context):
        data_dir = self.model_env.get("CANDLE_DATA_DIR") or str(self.expdir)
        command = self.container.command(context.run_dir, data_dir, context.exp_id,
                                         context.run_id)
        log = self._run_model_shell(command, params_json, context)
        return read_improve_result(log)

    def _run_model_shell(self, command, params_json, context):
        """Run ``command`` under ``model.sh`` in the run directory; return the log's path."""
        run_dir = context.run_dir
        params_file = run_dir / "params.json"
        params_file.write_text(params_json, encoding="utf-8")
        (run_dir / "result.txt").unlink(missing_ok=True)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        env = dict(os.environ, **self.model_env, EMEWS_PARAMS_FILE=str(params_file),
                   EMEWS_RUN_DIR=str(run_dir), EXP_ID=context.exp_id, RUN_ID=context.run_id,
                   PATH=path)
        log = run_dir / "model.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(["bash", model_shell(), *command], cwd=run_dir, env=env,
                                       stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                kill_group(process)
                with open(log, "a") as note:
                    note.write(f"emews: killed at SH_TIMEOUT={self.timeout:g} s\n")
                raise EvaluationFailed(f"timed out: killed after SH_TIMEOUT={self.timeout:g} s",
                                       tail(log)) from None
        if code != 0:
            last = next((line for line in reversed(tail(log).splitlines()) if line.strip()), "")
            raise EvaluationFailed(f"the model exited with status {code}: {last}", tail(log))
        return log


@dataclass(frozen=True)
class ContainerCommand:
    """The ``singularity``/``apptainer exec`` command of a model image (IMPROVE's train.sh)."""

    image: str
    action: str = "train"
    runtime: str = "singularity"
    exec_args: tuple = ("--nv",)

    @classmethod
    def from_env(cls, env):
        """Read ``CANDLE_IMAGE``, ``MODEL_ACTION``, ``CANDLE_CONTAINER_RUNTIME`` and
        ``CANDLE_CONTAINER_ARGS``; the runtime defaults to whichever is on ``PATH``."""
        image = env.get("CANDLE_IMAGE")
        if not image:
            raise ConfigError("[model].image (CANDLE_IMAGE)", "the container implementation "
                              "needs the model's image", image)
        runtime = env.get("CANDLE_CONTAINER_RUNTIME") or next(
            (name for name in CONTAINER_RUNTIMES if shutil.which(name)), None)
        if runtime not in CONTAINER_RUNTIMES or not shutil.which(runtime):
            raise ConfigError("[model].container_runtime (CANDLE_CONTAINER_RUNTIME)",
                              f"must be one of {list(CONTAINER_RUNTIMES)}, found on PATH",
                              runtime)
        try:
            exec_args = json.loads(env.get("CANDLE_CONTAINER_ARGS") or '["--nv"]')
        except json.JSONDecodeError:
            exec_args = None
        if not isinstance(exec_args, list) or not all(isinstance(a, str) for a in exec_args):
            raise ConfigError("[model].container_args (CANDLE_CONTAINER_ARGS)",
                              "must be a JSON list of strings", env.get("CANDLE_CONTAINER_ARGS"))
        return cls(image, env.get("MODEL_ACTION") or "train", runtime, tuple(exec_args))

    def command(self, run_dir, data_dir, exp_id, run_id):
        """The argument list for one run."""
        for where, path in (("CANDLE_DATA_DIR", data_dir), ("run directory", run_dir)):
            if ":" in str(path) or "," in str(path):
                raise EvaluationFailed(str(ConfigError(where, "a path bound into a container "
                                                       "must not contain ':' or ','", str(path))))
        devices = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return [self.runtime, "exec", *self.exec_args,
                "--bind", f"{data_dir}:/candle_data_dir", "--bind", f"{run_dir}:/emews_run",
                self.image, f"{self.action}.sh", devices, "/candle_data_dir",
                "--params_file", "/emews_run/params.json",
                "--experiment_id", exp_id, "--run_id", run_id]


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
    if not result_file.exists():
        return read_improve_result(log)
    return _parse_result(result_file.read_text().strip(), log)


def read_improve_result(log):
    """The value on the last ``IMPROVE_RESULT <value>`` line of ``log``."""
    lines = [line for line in tail(log, 10_000).splitlines() if line.startswith("IMPROVE_RESULT")]
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


def from_env(expdir=None):
    """An :class:`Objective` configured from Supervisor's environment variables.

    ``CANDLE_MODEL_IMPL``, ``EMEWS_OBJECTIVE``, ``EMEWS_APP`` (a JSON list), ``MODEL_NAME``,
    ``MODEL_RETURN``, ``SH_TIMEOUT``, ``TURBINE_OUTPUT`` (the experiment directory), and as the
    model's settings every variable of the ``[model]`` table (see :mod:`emews.config`) plus
    ``CANDLE_DATA_DIR``, ``EMEWS_LANGS_APP`` and ``CANDLE_CONTAINER_ARGS``.
    """
    from .config import SCHEMA

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
        timeout = float(environ.get("SH_TIMEOUT") or 0) or None
    except ValueError:
        raise ConfigError("SH_TIMEOUT", "must be a number of seconds",
                          environ["SH_TIMEOUT"]) from None
    return Objective(impl=environ.get("CANDLE_MODEL_IMPL", "py"),
                     objective=environ.get("EMEWS_OBJECTIVE"), app=app,
                     model_name=environ.get("MODEL_NAME", "model"),
                     model_return=environ.get("MODEL_RETURN", "val_loss"),
                     timeout=timeout if timeout and timeout > 0 else None,
                     expdir=expdir or environ.get("TURBINE_OUTPUT", "."),
                     model_env={name: environ[name] for name in names if name in environ})


_env_objective = None


def candle_model_train(params_json, exp_id, run_id, model_name):
    """Supervisor's entry point: evaluate one point; the value as a string ('NaN' on failure).

    The implementation and its settings come from the environment (see :func:`from_env`).
    """
    global _env_objective
    if _env_objective is None:
        _env_objective = from_env()
    _env_objective.exp_id, _env_objective.model_name = exp_id, model_name
    outcome = _env_objective.evaluate(params_json, run_id)
    return "NaN" if outcome.status != "done" else repr(outcome.value)
