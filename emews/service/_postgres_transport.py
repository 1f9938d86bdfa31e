"""The PostgreSQL transport: EQ-SQL's queues, popped with ``FOR UPDATE SKIP LOCKED``.

::

    RemotePool --PostgresService--> emews_queue_OUT --PostgresPool (pop)--> pool job 1 (mpiexec)
               <------------------- emews_queue_IN  <--(report)----------   pool job 2 ...
               <-expired leases (emews_leases: one per pool, renewed by it)
               <-reports (emews_report_queue) --verdicts--> the pool that waits for them

The tables and a ``json_in`` are as :mod:`emews.store._postgres` says; docs/src/service.md
("PostgreSQL, EQ-SQL compatible") says how a task moves through them. The study's state (``running``, ``cancelling``, ``ended``) is how it speaks to its pools. With
``exp_id=None`` (``emews pool --eqsql URL CONFIG``) a pool serves EQ-SQL tasks of its task
type until it pops EQ-SQL's ``EQ_STOP``.
"""

import itertools
import json
import math
import os
import select
import socket
import time

from .._errors import EmewsError
from ..evaluate import BadOutcome, Outcome
from ..evaluate._outcome import Report
from ..pools._base import Task
from .._status import TOLD, Status
from ..store._postgres import (COMPLETE, EQ_STOP, QUEUED, REQUEUED, RESULTS_CHANNEL, RUNNING,
                              TASKS_CHANNEL, PostgresStore, connect, guarded, redacted,
                              run_batch)
from ._transport import CANCEL, DRAIN, STOP, PoolLink, Received, ServiceLink

EXPIRY_CHECK = 1.0     # seconds between the study's looks for expired leases
VACUUM_EVERY = 1.0     # seconds between the study's vacuums of the queues' dead rows
POLL_MAX = 0.05        # seconds between looks at a queue when no NOTIFY came (one may be lost)
STUDY_CHECK = 0.5      # seconds between a pool's looks at its study's state


class PostgresService(ServiceLink):
    """The study's side: tasks go onto EQ-SQL's OUT queue, results come off its IN queue.

    ``slots`` is how many tasks may be queued or running at once; ``config`` (with ``lease``)
    and ``expdir`` are recorded for the pools in ``emews_studies``. Tasks sent go out with the
    next look for results, or before a wait; with the store's commit where it is shared.
    """

    def __init__(self, url, exp_id, slots, lease, config, expdir):
        self.queue = TaskQueue(url, exp_id)
        self.queue.open_study(dict(config, lease=lease), expdir)
        self.slots = max(int(slots), 1)
        self.looked = self.checked = 0.0
        self.vacuumed = time.monotonic()
        self.news = True
        self.incoming, self.waiting = [], {}   # reports of the last receive; id -> their rows
        self.unsent = []                      # tasks sent since the last round trip
        self.store = None                     # the study's store, whose commits carry this
        self.fetched = None                   # (results, reports) looked at, not received yet
        self.riding, self.read = 0, None      # unsent tasks on a commit, and its reader
        self.queue.wait(RESULTS_CHANNEL, 0)   # listen from now on

    def share(self, store):
        """Where ``store`` is the study's own in this database, the tasks sent since the last
        round trip and a look for results and reports ride on its commits (a look while writes
        wait commits them); the results wait for :meth:`receive`."""
        if isinstance(store, PostgresStore) and \
                (store.url, store.exp_id) == (self.queue.url, self.queue.exp_id):
            self.store = store
            store.sharer = self

    def statements(self):
        """What a commit of the shared store carries (see :meth:`share`)."""
        if self.queue.db is None:    # closed: the study ended
            return []
        self.riding = len(self.unsent)
        statements, self.read = self.queue.exchange(self.unsent)
        return statements

    def committed(self, cursors):
        """The results of :meth:`statements`, committed with the store's writes."""
        self.unsent = self.unsent[self.riding:]
        self._looked(self.read(cursors))

    def _looked(self, fetched):
        """Keep what a look fetched, after what :meth:`receive` did not take yet."""
        if self.fetched is not None:
            fetched = tuple(before + now for before, now in zip(self.fetched, fetched))
        self.fetched = fetched
        self.looked, self.news = time.monotonic(), False

    def _look(self):
        """Push the tasks sent and look for results and reports in one round trip (the shared
        store's commit where writes wait in it)."""
        if self.store is not None and self.store.pending:
            self.store.commit()
        else:
            tasks, self.unsent = self.unsent, []
            self._looked(self.queue.incoming(tasks))

    def demand(self, running):
        return self.slots - running

    def send(self, tasks):
        self.unsent += tasks

    def receive(self):
        self.incoming = []
        if time.monotonic() - self.vacuumed >= VACUUM_EVERY:
            self.vacuumed = time.monotonic()
            self.queue.vacuum()
        if self.fetched is None:
            if not self.news and not self.unsent and time.monotonic() - self.looked < POLL_MAX:
                self.news = self.queue.wait(RESULTS_CHANNEL, 0)
                if not self.news:
                    return [], False
            self._look()
        (popped, reports), self.fetched = self.fetched, None
        results = [_received(i, payload, late) for i, payload, late in popped]
        for n, point_id, attempt, rank, payload in reports:
            try:
                self.incoming.append((point_id, attempt, rank, Report.from_wire(
                    json.loads(payload))))
                self.waiting.setdefault(point_id, []).append(n)
            except (ValueError, BadOutcome):
                self.queue.answer([(n, False)])   # malformed: go on, never kept
        return results, bool(results or self.incoming)

    def answer(self, verdicts):
        self.queue.answer([(n, stop) for point_id, stop in verdicts
                           for n in self.waiting.pop(point_id, [])])

    def wait(self, timeout):
        if self.unsent:   # the tasks sent since the last round trip go out before the wait
            tasks, self.unsent = self.unsent, []
            self.queue.push(tasks)
        self.news |= self.queue.wait(RESULTS_CHANNEL, timeout)
        return self.news

    def expired(self):
        if time.monotonic() - self.checked < EXPIRY_CHECK:
            return []
        self.checked = time.monotonic()
        return self.queue.expired()

    def withdraw(self, ids):
        ids = set(ids)
        unsent = [task.id for task in self.unsent if task.id in ids]
        self.unsent = [task for task in self.unsent if task.id not in ids]
        return unsent + self.queue.withdraw(ids.difference(unsent))

    def cancel(self):
        self.queue.set_state("cancelling")

    def close(self):
        if self.queue.db is not None:
            if self.fetched is not None and self.fetched[0]:
                self.queue.put_back(self.fetched[0])   # for a later service to adopt
            self.queue.end_study()
            self.queue.close()


