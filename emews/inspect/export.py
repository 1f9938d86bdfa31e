"""``emews export``: a study's evaluations as an Optuna study, a CSV file or a Parquet file.

Optuna: one trial per evaluation, its parameters with distributions built from the study's
search-space file, its value (``done``: COMPLETE), state (``failed``, ``cancelled``,
``interrupted``: FAIL; ``queued``: WAITING; ``running``: RUNNING) and user attributes
(``emews_id``, ``run_id``, ``status``, ``rank``, ``attempt``, ``error``, ``metrics``). A study
with replicas gives one trial per point instead, as ``final.json`` judges it: its value is the
one its search was told (the replicas' mean or worst; FAIL when a limit cut the point short or
every replica failed), and its user attributes are the replicas' ``emews_ids``, ``mean``,
``std``, ``count``, ``failed`` and ``complete``.
"""

import datetime
import urllib.parse
from pathlib import Path

from ..errors import ConfigError
from ..space import Categorical, Constant, Float, Int, Logical, Space
from ..status import Status

FORMATS = ("optuna", "csv", "parquet")


def export(study, to, target, study_name=None):
    """Write ``study`` in format ``to`` (one of :data:`FORMATS`) to ``target`` (a file, or an
    Optuna storage URL); return a one-line description of what was written."""
    if to == "optuna":
        name, trials = to_optuna(study, target, study_name)
        return f"wrote Optuna study {name!r} ({trials} trials) to {target}"
    if to == "csv":
        _write(target, lambda path: _write_csv(study, path))
    else:
        frame = study.trials_dataframe()
        _parquet_engine()
        _write(target, frame.to_parquet)
    return f"wrote {len(study.rows)} evaluations to {target}"


def _write(target, writer):
    path = Path(target)
    if path.is_dir():
        raise ConfigError(str(target), "must be a file path, not a directory", None,
                          show_value=False)
    try:
        writer(path)
    except OSError as exc:
        raise ConfigError(str(target), "must be a writable file path",
                          exc.strerror or str(exc)) from None


def _write_csv(study, path):
    from .show import as_csv

    path.write_text(as_csv(study, study.rows), encoding="utf-8")


def _parquet_engine():
    try:
        import pyarrow  # noqa: F401 - pandas writes Parquet through it
    except ImportError:
        raise ConfigError("--to parquet", "needs pyarrow: pip install 'emews-hpo[export]'",
                          None, show_value=False) from None


def distributions(space):
    """Optuna distributions of the parameters of an :class:`emews.space.Space`."""
    import optuna.distributions as d

    result = {}
    for param in space.params:
        if isinstance(param, Int):
            result[param.name] = d.IntDistribution(param.lower, param.upper, log=param.log)
        elif isinstance(param, Float):
            result[param.name] = d.FloatDistribution(param.lower, param.upper, log=param.log)
        elif isinstance(param, Categorical):
            result[param.name] = d.CategoricalDistribution(list(param.values))
        elif isinstance(param, Logical):
            result[param.name] = d.CategoricalDistribution([False, True])
        elif isinstance(param, Constant):
            result[param.name] = d.CategoricalDistribution([param.value])
    return result


def _space(study):
    path = study.config.get("study", {}).get("space")
    if not path:
        raise ConfigError(str(study.expdir / "config.json"), "must name the study's search "
                          "space ([study].space) to export to Optuna", None, show_value=False)
    return Space.from_file(path)


def to_optuna(study, url, study_name=None):
    """Add ``study``'s evaluations (its points, in a study with replicas) to a new Optuna study
    (default name: the experiment's directory name) in the storage at ``url``; return the
    study's name and its number of trials."""
    try:
        import optuna
    except ImportError:
        raise ConfigError("--to optuna", "needs optuna: pip install 'emews-hpo[export]'", None,
                          show_value=False) from None
    if "://" not in url:
        raise ConfigError("--to optuna", "TARGET must be a storage URL such as "
                          "sqlite:///study.db", url)
    name = study_name or study.expdir.name
    dists = distributions(_space(study))
    if study.replicas is not None:
        by_id = {row["id"]: row for row in study.rows}
        trials = [_point_trial(optuna, point, [by_id[i] for i in point["ids"]], dists)
                  for point in study.points]
    else:
        trials = [_trial(optuna, row, dists) for row in study.rows]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        created = optuna.create_study(storage=url, study_name=name, direction="minimize")
    except optuna.exceptions.DuplicatedStudyError:
        raise ConfigError(url, "must not already hold a study of that name (choose another "
                          "with --study-name)", name) from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's and the drivers' many errors
        raise ConfigError(url, "must be an Optuna storage that can be written "
                          f"({_where(url)})", one_line_of(exc)) from None
    created.set_user_attr("emews_expdir", str(study.expdir))
    created.set_user_attr("objective", study.objective)
    created.add_trials(trials)
    return name, len(trials)


def _where(url):
    parsed = urllib.parse.urlparse(url)
    return f"file {parsed.path[1:]}" if parsed.scheme == "sqlite" else parsed.scheme


def one_line_of(exc):
    """The first line of an exception's message."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


STATES = {Status.DONE: "COMPLETE", Status.FAILED: "FAIL", Status.CANCELLED: "FAIL",
          Status.INTERRUPTED: "FAIL", Status.QUEUED: "WAITING", Status.RUNNING: "RUNNING"}


def _trial(optuna, row, dists):
    state = getattr(optuna.trial.TrialState, STATES[row["status"]])
    value = row["result"] if state == optuna.trial.TrialState.COMPLETE else None
    params = {name: row["params"][name] for name in dists if name in row["params"]}
    attrs = {"emews_id": row["id"], "run_id": row["run_id"], "status": row["status"],
             "rank": row["rank"], "attempt": row["attempt"], "error": row["error"],
             "metrics": row["metrics"]}
    finished = state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    started = state != optuna.trial.TrialState.WAITING
    return optuna.trial.FrozenTrial(
        number=0, trial_id=0, state=state, value=value, params=params,
        distributions={name: dists[name] for name in params}, user_attrs=attrs,
        system_attrs={}, intermediate_values={},
        datetime_start=_time(row["started"]) if started else None,
        datetime_complete=_time(row["finished"]) if finished else None)


def _point_trial(optuna, point, replicas, dists):
    """The trial of one point of a study with replicas (``replicas``: its rows)."""
    complete = point["value"] is not None
    state = optuna.trial.TrialState.COMPLETE if complete else optuna.trial.TrialState.FAIL
    params = {name: point["point"][name] for name in dists if name in point["point"]}
    attrs = {"emews_ids": point["ids"],
             **{key: point[key] for key in ("mean", "std", "count", "failed", "complete")}}
    started = [r["started"] for r in replicas if r["started"] is not None]
    finished = [r["finished"] for r in replicas if r["finished"] is not None]
    return optuna.trial.FrozenTrial(
        number=0, trial_id=0, state=state, value=point["value"], params=params,
        distributions={name: dists[name] for name in params}, user_attrs=attrs,
        system_attrs={}, intermediate_values={},
        datetime_start=_time(min(started, default=None)),
        datetime_complete=_time(max(finished, default=None)))


def _time(stamp):
    return None if stamp is None else datetime.datetime.fromtimestamp(stamp)
