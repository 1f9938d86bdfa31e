"""``emews export``: a study's evaluations as an Optuna study, a CSV file or a Parquet file.

Optuna: one trial per evaluation (per point, in a study with replicas), as
:mod:`emews.inspect._optuna_view` maps it for ``emews dashboard`` too; docs/src/inspecting.md
and docs/src/dashboard.md say what a trial holds.
"""

import urllib.parse
import warnings

from .._errors import ConfigError, missing_extra
from .._space import Space
from ._plot import write_file

FORMATS = ("optuna", "csv", "parquet")


def export(study, to, target, study_name=None):
    """Write ``study`` in format ``to`` (one of :data:`FORMATS`) to ``target`` (a file, or an
    Optuna storage URL); return a one-line description of what was written."""
    if to == "optuna":
        name, trials = to_optuna(study, target, study_name)
        return f"wrote Optuna study {name!r} ({trials} trials) to {target}"
    if to == "csv":
        from ._show import as_csv

        write_file(target, lambda path: path.write_text(as_csv(study, study.rows),
                                                        encoding="utf-8"))
    else:
        try:
            import pandas  # noqa: F401 - the table
            import pyarrow  # noqa: F401 - pandas writes Parquet through it
        except ImportError as missing:
            raise missing_extra("emews export --to parquet", missing.name, "export") from None
        write_file(target, study.trials_dataframe().to_parquet)
    return f"wrote {len(study.rows)} evaluations to {target}"


def to_optuna(study, url, study_name=None):
    """Add ``study``'s evaluations (its points, in a study with replicas) to a new Optuna study
    (default name: the experiment's directory name) in the storage at ``url``; return the
    study's name and its number of trials."""
    try:
        import optuna
    except ImportError:
        raise missing_extra("--to optuna", "optuna", "export") from None
    if "://" not in url:
        raise ConfigError("--to optuna", "TARGET must be a storage URL such as "
                          "sqlite:///study.db", url)
    name, space = study_name or study.expdir.name, study.config.study.space
    if not space:
        raise ConfigError(str(study.expdir / "config.json"), "must name the study's search "
                          "space ([study].space) to export to Optuna", None, show_value=False)
    from ._optuna_view import directions, distributions, frozen_trial, point_trials, user_attrs

    dists, expdir = distributions(Space.from_file(space)), study.expdir.resolve()
    criteria = study.criteria
    if study.replicas is not None:
        trials = point_trials(study.rows, study.replicas, dists, expdir=expdir)
    else:
        curves = study.curves()
        trials = [frozen_trial(row, dists, expdir=expdir, curve=curves.get(row["id"]),
                               criteria=criteria) for row in study.rows]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        created = optuna.create_study(storage=url, study_name=name,
                                      directions=directions(criteria))
    except optuna.exceptions.DuplicatedStudyError:
        raise ConfigError(url, "must not already hold a study of that name (choose another "
                          "with --study-name)", name) from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's and the drivers' many errors
        parsed = urllib.parse.urlparse(url)
        where = f"file {parsed.path[1:]}" if parsed.scheme == "sqlite" else parsed.scheme
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(url, f"must be an Optuna storage that can be written ({where})",
                          first) from None
    for key, value in user_attrs(study).items():
        created.set_user_attr(key, value)
    if criteria.vector:
        with warnings.catch_warnings():   # Optuna: "experimental" since 3.2, kept in 5.0
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            created.set_metric_names(list(criteria.names))
    created.add_trials(trials)
    return name, len(trials)
