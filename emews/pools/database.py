"""Pools that meet a study in PostgreSQL: EQ-SQL's queues, popped with ``FOR UPDATE SKIP LOCKED``.

::

    Master --submit--> DatabasePool --push--> emews_queue_OUT --pop--> pool job 1 (mpiexec)
           <-collect--              <--pop--- emews_queue_IN  <-report- pool job 2 ...
                                    <-expired leases (emews_tasks.deadline; renewed by pools)

:class:`DatabasePool` is the study's side (``emews serve`` with ``[system] storage =
"postgresql://..."``); :func:`pool_job` is a pool job's (``mpiexec -n N emews pool EXPDIR``):
rank 0 pops batches of tasks for its free workers, hands them to its MPI workers, reports each
result and renews its leases every quarter lease. It serves the study until the study ends
(when the study is cancelled, it cancels what its workers run first), or, with
``exp_id=None`` (``emews pool --eqsql URL CONFIG``), serves EQ-SQL tasks of its task type
(``eqsql``'s included) until it pops EQ-SQL's ``EQ_STOP``.
"""

import dataclasses
import json
import math
import os
import socket
import time
from pathlib import Path

from ..evaluate import Outcome
from ..store.postgres import (EQ_STOP, RESULTS_CHANNEL, TASKS_CHANNEL, TaskQueue,
                              result_json, study_error)
from .base import Backoff, Pool, Task

EXPIRY_CHECK = 1.0     # seconds between looks for expired leases
POLL_MAX = 0.05        # longest wait between looks at the queue (NOTIFY wakes it sooner)
BLOCK_MAX = 0.25       # longest wait of a blocking collect
STUDY_CHECK = 0.5      # seconds between a pool's looks at its study's state


class DatabasePool(Pool):
    """The study's side: tasks go onto EQ-SQL's OUT queue, results come off its IN queue.

    ``slots`` is how many tasks may be queued or running at once (what the ME plans for);
    ``lease`` is recorded for the pools. A task whose lease expires comes back from
    :meth:`collect` as ``interrupted`` (the master runs it again); a late result of such a task
    still counts, as its first result, and its new attempt is taken off the queue. A result
    that comes after a task's first one comes back as a ``duplicate``, for the record.
    On a pause or stop, :meth:`hold` takes the tasks no pool has popped off the queue;
    :meth:`cancel` does too, and tells the pools to cancel what they run.
    """

    def __init__(self, url, exp_id, slots, lease, config, expdir, task_type=0):
        self.queue = TaskQueue(url, exp_id, task_type)
        self.queue.open_study(dict(config, lease=lease), expdir)
        self.slots = max(int(slots), 1)
        self.running = {}                 # point id -> Task
        self.interrupted = set()          # point ids whose lease expired
        self.checked = 0.0
        self.queue.wait(RESULTS_CHANNEL, 0)   # listen from now on

    def free_slots(self):
        return self.slots - len(self.running)

    def submit(self, tasks):
        self.queue.push(tasks)
        self.running.update((task.id, task) for task in tasks)
        return [(task, 0) for task in tasks]

    def collect(self, block=True):
        """Results, expired leases and duplicates; with ``block``, wait up to
        :data:`BLOCK_MAX` for one (then the master looks at ``emews pause`` and ``stop``)."""
        until = time.monotonic() + BLOCK_MAX
        while True:
            finished = [self._duplicate(i, payload) if late else self._result(i, payload)
                        for i, payload, late in self.queue.results()]
            if time.monotonic() - self.checked >= EXPIRY_CHECK:
                self.checked = time.monotonic()
                finished += self._expired()
            if finished or not block or not self.running or time.monotonic() >= until:
                return finished
            self.queue.wait(RESULTS_CHANNEL, POLL_MAX)

    def _result(self, point_id, payload):
        """The ``(task, rank, outcome)`` of a result. A task's first result wins (a pool
        never reports a second one); a result for a point this service never handed out (an
        earlier, killed service of the study did) comes with ``params=None``, for the master
        to adopt."""
        task = self.running.pop(point_id, None)
        late = point_id in self.interrupted
        self.interrupted.discard(point_id)
        if late:  # its new attempt is not needed: take it off the queue if still there
            self.queue.withdraw([point_id])
        params = task.params if task is not None else ("" if late else None)
        return self._parsed_result(point_id, payload, params,
                                   task.attempt if task is not None else 1)

    @staticmethod
    def _parsed_result(point_id, payload, params, attempt):
        """``(task, rank, outcome)`` of ``json_in``: an emews pool's result names its
        attempt and rank; an EQ-SQL worker's (a bare number, or anything else) counts for
        ``attempt``."""
        result = _parsed(payload)
        if result is None:
            return Task(point_id, params, "", attempt), 0, _foreign_outcome(payload)
        return (Task(point_id, params, "", result["attempt"]), result["rank"],
                Outcome.received(result))

    def _duplicate(self, point_id, payload):
        """The ``(task, rank, outcome)`` of a result that came after the point's first one:
        its outcome's status is ``duplicate`` (the master records it; the point keeps its
        first result)."""
        task, rank, outcome = self._parsed_result(point_id, payload, "", 1)
        return task, rank, dataclasses.replace(outcome, status="duplicate")

    def _expired(self):
        expired = []
        for point_id, pool in self.queue.expired():
            task = self.running.pop(point_id, None)
            if task is None:
                continue
            self.interrupted.add(point_id)
            expired.append((task, 0, Outcome(math.nan, "interrupted",
                                              f"lease expired: {pool} stopped answering")))
        return expired

    def hold(self):
        return [self.running.pop(i) for i in self.queue.withdraw(list(self.running))]

    def cancel(self):
        self.hold()
        self.queue.set_state("cancelling")

    def close(self, status=0):
        if self.queue.db is not None:
            self.queue.end_study()
            self.queue.close()


