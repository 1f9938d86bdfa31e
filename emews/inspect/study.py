"""A study as its store left it: read once, read-only, never in the way of a running writer.

The store is opened with an SQLite ``mode=ro`` URI and read in one transaction (one
consistent snapshot); a study that is still running goes on writing meanwhile (WAL readers
never block the writer). In a directory this user cannot write to, with no write-ahead log
beside the store, nothing can be writing it: it is opened ``immutable`` (SQLite would otherwise
need to create its shared-memory file there).
"""

import json
import os
import socket
import sqlite3
import urllib.parse
from pathlib import Path

from ..errors import ConfigError
from ..store import schema
from ..store.sqlite import decoded


def load(expdir):
    """The :class:`Study` in experiment directory ``expdir`` (running or finished)."""
    return Study(expdir)


def experiment_dir(expdir):
    """``expdir`` as a Path, or a one-line :class:`ConfigError` when it holds no study."""
    path = Path(expdir)
    if not path.is_dir():
        raise ConfigError(str(expdir), "must be an experiment directory (EXPDIR/results.db); "
                          "no such directory", None, show_value=False)
    if not (path / "results.db").is_file() and not _storage(path):
        raise ConfigError(str(expdir), "must be an experiment directory holding results.db; "
                          "there is none", None, show_value=False)
    return path


class Study:
    """One experiment's evaluations, read once from ``EXPDIR/results.db``.

    ``rows`` are the points (dicts with ``params`` and ``metrics`` decoded), ``attempts``
    every finished attempt, ``meta`` the store's meta table, ``config`` the study's
    ``config.json`` (``{}`` when missing).
    """

    def __init__(self, expdir):
        self.expdir = experiment_dir(expdir)
        try:
            self.config = json.loads((self.expdir / "config.json").read_text())
        except (OSError, ValueError):
            self.config = {}
        if _storage(self.expdir):
            self.rows, self.attempts, self.meta = read_database(self.expdir)
        else:
            self.rows, self.attempts, self.meta = read_store(self.expdir / "results.db")

    @property
    def objective(self):
        """The name of the value minimized (``MODEL_RETURN``)."""
        return self.config.get("study", {}).get("model_return") or "val_loss"

    @property
    def budget(self):
        """The evaluation budget, or ``None``."""
        return self.config.get("study", {}).get("budget")

    @property
    def final(self):
        """The ME's final message as stored when the study ended, or ``None`` while it runs."""
        return self.meta.get("final")

    @property
    def done(self):
        """The evaluations with a value, best first."""
        return sorted((r for r in self.rows if r["status"] == "done" and r["result"] is not None),
                      key=lambda r: (r["result"], r["id"]))

    @property
    def failed(self):
        """The failed evaluations, by id."""
        return [r for r in self.rows if r["status"] == "failed"]

    @property
    def best(self):
        """The best evaluation (a row), or ``None``."""
        done = self.done
        return done[0] if done else None

    @property
    def param_names(self):
        """Parameter names, in the order they first appear."""
        return _names(r["params"] for r in self.rows)

    @property
    def metric_names(self):
        """Metric names, in the order they first appear."""
        return _names(r["metrics"] for r in self.rows)

    def is_running(self):
        """Whether the run that holds the study's lock is alive (on this host)."""
        if self.final is not None:
            return False
        try:
            holder = json.loads((self.expdir / "lock").read_text() or "{}")
        except (OSError, ValueError):
            return False
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
            record = {"id": row["id"], "status": row["status"], "result": row["result"]}
            record.update({name: row["params"].get(name) for name in params})
            record.update({self.metric_column(name): row["metrics"].get(name)
                           for name in metrics})
            record.update(rank=row["rank"], attempt=row["attempt"], run_id=row["run_id"],
                          seconds=_seconds(row), error=row["error"])
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
            raise ConfigError("emews.load(...).trials_dataframe()", "needs pandas: pip install "
                              "'emews-hpo[export]'", None, show_value=False) from None
        return pandas.DataFrame.from_records(self.table(), columns=self.columns())

    def columns(self):
        """The column names of :meth:`table`, in order."""
        return (["id", "status", "result"] + self.param_names
                + [self.metric_column(m) for m in self.metric_names]
                + ["rank", "attempt", "run_id", "seconds", "error"])

    def report(self, output=None):
        """Write the HTML report (see :func:`emews.inspect.report.write_report`); its path."""
        from .report import write_report

        return write_report(self, output)


RESERVED = ("id", "status", "result", "rank", "attempt", "run_id", "seconds", "error")


def _names(dicts):
    names = {}
    for item in dicts:
        names.update(dict.fromkeys(item))
    return list(names)


def _seconds(row):
    if row["started"] is None or row["finished"] is None:
        return None
    return row["finished"] - row["started"]


def _storage(expdir):
    """The study's ``[system].storage`` (a ``postgresql://`` URL), or ``None``."""
    try:
        return json.loads((Path(expdir) / "config.json").read_text())["system"]["storage"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_database(expdir):
    """``(rows, attempts, meta)`` of a study whose store is a PostgreSQL database."""
    from ..store import study_store

    store = study_store(expdir, _storage(expdir), create=False)
    try:
        return store.rows(), store.attempts(), store.all_meta()
    finally:
        store.close()


def read_store(path):
    """``(rows, attempts, meta)`` of the store at ``path``, read in one read-only
    transaction (without the log tails: up to 64 KiB each); a one-line :class:`ConfigError`
    when it is not a readable emews store."""
    path = Path(path).resolve()
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists():
        uri += "&immutable=1"  # no writer can be at work where no journal can be made
    try:
        db = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            db.row_factory = sqlite3.Row
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > schema.VERSION:
                raise ConfigError(str(path), f"was written by a newer emews (schema version "
                                  f"{version}; this one reads up to {schema.VERSION})", None,
                                  show_value=False)
            db.execute("BEGIN")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            if "evaluations" not in tables:
                raise ConfigError(str(path), "must be an emews store (it has no evaluations "
                                  "table)", None, show_value=False)
            rows = [decoded(r) for r in db.execute(
                f"SELECT {_columns(db, 'evaluations')} FROM evaluations ORDER BY id")]
            attempts = [dict(r) for r in db.execute(
                f"SELECT {_columns(db, 'attempts')} FROM attempts ORDER BY id, attempt")] \
                if "attempts" in tables else []
            meta = {key: json.loads(value)
                    for key, value in db.execute("SELECT key, value FROM meta")} \
                if "meta" in tables else {}
            db.execute("COMMIT")
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise ConfigError(str(path), "must be a readable SQLite store", str(exc)) from None
    return rows, attempts, meta


def _columns(db, table):
    """The columns of ``table`` but ``log_tail``, as SQL (names from the schema itself)."""
    names = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
    return ", ".join(f'"{name}"' for name in names if name != "log_tail")
