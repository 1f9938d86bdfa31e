"""The remote-pool core: leases, requeue, duplicates, adoption and drain, on any transport.

::

    Master --submit--> RemotePool --ServiceLink--> pool job 1 (mpiexec: rank 0 + workers)
           <-collect--            <--results----   pool job 2 ...   rank 0 runs an Attachment
                                  <--renewals---   (every quarter lease)

:class:`RemotePool` is the study's side (``emews serve``), :class:`Attachment` a pool job's
rank 0 (``emews pool``); docs/src/service.md says what leases, duplicates and drains do. A
result for a task this service never handed out (a pool that outlived an earlier, killed
service of the study) comes back with ``params=None``, for the master to adopt. A pool drains
(stops taking work, finishes what it holds) when the study cancels, when its walltime is about
to run out, or when a transport says so (EQ-SQL's ``EQ_STOP``); it leaves at once when the
study ends.
"""

import dataclasses
import math
import time

from ..evaluate import Outcome
from ..pools._base import Backoff, Pool, Task
from .._status import Status
from ._transport import CANCEL, DRAIN, STOP

BLOCK_MAX = 0.25       # longest wait of a blocking collect (then the master looks at control)
POLL_MAX = 0.05        # longest wait for news between looks
RUNNING_POLL = Backoff().maximum   # 2 ms: while workers run, as the MPI master waits for them


class RemotePool(Pool):
    """Tasks leased to pools over ``link`` (a :class:`~.transport.ServiceLink`); ``slots`` is
    how many tasks the study expects its pools to hold at once (what the ME plans for)."""

    def __init__(self, link, slots):
        super().__init__(slots)   # running: task id -> Task
        self.link = link
        self.interrupted = set()  # task ids whose lease expired
        self.finished = set()     # task ids with a first result

    def free_slots(self):
        return self.link.demand(len(self.running))

    def submit(self, tasks, slots=None):
        """Lease ``tasks`` to the pools (which of their workers runs each is theirs to pick,
        whatever ``slots`` says)."""
        self.link.send(tasks)
        self.running.update((task.id, task) for task in tasks)
        return [(task, 0) for task in tasks]

    def collect(self, block=True):
        """Results, expired leases and duplicates. With ``block``, wait up to
        :data:`BLOCK_MAX` for some, or for any news (a pool asking for work), unless nothing
        runs and tasks can go out. Reports that came are judged (:attr:`judge`) and answered."""
        until = time.monotonic() + BLOCK_MAX
        backoff = Backoff(maximum=POLL_MAX)
        while True:
            results, heard = self.link.receive()
            self._judge_reports()
            finished = [self._result(r) for r in results] + self._expired()
            if finished or heard or not block or time.monotonic() >= until or \
                    (not self.running and self.free_slots()):   # nothing to wait for
                return finished
            backoff.wait(self.link.wait)

    def _judge_reports(self):
        """Answer the reports that came: the master judges those of the attempts it runs; a
        report of any other (an attempt the study gave up on) is told to go on."""
        verdicts = []
        for task_id, attempt, rank, report in self.link.incoming:
            task = self.running.get(task_id)
            stop = task is not None and task.attempt == attempt and \
                bool(self.judge(task, rank, report))
            verdicts.append((task_id, stop))
        if verdicts:
            self.link.answer(verdicts)

    def _result(self, received):
        """The ``(task, rank, outcome)`` of one result (see the module docstring)."""
        task_id, attempt, rank, outcome, late = received
        if late or (task_id in self.finished and task_id not in self.running
                    and task_id not in self.interrupted):
            return Task(task_id, "", "", attempt or 1), rank, \
                dataclasses.replace(outcome, status=Status.DUPLICATE)
        self.finished.add(task_id)
        task = self.running.pop(task_id, None)
        if task_id in self.interrupted:
            self.interrupted.discard(task_id)
            self.link.withdraw([task_id])   # its new attempt is not needed, if not started
            task = task or Task(task_id, "", "", 1)
        if task is None:                    # handed out by an earlier service of the study
            return Task(task_id, None, "", attempt or 1), rank, outcome
        if attempt is not None and attempt != task.attempt:
            task = task._replace(attempt=attempt)
        return task, rank, outcome

    def _expired(self):
        """The tasks whose leases ended, as ``interrupted`` results."""
        expired = []
        for task_id, holder in self.link.expired():
            task = self.running.pop(task_id, None)
            if task is None:
                continue
            self.interrupted.add(task_id)
            expired.append((task, 0, Outcome(math.nan, Status.INTERRUPTED,
                                             f"lease expired: {holder} stopped answering")))
        return expired

    def hold(self):
        return [self.running.pop(i) for i in self.link.withdraw(list(self.running))]

    def cancel(self):
        self.hold()
        self.link.cancel()

    def close(self, status=0):
        self.link.close()


