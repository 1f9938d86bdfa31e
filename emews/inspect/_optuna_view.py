"""Studies as Optuna sees them: one mapping of our rows to Optuna trials, and a read-only
Optuna storage over our store (:class:`StoreView`), live and without a copy.

::

    EXPDIR/results.db, or its PostgreSQL database   (one read-only store per read)
        --rows--> frozen_trial()  --> optuna FrozenTrial   (_export.py writes them to a storage;
                                                            StoreView serves them)

A study is one experiment directory; a trial's number is its evaluation's id, its trial id
``study_id << 32 | number``. What a trial holds, what is kept between reads and what it costs:
docs/src/dashboard.md. This module imports Optuna: import it only where Optuna is wanted.
"""

import copy
import datetime
import functools
import json
import math
import os
import threading
from pathlib import Path

import optuna
from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                  IntDistribution)
from optuna.storages import BaseStorage
from optuna.study import StudyDirection
from optuna.study._frozen import FrozenStudy
from optuna.trial import FrozenTrial, TrialState

from ..core._algorithm import point_key
from ..core._replicas import settings_of, summarize
from ..core._segments import split
from .._errors import ConfigError, EmewsError
from .._space import Categorical, Constant, Float, Int, Logical, Space
from .._status import FINAL, Status
from ._source import experiment_dir, read, read_curves, stored_config

STATES = {Status.QUEUED: TrialState.RUNNING, Status.RUNNING: TrialState.RUNNING,
          Status.DONE: TrialState.COMPLETE, Status.FAILED: TrialState.FAIL,
          Status.CANCELLED: TrialState.FAIL, Status.INTERRUPTED: TrialState.FAIL,
          Status.PRUNED: TrialState.PRUNED, Status.PAUSED: TrialState.PRUNED}

TRIAL_BITS = 32   # a trial id is study_id << TRIAL_BITS | number
METRIC_NAMES = "study:metric_names"   # Optuna's system attribute: objectives' names (axis labels)


class ReadOnlyError(EmewsError):
    """A write to a :class:`StoreView`: emews's store is written by its study alone."""

    def __init__(self, action):
        super().__init__(f"the emews study is read-only here: {action} refused (nothing was "
                         "written; a study's store is written by its run alone)")


# --- one mapping: a row of ours -> an Optuna trial ------------------------------------------

def distributions(space):
    """Optuna distributions of the parameters of an :class:`emews._space.Space`."""
    result = {}
    for param in space.params:
        if isinstance(param, Int):
            result[param.name] = IntDistribution(param.lower, param.upper, log=param.log)
        elif isinstance(param, Float):
            result[param.name] = FloatDistribution(param.lower, param.upper, log=param.log)
        elif isinstance(param, Categorical):
            result[param.name] = CategoricalDistribution(list(param.values))
        elif isinstance(param, Logical):
            result[param.name] = CategoricalDistribution([False, True])
        elif isinstance(param, Constant):
            result[param.name] = CategoricalDistribution([param.value])
    return result


def observed_distributions(rows):
    """Distributions over the parameter values seen in ``rows``, for a study whose search-space
    file is gone (an experiment copied off its machine)."""
    values = {}
    for row in rows:
        for name, value in split(row["params"] or {})[0].items():
            values.setdefault(name, []).append(value)
    result = {}
    for name, seen in values.items():
        if all(isinstance(v, int) and not isinstance(v, bool) for v in seen):
            result[name] = IntDistribution(min(seen), max(seen))
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
            result[name] = FloatDistribution(min(seen), max(seen))
        else:
            choices = list(dict.fromkeys(v if isinstance(v, (bool, int, float, str)) or v is None
                                         else json.dumps(v) for v in seen))
            result[name] = CategoricalDistribution(choices)
    return result


def thinned(curve, points):
    """``curve`` (``{step: value}``) cut to at most ``points`` (3 or more) of its steps: its
    first and last, the step of its lowest value, and steps evenly spaced between them (the
    same steps for curves of the same steps); whole where ``points`` is ``None``."""
    if points is None or curve is None or len(curve) <= points:
        return curve
    steps = sorted(curve)
    best = min((step for step in steps if curve[step] == curve[step]),   # NaN != NaN
               key=curve.__getitem__, default=steps[0])
    keep = {steps[i] for i in _spaced(len(steps), points - 1)}   # and the best one besides
    keep.add(best)
    return {step: curve[step] for step in sorted(keep)}


