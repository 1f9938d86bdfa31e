"""emews-hpo: hyperparameter optimization on MPI pools, EMEWS style.

The public API is the names in ``__all__``, documented on one page of the docs (Python API):
:func:`run` (which returns a :class:`Result`), :func:`load` (a :class:`Study`),
:class:`Algorithm`, :class:`Status`, :mod:`eqpy`, for models :func:`report`, :class:`Pruned`,
:func:`checkpoint_dir` and :func:`comm`, and :mod:`plugin`, everything a plugin (a search
algorithm, a model) imports. Everything else under ``emews.`` is internal, its modules named
with a leading underscore, and may move between releases.
Importing ``emews`` stays cheap (``emews --help`` imports it): the classes and functions are
imported on first use, and ``eqpy`` and ``plugin`` are submodules.
"""

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .inspect._snapshot import Study
    from ._result import Result

__version__ = "0.1.0"
__all__ = ["Algorithm", "Pruned", "Result", "Status", "Study", "checkpoint_dir", "comm", "eqpy",
           "load", "plugin", "report", "run"]

_LAZY = {"Algorithm": "emews.core._algorithm", "Status": "emews._status",   # name: its module
         "Result": "emews._result", "Study": "emews.inspect._snapshot",
         "report": "emews.evaluate._reporting", "Pruned": "emews.evaluate._reporting",
         "checkpoint_dir": "emews.evaluate._base", "comm": "emews.evaluate._base"}


def run(config: "str | os.PathLike[str] | list[str | os.PathLike[str]] | dict[str, Any] | None",
        overrides: "dict[str, Any] | None" = None,
        resume: "str | os.PathLike[str] | None" = None, quiet: bool = False) -> "Result":
    """Run a study from Python or a notebook; return its result.

    ``config`` is a TOML path, a list of paths (later ones win), or a dict shaped like the TOML
    file. ``overrides`` maps ``"table.key"`` to values (they win over everything). ``resume``
    names an experiment directory to continue (``config`` may then be ``None``). ``quiet``
    (``[system] quiet``) prints neither progress nor the summary at the end: a script or a
    notebook prints what it wants of the :class:`Result`, which has ``best_point``,
    ``best_value``, ``expdir``, ``stop_reason``, ``evaluations`` (done, failed and pruned),
    ``failed`` and ``pruned``::

        import emews
        result = emews.run("study.toml", overrides={"study.budget": 50}, quiet=True)
        result.best_point, result.best_value, result.expdir
    """
    from ._study import run as run_study

    if quiet:
        overrides = {**(overrides or {}), "system.quiet": True}
    result: Result = run_study(config, overrides, resume)
    return result


def load(expdir: "str | os.PathLike[str]") -> "Study":
    """The study in experiment directory ``expdir``, running or finished, read-only.

    The :class:`Study` has ``best`` (the best row: id, result, params, metrics, rank, started, ...;
    with replicas, the best point: result, params, and its replicas' mean, std, count and ids),
    ``points`` (with replicas: each point's replicas summarized, best first), ``done`` (rows
    with a value, best first), ``failed`` (by id), ``param_names``,
    ``metric_names``, ``trials_dataframe()`` (pandas: one row per evaluation, a column per
    parameter and metric), ``report(output=None)`` (writes ``EXPDIR/report.html``,
    returns its path) and ``to_optuna()`` (an Optuna ``Study``: a live, read-only view of the
    store that ``optuna.visualization`` plots)::

        import emews
        study = emews.load("experiments/study/EXP003")
        study.best["params"], study.best["result"]
        frame = study.trials_dataframe()
    """
    from .inspect import load as load_study

    study: Study = load_study(expdir)
    return study


def __getattr__(name: str) -> Any:
    """The public classes and functions (``emews.Algorithm``, ``emews.Result``, ...) and the
    submodules ``emews.eqpy`` and ``emews.plugin``, imported on first use."""
    if name in ("eqpy", "plugin"):
        return importlib.import_module(f"emews.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'emews' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
