"""The experiment's store in SQLite (``EXPDIR/results.db``): :class:`SQLiteStore`, the
:class:`~emews.store._base.Store` contract on one file.

One writer, the master, whose connection holds no write lock between commits (the ME thread's
checkpoint and ``emews status`` never wait on the master); readers open the file ``mode=ro``
(``readonly=True``) and read it in one transaction (WAL readers never block the writer). The
writer migrates a store of an older schema (:mod:`._schema`).
"""

import contextlib
import functools
import json
import os
import re
import sqlite3
import urllib.parse
from pathlib import Path

from .._errors import ConfigError, StoreError
from .._status import Status
from . import _schema as schema
from ._base import Snapshot, Store, curves_of, decoded
from ._filesystem import journal_mode

ROWS_PER_STATEMENT = 128            # 13 values a row: far below SQLite's 32,766 parameters
LOG_ATTEMPTS = ("INSERT OR REPLACE INTO attempt_log (id, attempt, status, result, error, "
                "log_tail, rank, started, finished, metrics, objectives, feasible, run_id) "
                "VALUES ", "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "(SELECT run_id FROM evaluations WHERE id=?))")   # (head, row) of attempts' rows
MULTI_ROW_UPDATE = sqlite3.sqlite_version_info >= (3, 33)   # UPDATE ... FROM
MULTI_ROW_MIN = 8     # fewer rows: one UPDATE each is cheaper than planning an UPDATE ... FROM