@functools.lru_cache(maxsize=64)
def _spaced(count, spaced):
    """The indices of ``spaced`` evenly spaced places among ``count``, first and last among
    them (computed once for every curve of as many steps)."""
    return frozenset(round(k * (count - 1) / (spaced - 1)) for k in range(spaced))


def frozen_trial(row, dists, number=0, trial_id=0, expdir=None, curve=None, criteria=None):
    """The Optuna trial of one of our rows (as :meth:`emews.store.Store.rows` gives it), as
    docs/src/dashboard.md says (``criteria``: a study's of several objectives or with
    constraints; ``curve``: its intermediate values). A study with replicas has
    :func:`point_trials` instead."""
    state = STATES[row["status"]]
    vector = criteria is not None and criteria.vector
    value = (row.get("objectives") if vector else row["result"]) \
        if state == TrialState.COMPLETE else None
    if state == TrialState.COMPLETE and value is None:
        state = TrialState.FAIL   # done without a value (a NaN): Optuna's FAIL
    system = {}
    if vector and criteria.constraints and value is not None:
        judged = criteria.search_value(value, row["metrics"] or {})
        system["constraints"] = list(judged.violations)
    params = {name: row["params"][name] for name in dists if name in (row["params"] or {})}
    attrs = {"emews_id": row["id"], "run_id": row["run_id"], "status": row["status"],
             "rank": row["rank"], "attempt": row["attempt"], "error": row["error"],
             "metrics": row["metrics"]}
    record = split(row["params"] or {})[1]
    if record is not None:
        attrs["segment"] = record
    run_dir = _run_dir(expdir, row)
    if run_dir is not None:
        attrs["run_dir"] = run_dir
    start = row["started"] if row["started"] is not None else row.get("queued")
    end = (row["finished"] if row["finished"] is not None else start) if state.is_finished() \
        else None
    return FrozenTrial(
        number=number, trial_id=trial_id, state=state, value=None if vector else value,
        values=value if vector else None, params=params,
        distributions={name: dists[name] for name in params}, user_attrs=attrs,
        system_attrs=system, intermediate_values=curve or {},
        datetime_start=_time(start), datetime_complete=_time(end))


def directions(criteria):
    """Optuna's directions of a study's :class:`~emews.core._criteria.Criteria`."""
    return [StudyDirection.MAXIMIZE if d == "maximize" else StudyDirection.MINIMIZE
            for d in criteria.directions]


def user_attrs(study):
    """The Optuna study's user attributes of an emews study (a :class:`~.snapshot.Study` or
    an experiment of a :class:`StoreView`)."""
    attrs = {"emews_expdir": str(study.expdir), "objective": study.objective}
    if study.criteria.vector:
        attrs.update(objectives=list(study.criteria.names),
                     constraints=[str(c) for c in study.criteria.constraints])
    return attrs


def point_trials(rows, replicas, dists, study_id=0, expdir=None):
    """The Optuna trials of a study with ``replicas`` (:func:`settings_of`): one per point with
    a finished replica, in the order proposed, judged as ``final.json`` judges them: COMPLETE
    with the value its search was told, else RUNNING while a replica is to finish, else FAIL."""
    seed = replicas["replica_seed_param"]
    waiting = {point_key({k: v for k, v in row["params"].items() if k != seed})
               for row in rows if row["status"] not in FINAL}
    by_id = {row["id"]: row for row in rows}
    points = sorted(summarize(rows, seed, replicas["replica_objective"], replicas["replicas"]),
                    key=lambda point: min(point["ids"]))
    trials = []
    for number, point in enumerate(points):
        done = [by_id[i] for i in point["ids"]]
        state = TrialState.COMPLETE if point["value"] is not None else (
            TrialState.RUNNING if point_key(point["point"]) in waiting else TrialState.FAIL)
        params = {name: point["point"][name] for name in dists if name in point["point"]}
        attrs = {"emews_ids": point["ids"],
                 **{key: point[key] for key in ("mean", "std", "count", "failed", "complete")}}
        if expdir is not None:
            attrs["run_dirs"] = [d for d in map(functools.partial(_run_dir, expdir), done)
                                 if d is not None]
        starts = [r["started"] for r in done if r["started"] is not None]
        ends = [r["finished"] for r in done if r["finished"] is not None]
        trials.append(FrozenTrial(
            number=number, trial_id=study_id << TRIAL_BITS | number, state=state,
            value=point["value"], params=params,
            distributions={name: dists[name] for name in params}, user_attrs=attrs,
            system_attrs={}, intermediate_values={},
            datetime_start=_time(min(starts, default=None)),
            datetime_complete=_time(max(ends, default=None)) if state.is_finished() else None))
    return trials


