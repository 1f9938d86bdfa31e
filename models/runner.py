"""The model runner: train one CANDLE-compliant model on one point and report its value.

::

    hyperparameters (JSON) --> import <MODEL_NAME>_baseline_<FRAMEWORK> (or MODEL_PYTHON_SCRIPT)
                               params = initialize_parameters([default_model=...])
                               params.update(hyperparameters); history = run(params)
    RUN_DIR/rank.txt       <-- ADLB_RANK_SELF (None outside Swift/T), as Supervisor writes it
    RUN_DIR/parameters.txt <-- the parameters the model ran with ([Global Params], Supervisor's
                               form; also a valid default-model file)
    RUN_DIR/stop.marker    <-- when the model stopped before the point's epochs; a run
                               directory that holds one is not run (Supervisor's rule)
    each epoch (Keras)     --> emews.report(MODEL_RETURN, epoch, **logs), or under app the
                               line "EMEWS_REPORT {json}" (see emews.models.keras_reports)
    RUN_DIR/history.txt    <-- the per-epoch history, JSON
    RUN_DIR/result.txt     <-- MODEL_RETURN's value (last epoch, or min/max); also printed
                               as "IMPROVE_RESULT <value>"

Two ways in, one path through:

* ``py``: :func:`train` is an objective (``params -> value``); ``emews.evaluate`` calls it in
  the worker's nanny, a warm child interpreter (with ``isolate = false``, in the worker
  itself), and it reads its run from ``emews.plugin.current_run()``.
* ``app`` and ``container``: ``python -m emews.models.runner --params_file FILE ...`` (see
  :func:`main`), which the Model Shell starts.

Settings are Supervisor's environment variables: ``MODEL_NAME``, ``FRAMEWORK`` (keras2),
``MODEL_PYTHON_DIR``, ``MODEL_PYTHON_SCRIPT``, ``MODEL_RETURN`` (val_loss),
``MODEL_RETURN_EPOCH`` (last, min or max), ``CANDLE_DEFAULT_MODEL_FILE``,
``BENCHMARK_TIMEOUT`` (seconds, handed to the model as ``params['timeout']``: a soft stop)
and ``CANDLE_DATA_DIR``. When candle_lib cannot be imported, :mod:`emews.models.candle_compat`
stands in for it as ``candle``. Every problem is an :class:`~emews.plugin.EvaluationFailed`
with one line naming the setting or file, the rule and the value.
"""

import argparse
import ast
import importlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from emews.plugin import (RETURN_EPOCHS, ConfigError, EvaluationFailed, current_run, extract,
                          objective_names)

from .keras_reports import reporting_epochs

_argv_lock = threading.Lock()


def failure(where, rule, value):
    """An :class:`EvaluationFailed` whose reason reads like a :class:`ConfigError`."""
    return EvaluationFailed(str(ConfigError(where, rule, value)))


@dataclass(frozen=True)
class ModelSpec:
    """Which model to run and which value to report."""

    name: str
    framework: str = "keras2"
    python_dir: str | None = None
    script: str | None = None
    model_return: str = "val_loss"
    epoch: str = "last"
    default_model: str | None = None
    timeout: float | None = None

    @classmethod
    def from_env(cls, environ, model_name=None):
        """The spec that Supervisor's environment variables describe."""
        name = environ.get("MODEL_NAME") or model_name
        if not name:
            raise failure("MODEL_NAME", "must name the model", name)
        epoch = environ.get("MODEL_RETURN_EPOCH") or "last"
        if epoch not in RETURN_EPOCHS:
            raise failure("MODEL_RETURN_EPOCH", f"must be one of {list(RETURN_EPOCHS)}", epoch)
        timeout = environ.get("BENCHMARK_TIMEOUT") or None
        if timeout is not None:
            try:
                timeout = float(timeout)
            except ValueError:
                raise failure("BENCHMARK_TIMEOUT", "must be a number of seconds",
                              timeout) from None
        return cls(name, environ.get("FRAMEWORK") or "keras2",
                   environ.get("MODEL_PYTHON_DIR") or None,
                   environ.get("MODEL_PYTHON_SCRIPT") or None,
                   environ.get("MODEL_RETURN") or "val_loss", epoch,
                   environ.get("CANDLE_DEFAULT_MODEL_FILE") or None,
                   timeout if timeout is None or timeout > 0 else None)

    @property
    def module_name(self):
        """``MODEL_PYTHON_SCRIPT`` (without ``.py``), else ``<name>_baseline_<framework>``.

        ``FRAMEWORK=keras``, which Supervisor exports, means the ``keras2`` baseline, as in
        Supervisor's model_runner (``import_pkg``)."""
        if self.script:
            return self.script[:-3] if self.script.endswith(".py") else self.script
        framework = "keras2" if self.framework == "keras" else self.framework
        return f"{self.name}_baseline_{framework}"


