"""What a store of evaluations does, and when what it writes becomes visible: :class:`Store`.

::

    master turn: add / mark_running / finish / requeue / cancel / set_meta ...
                 (buffered in this object, in order)
             --> commit(): all of them in one transaction (group commit), before the ME
                 sees a result; then every reader sees them
    read (rows, counts, meta ...): commits what is buffered first (read-after-write)

Two backends keep it, with the same semantics: :class:`~emews.store._sqlite.SQLiteStore`
(``EXPDIR/results.db``) and :class:`~emews.store._postgres.PostgresStore` (every row keyed by
the study's ``exp_id``). One writer (the master) per study; any number of readers, each with
its own store object (``readonly=True``). The study's meta values: docs/src/store.md ("The
study's state").

Visibility: a write (``add`` ... ``set_meta``) is buffered: no reader, not even this store's
own connection, sees it before :meth:`Store.commit` (or a read through this store, which
commits first; ``save_checkpoint`` and ``interrupt_unfinished`` commit at once). The commit
runs every buffered write, in order, in one transaction: a reader sees all of a turn or none of
it. The points added since the last commit are inserted
first, each as it stands by then (one handed to a worker meanwhile is inserted ``running``).
A master turn's commit holds back the ``running`` status of the points handed out in that turn
until the next commit: one whose result comes first goes from ``queued`` to its result in one
write.

A point's row (``rows``), by :class:`~emews._status.Status`::

    add(rank=None) -> queued --mark_running--> running --finish--> done | failed
    add(rank=r)    -> running                     |  \\--finish(status=queued) + requeue:
                                                  |     queued again, as its next attempt
    cancel: queued | running -> cancelled     (the study ended while it was unfinished)
    interrupt_unfinished: queued | running | cancelled -> interrupted   (a resume runs it again)

Where the backends differ, and nothing else may: ``path`` (a file, or ``URL#EXP_ID``); a
read-only SQLite store is the file opened ``mode=ro`` and reads an older schema as it is, a
read-only PostgreSQL store a connection never written through; errors name the file, or the
URL without its password.
"""

import abc
import json
import math
import re
import time
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core._vector import finite_or_none, json_numbers
from .._errors import StoreError
from ..evaluate._outcome import Outcome, Report
from .._status import TOLD, Status

LOG_TAIL_BYTES = 64 * 1024

Row = dict[str, Any]
"""A point, an attempt or a report as the reads give it: column -> value, JSON decoded."""
Write = tuple[str, Sequence[Sequence[Any]], str]
"""A buffered write: ``(statement, rows, action)``, the statement run once per row."""
Finished = tuple[int, int | None, Outcome, int, str]
"""A finished attempt: ``(id, rank, outcome, attempt, status)`` (see :meth:`Store.finish`)."""

class Snapshot(typing.NamedTuple):
    """A store's contents at one instant, without log tails: ``rows`` and ``attempts`` as
    :meth:`Store.rows` and :meth:`Store.attempts` give them, ``meta`` as :meth:`Store.all_meta`."""

    rows: list[Row]
    attempts: list[Row]
    meta: dict[str, Any]