def _run_dir(expdir, row):
    """The run directory of ``row`` under ``expdir``, or ``None`` where there is none."""
    if expdir is None or not row["run_id"]:
        return None
    path = os.path.join(expdir, "run", row["run_id"])
    return path if os.path.isdir(path) else None


def _time(stamp):
    return None if stamp is None else datetime.datetime.fromtimestamp(stamp)


# --- the read-only storage ------------------------------------------------------------------

def experiments(path):
    """The experiment directories of ``path``: itself (``EXPDIR``), else the ``EXP*`` under it
    (``DATA_DIR/NAME``), in name order; a :class:`ConfigError` when there are none."""
    path = Path(path)
    if path.is_dir() and not (path / "results.db").is_file() and not (
            path / "config.json").is_file():
        found = []
        for child in sorted(path.iterdir()):
            try:
                found.append(experiment_dir(child))
            except ConfigError:
                continue
        if found:
            return found
        raise ConfigError(str(path), "must be an experiment directory (EXPDIR, holding "
                          "results.db) or a workflow's DATA_DIR/NAME holding some; there is "
                          "neither", None, show_value=False)
    return [experiment_dir(path)]


def _refused(action):
    """A write method of :class:`StoreView` that raises :class:`ReadOnlyError`."""
    def write(self, *args, **kwargs):
        raise ReadOnlyError(action)
    return write


class _Experiment:
    """One experiment as a study: its name, directory and distributions, and what a
    :class:`StoreView` keeps of it between reads: the reports read so far (``curves``:
    ``{(id, attempt): {step: value}}``) and each evaluation's trial with its row."""

    def __init__(self, expdir, name):
        self.expdir, self.name = expdir.resolve(), name
        config = stored_config(expdir)
        self.criteria = config.criteria
        self.objective = self.criteria.names[0]
        self.space_file = config.study.space
        self.replicas = settings_of(config.study)   # with replicas: one trial per point
        self._dists = None
        self.last_report = 0
        self.curves = {}
        self.trials = {}   # evaluation id -> (row, trial)
        self.trial_dists = None   # the distributions of those trials

    def dists(self, rows):
        """The study's distributions: from its search-space file, else from ``rows``."""
        if self._dists is None and self.space_file and Path(self.space_file).is_file():
            self._dists = distributions(Space.from_file(self.space_file))
        return self._dists if self._dists is not None else observed_distributions(rows)

    def read_reports(self):
        """Read the reports that are new since the last read; the ``(id, attempt)`` of the
        curves they changed."""
        changed, key, curve = set(), None, None
        reports = read(self.expdir, lambda store: store.report_values(self.last_report))
        for _, point_id, attempt, step, value in reports:
            if (point_id, attempt) != key:   # a model's reports mostly come in a row
                key = point_id, attempt
                curve = self.curves.setdefault(key, {})
                changed.add(key)
            curve[step] = math.nan if value is None else value
        if reports:
            self.last_report = reports[-1][0]
        return changed