def _received(point_id, payload, late):
    """A :class:`Received` of a task's ``json_in``: an emews pool's names its attempt and
    rank; an EQ-SQL worker's (a JSON number is the value; anything else fails the evaluation,
    naming what came) counts for the attempt the study holds."""
    try:
        result = json.loads(payload)
    except (TypeError, ValueError):
        result = None
    if isinstance(result, dict) and "outcome" in result and type(result.get("attempt")) is int \
            and type(result.get("rank")) is int:
        return Received(point_id, result["attempt"], result["rank"],
                        Outcome.received(result["outcome"]), late)
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        return Received(point_id, None, 0, Outcome(float(result)), late)
    return Received(point_id, None, 0, Outcome(math.nan, Status.FAILED, "the result is not a "
                                               f"number: {str(payload)[:200]!r}"), late)


def _notified(pgconn, timeout):
    """Whether a NOTIFY came to ``pgconn`` (listening), waiting up to ``timeout`` s on its
    socket (psycopg's ``notifies`` spins through its timeout's last ms: 1 ms of CPU per wait)."""
    pgconn.consume_input()
    came = _drained(pgconn)
    if not came and timeout > 0:
        poll = select.poll()   # select.select refuses a socket numbered 1024 or more
        poll.register(pgconn.socket, select.POLLIN)
        poll.poll(timeout * 1000)
        pgconn.consume_input()
        came = _drained(pgconn)
    return came


def _drained(pgconn):
    """Take the notifications that came; return whether there were any."""
    came = False
    while pgconn.notifies() is not None:
        came = True
    return came


def result_json(outcome, attempt, rank):
    """An outcome as the ``json_in`` of its task (see the module docstring)."""
    wire = outcome.to_wire()
    return json.dumps({"value": wire[0], "attempt": attempt, "rank": rank, "outcome": wire})