class SQLiteStore(Store):
    """The store in the SQLite file ``path``.

    ``create=False`` refuses a missing file (a resume must find its store); ``readonly``
    opens it for reading only (never migrated, never locked: see the module docstring).
    """

    def __init__(self, path, create=True, readonly=False):
        super().__init__(path)
        if readonly:
            self._open_readonly()
            return
        if not create and not Path(self.path).is_file():
            raise ConfigError(self.path, "the experiment has no store to resume from (a missing "
                              "results.db is never a fresh start)", None, show_value=False)
        with self._guard("open the store"):
            self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self.db.row_factory = sqlite3.Row
            self.db.execute(f"PRAGMA journal_mode={journal_mode(Path(self.path).parent)}")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._upgrade(create)

    def _open_readonly(self):
        path = Path(self.path).resolve()
        if not path.is_file():
            raise ConfigError(self.path, "must be an emews store; there is no such file", None,
                              show_value=False)
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        if not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists():
            # no writer can be at work where no journal can be made, and SQLite would
            # otherwise need to create its shared-memory file there
            uri += "&immutable=1"
        with self._readable():
            self.db = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
            self.db.row_factory = sqlite3.Row
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > schema.VERSION:
            self.db.close()
            raise ConfigError(self.path, f"was written by a newer emews (schema version "
                              f"{version}; this one reads up to {schema.VERSION})", None,
                              show_value=False)

    @contextlib.contextmanager
    def _readable(self):
        """A reader's failures: one-line :class:`ConfigError` naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            raise ConfigError(self.path, "must be a readable SQLite store", str(exc)) from None

    def _upgrade(self, create):
        version = schema.version_of(self.db)
        if version == 0 and not create:    # never race the study that is creating it
            raise StoreError(f"{self.path}: has no tables yet (the study is creating it, or "
                             "the file is not an emews store)")
        if version > schema.VERSION:
            raise StoreError(f"{self.path}: was written by a newer emews (schema version "
                             f"{version}; this one reads up to {schema.VERSION})")
        if version == schema.VERSION:
            return
        script = schema.CURRENT if version == 0 else schema.MIGRATIONS[version]
        self.db.executescript("BEGIN;" + script + "COMMIT;")

    @contextlib.contextmanager
    def _guard(self, action):
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot {action}: {exc}") from None

    def _execute(self, writes):
        action = "commit results"
        try:
            for sql, rows, action in writes:
                self.db.executemany(sql, rows)
            action = "commit results"
            self.db.commit()
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.rollback()
            if not isinstance(exc, sqlite3.Error):
                raise
            raise StoreError(f"{self.path}: cannot {action}: {exc}") from None

    def _select(self, columns, table, where="", args=(), tail=""):
        where = f" WHERE {where}" if where else ""
        return f"SELECT {columns} FROM {table}{where} {tail}", args

    def _write_values(self, head, row, rows, tail=""):
        """Write ``rows`` as a few multi-row statements, ``HEAD (row),(row),... TAIL``: one
        statement per chunk costs SQLite half of one statement per row. Chunk sizes are powers
        of two, so each statement shape is built and prepared once and then found in a cache."""
        start = 0
        while start < len(rows):
            size = min(ROWS_PER_STATEMENT, 1 << ((len(rows) - start).bit_length() - 1))
            chunk = rows[start:start + size]
            self._write(values_statement(head, row, size, tail),
                        [[value for values in chunk for value in values]])
            start += size

    def _update_evaluations(self, assignments, rows):
        """``UPDATE evaluations SET ASSIGNMENTS WHERE id = ?`` for each of ``rows`` (the values
        of the ``?`` in ``assignments``, then the id), in multi-row statements where this SQLite
        has ``UPDATE ... FROM`` (3.33) and there are enough rows for it to pay."""
        if not MULTI_ROW_UPDATE or len(rows) < MULTI_ROW_MIN:
            self._write(f"UPDATE evaluations SET {assignments} WHERE id=?", rows)
            return
        head, row, tail = update_from(assignments)
        self._write_values(head, row, rows, tail)

    # --- writes (buffered until commit: one transaction) --------------------------------------

    def _add(self, rows):
        self._write_values("INSERT INTO evaluations (id, params, status, run_id, queued, rank, "
                           "started, seq) VALUES ", "(?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def _mark_running(self, rows):
        self._update_evaluations(f"status='{Status.RUNNING}', rank=?, started=?", rows)

    def _log_attempts(self, rows):
        self._write_values(*LOG_ATTEMPTS, rows)

    def _finish(self, points, vectors):
        self._update_evaluations("status=?, result=?, error=?, log_tail=?, rank=?, started=?, "
                                 "finished=?, attempt=?, metrics=?"
                                 + (", objectives=?, feasible=?" if vectors else ""), points)

    def _requeue(self, rows):
        self._write(f"UPDATE evaluations SET status='{Status.QUEUED}', attempt=?, run_id=?, "
                    "rank=NULL, started=NULL, finished=NULL, objectives=NULL, feasible=NULL, "
                    "queued=? WHERE id=?", rows)

    def _cancel(self, rows):
        unfinished = f"status IN ('{Status.QUEUED}', '{Status.RUNNING}')"
        self._write("INSERT OR REPLACE INTO attempt_log (id, attempt, status, error, rank, run_id, "
                    f"started, finished) SELECT id, attempt, '{Status.CANCELLED}', ?, rank, "
                    f"run_id, started, ? FROM evaluations WHERE id=? AND {unfinished}", rows)
        self._write(f"UPDATE evaluations SET status='{Status.CANCELLED}', error=?, finished=? "
                    f"WHERE id=? AND {unfinished}", rows)

    def _interrupt(self, now):
        action = "mark unfinished evaluations interrupted"
        self._write("INSERT OR REPLACE INTO attempt_log (id, attempt, status, error, rank, "
                    f"run_id, started, finished) SELECT id, attempt, '{Status.INTERRUPTED}', "
                    "'the run was interrupted', rank, run_id, started, ? FROM evaluations "
                    f"WHERE status = '{Status.RUNNING}'", [(now,)], action)
        self._write(f"UPDATE evaluations SET status='{Status.INTERRUPTED}' WHERE status IN "
                    f"('{Status.QUEUED}', '{Status.RUNNING}', '{Status.CANCELLED}')", [()], action)

    def _insert(self, table, columns, rows, action, replace=False):
        self._write(f"INSERT {'OR REPLACE ' if replace else ''}INTO {table} ({columns}) VALUES "
                    f"({', '.join('?' * len(columns.split(', ')))})", rows, action)

    # --- reads ---------------------------------------------------------------------------------

    def attempts(self, point_id=None):
        where, args = ("WHERE id=?", (point_id,)) if point_id is not None else ("", ())
        return [decoded(row, "metrics") for row in
                self._read(f"SELECT * FROM attempts {where} ORDER BY id, attempt, status", args)]

    def _has_reports(self):
        """False for a store that predates reports (read as it is)."""
        return bool(self._read("SELECT 1 FROM sqlite_master WHERE name='reports'"))

    def reports(self, eval_id=None):
        return super().reports(eval_id) if self._has_reports() else []

    def report_values(self, after=0):
        if not self._has_reports():
            return []
        return self._tuples("SELECT n, id, attempt, step, value FROM reports WHERE n>? "
                            "ORDER BY n", (after,))

    def curves(self):
        if not self._has_reports():
            return {}
        return curves_of(self._tuples("SELECT r.id, r.step, r.value FROM reports r JOIN "
                                      "evaluations e ON e.id=r.id AND e.attempt=r.attempt "
                                      "ORDER BY r.n"))

    def _tuples(self, sql, args=()):
        """The rows ``sql`` selects as plain tuples (a study may hold millions of reports)."""
        with self._guard("read the store"):
            cursor = self.db.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, args).fetchall()

    def snapshot(self):
        """Rows, attempts and meta in one read transaction; a store of an older schema as it
        is (the columns it has; no attempts before version 2)."""
        self.commit()
        with self._readable():
            self.db.execute("BEGIN")
            try:
                tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
                if "evaluations" not in tables:
                    raise ConfigError(self.path, "must be an emews store (it has no evaluations "
                                      "table)", None, show_value=False)
                rows = [decoded(r) for r in self.db.execute(
                    f"SELECT {self._columns('evaluations')} FROM evaluations ORDER BY id")]
                attempts = [decoded(r, "metrics") for r in self.db.execute(
                    f"SELECT {self._columns('attempts')} FROM attempts "
                    "ORDER BY id, attempt, status")] if "attempts" in tables else []
                meta = {key: json.loads(value)
                        for key, value in self.db.execute("SELECT key, value FROM meta")} \
                    if "meta" in tables else {}
            finally:
                self.db.rollback()
        return Snapshot(rows, attempts, meta)

    def _columns(self, table):
        """The columns of ``table`` but ``log_tail``, as SQL (names from the schema itself)."""
        names = [row[1] for row in self.db.execute(f"PRAGMA table_info({table})")]
        return ", ".join(f'"{name}"' for name in names if name != "log_tail")


@functools.lru_cache(maxsize=None)
def values_statement(head, row, size, tail):
    """``HEAD row,row,... TAIL`` with ``size`` rows (built once per shape)."""
    return head + ",".join([row] * size) + tail


@functools.lru_cache(maxsize=None)
def update_from(assignments):
    """``(head, row, tail)`` of ``WITH v(...) AS (VALUES row,...) UPDATE evaluations SET
    ASSIGNMENTS FROM v WHERE evaluations.id = v.id``, each ``?`` of ``assignments`` a column
    of ``v`` (built once per statement)."""
    columns = [f"c{k}" for k in range(assignments.count("?"))]
    names = iter(columns)
    assigned = re.sub(r"\?", lambda _: f"v.{next(names)}", assignments)
    return (f"WITH v({', '.join(columns)}, id) AS (VALUES ",
            "(" + ", ".join("?" * (len(columns) + 1)) + ")",
            f") UPDATE evaluations SET {assigned} FROM v WHERE evaluations.id = v.id")