def _parsed(payload):
    """An emews pool's ``json_in`` (an outcome's wire form with the task's ``attempt`` and
    ``rank``) as a dict, or ``None`` when it is something else."""
    try:
        result = json.loads(payload)
    except (TypeError, ValueError):
        return None
    return result if isinstance(result, dict) and "value" in result and \
        type(result.get("attempt")) is int and type(result.get("rank")) is int else None


def _foreign_outcome(payload):
    """The outcome of a result that an EQ-SQL worker pool reported: a JSON number is the
    value; anything else fails the evaluation, naming what came."""
    try:
        value = json.loads(payload)
    except (TypeError, ValueError):
        value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Outcome(float(value))
    return Outcome(math.nan, "failed", f"the result is not a number: {str(payload)[:200]!r}")


class Attachment:
    """Rank 0 of a pool job on the database: pops, hands out, reports, renews (see module)."""

    def __init__(self, pool, queue, lease, walltime=None, name=None):
        self.pool, self.queue, self.lease = pool, queue, float(lease)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.deadline = None if walltime is None else time.monotonic() + walltime
        self.draining, self.reason, self.cancelled = False, None, False
        self.renewed = self.looked = self.popped = time.monotonic()
        self.news = True                   # the queue may hold tasks: look
        queue.wait(TASKS_CHANNEL, 0)       # listen from now on

    def run(self):
        """Serve until the study ends (or EQ_STOP, or the walltime); return why we left.

        Its workers' results come by MPI and tasks by the database: while workers run, MPI is
        polled (backing off to 2 ms) and the queue is looked at when a NOTIFY said that tasks
        came; with nothing running, it waits for that NOTIFY (or ``POLL_MAX``)."""
        backoff = Backoff()
        while True:
            progress = self._report(self.pool.collect(block=False))
            progress |= self._fill()
            self._renew()
            if self._should_leave():
                return self.reason
            if progress:
                backoff.reset()
            elif self.pool.running:
                backoff.wait()
                self.news |= self.queue.wait(TASKS_CHANNEL, 0)
            else:
                self.news |= self.queue.wait(TASKS_CHANNEL, POLL_MAX)

    def _fill(self):
        free = self.pool.free_slots()
        if time.monotonic() - self.popped >= POLL_MAX:
            self.news = True               # a NOTIFY lost with a reconnect: look anyway
        if self.draining or not free or not self.news:
            return False
        self.popped, self.news = time.monotonic(), False
        popped = self.queue.pop(free, self.name, self.lease)
        self.news = len(popped) == free    # a full batch: there may be more
        tasks = []
        for eq_id, payload, run_id, attempt in popped:
            if payload == EQ_STOP:
                self.draining, self.reason = True, "EQ_STOP popped from the queue"
            # a task this pool still runs for an earlier service of the study (which requeued
            # it) is not run twice: its first result answers for the new attempt too
            elif eq_id not in self.pool.running:
                tasks.append(Task(eq_id, payload, run_id, attempt))
        if tasks:
            self.pool.submit(tasks)
        return bool(popped)

    def _report(self, finished):
        self.queue.report([(task.id, result_json(outcome, task.attempt, rank))
                           for task, rank, outcome in finished], self.name)
        return bool(finished)

    def _renew(self):
        if self.pool.running and time.monotonic() - self.renewed >= self.lease / 4:
            self.renewed = time.monotonic()
            self.queue.renew(self.name, self.lease)

    def _should_leave(self):
        if self.deadline is not None and time.monotonic() >= self.deadline and \
                not self.draining:
            self.draining, self.reason = True, "the pool's walltime is about to run out"
        if self.queue.exp_id is not None and time.monotonic() - self.looked >= STUDY_CHECK:
            self.looked = time.monotonic()
            study = self.queue.study()
            if study is not None and study[2] == "cancelling" and not self.cancelled:
                self.cancelled = True
                self.pool.cancel()         # the study aborts: stop what runs, report it
                self.draining, self.reason = True, "the study was cancelled"
            elif not self.cancelled and (study is None or study[2] == "ended"):
                self.draining, self.reason = True, "the study ended"
        return self.draining and not self.pool.running