class PostgresPool(PoolLink):
    """A pool job's side, on its own :class:`TaskQueue` of study ``exp_id`` (``None``: EQ-SQL
    tasks of ``task_type``, served with ``config`` and ``workdir``)."""

    def __init__(self, url, exp_id=None, task_type=0, config=None, workdir=None, name=None):
        self.queue = TaskQueue(url, exp_id, task_type)
        self.config, self.workdir = config, workdir
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.lease = 60.0
        self.pending = []                    # emews_report_queue rows waiting for verdicts
        self.said = None
        self.looked = self.popped = time.monotonic()
        self.news = True                     # the queue may hold tasks: look
        self.queue.wait(TASKS_CHANNEL, 0)    # listen from now on

    def learn_study(self):
        if self.queue.exp_id is None:
            config, expdir = dict(self.config), str(self.workdir or "")
        else:
            study = self.queue.study()
            if study is None:
                raise EmewsError(f"{redacted(self.queue.url)}: no study "
                                 f"{self.queue.exp_id!r} in this database")
            config, expdir, _, self.queue.task_type = study
        self.lease = float(config.pop("lease", self.lease))
        self.name = self.queue.claim(self.name, self.lease)
        return {"config": config, "expdir": expdir, "lease": self.lease}

    def report_and_take(self, finished, free, ask, renew):
        if time.monotonic() - self.popped >= POLL_MAX:
            self.news = True                 # a NOTIFY lost with a reconnect: look anyway
        n = free if ask and self.news else 0
        if n:
            self.popped, self.news = time.monotonic(), False
        results = [(task.id, result_json(outcome, task.attempt, rank))
                   for task, rank, outcome in finished]
        popped = self.queue.report_and_pop(results, self.name, self.lease, n, renew)
        self.news |= n > 0 and len(popped) == n    # a full batch: there may be more
        tasks = []
        for eq_id, payload, run_id, attempt in popped:
            if payload == EQ_STOP:
                self.said = (DRAIN, "EQ_STOP popped from the queue")
            else:
                tasks.append(Task(eq_id, payload, run_id, attempt))
        return tasks

    def wait(self, timeout):
        self.news |= self.queue.wait(TASKS_CHANNEL, timeout)
        return self.news

    @property
    def carries_reports(self):
        return self.queue.exp_id is not None   # an emews study's: EQ-SQL's have no pruner

    def report(self, entries):
        self.pending += self.queue.put_reports([(task.id, task.attempt, rank,
                                                 json.dumps(one.to_wire()))
                                                for task, rank, one in entries])

    def verdicts(self):
        if not self.pending:
            return []
        answered = self.queue.verdicts(self.pending)
        done = {n for n, _, _ in answered}
        self.pending = [n for n in self.pending if n not in done]
        return [(eq_id, stop) for _, eq_id, stop in answered]

    def instruction(self):
        if self.queue.exp_id is not None and time.monotonic() - self.looked >= STUDY_CHECK:
            self.looked = time.monotonic()
            study = self.queue.study()
            if study is None or study[2] == "ended":
                self.said = (STOP, "the study ended")
            elif study[2] == "cancelling":
                self.said = (CANCEL, "the study was cancelled")
        return self.said

    def close(self):
        self.queue.close()


