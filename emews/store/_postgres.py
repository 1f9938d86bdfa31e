"""A study's store and task queue in PostgreSQL, in EQ-SQL's schema (``[system] storage``).

EQ-SQL's tables (python/eqsql/workflow.sql of github.com/emews/EQ-SQL), shared with eqsql, and
emews's own (:data:`SCHEMA`; docs/src/service.md, "PostgreSQL, EQ-SQL compatible"): those of
results.db, every row keyed by the study's ``exp_id``; a task's point id, attempt and run id
(``emews_tasks``); each pool's lease (``emews_leases``: its deadline in seconds since the epoch
on the server's clock); results that came after a task's first one (``emews_late_results``); the
study's configuration and state (``emews_studies``: ``running``, ``cancelling`` or ``ended``);
reports waiting for the study's verdict (``emews_report_queue``). A task's ``eq_status`` follows
EQ-SQL's codes (:data:`QUEUED` ... :data:`REQUEUED`); its ``json_in`` is a JSON object:
``value``, the objective's value (``null`` for a failure), the task's ``attempt`` and ``rank``,
and ``outcome``, the outcome's wire form (:meth:`~emews.evaluate.Outcome.to_wire`).

:class:`PostgresStore` is the :class:`~emews.store._base.Store` contract on these tables; the
queue's side of them is :class:`emews.service._postgres_transport.TaskQueue`.
"""

import contextlib
import os
import urllib.parse

from .._errors import ConfigError, StoreError, missing_extra
from .._status import Status
from . import _schema as schema
from ._base import Snapshot, Store, curves_of, decoded

QUEUED, RUNNING, COMPLETE, CANCELED, REQUEUED = 0, 1, 2, 3, 4   # EQ-SQL's TaskStatus
EQ_STOP = "EQ_STOP"        # EQ-SQL's payload that tells a worker pool to stop
SCHEMES = ("postgresql://", "postgres://")
TASKS_CHANNEL, RESULTS_CHANNEL = "emews_queue_out", "emews_queue_in"   # LISTEN/NOTIFY

# EQ-SQL's tables as its workflow.sql makes them (IF NOT EXISTS: a database that eqsql set up
# is used as it is), then emews's own.
SCHEMA = """
CREATE TABLE IF NOT EXISTS eq_exp_id_tasks (exp_id text, eq_task_id integer);
CREATE TABLE IF NOT EXISTS eq_tasks (
    eq_task_id integer PRIMARY KEY, eq_status integer, eq_task_type integer,
    json_out text, json_in text, worker_pool text,
    time_created timestamp, time_start timestamp, time_stop timestamp, eq_priority integer);
CREATE TABLE IF NOT EXISTS eq_task_tags (eq_task_id integer PRIMARY KEY, tag text);
CREATE SEQUENCE IF NOT EXISTS emews_id_generator START 1 NO CYCLE;
CREATE TABLE IF NOT EXISTS emews_queue_OUT (
    eq_task_type integer, eq_task_id integer, eq_priority integer);
CREATE TABLE IF NOT EXISTS emews_queue_IN (eq_task_type integer, eq_task_id integer);

CREATE TABLE IF NOT EXISTS emews_evaluations (
    exp_id text NOT NULL, id integer NOT NULL, params text NOT NULL, result double precision,
    status text NOT NULL CHECK (status IN ({statuses})), error text, log_tail text,
    rank integer, attempt integer NOT NULL DEFAULT 1, run_id text, queued double precision,
    started double precision, finished double precision, seq integer, metrics text,
    objectives text, feasible boolean, PRIMARY KEY (exp_id, id))
    WITH (fillfactor = 50);   -- room on each page for a row's updates (HOT: no index write)
CREATE TABLE IF NOT EXISTS emews_attempts (
    exp_id text NOT NULL, id integer NOT NULL, attempt integer NOT NULL, status text NOT NULL,
    result double precision, error text, log_tail text, rank integer, run_id text,
    started double precision, finished double precision, metrics text,
    objectives text, feasible boolean, PRIMARY KEY (exp_id, id, attempt));
CREATE TABLE IF NOT EXISTS emews_meta (
    exp_id text NOT NULL, key text NOT NULL, value text NOT NULL, PRIMARY KEY (exp_id, key));
CREATE TABLE IF NOT EXISTS emews_checkpoints (
    exp_id text NOT NULL, name text NOT NULL, state bytea, driver text NOT NULL,
    PRIMARY KEY (exp_id, name));
CREATE TABLE IF NOT EXISTS emews_tasks (
    eq_task_id integer PRIMARY KEY, exp_id text NOT NULL, id integer NOT NULL,
    attempt integer NOT NULL, run_id text NOT NULL);
CREATE INDEX IF NOT EXISTS emews_tasks_point ON emews_tasks (exp_id, id);
CREATE TABLE IF NOT EXISTS emews_studies (
    exp_id text PRIMARY KEY, config text NOT NULL, expdir text NOT NULL,
    state text NOT NULL, task_type integer NOT NULL);
CREATE TABLE IF NOT EXISTS emews_late_results (   -- last: its presence means the schema is made
    eq_task_id integer NOT NULL, json_in text);
""".format(statuses=", ".join(f"'{s}'" for s in schema.POINT_STATUSES))
# Indexes that EQ-SQL's tables lack, made only with the tables themselves: on a database that
# EQ-SQL made, CREATE INDEX would wait for its clients (a poll holds its table for seconds).
EQSQL_INDEXES = """
CREATE INDEX emews_queue_out_pop ON emews_queue_OUT (eq_task_type, eq_priority DESC, eq_task_id);
CREATE INDEX emews_queue_in_task ON emews_queue_IN (eq_task_id);
CREATE INDEX eq_exp_id_tasks_exp ON eq_exp_id_tasks (exp_id);
ALTER TABLE eq_tasks SET (fillfactor = 50);
"""
# What was added later, made on a database whose schema predates it where its check (UPGRADES)
# finds it missing.
REPORTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS emews_reports (
    n bigserial PRIMARY KEY, exp_id text NOT NULL, id integer NOT NULL, attempt integer NOT NULL,
    step integer NOT NULL, value double precision, metrics text, time double precision);
