"""The experiment's store: every evaluation, as it happens, in SQLite (``results.db``).

::

    master turn: add / mark_running / finish / requeue / cancel ...  (buffered in memory)
                 --> commit(): all of them in one transaction (group commit),
                     before the ME sees a result

Writes are buffered until :meth:`Store.commit`, which runs them, in order, in one transaction:
one commit per master turn, however many results and state changes the turn holds, and no
write lock held between turns (the ME thread's checkpoint and ``emews status`` never wait on
the master). A read commits what is buffered first, so it sees every write before it.

A point handed to a worker is marked ``running`` with the first commit after it has run
:data:`RUNNING_MARK_DELAY`, or with any commit but a master turn's (the master commits before
it waits for anything): a short task goes from ``queued`` to its result in one update, its row
taking the rank and start time from the result, and ``emews status`` shows a long one running
within that delay.

A point's row moves ``queued -> running -> done | failed``; a retried failure goes back to
``queued`` as its next attempt; the end of a study on an abort cancels what is in flight
(``cancelled``); a resumed run marks what a killed run left unfinished ``interrupted`` and
evaluates it again as a new attempt. Every finished attempt is also kept in ``attempts`` (a
view: see :mod:`.schema`). ``id``
is the point's number over the whole experiment (a resumed run goes on counting).

Every SQLite failure (a full disk, a read-only or corrupt file) becomes one :class:`StoreError`
line naming the file and the cause; what was committed before stays.
"""

import collections
import contextlib
import functools
import json
import math
import re
import sqlite3
import time
from pathlib import Path

from ..errors import ConfigError, StoreError
from . import schema
from .filesystem import journal_mode

LOG_TAIL_BYTES = 64 * 1024
ROWS_PER_STATEMENT = 128            # 11 values a row: far below SQLite's 32,766 parameters
MULTI_ROW_UPDATE = sqlite3.sqlite_version_info >= (3, 33)   # UPDATE ... FROM
MULTI_ROW_MIN = 8     # fewer rows: one UPDATE each is cheaper than planning an UPDATE ... FROM
RUNNING_MARK_DELAY = 0.05   # seconds a turn's commit holds back a point's running status