class TaskQueue:
    """EQ-SQL's queue for study ``exp_id`` (``None``: tasks of any study, eqsql's included) and
    task type ``task_type``, on its own connection; every call commits."""

    def __init__(self, url, exp_id=None, task_type=0):
        self.url, self.exp_id, self.task_type = url, exp_id, int(task_type)
        self.db = connect(url)
        self.db.autocommit = True         # one statement, one round trip
        self.listener = None
        self.eq_ids = {}         # the study's side: point id -> eq_task_id
        self.answered = set()    # point ids whose result it popped since their last push
        self.last_report = 0     # the last report row it read
        self.released = {}       # pool -> the deadline of its lease whose tasks it released

    def _guard(self, action):
        return guarded(self.db, self.url, action)

    def close(self):
        """Close the connections (safe to call twice)."""
        for conn in (self.db, self.listener):
            if conn is not None:
                conn.close()
        self.db = self.listener = None

    def wait(self, channel, timeout):
        """Wait up to ``timeout`` s for news on ``channel`` (a push or a report of any study
        NOTIFYs it; what came since the last wait counts); return whether some came."""
        with self._guard("listen for news"):
            if self.listener is None:
                self.listener = connect(self.url)
                self.listener.autocommit = True
                self.listener.execute(f"LISTEN {channel}")
            return _notified(self.listener.pgconn, timeout)

    # --- the study's side ----------------------------------------------------------------------

    def open_study(self, config, expdir):
        """Record the study (its configuration, for pools) as running (again, on a resume)."""
        with self._guard("record the study"), self.db.transaction():
            self.db.execute("INSERT INTO emews_studies (exp_id, config, expdir, state, "
                            "task_type) VALUES (%s, %s, %s, 'running', %s) ON CONFLICT (exp_id) "
                            "DO UPDATE SET config=EXCLUDED.config, expdir=EXCLUDED.expdir, "
                            "state='running', task_type=EXCLUDED.task_type",
                            (self.exp_id, json.dumps(config), str(expdir), self.task_type))
            self.eq_ids = dict(self.db.execute("SELECT id, eq_task_id FROM emews_tasks WHERE "
                                               "exp_id=%s", (self.exp_id,)).fetchall())
            # an earlier, killed service's queued tasks: the master queues again what it needs
            # (its results, on the IN queue, are kept: the master adopts them)
            self.db.execute(UNQUEUE, (self.exp_id,))
            # results that a killed service took off the IN queue but never stored (it died
            # between the commit that took them and the one that would have stored them)
            self.db.execute(UNRECORDED, {"exp": self.exp_id, "complete": COMPLETE,
                                         "final": sorted(str(s) for s in TOLD)})
            # every other completed task's result is the study's: its next attempt (a retry,
            # a thaw) is queued whatever came of the last one
            self.answered = {point for (point,) in self.db.execute(
                ANSWERED, (self.exp_id, COMPLETE)).fetchall()}

    def end_study(self):
        """Tell the pools that the study ended; take its unstarted tasks off the queue."""
        with self._guard("end the study"), self.db.transaction():
            self.db.execute("UPDATE emews_studies SET state='ended' WHERE exp_id=%s",
                            (self.exp_id,))
            self.db.execute(UNQUEUE, (self.exp_id,))

    def push(self, tasks):
        """Put tasks on the OUT queue in one round trip: a new point becomes an EQ-SQL task;
        another attempt requeues its point's task, with its new parameters once the study has
        the last attempt's result (a retry, a thaw), else (an expired lease) only if no result
        came meanwhile (the first one wins)."""
        statements, record = self._pushing(tasks)
        with self._guard("queue tasks"):
            record(run_batch(self.db, statements))

    def _pushing(self, tasks):
        """The statements of :meth:`push`, and what records the new tasks' EQ-SQL ids from the
        cursors of a batch that begins with them."""
        new = [t for t in tasks if t.id not in self.eq_ids]
        again = [t for t in tasks if t.id in self.eq_ids and t.id not in self.answered]
        after = [t for t in tasks if t.id in self.eq_ids and t.id in self.answered]
        self.answered.difference_update(t.id for t in after)
        statements = []
        if new:   # new rows only: no other writer holds them
            statements.append((NEW_TASKS, {
                "ids": [t.id for t in new], "params": [t.params for t in new],
                "run_ids": [t.run_id for t in new], "attempts": [t.attempt for t in new],
                "queued": QUEUED, "type": self.task_type, "exp": self.exp_id}))
        for sql, group, last in ((REQUEUE_EQ, again, COMPLETE),
                                 (NEXT_ATTEMPT_EQ, after, [t.params for t in after])):
            if group:
                eq_ids = [self.eq_ids[t.id] for t in group]
                statements += [(sql, (REQUEUED, eq_ids, last)),
                               (REQUEUE_EMEWS, (eq_ids, [t.attempt for t in group],
                                                [t.run_id for t in group])),
                               (REQUEUE_OUT, (self.task_type, eq_ids))]
        statements.append((NOTIFY, (TASKS_CHANNEL,)))

        def record(cursors):
            if new:
                self.eq_ids.update(cursors[0].fetchall())
        return statements, record

    def incoming(self, tasks=()):
        """In one round trip: push ``tasks``, pop the study's results and late results,
        ``[(point id, json_in, late), ...]``, and read its reports not read before that wait
        for a verdict, ``[(n, point id, attempt, rank, report JSON), ...]`` in order."""
        statements, read = self.exchange(tasks)
        with self._guard("queue tasks and read results and reports"):
            return read(run_batch(self.db, statements))

    def exchange(self, tasks=()):
        """The statements of :meth:`incoming` (to run last in any batch), and what reads its
        results from their cursors."""
        statements, record = self._pushing(tasks) if tasks else ([], lambda cursors: None)
        statements += [(RESULTS, {"exp": self.exp_id}),
                       (REPORTS, (self.exp_id, self.last_report))]

        def read(cursors):
            record(cursors)
            results, reports = cursors[-2].fetchall(), cursors[-1].fetchall()
            self.answered.update(point_id for point_id, _, late in results if not late)
            if reports:
                self.last_report = reports[-1][0]
            return results, reports
        return statements, read

    def put_back(self, results):
        """Put results that :meth:`incoming` popped back where they were, for a later service
        of the study to adopt."""
        first = [self.eq_ids[i] for i, _, was_late in results if not was_late]
        late = [(self.eq_ids[i], payload) for i, payload, was_late in results if was_late]
        with self._guard("put results back on the queue"):
            run_batch(self.db, [
                ("INSERT INTO emews_queue_IN (eq_task_type, eq_task_id) SELECT eq_task_type, "
                 "eq_task_id FROM eq_tasks WHERE eq_task_id = ANY(%b::integer[])", (first,)),
                ("INSERT INTO emews_late_results (eq_task_id, json_in) SELECT * FROM "
                 "unnest(%b::integer[], %b::text[])", ([i for i, _ in late],
                                                       [payload for _, payload in late]))])

    def withdraw(self, ids):
        """Take these points' tasks off the OUT queue; return the ids of those no pool had
        popped yet."""
        points = {self.eq_ids[i]: i for i in ids if i in self.eq_ids}
        if not points:
            return []
        with self._guard("withdraw tasks"):
            rows = self.db.execute("DELETE FROM emews_queue_OUT WHERE eq_task_id = "
                                   "ANY(%b::integer[]) RETURNING eq_task_id",
                                   (list(points),)).fetchall()
        return [points[eq_id] for eq_id, in rows]

    def vacuum(self):
        """Clear the queues' dead rows (a task leaves one in each, read by every pop and look
        until a vacuum; autovacuum comes a minute later at best)."""
        with self._guard("vacuum the queues"):
            self.db.execute("VACUUM emews_queue_OUT, emews_queue_IN, emews_late_results, "
                            "emews_report_queue")

    def set_state(self, state):
        """Record the study's state for its pools (``cancelling``: stop what runs)."""
        with self._guard("record the study's state"):
            self.db.execute("UPDATE emews_studies SET state=%s WHERE exp_id=%s",
                            (state, self.exp_id))
            self.db.execute(f"NOTIFY {TASKS_CHANNEL}")   # wake the pools that wait for work

    def answer(self, verdicts):
        """Give the reports ``n`` their verdicts: ``[(n, stop), ...]`` (wakes the pools)."""
        if not verdicts:
            return
        with self._guard("answer reports"):
            run_batch(self.db, [("UPDATE emews_report_queue r SET verdict=v.stop FROM unnest("
                                 "%s::bigint[], %s::boolean[]) AS v(n, stop) WHERE r.n=v.n",
                                 ([n for n, _ in verdicts], [bool(s) for _, s in verdicts])),
                                (NOTIFY, (TASKS_CHANNEL,))])

    def expired(self):
        """Points whose pool's lease ran out, released: ``[(point id, pool), ...]``; each lease
        that ran out once (the look for its tasks reads every task of the study)."""
        with self._guard("check leases"):
            ended = [(pool, deadline) for pool, deadline in self.db.execute(
                "SELECT pool, deadline FROM emews_leases WHERE deadline < extract(epoch FROM "
                "now())").fetchall() if self.released.get(pool) != deadline]
            if not ended:
                return []
            released = self.db.execute(RELEASE_EXPIRED, {
                "pools": [pool for pool, _ in ended], "exp": self.exp_id,
                "running": RUNNING}).fetchall()
        self.released.update(ended)
        return released

    # --- a pool's side ---------------------------------------------------------------------------

    def study(self):
        """``(config, expdir, state, task_type)`` of the study, or ``None``; ``state`` is
        ``running``, ``cancelling`` or ``ended``."""
        with self._guard("read the study"):
            row = self.db.execute("SELECT config, expdir, state, task_type FROM emews_studies "
                                  "WHERE exp_id=%s", (self.exp_id,)).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], row[2], row[3])

    def claim(self, name, lease):
        """Take a lease of ``lease`` s under ``name`` (``HOST:PID``), or, where a pool of that
        name was here before (its tasks are its own, released when its lease runs out),
        ``HOST.2:PID`` ...; return the name taken."""
        host, _, pid = name.rpartition(":")
        for k in itertools.count(1):
            taken = name if k == 1 else f"{host}.{k}:{pid}"
            with self._guard("take a lease"):
                if self.db.execute(CLAIM, (taken, float(lease))).fetchone():
                    return taken

    def put_reports(self, reports):
        """Queue a pool's reports ``[(eq_task_id, attempt, rank, report JSON), ...]`` for the
        study (NOTIFYing it); return their row numbers."""
        with self._guard("send reports"):
            inserted, _ = run_batch(self.db, [(
                "INSERT INTO emews_report_queue (eq_task_id, attempt, rank, report) SELECT * "
                "FROM unnest(%s::integer[], %s::integer[], %s::integer[], %s::text[]) "
                "RETURNING n", [list(column) for column in zip(*reports)]),
                (NOTIFY, (RESULTS_CHANNEL,))])
            return [n for n, in inserted.fetchall()]

    def verdicts(self, numbers):
        """Take back the answered reports of rows ``numbers``: ``[(n, eq_task_id, stop), ...]``."""
        with self._guard("read verdicts"):
            return self.db.execute("DELETE FROM emews_report_queue WHERE n = ANY(%s) AND "
                                   "verdict IS NOT NULL RETURNING n, eq_task_id, verdict",
                                   (list(numbers),)).fetchall()

    def report_and_pop(self, results, pool, lease, n, renew=False):
        """A pool's exchange, in one transaction and one round trip: store ``pool``'s
        ``results`` (``[(eq_task_id, json_in), ...]``) onto the IN queue (a task that has its
        result keeps it: a later one goes to ``emews_late_results``), take up to ``n`` tasks
        off the OUT queue, held by ``pool``; if ``renew`` or any are taken, ``pool``'s lease
        runs ``lease`` s from now (its row locked first, as the study locks them). Returns the
        popped ``[(eq_task_id, payload, run_id, attempt), ...]`` in priority order (EQ-SQL's
        stop message: payload :data:`EQ_STOP`)."""
        statements = [(LEASE, (pool, float(lease)))] if renew or n else []
        if results:
            statements += [(REPORT, {"ids": [r[0] for r in results], "pool": pool,
                                     "payloads": [r[1] for r in results],
                                     "complete": COMPLETE}),
                           (NOTIFY, (RESULTS_CHANNEL,))]
        popped = len(statements)    # the result of the pop, if any, comes after the others'
        if n:
            study = "" if self.exp_id is None else "AND (SELECT t.exp_id FROM emews_tasks t " \
                "WHERE t.eq_task_id=q.eq_task_id) = %(exp)s"
            statements.append((POP.format(study=study), {
                "type": self.task_type, "exp": self.exp_id, "n": int(n), "pool": pool,
                "running": RUNNING, "stop": EQ_STOP, "complete": COMPLETE}))
        if not statements:
            return []
        with self._guard("trade with the queue"):
            results = run_batch(self.db, statements)
            rows = results[popped].fetchall() if n else []
        return [(i, payload, run_id or f"EQ{i:06d}", attempt or 1)
                for i, payload, run_id, attempt in rows]