def pool_job(url, exp_id=None, config=None, task_type=0, lease=60.0, walltime=None,
             workdir=None):
    """``mpiexec -n N``: rank 0 pops tasks from the database, ranks 1.. evaluate them.

    With ``exp_id``, the job serves that emews study (its configuration comes from the
    database); without, it serves EQ-SQL tasks of ``task_type`` with the study ``config`` (a
    dict shaped like the TOML file). Returns why the pool left (on rank 0; ``None`` on the
    others).
    """
    from mpi4py import MPI

    from .. import config as configuration
    from ..study import python_path, run_worker
    from .mpi import MPIPool

    comm = MPI.COMM_WORLD
    queue, study = None, None
    if comm.Get_rank() == 0:
        try:
            queue = TaskQueue(url, exp_id, task_type)
            study = queue.study() if exp_id is not None else \
                (config, workdir, "running", task_type)
            if study is None:
                raise study_error(url, exp_id)
        except BaseException:
            comm.bcast(None)  # the workers must not wait for a study that never comes
            raise
        queue.task_type = study[3]
        study = (dict(study[0]), study[1], f"pool-{os.getpid()}")
    study = comm.bcast(study)
    if study is None:
        raise SystemExit(1)
    settings, expdir, label = study
    lease = settings.pop("lease", lease)
    cfg = configuration.load([settings], environ={})
    python_path(cfg)
    if not expdir or not (Path(expdir) / "config.json").is_file():
        expdir = Path(workdir or "emews-pool").resolve()
        (expdir / "out").mkdir(parents=True, exist_ok=True)
    if comm.Get_rank() > 0:
        return run_worker(Path(expdir), cfg, comm, comm.Get_rank(), label)
    pool = MPIPool(comm, cfg.system["slots_per_worker"])
    try:
        return Attachment(pool, queue, lease, walltime).run()
    finally:
        pool.close()
        queue.close()