class Store(abc.ABC):
    """A study's evaluations, its meta values and its checkpoints (see the module docstring).

    A subclass opens its connection as ``db``, runs a transaction of buffered writes in
    :meth:`_execute` and writes the SQL of the reads (:meth:`_select`); the buffering, and
    when it is committed, live here.
    """

    db: Any = None

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.writes: list[Write] = []    # buffered since the last commit
        self.added: list[list[Any]] = []     # rows of the points added since then (see add)
        self.queued: dict[int, list[Any]] = {}   # id -> its row of added, while queued
        self.marks: dict[int, tuple[int, float]] = {}   # id -> (rank, started): handed out
        self.held: dict[int, tuple[int, float]] = {}    # since the last commit; held by it

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """Whether writes wait for the next :meth:`commit`."""
        return bool(self.writes or self.added or self.marks or self.held)

    def commit(self, hold: bool = False) -> None:
        """Make every buffered write durable and visible, all of them in one transaction.

        ``hold`` (a master turn's commit) holds back the ``running`` status of the points
        handed out since the last commit until the next commit (see the module docstring).
        On a database failure the transaction is rolled back, dropped, and a
        :class:`~emews._errors.StoreError` names the write that failed; interrupted by anything
        else (a signal), it is rolled back and stays buffered.
        """
        if self.added:
            writes, self.writes = self.writes, []
            self._add(self.added)
            self.writes += writes
            self.added, self.queued = [], {}
        self._write_marks(hold)
        if not self.writes:
            return
        try:
            self._execute(self.writes)
        except StoreError:
            self.writes = []
            raise
        self.writes = []

    def close(self) -> None:
        """Commit and close (safe to call twice)."""
        if self.db is not None:
            self.commit()
            with self._guard("close the store"):
                self.db.close()
            self.db = None

    def _write_marks(self, hold: bool = False) -> None:
        """Buffer the ``running`` status of the points handed out before the last commit, and
        of those handed out since unless ``hold`` (see :meth:`commit`)."""
        due = self.held if hold else self.held | self.marks
        self.held, self.marks = (self.marks if hold else {}), {}
        if due:
            self._mark_running([(rank, started, i) for i, (rank, started) in due.items()])

    def _unmark(self, ids: Iterable[int]) -> None:
        """Drop the ``running`` status not yet written of points ``ids`` (a result brings its
        own rank and start; a point run again is queued)."""
        for i in ids:
            self.marks.pop(i, None)
            self.held.pop(i, None)

    @abc.abstractmethod
    def _execute(self, writes: list[Write]) -> None:
        """Run ``writes`` (``(statement, rows, action)``, each statement once per row) in
        one transaction and commit it; roll it back on any exception, and raise a
        :class:`~emews._errors.StoreError` naming ``action`` for a database failure."""

    @abc.abstractmethod
    def _guard(self, action: str) -> typing.ContextManager[None]:
        """A context that turns a database failure during ``action`` into a one-line
        :class:`~emews._errors.StoreError` (what was committed before stays)."""

    def _write(self, sql: str, rows: Sequence[Sequence[Any]],
               action: str = "record evaluations") -> None:
        """Buffer ``sql``, to run once per row of ``rows`` at the next commit."""
        if rows:
            self.writes.append((sql, rows, action))

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Mapping[str, Any]]:
        """The rows ``sql`` selects, after committing what is buffered (read-after-write)."""
        self.commit()
        return self._query(sql, args)

    def _query(self, sql: str, args: Sequence[Any]) -> list[Mapping[str, Any]]:
        """The rows ``sql`` selects, as mappings."""
        with self._guard("read the store"):
            rows: list[Mapping[str, Any]] = self.db.execute(sql, args).fetchall()
        return rows

    @abc.abstractmethod
    def _select(self, columns: str, table: str, where: str = "", args: Sequence[Any] = (),
                tail: str = "") -> tuple[str, Sequence[Any]]:
        """``(sql, args)`` selecting ``columns`` of this study's rows of ``table`` (``attempts``:
        but the ``done`` ones) where ``where`` holds (a ``?`` for each of ``args``), then
        ``tail`` (``GROUP BY`` ...), in this backend's SQL: the reads below are written once."""

    # --- writes (buffered until commit) ------------------------------------------------------

    def add(self, rows: Iterable[tuple[int, str, str, int | None, int]]) -> None:
        """Insert new points: ``(id, params_json, run_id, rank, seq)`` tuples; one with a rank
        was handed to that worker (``running``, started now), one without waits (``queued``)."""
        now = time.time()
        for i, params, run_id, rank, seq in rows:
            row: list[Any] = [i, params, Status.QUEUED if rank is None else Status.RUNNING,
                              run_id, now, rank, None if rank is None else now, seq]  # as _add
            self.added.append(row)
            if rank is None:
                self.queued[i] = row

    @abc.abstractmethod
    def _add(self, rows: list[list[Any]]) -> None:
        """Buffer the insert of ``[id, params, status, run_id, queued, rank, started, seq]``
        rows."""

    def mark_running(self, rows: Iterable[tuple[int, int]]) -> None:
        """Points handed to a worker: ``(id, rank)`` tuples; each is ``running`` on that rank,
        started now (a point added since the last commit is inserted so)."""
        now = time.time()
        for i, rank in rows:
            row = self.queued.pop(i, None)
            if row is None:
                self.marks[i] = (rank, now)
            else:
                row[2], row[5], row[6] = Status.RUNNING, rank, now

    @abc.abstractmethod
    def _mark_running(self, rows: list[tuple[int, float, int]]) -> None:
        """Buffer ``status='running', rank, started`` for ``(rank, started, id)`` rows."""

    def finish(self, rows: Iterable[Finished]) -> None:
        """Finished attempts: ``(id, rank, outcome, attempt, status)`` tuples.

        ``status`` is the point's state from now on (``done``, ``failed``, ``cancelled``, or
        ``queued`` for a failure that will be retried); the attempt itself keeps the outcome's
        own status in ``attempts``. The point takes the rank and times of the result.
        """
        finished = list(rows)
        self._unmark([row[0] for row in finished])
        attempts, points, vectors = finished_rows(finished)
        self._log_attempts(attempts)
        self._finish(points, vectors)

    @abc.abstractmethod
    def _log_attempts(self, rows: list[tuple[Any, ...]]) -> None:
        """Buffer the insert (or replacement) of attempts as :func:`finished_rows` makes them."""

    @abc.abstractmethod
    def _finish(self, points: list[tuple[Any, ...]], vectors: bool) -> None:
        """Buffer the point updates of :func:`finished_rows` (``vectors``: whether they hold
        ``objectives`` and ``feasible``)."""

    def record_duplicates(self, rows: Iterable[tuple[int, int, Outcome, int]]) -> None:
        """Results that came after a point's first one: ``(id, rank, outcome, attempt)``
        tuples, kept in ``attempts`` as ``duplicate``; the point keeps its first result."""
        self._log_attempts([(i, attempt, Status.DUPLICATE,
                             None if math.isnan(o.value) else o.value, bounded(o.error),
                             bounded(o.log_tail), rank, o.started, o.finished, None,
                             numbers_json(o.objectives), o.feasible, i)
                            for i, rank, o, attempt in rows])

    def requeue(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """Points to run again as a new attempt: ``(id, attempt, run_id)`` tuples; each is
        ``queued`` again, without rank, times, objectives or feasibility."""
        again = [(attempt, run_id, time.time(), i) for i, attempt, run_id in rows]
        self._unmark(i for _, _, _, i in again)
        self._requeue(again)

    @abc.abstractmethod
    def _requeue(self, rows: list[tuple[int, str, float, int]]) -> None:
        """Buffer ``status='queued', attempt, run_id, queued`` for ``(attempt, run_id,
        queued, id)`` rows (rank, started, finished, objectives and feasible cleared)."""

    def cancel(self, ids: Sequence[int], reason: str) -> None:
        """Points whose evaluation was called off: those still ``queued`` or ``running``
        become ``cancelled`` with ``reason`` as their error, and the attempt is kept in
        ``attempts`` (with the rank and start it had); finished points are left alone."""
        if ids:
            self._write_marks()   # before the statements that read who is running
            self._cancel([(reason, time.time(), i) for i in ids])

    @abc.abstractmethod
    def _cancel(self, rows: list[tuple[str, float, int]]) -> None:
        """Buffer the cancellation of ``(reason, finished, id)`` rows (see :meth:`cancel`)."""

    def interrupt_unfinished(self) -> list[Row]:
        """Mark what an earlier run left ``queued``, ``running`` or ``cancelled`` as
        ``interrupted`` (to be run again; a running one's attempt is kept in ``attempts``),
        committed at once; return those rows (as :meth:`rows` does), each with
        ``interruptions``: how many of its attempts were interrupted so far."""
        self._write_marks()   # before the statements that read who is running
        self._interrupt(time.time())
        self.commit()
        rows = self.rows(Status.INTERRUPTED)
        counts = {row["id"]: row["n"] for row in self._read(*self._select(
            "id, COUNT(*) AS n", "attempts", f"status='{Status.INTERRUPTED}'", (), "GROUP BY id"))}
        for row in rows:
            row["interruptions"] = counts.get(row["id"], 0)
        return rows

    @abc.abstractmethod
    def _interrupt(self, now: float) -> None:
        """Buffer what :meth:`interrupt_unfinished` writes (``now``: the attempts' finish)."""

    def add_reports(self, rows: Iterable[tuple[int, int, Report]]) -> None:
        """Reports of running attempts: ``(id, attempt, report)`` tuples (``report`` an
        :class:`~emews.evaluate._outcome.Report`), kept in the order given."""
        self._insert("reports", "id, attempt, step, value, metrics, time",
                     [(i, attempt, r.step, finite_or_none(r.value), numbers_json(r.metrics),
                       r.time) for i, attempt, r in rows], "record reports")

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-serializable value under ``key`` (replacing any)."""
        self._insert("meta", "key, value", [(key, json.dumps(value))],
                     "record the study's settings", replace=True)

    def save_checkpoint(self, name: str, state: bytes | None, driver: dict[str, Any]) -> None:
        """Replace the checkpoint ``name``: the algorithm's ``state`` (bytes or ``None``) and
        the driver's own (a JSON-serializable dict). Committed at once, with all else buffered."""
        self._insert("checkpoints", "name, state, driver", [(name, state, json.dumps(driver))],
                     "save the search's checkpoint", replace=True)
        self.commit()

    @abc.abstractmethod
    def _insert(self, table: str, columns: str, rows: list[tuple[Any, ...]], action: str,
                replace: bool = False) -> None:
        """Buffer the insert of ``rows`` (values of ``columns``) into this study's ``table``;
        with ``replace``, each replaces the row that has its first column's value."""

    # --- reads (each commits what is buffered first) ----------------------------------------

    def checkpoint(self, name: str) -> tuple[bytes | None, dict[str, Any]] | None:
        """``(state, driver)`` of checkpoint ``name`` (``state`` as bytes), or ``None``."""
        rows = self._read(*self._select("state, driver", "checkpoints", "name=?", (name,)))
        if not rows:
            return None
        state = rows[0]["state"]
        return (bytes(state) if state is not None else None), json.loads(rows[0]["driver"])

    def meta(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        self.commit()
        return self.committed_meta(key, default)

    def committed_meta(self, key: str, default: Any = None) -> Any:
        """The value committed under ``key``, or ``default``, without committing what this
        store buffers: what another process wrote (the master's look at ``control`` each turn
        leaves its turn's writes to the turn's own commit)."""
        rows = self._query(*self._select("value", "meta", "key=?", (key,)))
        return default if not rows else json.loads(rows[0]["value"])

    def all_meta(self) -> dict[str, Any]:
        """Every ``key -> value`` stored with :meth:`set_meta`."""
        return {row["key"]: json.loads(row["value"])
                for row in self._read(*self._select("key, value", "meta"))}

    def rows(self, *statuses: str) -> list[Row]:
        """Points as dicts (``params`` and ``metrics`` decoded, ``{}`` without metrics), by
        id; only those in ``statuses`` when given."""
        where = f"status IN ({', '.join('?' * len(statuses))})" if statuses else ""
        return [decoded(row) for row in
                self._read(*self._select("*", "evaluations", where, statuses, "ORDER BY id"))]

    @abc.abstractmethod
    def attempts(self, point_id: int | None = None) -> list[Row]:
        """Every finished attempt (of one point when ``point_id`` is given) as dicts
        (``metrics`` decoded), by id and attempt: the one that made its point ``done`` (from
        its row), every other one (``failed``, ``cancelled``, ``interrupted``) and results that
        came after the point had its own (``duplicate``, after the ``done`` one)."""

    def reports(self, eval_id: int | None = None) -> list[Row]:
        """Every report (of one point when ``eval_id`` is given) as dicts ``{"id", "attempt",
        "step", "value", "metrics", "time"}`` (``value`` ``None`` for a NaN or infinite one,
        ``metrics`` decoded), in the order they were received; ``[]`` from a store that
        predates reports."""
        where, args = ("id=?", (eval_id,)) if eval_id is not None else ("", ())
        return [decoded(row, "metrics") for row in self._read(*self._select(
            "id, attempt, step, value, metrics, time", "reports", where, args, "ORDER BY n"))]

    @abc.abstractmethod
    def curves(self) -> dict[int, dict[int, float]]:
        """Every point's learning curve: ``{id: {step: value}}``, the reports of its latest
        attempt (NaN for a value not finite), without metrics; ``{}`` before reports existed."""

    @abc.abstractmethod
    def report_values(self, after: int = 0) -> list[tuple[int, int, int, int, float | None]]:
        """The reports numbered after ``after`` (their column ``n``, which grows with each
        report) as ``(n, id, attempt, step, value)`` tuples in that order, without their
        metrics (``value`` ``None`` for a NaN or infinite one): a reader that kept the last
        ``n`` it saw reads only what is new; ``[]`` from a store that predates reports."""

    def counts(self) -> dict[str, int]:
        """``{status: number of points}`` (statuses that no point has are left out)."""
        return {row["status"]: row["n"] for row in self._read(*self._select(
            "status, COUNT(*) AS n", "evaluations", tail="GROUP BY status"))}

    def finished_count(self) -> int:
        """How many points have a result the search was told (``done``, ``failed``, ``pruned``
        or ``paused``)."""
        return sum(n for status, n in self.counts().items() if status in TOLD)

    def best(self) -> Row | None:
        """The ``done`` point with the lowest result (the lowest id among equals) as
        :meth:`rows` gives it, or ``None``."""
        rows = self._read(*self._select("*", "evaluations", f"status='{Status.DONE}' AND "
                                        "result IS NOT NULL", (), "ORDER BY result, id LIMIT 1"))
        return decoded(rows[0]) if rows else None

    def failure_reasons(self, limit: int = 3) -> list[tuple[str, int]]:
        """The most common errors of ``failed`` points as :func:`common_reasons` gives them
        (``bad x -1.5`` and ``bad x 0.25`` alike); ``no reason recorded`` for one without."""
        return common_reasons([(row["reason"], row["n"]) for row in self._read(*self._select(
            f"COALESCE(error, '{NO_REASON}') AS reason, COUNT(*) AS n", "evaluations",
            f"status='{Status.FAILED}'", (), "GROUP BY 1"))], limit)

    def next_id(self) -> int:
        """The id the next new point gets (one more than the highest; 0 at first)."""
        return self._after_highest("id")

    def next_seq(self) -> int:
        """The place in the ME's order of the next point it proposes."""
        return self._after_highest("seq")

    def _after_highest(self, column: str) -> int:
        """One more than the highest ``column`` of the evaluations; 0 in an empty store."""
        rows = self._read(*self._select(f"COALESCE(MAX({column}) + 1, 0) AS n", "evaluations"))
        return int(rows[0]["n"])

    @abc.abstractmethod
    def snapshot(self) -> Snapshot:
        """A :class:`Snapshot`: rows, attempts and meta, read in one transaction."""


NO_REASON = "no reason recorded"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")   # what alike errors differ by


def common_reasons(messages: Iterable[tuple[str, int]], limit: int) -> list[tuple[str, int]]:
    """The ``limit`` most common of failure ``messages`` (``(text, count)`` pairs), alike
    ones (the same text but for its numbers) as one, shown by their most common text."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for text, count in messages:
        groups.setdefault(NUMBER.sub("#", text), []).append((text, count))
    merged = [(min(alike, key=_most_common)[0], sum(count for _, count in alike))
              for alike in groups.values()]
    return sorted(merged, key=_most_common)[:limit]


def _most_common(entry: tuple[str, int]) -> tuple[int, str]:
    """The order of failure reasons: the most common first, then by text."""
    return -entry[1], entry[0]


def finished_rows(rows: list[Finished]
                  ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], bool]:
    """``(attempts, points, vectors)`` of finished attempts ``(id, rank, outcome, attempt,
    status)``: the rows for the table of attempts (``(id, attempt, status, result, error,
    log_tail, rank, started, finished, metrics, objectives, feasible, id)``; none for the
    attempt that made its point ``done``: the point's row is that attempt, a row fewer per task)
    and the updates of the points (``(status, result, error, log_tail, rank, started, finished,
    attempt, metrics, objectives, feasible, id)``, without ``objectives`` and ``feasible`` when
    no outcome has them, as in a study of one objective: ``vectors`` says which; a point's are
    ``NULL`` until its result, and cleared when it runs again)."""
    attempts: list[tuple[Any, ...]] = []
    points: list[tuple[Any, ...]] = []
    vectors = any([outcome.objectives or outcome.feasible is not None
                   for _, _, outcome, _, _ in rows])
    for i, rank, outcome, attempt, status in rows:
        value = None if math.isnan(outcome.value) else outcome.value
        log_tail, error = bounded(outcome.log_tail), bounded(outcome.error)
        metrics = numbers_json(outcome.metrics)
        objectives = numbers_json(outcome.objectives) if vectors else None
        if status != Status.DONE:
            attempts.append((i, attempt, outcome.status, value, error, log_tail, rank,
                             outcome.started, outcome.finished, metrics, objectives,
                             outcome.feasible, i))
        point = (status, value, error, log_tail, rank, outcome.started, outcome.finished,
                 attempt if status != Status.QUEUED else attempt + 1, metrics)
        points.append(point + (objectives, outcome.feasible, i) if vectors else point + (i,))
    return attempts, points, vectors


def decoded(row: Mapping[str, Any], *decode: str) -> Row:
    """A row as a dict, its JSON columns ``decode`` (default: ``params`` and ``metrics``)
    decoded; a missing or empty ``metrics`` (a store that predates them) becomes ``{}``.
    A row of points or attempts has ``objectives`` (a list, or ``None``) and ``feasible``
    (``True``, ``False`` or ``None``), ``None`` from a store that predates them."""
    row = {key: value for key, value in dict(row).items() if key != "exp_id"}
    for name in decode or ("params", "metrics"):
        text = row.get(name)
        row[name] = json.loads(text) if text else ({} if name == "metrics" else None)
    if "step" not in row:   # not a report
        row["objectives"] = json.loads(row.get("objectives") or "null")
        feasible = row.get("feasible")
        row["feasible"] = None if feasible is None else bool(feasible)
    return row


def curves_of(reports: Iterable[tuple[int, int, float | None]]) -> dict[int, dict[int, float]]:
    """``{id: {step: value}}`` of ``reports``: ``(id, step, value)`` tuples in the order
    received (a ``None`` value: NaN)."""
    curves: dict[int, dict[int, float]] = {}
    for point_id, step, value in reports:
        curves.setdefault(point_id, {})[step] = math.nan if value is None else value
    return curves


def numbers_json(numbers: Mapping[str, float] | Sequence[float] | None) -> str | None:
    """Metrics (name -> number) as a JSON object, or an objective vector as a JSON list,
    non-finite values as null; ``None`` when there are none."""
    if not numbers:
        return None
    return json.dumps(json_numbers(numbers))


def bounded(text: str | None, limit: int = LOG_TAIL_BYTES) -> str | None:
    """``text`` cut to its last ``limit`` bytes of UTF-8, with anything unencodable (lone
    surrogates) replaced, so that it can always be stored."""
    if text is None:
        return None
    data = text.encode("utf-8", errors="replace")[-limit:]
    return data.decode("utf-8", errors="replace")