# A new point's task, in every table at once (its rows are new: no other writer holds them).
NEW_TASKS = (
    "WITH n AS MATERIALIZED (SELECT id, params, run_id, attempt, "
    "nextval('emews_id_generator')::integer AS eq FROM unnest(%(ids)b::integer[], "
    "%(params)b::text[], %(run_ids)b::text[], %(attempts)b::integer[]) WITH ORDINALITY "
    "AS t(id, params, run_id, attempt, k) ORDER BY k), "
    "e AS (INSERT INTO eq_tasks (eq_task_id, eq_status, eq_task_type, json_out, time_created, "
    "eq_priority) SELECT eq, %(queued)s, %(type)s, params, now(), 0 FROM n), "
    "x AS (INSERT INTO eq_exp_id_tasks (exp_id, eq_task_id) SELECT %(exp)s, eq FROM n), "
    "t AS (INSERT INTO emews_tasks (eq_task_id, exp_id, id, attempt, run_id) "
    "SELECT eq, %(exp)s, id, attempt, run_id FROM n), "
    "q AS (INSERT INTO emews_queue_OUT (eq_task_type, eq_task_id, eq_priority) "
    "SELECT %(type)s, eq, 0 FROM n) SELECT id, eq FROM n")
# Another attempt of a point: eq_tasks before emews_tasks, in the order every writer locks them.
REQUEUE_EQ = ("UPDATE eq_tasks SET eq_status=%s, json_in=NULL, worker_pool=NULL "
              "WHERE eq_task_id = ANY(%b::integer[]) AND eq_status <> %s")