def use_candle():
    """Make ``import candle`` work: candle_lib when installed, else emews' stand-in."""
    try:
        import candle  # noqa: F401 - only whether it imports matters
    except ModuleNotFoundError as exc:
        if exc.name != "candle":
            raise
        from . import candle_compat

        sys.modules["candle"] = candle_compat


def load_model(spec):
    """Import the model's module and check that it has the two functions of the contract."""
    where = "MODEL_PYTHON_SCRIPT" if spec.script else "MODEL_NAME"
    if spec.python_dir:
        if not os.path.isdir(spec.python_dir):
            raise failure("MODEL_PYTHON_DIR", "must be a directory", spec.python_dir)
        if spec.python_dir not in sys.path:
            sys.path.insert(0, spec.python_dir)
    use_candle()
    module = None
    for name in (spec.module_name, f"{__package__}.{spec.module_name}"):
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as exc:
            if exc.name not in (name, spec.module_name):
                raise failure(where, f"importing model module {name!r} failed ({exc})",
                              spec.name) from None
        except Exception as exc:  # noqa: BLE001 - the model's own import error, one line
            raise failure(where, f"importing model module {name!r} failed "
                          f"({type(exc).__name__}: {exc})", spec.name) from None
    if module is None:
        searched = f"MODEL_PYTHON_DIR={spec.python_dir!r}, " if spec.python_dir else ""
        raise failure(where, f"no model module {spec.module_name!r} on {searched}the Python "
                      f"path or in {__package__}", spec.script or spec.name)
    for function in ("initialize_parameters", "run"):
        if not callable(getattr(module, function, None)):
            raise failure(f"model module {module.__name__} ({module.__file__})",
                          f"must define {function}() (see emews/models/README.md)",
                          spec.module_name)
    return module


def model_parameters(module, spec, hyperparameters, exp_id, run_id, argv=(),
                     checkpoint_dir=None):
    """``initialize_parameters()`` under a synthetic command line, then the JSON overrides.

    A model with candle_lib's checkpoint parameters and no ``ckpt_directory`` of its own (the
    ``None`` of candle_lib's default, which would mean ``output_dir/ckpts``, a directory per
    attempt) gets ``checkpoint_dir``, the point's directory shared by all its attempts: a
    ``CandleCkptKeras`` model with ``ckpt_restart_mode = "auto"`` run again after an
    interruption goes on from its last checkpoint."""
    kwargs = {}
    if spec.default_model:
        if not os.path.isfile(spec.default_model):
            raise failure("CANDLE_DEFAULT_MODEL_FILE", "the default-model file must exist",
                          spec.default_model)
        kwargs["default_model"] = spec.default_model
    with _argv_lock:  # sys.argv is the process's: in-process pools run models on threads
        saved_argv = sys.argv
        sys.argv = [module.__file__, "--experiment_id", exp_id, "--run_id", run_id, *argv]
        try:
            params = module.initialize_parameters(**kwargs)
        except ConfigError as exc:
            raise EvaluationFailed(str(exc)) from None
        except SystemExit as exc:
            raise failure(f"{module.__name__}.initialize_parameters()", "must not exit (a bad "
                          "command-line argument?)", exc.code) from None
        finally:
            sys.argv = saved_argv
    if not isinstance(params, dict):
        raise failure(f"{module.__name__}.initialize_parameters()", "must return a dict",
                      type(params).__name__)
    if spec.timeout is not None:
        params["timeout"] = spec.timeout
    params.update({key: as_list_if_listed(params.get(key), value)
                   for key, value in hyperparameters.items()})
    params["experiment_id"], params["run_id"] = exp_id, run_id
    if checkpoint_dir is not None and "ckpt_directory" in params \
            and params["ckpt_directory"] is None:
        params["ckpt_directory"] = str(checkpoint_dir)
    return params