@contextlib.contextmanager
def guarded(path, action):
    """Turn an SQLite failure during ``action`` into a one-line :class:`StoreError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot {action}: {exc}") from None


class Store:
    """An SQLite store of evaluations; one writer (the master), any number of readers.

    ``create=False`` refuses a missing file (a resume must find its store).
    """

    def __init__(self, path, create=True):
        self.path = str(path)
        if not create and not Path(self.path).is_file():
            raise ConfigError(self.path, "the experiment has no store to resume from (a missing "
                              "results.db is never a fresh start)", None, show_value=False)
        self.writes = []                   # (sql, rows, action) written since the last commit
        self.marks = {}                    # id -> (rank, time) handed out, not yet marked running
        with guarded(self.path, "open the store"):
            self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self.db.row_factory = sqlite3.Row
            self.db.execute(f"PRAGMA journal_mode={journal_mode(Path(self.path).parent)}")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._upgrade(create)

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

    def close(self):
        """Commit and close (safe to call twice)."""
        if self.db is not None:
            self.commit()
            with guarded(self.path, "close the store"):
                self.db.close()
            self.db = None

    @property
    def pending(self):
        """Whether writes wait for the next :meth:`commit`."""
        return bool(self.writes or self.marks)

    def commit(self, hold_recent=False):
        """Make every buffered write durable, all of them in one transaction.

        ``hold_recent`` (a master turn) holds back the running status of points handed out
        less than :data:`RUNNING_MARK_DELAY` ago. On an SQLite failure the transaction is
        rolled back (nothing of it is stored, and it is dropped) and a :class:`StoreError`
        names the write that failed. Interrupted by anything else (a signal), it is rolled
        back and stays buffered for the next commit.
        """
        self._write_marks(time.time() - RUNNING_MARK_DELAY if hold_recent else math.inf)
        if not self.writes:
            return
        action = "commit results"
        try:
            for sql, rows, action in self.writes:
                self.db.executemany(sql, rows)
            action = "commit results"
            self.db.commit()
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.rollback()
            if not isinstance(exc, sqlite3.Error):
                raise
            self.writes = []
            raise StoreError(f"{self.path}: cannot {action}: {exc}") from None
        self.writes = []

    def _write(self, sql, rows, action="record evaluations"):
        if rows:
            self.writes.append((sql, rows, action))

    def _write_marks(self, before):
        """Write the running status of the points handed out before ``before`` (a time)."""
        rows = []
        for i, (rank, started) in self.marks.items():    # in the order they were handed out
            if started > before:
                break
            rows.append((rank, started, i))
        for _, _, i in rows:
            del self.marks[i]
        self._update_evaluations("status='running', rank=?, started=?", rows)

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

    def add(self, rows):
        """Insert new points: ``(id, params_json, run_id, rank, seq)`` tuples.

        A point with a rank was handed to that worker at once (``running``); one whose rank
        is ``None`` waits for a free worker (``queued``).
        """
        now = time.time()
        self._write_values("INSERT INTO evaluations (id, params, status, run_id, queued, rank, "
                           "started, seq) VALUES ", "(?, ?, ?, ?, ?, ?, ?, ?)",
                           [(i, params, "queued" if rank is None else "running", run_id, now,
                             rank, None if rank is None else now, seq)
                            for i, params, run_id, rank, seq in rows])

    def mark_running(self, rows):
        """Points handed to a worker: ``(id, rank)`` tuples (written as the module says)."""
        now = time.time()
        self.marks.update((i, (rank, now)) for i, rank in rows)

    def finish(self, rows):
        """Finished attempts: ``(id, rank, outcome, attempt, status)`` tuples.

        ``status`` is the point's state from now on (``done``, ``failed``, ``cancelled``, or
        ``queued`` for a failure that will be retried); the attempt itself keeps the outcome's
        own status in ``attempts``.
        """
        for row in rows:
            self.marks.pop(row[0], None)       # the result carries its rank and start
        attempts, points = finished_rows(rows, log_done=False)
        self._write_values("INSERT OR REPLACE INTO attempt_log (id, attempt, status, result, "
                           "error, log_tail, rank, started, finished, metrics, run_id) VALUES ",
                           "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                           "(SELECT run_id FROM evaluations WHERE id=?))", attempts)
        self._update_evaluations("status=?, result=?, error=?, log_tail=?, rank=?, started=?, "
                                 "finished=?, attempt=?, metrics=?", points)

    def record_duplicates(self, rows):
        """Results that came after a point's first one: ``(id, rank, outcome, attempt)``
        tuples, kept in ``attempts`` as ``duplicate``; the point keeps its first result."""
        self._write("INSERT OR REPLACE INTO attempt_log (id, attempt, status, result, error, "
                    "log_tail, rank, started, finished, run_id) VALUES (?, ?, 'duplicate', ?, ?, "
                    "?, ?, ?, ?, (SELECT run_id FROM evaluations WHERE id=?))",
                    [(i, attempt, None if math.isnan(o.value) else o.value, bounded(o.error),
                      bounded(o.log_tail), rank, o.started, o.finished, i)
                     for i, rank, o, attempt in rows])

    def requeue(self, rows):
        """Points to run again as a new attempt: ``(id, attempt, run_id)`` tuples."""
        for row in rows:
            self.marks.pop(row[0], None)
        self._write("UPDATE evaluations SET status='queued', attempt=?, run_id=?, rank=NULL, "
                    "started=NULL, finished=NULL, queued=? WHERE id=?",
                    [(attempt, run_id, time.time(), i) for i, attempt, run_id in rows])

    def cancel(self, ids, reason):
        """Points whose evaluation was called off (``cancelled``, with ``reason``)."""
        self._write_marks(math.inf)            # their attempts keep the rank and start
        now = time.time()
        rows = [(reason, now, i) for i in ids]
        self._write("INSERT OR REPLACE INTO attempt_log (id, attempt, status, error, rank, run_id, "
                    "started, finished) SELECT id, attempt, 'cancelled', ?, rank, run_id, "
                    "started, ? FROM evaluations WHERE id=? AND status IN ('queued', 'running')",
                    rows)
        self._write("UPDATE evaluations SET status='cancelled', error=?, finished=? "
                    "WHERE id=? AND status IN ('queued', 'running')", rows)

    def interrupt_unfinished(self):
        """Mark what an earlier run left ``queued``, ``running`` or ``cancelled`` as
        ``interrupted`` (to be run again); return those rows (as :meth:`rows` does), with how
        many times each was interrupted so far."""
        self.commit()
        with guarded(self.path, "mark unfinished evaluations interrupted"):
            now = time.time()
            self.db.execute("INSERT OR REPLACE INTO attempt_log (id, attempt, status, error, rank, "
                            "run_id, started, finished) SELECT id, attempt, 'interrupted', "
                            "'the run was interrupted', rank, run_id, started, ? FROM evaluations "
                            "WHERE status = 'running'", (now,))
            self.db.execute("UPDATE evaluations SET status='interrupted' "
                            "WHERE status IN ('queued', 'running', 'cancelled')")
            self.db.commit()
        rows = self.rows("interrupted")
        counts = dict(self.db.execute("SELECT id, COUNT(*) FROM attempts WHERE status = "
                                      "'interrupted' GROUP BY id").fetchall())
        for row in rows:
            row["interruptions"] = counts.get(row["id"], 0)
        return rows

    def set_meta(self, key, value):
        """Store a JSON-serializable value under ``key``."""
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [(key, json.dumps(value))], "record the study's settings")

    def save_checkpoint(self, name, state, driver):
        """Replace the checkpoint ``name``: the algorithm's ``state`` (bytes or ``None``) and
        the driver's own (a JSON-serializable dict). Committed at once."""
        self._write("INSERT OR REPLACE INTO checkpoints (name, state, driver) VALUES (?, ?, ?)",
                    [(name, state, json.dumps(driver))], "save the search's checkpoint")
        self.commit()

    # --- reads ---------------------------------------------------------------------------------

    def _read(self, sql, args=()):
        self.commit()
        with guarded(self.path, "read the store"):
            return self.db.execute(sql, args).fetchall()

    def checkpoint(self, name):
        """``(state, driver)`` of checkpoint ``name``, or ``None``."""
        rows = self._read("SELECT state, driver FROM checkpoints WHERE name=?", (name,))
        return (rows[0]["state"], json.loads(rows[0]["driver"])) if rows else None

    def meta(self, key, default=None):
        """The value stored under ``key``."""
        rows = self._read("SELECT value FROM meta WHERE key=?", (key,))
        return default if not rows else json.loads(rows[0]["value"])

    def rows(self, *statuses):
        """Evaluations as dicts (``params`` and ``metrics`` decoded), by id; only ``statuses``
        when given."""
        sql = "SELECT * FROM evaluations"
        if statuses:
            sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
        return [decoded(row) for row in self._read(sql + " ORDER BY id", statuses)]

    def attempts(self, point_id=None):
        """Every finished attempt (of one point when ``point_id`` is given), as dicts
        (``metrics`` decoded)."""
        where, args = ("WHERE id=?", (point_id,)) if point_id is not None else ("", ())
        return [dict(row, metrics=json.loads(row["metrics"] or "{}"))
                for row in self._read(f"SELECT * FROM attempts {where} ORDER BY id, attempt",
                                      args)]

    def counts(self):
        """Number of evaluations in each status."""
        return dict(self._read("SELECT status, COUNT(*) FROM evaluations GROUP BY status"))

    def finished_count(self):
        """How many points have a final result (``done`` or ``failed``)."""
        return sum(n for status, n in self.counts().items() if status in schema.FINAL)

    def best(self):
        """The finished evaluation with the lowest result, as a dict, or ``None``."""
        rows = self._read("SELECT * FROM evaluations WHERE status='done' AND result IS NOT NULL "
                          "ORDER BY result, id LIMIT 1")
        return decoded(rows[0]) if rows else None

    def failure_reasons(self, limit=3):
        """The most common reasons of failed points: ``[(reason, count), ...]``."""
        reasons = collections.Counter(row["error"] or "no reason recorded"
                                      for row in self._read("SELECT error FROM evaluations "
                                                            "WHERE status='failed'"))
        return reasons.most_common(limit)

    def next_id(self):
        """The id the next new point gets."""
        return self._read("SELECT COALESCE(MAX(id) + 1, 0) FROM evaluations")[0][0]

    def next_seq(self):
        """The place in the ME's order of the next point it proposes."""
        return self._read("SELECT COALESCE(MAX(seq) + 1, 0) FROM evaluations")[0][0]


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