# The next attempt of a point whose last attempt's result the study has (it is complete).
NEXT_ATTEMPT_EQ = ("UPDATE eq_tasks e SET eq_status=%s, json_out=a.params, json_in=NULL, "
                   "worker_pool=NULL FROM unnest(%b::integer[], %b::text[]) AS a(eq, params) "
                   "WHERE e.eq_task_id=a.eq")
REQUEUE_EMEWS = ("UPDATE emews_tasks t SET attempt=a.attempt, run_id=a.run_id "
                 "FROM unnest(%b::integer[], %b::integer[], %b::text[]) "
                 "AS a(eq, attempt, run_id) WHERE t.eq_task_id=a.eq")
# The study's tasks on the OUT queue, taken off it.
UNQUEUE = ("DELETE FROM emews_queue_OUT q USING emews_tasks t WHERE q.eq_task_id=t.eq_task_id "
           "AND t.exp_id=%s")
REQUEUE_OUT = ("INSERT INTO emews_queue_OUT (eq_task_type, eq_task_id, eq_priority) "
               "SELECT %s, eq, 0 FROM unnest(%b::integer[]) AS eq")
# One statement; a task answered meanwhile (a late result of a requeued task) is not run again.
POP = (
    "WITH popped AS (DELETE FROM emews_queue_OUT WHERE ctid = ANY(ARRAY("
    "SELECT q.ctid FROM emews_queue_OUT q WHERE q.eq_task_type=%(type)s "
    "{study} ORDER BY q.eq_priority DESC, q.eq_task_id FOR UPDATE OF q SKIP "
    "LOCKED LIMIT %(n)s)) RETURNING eq_task_id, eq_priority), "
    "started AS (UPDATE eq_tasks e SET eq_status=%(running)s, worker_pool=%(pool)s, "
    "time_start=now() WHERE e.eq_task_id = ANY(ARRAY(SELECT eq_task_id FROM popped)) AND "
    "e.json_out <> %(stop)s AND e.eq_status IS DISTINCT FROM %(complete)s "
    "RETURNING e.eq_task_id) "
    "SELECT p.eq_task_id, p.json_out, (SELECT run_id FROM emews_tasks t WHERE "
    "t.eq_task_id=p.eq_task_id), (SELECT attempt FROM emews_tasks t WHERE "
    "t.eq_task_id=p.eq_task_id) FROM (SELECT eq_task_id, eq_priority, (SELECT json_out FROM "
    "eq_tasks e WHERE e.eq_task_id=p.eq_task_id), (SELECT eq_status FROM eq_tasks e WHERE "
    "e.eq_task_id=p.eq_task_id) FROM popped p) AS p(eq_task_id, eq_priority, json_out, "
    "eq_status) WHERE p.eq_status IS DISTINCT FROM %(complete)s "
    "ORDER BY p.eq_priority DESC, p.eq_task_id")