CREATE INDEX IF NOT EXISTS emews_reports_point ON emews_reports (exp_id, id);
CREATE TABLE IF NOT EXISTS emews_report_queue (
    n bigserial PRIMARY KEY, eq_task_id integer NOT NULL, attempt integer NOT NULL,
    rank integer NOT NULL, report text NOT NULL, verdict boolean);
"""
STATUS_SCHEMA = """
ALTER TABLE emews_evaluations DROP CONSTRAINT IF EXISTS emews_evaluations_status_check;
ALTER TABLE emews_evaluations ADD CONSTRAINT emews_evaluations_status_check
    CHECK (status IN ({statuses}));
""".format(statuses=", ".join(f"'{s}'" for s in schema.POINT_STATUSES))
LEASES_SCHEMA = """
CREATE TABLE IF NOT EXISTS emews_leases (pool text PRIMARY KEY, deadline double precision);
"""
VECTOR_SCHEMA = """
ALTER TABLE emews_evaluations ADD COLUMN IF NOT EXISTS objectives text;
ALTER TABLE emews_evaluations ADD COLUMN IF NOT EXISTS feasible boolean;
ALTER TABLE emews_attempts ADD COLUMN IF NOT EXISTS objectives text;
ALTER TABLE emews_attempts ADD COLUMN IF NOT EXISTS feasible boolean;
"""
UPGRADES = (
    ("SELECT to_regclass('emews_report_queue') IS NOT NULL", REPORTS_SCHEMA),
    ("SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = "
     "'emews_evaluations_status_check' AND pg_get_constraintdef(oid) LIKE "
     f"'%''{schema.POINT_STATUSES[-1]}''%')", STATUS_SCHEMA),
    ("SELECT to_regclass('emews_leases') IS NOT NULL", LEASES_SCHEMA),
    ("SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = "
     "current_schema() AND table_name = 'emews_attempts' AND column_name = 'feasible')",
     VECTOR_SCHEMA))
SCHEMA_LOCK = 0x656d657773   # advisory lock: one schema set-up at a time
# A commit's writes find each row by key, as the planner's statistics choose: without them (a
# young table: autovacuum renews them a minute late at best), it guesses that few rows are the
# study's, and looks at every one of them for each write. The writer renews them when it has
# added this many rows, and again each time their number doubled.
STATISTICS_FROM = 1000
# a finished point's columns (name, type) that Store.finish updates, and those of a study of
# several objectives or constraints besides
FINISHED_COLUMNS = (("status", str), ("result", float), ("error", str), ("log_tail", str),
                    ("rank", int), ("started", float), ("finished", float), ("attempt", int),
                    ("metrics", str))
VECTOR_COLUMNS = (("objectives", str), ("feasible", bool))
SQL_TYPES = {str: "text", float: "float8", int: "integer", bool: "boolean"}
ATTEMPT_COLUMNS = ("status, result, error, log_tail, rank, started, finished, metrics, "
                   "objectives, feasible")
REPLACE_ATTEMPT = ("ON CONFLICT (exp_id, id, attempt) DO UPDATE SET status=EXCLUDED.status, "
                   "error=EXCLUDED.error, finished=EXCLUDED.finished")
# what a snapshot reads: every column but exp_id and log_tail (up to 64 KiB each)
EVALUATION_COLUMNS = ("id, params, result, status, error, rank, attempt, run_id, queued, "
                      "started, finished, seq, metrics, objectives, feasible")
ATTEMPT_READ_COLUMNS = ("id, attempt, status, result, error, rank, run_id, started, finished, "
                        "metrics, objectives, feasible")


def unnest(types):
    """``unnest(...)`` of one binary array parameter of each of ``types``."""
    return f"unnest({', '.join(f'%b::{SQL_TYPES[kind]}[]' for kind in types)})"


def is_url(location):
    """True when ``location`` names a PostgreSQL database rather than a file."""
    return str(location).startswith(SCHEMES)


def connect(url):
    """A psycopg connection to ``url`` with the schema in place; a one-line error when the
    driver is missing or the server cannot be reached."""
    try:
        import psycopg
    except ImportError:
        raise missing_extra("[system].storage", "psycopg", "postgres") from None
    try:
        conn = psycopg.connect(url)
        with conn.transaction():  # CREATE INDEX locks its table even when the index exists:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))  # only when new
            if conn.execute("SELECT to_regclass('emews_late_results')").fetchone()[0] is None:
                made_by_eqsql = conn.execute("SELECT to_regclass('eq_tasks')").fetchone()[0]
                conn.execute(SCHEMA)
                if made_by_eqsql is None:
                    conn.execute(EQSQL_INDEXES)
            for present, missing in UPGRADES:
                if not conn.execute(present).fetchone()[0]:
                    conn.execute(missing)
    except psycopg.Error as exc:
        raise failure(url, "open the store", exc) from None
    return conn


def run_batch(conn, statements):
    """Run ``statements`` (``(sql, params)`` pairs) on ``conn`` (in autocommit) in one
    transaction and, where libpq has pipelines (14 and later), one round trip: ``BEGIN``, the
    statements and ``COMMIT`` with one Sync (``transaction()`` would wait for ``BEGIN`` and
    ``COMMIT``). Those with parameters are prepared (parsed once per connection). Nothing is
    kept when any fails or the batch is interrupted. Returns a cursor on each one's result (rows
    as tuples)."""
    import psycopg

    from psycopg.rows import tuple_row

    if not psycopg.Pipeline.is_supported():
        with conn.transaction():
            return [conn.cursor(row_factory=tuple_row).execute(
                sql, params, prepare=params is not None) for sql, params in statements]
    cursors = []
    try:
        with conn.pipeline():
            conn.execute("BEGIN")
            for sql, params in statements:
                cursors.append(conn.cursor(row_factory=tuple_row))
                cursors[-1].execute(sql, params, prepare=params is not None)
            conn.execute("COMMIT")
    except BaseException:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(psycopg.Error):   # a lost connection: its error stands
                conn.rollback()
        raise
    return cursors


def hide_password(url):
    """``url`` without its password (in the user part or a ``password`` parameter), which
    goes to this process's environment as ``PGPASSWORD`` instead: libpq takes it from there,
    in this process and in those it starts, so that the URL written into the experiment
    directory (and the database) holds no secret. Pools in other jobs, and a later
    ``emews serve --resume``, take it from ``~/.pgpass`` or their own ``PGPASSWORD``."""
    parts = urllib.parse.urlsplit(str(url))
    credentials, at, host = parts.netloc.rpartition("@")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    kept = [(key, value) for key, value in query if key != "password"]
    if ":" in credentials:
        password = urllib.parse.unquote(credentials.split(":", 1)[1])
        credentials = credentials.split(":", 1)[0]
    elif len(kept) < len(query):
        password = dict(query)["password"]
    else:
        return url
    os.environ["PGPASSWORD"] = password
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{credentials}{at}{host}",
                                                  query=urllib.parse.urlencode(kept)))


def redacted(url):
    """``url`` without its password (for messages)."""
    scheme, _, rest = str(url).partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}://{credentials.split(':', 1)[0]}:***@{host}"


def failure(url, action, exc):
    """The one-line :class:`StoreError` of psycopg's ``exc`` during ``action`` on ``url``."""
    return StoreError(f"{redacted(url)}: cannot {action}: {str(exc).strip().splitlines()[0]}")