class StoreView(BaseStorage):
    """A read-only Optuna storage over the studies of ``paths`` (each an ``EXPDIR`` or a
    ``DATA_DIR/NAME``): one study per experiment, named by its directory (``NAME/EXPnnn`` for a
    workflow's). Every read goes to the store; every write raises :class:`ReadOnlyError`.
    ``curve_points``: each learning curve :func:`thinned` to that many points."""

    def __init__(self, paths, curve_points=None):
        self.paths = [Path(p) for p in paths]
        self.curve_points = curve_points
        self._known = {}
        self._lock = threading.Lock()   # one refresh of what is kept at a time
        self._studies()   # a path that holds no study: a ConfigError now

    def _studies(self):
        studies = []
        for path in self.paths:
            for expdir in experiments(path):
                key = expdir.resolve()
                if key not in self._known:
                    name = expdir.name if expdir == path else f"{path.name}/{expdir.name}"
                    self._known[key] = _Experiment(expdir, name)
                studies.append(self._known[key])
        return studies

    def _study(self, study_id):
        studies = self._studies()
        if not 0 <= study_id < len(studies):
            raise KeyError(f"no study with id {study_id}")
        return studies[study_id]

    # --- studies

    def get_all_studies(self):
        return [FrozenStudy(study.name, None, user_attrs(study),
                            {METRIC_NAMES: list(study.criteria.names)}, study_id,
                            directions=directions(study.criteria))
                for study_id, study in enumerate(self._studies())]

    def get_study_id_from_name(self, study_name):
        for study_id, study in enumerate(self._studies()):
            if study.name == study_name:
                return study_id
        raise KeyError(f"no study named {study_name!r}")

    def get_study_name_from_id(self, study_id):
        return self._study(study_id).name

    def get_study_directions(self, study_id):
        return directions(self._study(study_id).criteria)

    def get_study_user_attrs(self, study_id):
        return user_attrs(self._study(study_id))

    def get_study_system_attrs(self, study_id):
        return {METRIC_NAMES: list(self._study(study_id).criteria.names)}

    # --- trials

    def get_all_trials(self, study_id, deepcopy=True, states=None):
        study = self._study(study_id)
        rows = read(study.expdir, lambda store: store.rows())
        dists = study.dists(rows)
        if study.replicas is not None:
            trials = point_trials(rows, study.replicas, dists, study_id, study.expdir)
        else:
            with self._lock:
                trials = self._trials(study, study_id, rows, dists)
        if states is not None:
            trials = [t for t in trials if t.state in states]
        return copy.deepcopy(trials) if deepcopy else trials   # kept ones: a caller's copy

    def _trials(self, study, study_id, rows, dists):
        """The trials of ``rows``: kept ones where row, curve and distributions are the same,
        the others made anew."""
        changed = study.read_reports()
        if dists != study.trial_dists:
            study.trials, study.trial_dists = {}, dists
        trials = []
        for row in rows:
            key = (row["id"], row["attempt"])
            old = study.trials.get(row["id"])
            if old is None or old[0] != row or key in changed:
                old = study.trials[row["id"]] = row, frozen_trial(
                    row, dists, row["id"], study_id << TRIAL_BITS | row["id"], study.expdir,
                    thinned(study.curves.get(key), self.curve_points), study.criteria)
            trials.append(old[1])
        return trials

    def get_best_trial(self, study_id):
        study = self._study(study_id)
        if study.criteria.vector and len(study.criteria.names) == 1:   # constraints alone
            feasible = [t for t in self.get_all_trials(study_id, deepcopy=False,
                                                       states=(TrialState.COMPLETE,))
                        if all(c <= 0 for c in t.system_attrs.get("constraints", ()))]
            if not feasible:
                raise ValueError("no feasible trial is completed yet")
            sign = -1 if study.criteria.directions[0] == "maximize" else 1
            return min(feasible, key=lambda t: (sign * t.values[0], t.number))
        if study.replicas is not None or study.criteria.vector or study.space_file is None \
                or not Path(study.space_file).is_file():
            return super().get_best_trial(study_id)   # points, several objectives (Optuna
            #                                           refuses), or distributions from rows
        best = read(study.expdir, lambda store: store.best())
        if best is None:
            raise ValueError("no trial is completed yet")   # as Optuna's storages say it
        number = best["id"]
        curve = thinned(read_curves(study.expdir, best).get(number), self.curve_points)
        return frozen_trial(best, study.dists([]), number, study_id << TRIAL_BITS | number,
                            study.expdir, curve)

    def get_trial(self, trial_id):
        study_id, number = trial_id >> TRIAL_BITS, trial_id & ((1 << TRIAL_BITS) - 1)
        for trial in self.get_all_trials(study_id, deepcopy=False):
            if trial.number == number:
                return copy.deepcopy(trial)
        raise KeyError(f"no trial with id {trial_id}")

    def get_trial_id_from_study_id_trial_number(self, study_id, trial_number):
        self._study(study_id)
        return study_id << TRIAL_BITS | trial_number

    # --- writes: every one refused
    create_new_study = _refused("creating a study")
    delete_study = _refused("deleting a study")
    set_study_user_attr = _refused("setting a study's user attribute")
    set_study_system_attr = _refused("setting a study's system attribute (notes, preferences)")
    create_new_trial = _refused("creating a trial (ask, enqueue)")
    set_trial_param = _refused("setting a trial's parameter")
    set_trial_state_values = _refused("setting a trial's state (tell)")
    set_trial_intermediate_value = _refused("reporting an intermediate value")
    set_trial_user_attr = _refused("setting a trial's user attribute")
    set_trial_system_attr = _refused("setting a trial's system attribute (notes)")


def load_optuna_study(paths):
    """The Optuna ``Study`` of the one experiment in ``paths``, over a :class:`StoreView`."""
    view = StoreView(paths)
    (study,) = view.get_all_studies()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=study.study_name, storage=view)
