"""The experiment's store: every evaluation, as it happens, in SQLite (``results.db``).

The master buffers writes and commits them at each turn of its loop (before it waits again), so a
killed run keeps every evaluation that had finished. Rows move ``queued -> running -> done|failed``.
``id`` is the point's number over the whole experiment (a resumed run goes on counting).
"""

import json
import math
import sqlite3
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS evaluations (
    id        INTEGER PRIMARY KEY,
    params    TEXT NOT NULL,
    result    REAL,
    status    TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    error     TEXT,
    log_tail  TEXT,
    rank      INTEGER,
    attempt   INTEGER NOT NULL DEFAULT 1,
    run_id    TEXT,
    queued    REAL,
    started   REAL,
    finished  REAL
);
CREATE INDEX IF NOT EXISTS evaluations_status ON evaluations (status);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

FINISHED = ("done", "failed")


class Store:
    """An SQLite store of evaluations; one writer (the master), any number of readers."""

    def __init__(self, path):
        self.path = str(path)
        self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.db.commit()

    def close(self):
        """Commit and close."""
        self.db.commit()
        self.db.close()

    def commit(self):
        """Make every buffered write durable."""
        self.db.commit()

    def add(self, rows):
        """Insert new points: ``(id, params_json, run_id, rank)`` tuples.

        A point with a rank was handed to that worker at once (``running``); one whose rank
        is ``None`` waits for a free worker (``queued``). One statement either way.
        """
        now = time.time()
        self.db.executemany(
            "INSERT INTO evaluations (id, params, status, run_id, queued, rank, started) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(i, params, "queued" if rank is None else "running", run_id, now, rank,
              None if rank is None else now) for i, params, run_id, rank in rows])

    def mark_running(self, rows):
        """Points handed to a worker: ``(id, rank)`` tuples (often none: then no statement)."""
        now = time.time()
        rows = [(rank, now, i) for i, rank in rows]
        if rows:
            self.db.executemany("UPDATE evaluations SET status='running', rank=?, started=? "
                                "WHERE id=?", rows)

    def finish(self, rows):
        """Finished points: ``(id, rank, outcome, attempt)`` tuples (see :class:`Outcome`)."""
        rows = [(o.status, None if math.isnan(o.value) else o.value, o.error, o.log_tail, rank,
                 o.started, o.finished, attempt, i) for i, rank, o, attempt in rows]
        if rows:
            self.db.executemany(
                "UPDATE evaluations SET status=?, result=?, error=?, log_tail=?, rank=?, "
                "started=?, finished=?, attempt=? WHERE id=?", rows)

    def set_meta(self, key, value):
        """Store a JSON-serializable value under ``key``."""
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                        (key, json.dumps(value)))

    def meta(self, key, default=None):
        """The value stored under ``key``."""
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return default if row is None else json.loads(row["value"])

    def rows(self, *statuses):
        """Evaluations as dicts (``params`` decoded), by id; only ``statuses`` when given."""
        sql = "SELECT * FROM evaluations"
        if statuses:
            sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
        rows = self.db.execute(sql + " ORDER BY id", statuses).fetchall()
        return [dict(row, params=json.loads(row["params"])) for row in rows]

    def counts(self):
        """Number of evaluations in each status."""
        return dict(self.db.execute("SELECT status, COUNT(*) FROM evaluations GROUP BY status"))

    def best(self):
        """The finished evaluation with the lowest result, as a dict, or ``None``."""
        row = self.db.execute("SELECT * FROM evaluations WHERE status='done' AND result IS NOT NULL "
                              "ORDER BY result, id LIMIT 1").fetchone()
        return None if row is None else dict(row, params=json.loads(row["params"]))

    def next_id(self):
        """The id the next new point gets."""
        return self.db.execute("SELECT COALESCE(MAX(id) + 1, 0) FROM evaluations").fetchone()[0]

    def forget_unfinished(self):
        """Delete points that never finished (a killed run's); return their params, by id."""
        rows = self.db.execute("SELECT params FROM evaluations WHERE status NOT IN ('done', "
                               "'failed') ORDER BY id").fetchall()
        self.db.execute("DELETE FROM evaluations WHERE status NOT IN ('done', 'failed')")
        self.db.commit()
        return [json.loads(row["params"]) for row in rows]