@contextlib.contextmanager
def guarded(conn, url, action):
    """Turn a psycopg failure during ``action`` into a one-line :class:`StoreError` (the open
    transaction is rolled back; what was committed before stays)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        with contextlib.suppress(psycopg.Error):
            conn.rollback()
        raise failure(url, action, exc) from None


class PostgresStore(Store):
    """The store of study ``exp_id`` in the PostgreSQL database ``url`` (its ``path``:
    ``URL#EXP_ID``). Its connection runs in autocommit: a read holds no transaction open, and a
    commit's writes run in one explicit transaction, with the exchange of a study's queue
    served through this database (:attr:`sharer`). ``create=False`` (and ``readonly``) refuses
    a study the database does not hold.
    """

    # What adds its statements to every commit that has writes, after them, in one transaction
    # and round trip (the study's queue, PostgresService.share): its statements() gives (sql,
    # params) pairs, its committed(cursors) their results (never those of a failed commit).
    sharer = None

    def __init__(self, url, exp_id, create=True, readonly=False):
        from psycopg.rows import dict_row

        self.url, self.exp_id = url, str(exp_id)
        super().__init__(f"{url}#{self.exp_id}")
        self.db = connect(url)
        self.db.autocommit = True
        self.db.row_factory = dict_row
        self.inserted, self.statistics_at = 0, STATISTICS_FROM
        if (readonly or not create) and not self._read(
                "SELECT 1 FROM emews_meta WHERE exp_id=%s LIMIT 1", (self.exp_id,)):
            self.db.close()
            raise ConfigError(self.path, "the database holds no such study to resume from",
                              None, show_value=False)

    def _guard(self, action):
        return guarded(self.db, self.url, action)

    def _execute(self, writes):
        import psycopg

        statements = [(sql, row) for sql, rows, _ in writes for row in rows]
        shared = self.sharer.statements() if self.sharer is not None else []
        try:
            cursors = run_batch(self.db, statements + shared)
        except psycopg.Error as exc:
            raise failure(self.url, self._failing(writes), exc) from None
        if shared:
            self.sharer.committed(cursors[len(statements):])

    def _failing(self, writes):
        """What the write of ``writes`` that fails was for (their batch failed, and nothing of
        it was kept): each runs again, alone, in a transaction rolled back at the end; where
        none fails, the sharer's exchange did."""
        import psycopg

        action = "commit results"
        try:
            with self.db.transaction(force_rollback=True), self.db.cursor() as cur:
                for sql, rows, action in writes:
                    cur.executemany(sql, rows)
        except psycopg.Error:
            return action
        return "exchange tasks and results with the pools" if self.sharer else action

    def _write_columns(self, sql, rows, types, *after, action="record evaluations"):
        """Buffer ``sql`` to run once for all of ``rows``: its parameters are the rows'
        columns, each an array of its type in ``types`` (``None`` stays ``NULL``), then
        ``after``. One statement per table and turn, instead of one per row."""
        if rows:
            columns = [[None if value is None else kind(value) for value in column]
                       for kind, column in zip(types, zip(*rows))]
            self._write(sql, [(*columns, *after)], action)

    def _select(self, columns, table, where="", args=(), tail=""):
        where = f" AND {where.replace('?', '%s')}" if where else ""
        return (f"SELECT {columns} FROM emews_{table} WHERE exp_id=%s{where} {tail}",
                (self.exp_id, *args))

    # --- writes (buffered until commit) ------------------------------------------------------

    def _add(self, rows):
        types = (int, str, str, str, float, int, float, int)
        self._write_columns(
            "INSERT INTO emews_evaluations (id, params, status, run_id, queued, rank, started, "
            f"seq, exp_id) SELECT r.*, x.exp_id FROM {unnest(types)} AS r "
            "CROSS JOIN (SELECT %s::text) AS x(exp_id)", rows, types, self.exp_id)
        self.inserted += len(rows)
        if self.inserted >= self.statistics_at:   # see STATISTICS_FROM
            self.statistics_at = 2 * self.inserted
            self._write("ANALYZE emews_evaluations", [None])

    def _mark_running(self, rows):
        self._update_points(f"status='{Status.RUNNING}', rank=r.rank, started=r.started",
                            (("rank", int), ("started", float)), rows)

    def _finish(self, points, vectors):
        names = FINISHED_COLUMNS + (VECTOR_COLUMNS if vectors else ())
        self._update_points(", ".join(f"{name}=r.{name}" for name, _ in names), names, points)

    def _update_points(self, assignments, columns, rows):
        """Buffer one ``UPDATE`` of the points of ``rows`` (their last value is the point's
        id): ``assignments`` from ``r``, whose ``columns`` (``(name, type)`` pairs) the rows
        are unnested into. As one statement per row would, the last row of a point wins."""
        rows = list({row[-1]: row for row in rows}.values())
        types = (*(kind for _, kind in columns), int)
        self._write_columns(f"UPDATE emews_evaluations e SET {assignments} FROM {unnest(types)} "
                            f"AS r({', '.join(name for name, _ in columns)}, id) WHERE "
                            "e.exp_id=%s AND e.id = ANY(%b::integer[]) AND e.id=r.id", rows,
                            types, self.exp_id, [row[-1] for row in rows])

    def _log_attempts(self, rows):
        """The run id is the point's; of two rows of one attempt, the last wins."""
        names = ATTEMPT_COLUMNS.split(", ")
        updates = ", ".join(f"{name}=EXCLUDED.{name}" for name in names + ["run_id"])
        rows = list({row[:2]: row[:-1] for row in rows}.values())
        types = (int, int, str, float, str, str, int, float, float, str, str, bool)
        self._write_columns(
            f"INSERT INTO emews_attempts (exp_id, id, attempt, {ATTEMPT_COLUMNS}, run_id) "
            f"SELECT e.exp_id, r.id, r.attempt, {', '.join('r.' + n for n in names)}, e.run_id "
            f"FROM {unnest(types)} AS r(id, attempt, {ATTEMPT_COLUMNS}) JOIN emews_evaluations "
            "e ON e.exp_id=%s AND e.id=r.id WHERE e.id = ANY(%b::integer[]) "
            f"ON CONFLICT (exp_id, id, attempt) DO UPDATE SET {updates}", rows, types,
            self.exp_id, [row[0] for row in rows], action="record attempts")

    def _requeue(self, rows):
        self._update_points(f"status='{Status.QUEUED}', attempt=r.attempt, run_id=r.run_id, "
                            "rank=NULL, started=NULL, finished=NULL, objectives=NULL, "
                            "feasible=NULL, queued=r.queued",
                            (("attempt", int), ("run_id", str), ("queued", float)), rows)

    def _cancel(self, rows):
        unfinished = f"status IN ('{Status.QUEUED}', '{Status.RUNNING}')"
        keyed = [(reason, finished, self.exp_id, i) for reason, finished, i in rows]
        self._write("INSERT INTO emews_attempts (exp_id, id, attempt, status, error, rank, "
                    f"run_id, started, finished) SELECT exp_id, id, attempt, '{Status.CANCELLED}'"
                    ", %s, rank, run_id, started, %s FROM emews_evaluations WHERE exp_id=%s "
                    f"AND id=%s AND {unfinished} {REPLACE_ATTEMPT}", keyed)
        self._write(f"UPDATE emews_evaluations SET status='{Status.CANCELLED}', error=%s, "
                    f"finished=%s WHERE exp_id=%s AND id=%s AND {unfinished}", keyed)

    def _interrupt(self, now):
        action = "mark unfinished evaluations interrupted"
        self._write("INSERT INTO emews_attempts (exp_id, id, attempt, status, error, rank, "
                    f"run_id, started, finished) SELECT exp_id, id, attempt, "
                    f"'{Status.INTERRUPTED}', 'the run was interrupted', rank, run_id, started, "
                    f"%s FROM emews_evaluations WHERE exp_id=%s AND status='{Status.RUNNING}' "
                    f"{REPLACE_ATTEMPT}", [(now, self.exp_id)], action)
        self._write(f"UPDATE emews_evaluations SET status='{Status.INTERRUPTED}' WHERE "
                    f"exp_id=%s AND status IN ('{Status.QUEUED}', '{Status.RUNNING}', "
                    f"'{Status.CANCELLED}')", [(self.exp_id,)], action)

    def _insert(self, table, columns, rows, action, replace=False):
        key, *others = columns.split(", ")
        sql = (f"INSERT INTO emews_{table} (exp_id, {columns}) VALUES "
               f"({', '.join(['%s'] * (len(others) + 2))})")
        if replace:
            sql += (f" ON CONFLICT (exp_id, {key}) DO UPDATE SET "
                    + ", ".join(f"{name}=EXCLUDED.{name}" for name in others))
        self._write(sql, [(self.exp_id, *row) for row in rows], action)

    # --- reads ---------------------------------------------------------------------------------

    def attempts(self, point_id=None):
        return self._attempts(f"id, attempt, {ATTEMPT_COLUMNS}, run_id", point_id)

    def _attempts(self, columns, point_id=None):
        """``columns`` of the study's attempts: the logged ones but a done one that its
        point's row holds (a duplicate of it is kept), and that done one from the point's row
        (as results.db's view ``attempts`` reads)."""
        where = "" if point_id is None else "AND id=%(id)s"
        from_points = columns.replace("status", f"'{Status.DONE}'")
        sql = (f"SELECT {columns} FROM emews_attempts a WHERE exp_id=%(exp)s {where} AND "
               f"(status='{Status.DUPLICATE}' OR NOT EXISTS (SELECT 1 FROM emews_evaluations e "
               "WHERE e.exp_id=a.exp_id AND e.id=a.id AND e.attempt=a.attempt AND "
               f"e.status='{Status.DONE}')) UNION ALL SELECT {from_points} FROM "
               f"emews_evaluations WHERE exp_id=%(exp)s {where} AND status='{Status.DONE}' "
               "ORDER BY id, attempt, status")
        return [decoded(row, "metrics")
                for row in self._read(sql, {"exp": self.exp_id, "id": point_id})]

    def report_values(self, after=0):
        return [(row["n"], row["id"], row["attempt"], row["step"], row["value"])
                for row in self._read("SELECT n, id, attempt, step, value FROM emews_reports "
                                      "WHERE exp_id=%s AND n>%s ORDER BY n",
                                      (self.exp_id, after))]

    def curves(self):
        return curves_of((row["id"], row["step"], row["value"]) for row in self._read(
            "SELECT r.id, r.step, r.value FROM emews_reports r JOIN emews_evaluations e ON "
            "e.exp_id=r.exp_id AND e.id=r.id AND e.attempt=r.attempt WHERE r.exp_id=%s "
            "ORDER BY r.n", (self.exp_id,)))

    def snapshot(self):
        """Rows, attempts and meta in one ``REPEATABLE READ`` transaction."""
        self.commit()
        with self._guard("read the store"), self.db.transaction():
            self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            rows = self._read(*self._select(EVALUATION_COLUMNS, "evaluations", tail="ORDER BY id"))
            return Snapshot([decoded(row) for row in rows],
                            self._attempts(ATTEMPT_READ_COLUMNS), self.all_meta())

