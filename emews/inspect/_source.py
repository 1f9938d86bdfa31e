"""Where a study's store is, and reading it without getting in its writer's way.

An experiment directory holds ``results.db``, or names its PostgreSQL database in
``config.json`` (``[system].storage``); each read here opens that store read-only, reads, and
closes it (:meth:`emews.store.Store.snapshot`, ``rows``, ``best``).
"""

import math
from pathlib import Path

from .._config import Config
from .._errors import ConfigError
from .._experiment import load_experiment, read_store
from .._status import Status
from ..store._base import curves_of


def experiment_dir(expdir):
    """``expdir`` as a Path, or a one-line :class:`ConfigError` when it holds no study."""
    path = Path(expdir)
    if not path.is_dir():
        raise ConfigError(str(expdir), "must be an experiment directory (EXPDIR/results.db); "
                          "no such directory", None, show_value=False)
    if not (path / "results.db").is_file() and not stored_config(path).system.storage:
        raise ConfigError(str(expdir), "must be an experiment directory holding results.db; "
                          "there is none", None, show_value=False)
    return path


def stored_config(expdir):
    """The :class:`~emews._config.Config` of the study in ``expdir``, from its ``config.json``
    (the defaults when it has none)."""
    return load_experiment(expdir) if (Path(expdir) / "config.json").is_file() else Config()


def read(expdir, reading=lambda store: store.snapshot()):
    """``reading(store)`` (default: the :class:`~emews.store.Snapshot`) of the study in
    ``expdir``, as :func:`~emews._experiment.read_store` reads it, with the defaults' store
    (``results.db``) for a study without ``config.json``."""
    return read_store(expdir, reading, stored_config(expdir))


def read_curves(expdir, row=None):
    """The learning curves of the study in ``expdir``: ``{evaluation id: {step: value}}``, the
    reports of each evaluation's latest attempt (NaN where a value was not finite; ``{}``
    where no model reported). With ``row`` (one of the study's rows): its curve alone."""
    if row is None:
        return read(expdir, lambda store: store.curves())
    return read(expdir, lambda store: curves_of(
        (r["id"], r["step"], r["value"]) for r in store.reports(row["id"])
        if r["attempt"] == row["attempt"]))


def read_thaws(expdir):
    """The curves of the evaluations that were paused (freeze-thaw): ``{id: [{step: value},
    ...]}``, each attempt's reports in attempt order, as :func:`read_curves` reads them."""
    def reading(store):
        paused = {row["id"] for row in store.attempts() if row["status"] == Status.PAUSED}
        attempts = {}
        for r in store.reports():
            if r["id"] in paused:
                curve = attempts.setdefault(r["id"], {}).setdefault(r["attempt"], {})
                curve[r["step"]] = math.nan if r["value"] is None else r["value"]
        return {i: [parts[k] for k in sorted(parts)] for i, parts in attempts.items()}
    return read(expdir, reading)