def as_list_if_listed(default, value):
    """A string for a list-valued parameter (``"64 32"``, ``"64,32"``) becomes a list.

    Search spaces hold layer sizes as strings; as Supervisor's runner does, the model gets
    ``[64, 32]``. Each element is a Python literal when it reads as one, else a string.
    """
    if not isinstance(default, list) or not isinstance(value, str):
        return value
    return [_literal_or_text(token) for token in value.replace(",", " ").split()]


def _literal_or_text(token):
    try:
        return ast.literal_eval(token)
    except (ValueError, SyntaxError):
        return token


MONITOR_PARAMS = ("solr_root", "timeout")


def write_parameters(path, params):
    """Write ``params`` as Supervisor's runner does (runner_utils.write_params): a
    ``[Global Params]`` section of ``key=value`` lines, then ``[Monitor Params]`` with
    ``solr_root`` and ``timeout``. Values are Python literals (``repr``), so the file is also
    a valid default-model file (candle_lib and candle_compat read every section)."""
    lines = ["[Global Params]"]
    lines += [f"{key}={_literal(value)}" for key, value in params.items()
              if key not in MONITOR_PARAMS]
    lines.append("[Monitor Params]")
    lines += [f"{key}={_literal(params[key])}" for key in MONITOR_PARAMS if key in params]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


STOP_MARKER = "stop.marker"


def write_rank(run_dir, environ=os.environ):
    """``rank.txt``: the Swift/T rank the run ran in (``ADLB_RANK_SELF``), ``None`` outside
    Swift/T, as Supervisor's model_runner writes it."""
    (Path(run_dir) / "rank.txt").write_text(f"{environ.get('ADLB_RANK_SELF')}\n")


def check_stop_marker(run_dir):
    """A run directory holding ``stop.marker`` is not run (Supervisor's model_runner returns
    ``SKIP``/``STOP_MARKER`` without running the model): here the run fails with that reason."""
    marker = Path(run_dir) / STOP_MARKER
    if marker.exists():
        raise failure(str(marker), "exists: the run is skipped, as in Supervisor (the model "
                      "stopped early here before)", marker.read_text(errors="replace").strip())


def mark_early_stop(run_dir, result, model_return, hyperparameters):
    """Write ``stop.marker`` (``early stopping: N/M``) when the history of ``MODEL_RETURN`` has
    fewer epochs than the point's ``epochs`` (1 when it names none), as Supervisor does."""
    history = getattr(result, "history", result)
    values = history.get(model_return) if isinstance(history, dict) else None
    if not isinstance(values, (list, tuple)):
        return
    try:
        expected = int(hyperparameters.get("epochs", 1))
    except (TypeError, ValueError):
        return
    if len(values) < expected:
        (Path(run_dir) / STOP_MARKER).write_text(
            f"early stopping: {len(values)}/{expected}\n")


def _literal(value):
    text = repr(value)
    return text.replace("\n", "\\n")


def history_of(result):
    """The per-epoch history in what ``run()`` returned (Keras ``History`` or dict), else None."""
    history = getattr(result, "history", result)
    if not isinstance(history, dict):
        return None
    return {key: [_plain(v) for v in values] if isinstance(values, (list, tuple))
            else _plain(values) for key, values in history.items()}