class Attachment:
    """Rank 0 of a pool job: the link between the study (``link``, a
    :class:`~.transport.PoolLink`) and this job's workers (``pool``, an
    :class:`~emews.pools._mpi.MPIPool`); see the module docstring."""

    def __init__(self, link, pool, lease, walltime=None):
        self.link, self.pool, self.lease = link, pool, float(lease)
        self.reports = []                  # (task, rank, Report) to send with the next exchange
        pool.bind_judge(self._forward)
        self.deadline = None if walltime is None else time.monotonic() + walltime
        self.draining = self.stopped = self.cancelled = False
        self.reason = None
        self.renewed = -math.inf

    def run(self):
        """Serve until the study stops this pool or it has drained; return why it left. While
        workers run, the link is waited on up to :data:`RUNNING_POLL` (their results come by
        MPI: one is reported at once), else up to :data:`POLL_MAX`."""
        backoff = Backoff(maximum=POLL_MAX)
        while True:
            finished = self.pool.collect(block=False)
            renew = time.monotonic() - self.renewed >= self.lease / 4
            if renew:
                self.renewed = time.monotonic()
            if self.reports:
                self.link.report(self.reports)
                self.reports = []
            tasks = self.link.report_and_take(finished, self.pool.free_slots(), not self.draining,
                                              renew)
            for task_id, stop in self.link.verdicts():
                self.pool.answer(task_id, stop)
            # a task this pool still runs for an earlier service of the study (which requeued
            # it) is not run twice: its first result answers for the new attempt too
            tasks = [task for task in tasks if task.id not in self.pool.running]
            if tasks:
                self.pool.submit(tasks)
            self._obey(self.link.instruction())
            if self._should_leave():
                return self.reason
            if finished or tasks:
                backoff.reset()
            else:
                backoff.wait(lambda delay: self.link.wait(
                    min(delay, RUNNING_POLL) if self.pool.running else delay))

    def _forward(self, task, rank, report):
        """A worker's report: sent to the study with the next exchange, its verdict given to the
        worker when it comes (``None``: later); at once "go on" where the link carries no
        reports."""
        if not self.link.carries_reports:
            return False
        self.reports.append((task, rank, report))
        return None

    def _obey(self, instruction):
        if instruction is None:
            return
        action, reason = instruction
        if action == STOP:   # a study that cancelled this pool first ends: it was cancelled
            self.stopped = True
            self.reason = self.reason if self.cancelled else reason
        elif action == CANCEL and not self.cancelled:
            self.cancelled = True
            self.pool.cancel()        # the study aborts: stop what runs, report it
            self.draining, self.reason = True, reason
        elif action == DRAIN and not self.draining:
            self.draining, self.reason = True, reason

    def _should_leave(self):
        if self.deadline is not None and not self.draining and \
                time.monotonic() >= self.deadline:
            self.draining, self.reason = True, "the pool's walltime is about to run out"
        return self.stopped or (self.draining and not self.pool.running and
                                not self.link.owed())
