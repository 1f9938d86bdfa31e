"""A study as its store left it: read once, read-only, in one transaction
(:meth:`emews.store.Store.snapshot`), never in the way of a running writer.
"""

import os
import socket

from ..core._pareto import front_rows
from ..core._segments import SEGMENT
from ..core._replicas import best_point, settings_of, summarize
from .._errors import missing_extra
from .._status import Status
from ..store._lock import StudyLock
from ._source import experiment_dir, read, read_curves, stored_config


def load(expdir):
    """The :class:`Study` in experiment directory ``expdir`` (running or finished)."""
    return Study(expdir)


class Study:
    """One experiment's evaluations, read once from its store.

    ``rows`` are the points (dicts with ``params`` and ``metrics`` decoded), ``attempts``
    every finished attempt, ``meta`` the store's meta table, ``config`` the study's
    :class:`~emews._config.Config` as its ``config.json`` holds it (the defaults when there is
    none).
    """

    def __init__(self, expdir):
        self.expdir = experiment_dir(expdir)
        self.config = stored_config(self.expdir)
        self.rows, self.attempts, self.meta = read(self.expdir)

    @property
    def objective(self):
        """The name of the value minimized (``MODEL_RETURN``)."""
        return self.config.study.model_return

    @property
    def budget(self):
        """The evaluation budget, or ``None``."""
        return self.config.study.budget

    @property
    def final(self):
        """The ME's final message as stored when the study ended, or ``None`` while it runs."""
        return self.meta.get("final")

    @property
    def done(self):
        """The evaluations with a value, best first: by the value; in a study of several
        objectives or with constraints, the feasible ones first, each by its first objective
        in that objective's direction (the front: :attr:`pareto`)."""
        rows = [r for r in self.rows if r["status"] == Status.DONE and r["result"] is not None]
        criteria = self.criteria
        if not criteria.vector:
            return sorted(rows, key=lambda r: (r["result"], r["id"]))
        sign = -1 if criteria.directions[0] == "maximize" else 1
        return sorted(rows, key=lambda r: (r.get("feasible") is False, sign * (
            r["objectives"][0] if r.get("objectives") else r["result"]), r["id"]))

    @property
    def failed(self):
        """The failed evaluations, by id."""
        return [r for r in self.rows if r["status"] == Status.FAILED]

    @property
    def replicas(self):
        """The study's replica settings (``replicas``, ``replica_objective``,
        ``replica_seed_param``) when it evaluates each point more than once, else ``None``."""
        return settings_of(self.config.study)

    @property
    def points(self):
        """Per point of a study with replicas (``[]`` without), best first, as its
        ``final.json`` judges them (:func:`emews.core._replicas.summarize` lists the fields:
        ``point``, ``mean``, ``std``, ``count``, ``failed``, ``complete``, ``value``, ``ids``)."""
        study = self.config.study
        if study.replicas <= 1:
            return []
        return summarize(self.rows, study.replica_seed_param, study.replica_objective,
                         study.replicas)

    @property
    def best(self):
        """The best evaluation (a row), or ``None``; in a study with replicas, the best point
        as ``final.json`` names it: its entry of :attr:`points`, with its ``params`` (the
        point) and its ``result`` (the value its search was told) as a row has them."""
        if self.replicas is not None:
            best = best_point(self.rows, self.replicas)
            return None if best is None else {**best, "params": best["point"],
                                              "result": best["value"]}
        done = self.done
        return done[0] if done else None

    @property
    def criteria(self):
        """The study's :class:`~emews.core._criteria.Criteria`: its objectives (one:
        ``model_return``), their directions and its constraints."""
        return self.config.criteria

    @property
    def pareto(self):
        """In a study of several objectives or with constraints, the rows of its Pareto front
        as the store has it now, by id (:func:`emews.core._pareto.front_rows`); ``None`` in a
        study of one objective."""
        criteria = self.criteria
        return front_rows(self.rows, criteria.directions) if criteria.vector else None

    @property
    def param_names(self):
        """Parameter names, in the order they first appear (a segment's record, of a
        population-based study, is not one: ``emews show --lineage`` shows it)."""
        return [n for n in _names(r["params"] for r in self.rows) if n != SEGMENT]

    @property
    def metric_names(self):
        """Metric names, in the order they first appear."""
        return _names(r["metrics"] for r in self.rows)

    def curves(self):
        """``{id: {step: value}}``: each evaluation's learning curve (the reports of its
        latest attempt; NaN where a value was not finite), read from the store when asked."""
        return read_curves(self.expdir)

    def is_running(self):
        """Whether the run that holds the study's lock is alive (on this host): a study that
        recorded its end runs again when it is resumed."""
        holder = StudyLock(self.expdir).holder()
        if holder.get("host") != socket.gethostname() or not holder.get("pid"):
            return False
        try:
            os.kill(holder["pid"], 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # it exists, under another user
        return True

    def table(self, rows=None):
        """``rows`` (default: all) as flat records: id, status, result, each parameter, each
        metric (``metric.NAME`` where a parameter has the same name), rank, seconds, error."""
        params, metrics = self.param_names, self.metric_names
        records = []
        for row in self.rows if rows is None else rows:
            started, finished = row["started"], row["finished"]
            record = {"id": row["id"], "status": row["status"], "result": row["result"]}
            record.update({name: row["params"].get(name) for name in params})
            record.update({self.metric_column(name): row["metrics"].get(name)
                           for name in metrics})
            record.update(rank=row["rank"], attempt=row["attempt"], run_id=row["run_id"],
                          seconds=None if started is None or finished is None
                          else finished - started, error=row["error"])
            records.append(record)
        return records

    def metric_column(self, name):
        """The column name of metric ``name`` in :meth:`table`."""
        return f"metric.{name}" if name in self.param_names or name in RESERVED else name

    def trials_dataframe(self):
        """A pandas DataFrame: one row per evaluation, one column per parameter and metric."""
        try:
            import pandas
        except ImportError:
            raise missing_extra("emews.load(...).trials_dataframe()", "pandas",
                                "export") from None
        return pandas.DataFrame.from_records(self.table(), columns=self.columns())

    def columns(self):
        """The column names of :meth:`table`, in order."""
        return (["id", "status", "result"] + self.param_names
                + [self.metric_column(m) for m in self.metric_names]
                + ["rank", "attempt", "run_id", "seconds", "error"])

    def to_optuna(self):
        """An Optuna ``Study`` over this experiment's store: a live, read-only view (see
        :mod:`emews.inspect._optuna_view`) that ``optuna.visualization`` can plot; every write
        through it raises."""
        from ._optuna_view import load_optuna_study

        return load_optuna_study([self.expdir])

    def plot(self, output=None, metric=None):
        """Draw the convergence and the workers' timeline (see :func:`emews.inspect._plot.plot`);
        the PNG's path."""
        from ._plot import plot

        return plot(self, output, metric)

    def report(self, output=None):
        """Write the HTML report (see :func:`emews.inspect._report.write_report`); its path."""
        from ._report import write_report

        return write_report(self, output)


RESERVED = ("id", "status", "result", "rank", "attempt", "run_id", "seconds", "error")


def _names(dicts):
    return list(dict.fromkeys(name for item in dicts for name in item))