# The study's results and late results, each found from its queue's row (a small table).
# Every statement here finds a task's rows by key (= ANY(ARRAY(...)), scalar subqueries): the
# planner's statistics lag far behind a running study, and a join it thinks cheap would read
# every task ever made, a cost that grows with each task.
RESULTS = (
    "WITH popped AS (DELETE FROM emews_queue_IN WHERE eq_task_id = ANY(ARRAY("
    "SELECT q.eq_task_id FROM emews_queue_IN q WHERE (SELECT t.exp_id FROM emews_tasks t "
    "WHERE t.eq_task_id=q.eq_task_id) = %(exp)s)) RETURNING eq_task_id), "
    "late AS (DELETE FROM emews_late_results WHERE eq_task_id = ANY(ARRAY("
    "SELECT l.eq_task_id FROM emews_late_results l WHERE (SELECT t.exp_id FROM emews_tasks t "
    "WHERE t.eq_task_id=l.eq_task_id) = %(exp)s)) RETURNING eq_task_id, json_in) "
    "SELECT (SELECT id FROM emews_tasks t WHERE t.eq_task_id=p.eq_task_id), "
    "(SELECT json_in FROM eq_tasks e WHERE e.eq_task_id=p.eq_task_id), false FROM popped p "
    "UNION ALL SELECT (SELECT id FROM emews_tasks t WHERE t.eq_task_id=l.eq_task_id), "
    "l.json_in, true FROM late l")