def finished_rows(rows, log_done=True):
    """``(attempts, points)``: the attempt rows and the point updates of finished attempts
    ``(id, rank, outcome, attempt, status)``, in the column order both stores write; without
    ``log_done``, no attempt row for an attempt that made its point ``done`` (see .schema)."""
    attempts, points = [], []
    for i, rank, outcome, attempt, status in rows:
        value = None if math.isnan(outcome.value) else outcome.value
        log_tail, error = bounded(outcome.log_tail), bounded(outcome.error)
        metrics = metrics_json(outcome.metrics)
        if log_done or status != "done":
            attempts.append((i, attempt, outcome.status, value, error, log_tail, rank,
                             outcome.started, outcome.finished, metrics, i))
        points.append((status, value, error, log_tail, rank, outcome.started,
                       outcome.finished, attempt if status != "queued" else attempt + 1,
                       metrics, i))
    return attempts, points


def decoded(row):
    """An ``evaluations`` row as a dict, its ``params`` and ``metrics`` (``{}`` when there are
    none, or when the store predates them) decoded from JSON."""
    row = dict(row)
    row["params"] = json.loads(row["params"])
    row["metrics"] = json.loads(row.get("metrics") or "{}")
    return row


def metrics_json(metrics):
    """``metrics`` (name -> number) as a JSON object, non-finite values as null; ``None`` when
    there are none."""
    if not metrics:
        return None
    return json.dumps({name: value if math.isfinite(value) else None
                       for name, value in metrics.items()})


def bounded(text, limit=LOG_TAIL_BYTES):
    """``text`` cut to its last ``limit`` bytes of UTF-8, with anything unencodable (lone
    surrogates) replaced, so that it can always be stored."""
    if text is None:
        return None
    data = text.encode("utf-8", errors="replace")[-limit:]
    return data.decode("utf-8", errors="replace")