def _plain(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def run_model(hyperparameters, run_dir, spec, exp_id="EXP000", run_id="RUN000", argv=(),
              checkpoint_dir=None):
    """Run the model on ``hyperparameters``; write the run's files; return the value (with
    the model's final metrics). ``checkpoint_dir``: see :func:`model_parameters`."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    check_stop_marker(run_dir)
    write_rank(run_dir)
    module = load_model(spec)
    params = model_parameters(module, spec, hyperparameters, exp_id, run_id, argv,
                              checkpoint_dir)
    write_parameters(run_dir / "parameters.txt", params)
    names = objective_names(spec.model_return)   # the first is reported by epoch
    with reporting_epochs(names[0]):
        result = module.run(params)
    mark_early_stop(run_dir, result, names[0], hyperparameters)
    history = history_of(result)
    if history is not None:
        (run_dir / "history.txt").write_text(json.dumps(history, indent=1) + "\n")
    value = extract(result, spec.model_return, spec.epoch)
    (run_dir / "result.txt").write_text(f"{float(value)!r}\n")
    print(f"IMPROVE_RESULT {float(value)!r}", flush=True)
    for name, objective in zip(names, value.objectives):   # several: one labelled line each
        print(f"IMPROVE_RESULT {name} {objective!r}", flush=True)
    return value


def train(params):
    """The ``py`` objective: run the CANDLE model that the environment names on ``params``.

    The settings come from the run's context (``current_run().env``) over ``os.environ``;
    ``CANDLE_DATA_DIR`` is also set in this process's environment, where candle_lib reads it.
    """
    context = current_run()
    environ = {**os.environ, **(context.env if context else {})}
    if environ.get("CANDLE_DATA_DIR"):
        os.environ["CANDLE_DATA_DIR"] = environ["CANDLE_DATA_DIR"]
    spec = ModelSpec.from_env(environ, context.model_name if context else None)
    if context is None:
        return run_model(params, Path.cwd(), spec)
    return run_model(params, context.run_dir, spec, context.exp_id, context.run_id,
                     checkpoint_dir=context.checkpoint_dir)


def main(argv=None):
    """``python -m emews.models.runner --params_file FILE [options] [MODEL ARGS...]``.

    Options: ``--run_dir`` (default: the current directory), ``--experiment_id`` (``EXP_ID``),
    ``--run_id`` (``RUN_ID``). Other arguments go to the model's command line. Exit status 0
    with a result, 1 when the run failed (the reason is the last line on stderr). Under an
    ``app`` study, ``EMEWS_CHECKPOINT_DIR`` names the point's checkpoint directory (see
    :func:`model_parameters`).
    """
    parser = argparse.ArgumentParser(prog="python -m emews.models.runner",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--params_file", default=os.environ.get("EMEWS_PARAMS_FILE"),
                        help="the hyperparameters, a JSON object (default: $EMEWS_PARAMS_FILE)")
    parser.add_argument("--run_dir", default=".")
    parser.add_argument("--experiment_id", default=os.environ.get("EXP_ID", "EXP000"))
    parser.add_argument("--run_id", default=os.environ.get("RUN_ID", "RUN000"))
    args, model_argv = parser.parse_known_args(argv)
    try:
        hyperparameters = read_hyperparameters(args.params_file)
        spec = ModelSpec.from_env(os.environ)
        run_model(hyperparameters, args.run_dir, spec, args.experiment_id,
                  args.run_id, model_argv, os.environ.get("EMEWS_CHECKPOINT_DIR") or None)
    except EvaluationFailed as exc:
        print(f"emews.models.runner: error: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def read_hyperparameters(path):
    """The JSON object in ``path``."""
    if not path:
        raise failure("--params_file", "must name the JSON file of hyperparameters", path)
    try:
        with open(path, encoding="utf-8") as handle:
            params = json.load(handle)
    except OSError as exc:
        raise failure(str(path), "the hyperparameter file must be readable",
                      exc.strerror) from None
    except json.JSONDecodeError as exc:
        raise failure(str(path), f"must be JSON ({exc.msg})", None) from None
    if not isinstance(params, dict):
        raise failure(str(path), "must hold a JSON object", type(params).__name__)
    return params


if __name__ == "__main__":
    sys.exit(main())