# The study's completed tasks whose points the store does not hold as finished, and that are
# not on the IN queue: back on it (read once, as a service of the study starts).
UNRECORDED = (
    "INSERT INTO emews_queue_IN (eq_task_type, eq_task_id) SELECT e.eq_task_type, "
    "e.eq_task_id FROM emews_tasks t JOIN eq_tasks e ON e.eq_task_id=t.eq_task_id "
    "JOIN emews_evaluations v ON v.exp_id=t.exp_id AND v.id=t.id WHERE t.exp_id=%(exp)s AND "
    "e.eq_status=%(complete)s AND v.status <> ALL(%(final)s) AND NOT EXISTS (SELECT 1 FROM "
    "emews_queue_IN q WHERE q.eq_task_id=e.eq_task_id)")
# The study's completed tasks that are not on the IN queue: their points' ids.
ANSWERED = ("SELECT t.id FROM emews_tasks t JOIN eq_tasks e ON e.eq_task_id=t.eq_task_id "
            "WHERE t.exp_id=%s AND e.eq_status=%s AND NOT EXISTS (SELECT 1 FROM "
            "emews_queue_IN q WHERE q.eq_task_id=e.eq_task_id)")
# A task's first result completes it and goes onto the IN queue; a later one is kept aside.
REPORT = (
    "WITH r AS (SELECT * FROM unnest(%(ids)b::integer[], %(payloads)b::text[]) AS "
    "r(id, json_in)), done AS (UPDATE eq_tasks e SET json_in=r.json_in, "
    "eq_status=%(complete)s, worker_pool=%(pool)s, time_stop=now() FROM r WHERE "
    "e.eq_task_id = ANY(%(ids)b::integer[]) AND e.eq_task_id=r.id AND "
    "e.eq_status <> %(complete)s RETURNING e.eq_task_id, e.eq_task_type), "
    "queued AS (INSERT INTO emews_queue_IN (eq_task_type, eq_task_id) SELECT "
    "eq_task_type, eq_task_id FROM done) INSERT INTO emews_late_results "
    "(eq_task_id, json_in) SELECT r.id, r.json_in FROM r JOIN emews_tasks t ON "
    "t.eq_task_id=r.id WHERE r.id NOT IN (SELECT eq_task_id FROM done)")
# A study's reports that wait, after the last it read (from the queue's rows: a join would
# read every task of the study, each time, as a queue that is mostly empty is looked at).
REPORTS = ("SELECT * FROM (SELECT r.n, (SELECT t.id FROM emews_tasks t WHERE "
           "t.eq_task_id=r.eq_task_id AND t.exp_id=%s), r.attempt, r.rank, r.report FROM "
           "emews_report_queue r WHERE r.verdict IS NULL AND r.n > %s) AS r(n, id, attempt, "
           "rank, report) WHERE r.id IS NOT NULL ORDER BY r.n")
NOTIFY = "SELECT pg_notify(%s, '')"   # NOTIFY CHANNEL, as a statement that can be prepared
CLAIM = ("INSERT INTO emews_leases (pool, deadline) VALUES (%s, extract(epoch FROM now()) + %s) "
         "ON CONFLICT (pool) DO NOTHING RETURNING pool")
LEASE = ("INSERT INTO emews_leases (pool, deadline) VALUES (%s, extract(epoch FROM now()) + %s) "
         "ON CONFLICT (pool) DO UPDATE SET deadline=EXCLUDED.deadline")
# The study's running tasks held by pools whose leases ran out, released: the lease rows are
# locked first (a pool that renews meanwhile keeps its tasks), as a pool's trade locks them.
RELEASE_EXPIRED = (
    "WITH ended AS (SELECT pool FROM emews_leases WHERE pool = ANY(%(pools)s) AND "
    "deadline < extract(epoch FROM now()) FOR UPDATE) "
    "UPDATE eq_tasks e SET worker_pool=NULL FROM emews_tasks t, ended WHERE "
    "t.exp_id=%(exp)s AND e.eq_task_id=t.eq_task_id AND e.eq_status=%(running)s AND "
    "e.worker_pool=ended.pool RETURNING t.id, ended.pool")
