"""An mpi4py master-worker pool: rank 0 hands out tasks, ranks 1..N-1 evaluate them.

::

    rank 0 (master)                               rank r >= 1 (worker)
    submit: group tasks by rank --TASKS [..]-->   serve(): evaluate each task in turn
    collect: improbe/mrecv     <--RESULT------   one message per finished task: (rank,
                                                 task id, Outcome.to_wire())
             judge(report)     <--REPORT------   each emews.report of the running model: (rank,
                               --VERDICT bool->  task id, Report.to_wire()); it waits for the
                                                 verdict (True: stop the run)
    close:                     --TASKS None-->    return
    hosts: once, if asked      <--HELLO host--   sent first: the worker's processor name

Neither side blocks inside MPI: MPICH's blocking calls spin a core, which the ME thread on rank 0
and oversubscribed workers need. Both poll with a nonblocking probe and a :class:`Backoff`.
Each worker may hold ``slots_per_worker`` tasks (more than one hides the message latency of very
short tasks; one keeps long tasks evenly spread). A task packed onto several ranks
(:mod:`emews.pools._packed`) goes to its lead rank with its resources; the ranks it holds besides
get nothing else until it ends.
"""

import collections
import os
import sys

from ..evaluate import Outcome
from ..evaluate._base import Resources
from ..evaluate._outcome import BadOutcome, Report
from ..evaluate._process import stop_on_signals
from ._base import Backoff, Pool

TASKS, RESULT, CANCEL, REPORT, VERDICT, HELLO = 11, 12, 13, 14, 15, 16
DRAIN_MISSES = 2
RESULT_WAIT_SHARE = 0.01   # a result is picked up late by about 1% of its wait at most


class MPIPool(Pool):
    """The master side: rank 0 of ``comm`` drives ranks 1..size-1."""

    def __init__(self, comm, slots_per_worker=1):
        from mpi4py import MPI

        self.comm, self.any_source, self.any_tag = comm, MPI.ANY_SOURCE, MPI.ANY_TAG
        self.status = MPI.Status()
        self.awaiting = {}       # task id -> the rank waiting for a verdict given later
        workers = range(1, comm.Get_size())
        if not workers:
            raise ValueError("an MPI pool needs at least 2 ranks")
        self.idle = collections.deque(r for _ in range(max(int(slots_per_worker), 1))
                                      for r in workers)
        super().__init__(len(self.idle))
        self.ranks = {}
        self.backoff = Backoff(share=RESULT_WAIT_SHARE)
        self.closed = False
        self.hellos = {}         # rank -> its host name, as its HELLO came

    def hosts(self):
        """The host of each slot (slot ``i`` is rank ``i + 1``), as its worker told it."""
        for rank in range(1, self.comm.Get_size()):
            backoff = Backoff()
            while rank not in self.hellos:
                if (message := self.comm.improbe(source=rank, tag=HELLO)) is None:
                    backoff.wait()
                else:
                    self.hellos[rank] = message.recv()
        return [self.hellos[rank] for rank in range(1, self.comm.Get_size())]

    def free_slots(self):
        return len(self.idle)

    def submit(self, tasks, slots=None):
        batches = collections.defaultdict(list)
        assigned = []
        for i, task in enumerate(tasks):
            if slots is None:
                rank = self.idle.popleft()
                batches[rank].append((task.id, task.params, task.run_id))
            else:
                rank = slots[i] + 1
                if rank in self.idle:
                    self.idle.remove(rank)
                batches[rank].append((task.id, task.params, task.run_id,
                                      task.resources.as_dict()))
            self.running[task.id] = task
            self.ranks[task.id] = rank
            assigned.append((task, rank))
        for rank, batch in batches.items():
            self.comm.send(batch, dest=rank, tag=TASKS)
        return assigned

    def collect(self, block=True):
        finished = []
        while True:
            judged = self._receive(finished)
            if finished or judged or not block or not self.running:
                self.backoff.reset()
                return finished
            self.backoff.wait()

    def _receive(self, finished):
        """Append every result message already sent to ``finished`` (and answer every report),
        until the probe misses twice in a row; return whether a report was judged.

        MPICH's probe makes progress one message at a time and misses once between queued
        messages, so a single miss does not mean that nothing more is waiting.
        """
        probe, any_source, any_tag, status = (self.comm.improbe, self.any_source,
                                              self.any_tag, self.status)
        misses, judged = 0, False
        while misses < DRAIN_MISSES:
            message = probe(source=any_source, tag=any_tag, status=status)
            if message is None:
                misses += 1
                continue
            misses = 0
            data = message.recv()
            tag = status.Get_tag()
            if tag == HELLO:
                self.hellos[self.status.Get_source()] = data
                continue
            rank, task_id, wire = data
            if tag == REPORT:
                self._answer(rank, task_id, wire)
                judged = True
                continue
            self.idle.append(rank)
            del self.ranks[task_id]
            finished.append((self.running.pop(task_id), rank, Outcome.received(wire)))
        return judged

    def _answer(self, rank, task_id, wire):
        """Judge a report; a ``None`` verdict is given later, by :meth:`answer`."""
        try:
            prune = self.judge(self.running[task_id], rank, Report.from_wire(wire))
        except (BadOutcome, KeyError):
            prune = False
        if prune is None:
            self.awaiting[task_id] = rank
        else:
            self.comm.send(bool(prune), dest=rank, tag=VERDICT)

    def answer(self, task_id, stop):
        """Give the verdict ``stop`` to the worker waiting on a report of task ``task_id``."""
        rank = self.awaiting.pop(task_id, None)
        if rank is not None:
            self.comm.send(bool(stop), dest=rank, tag=VERDICT)

    def cancel(self):
        for task_id in list(self.awaiting):   # a run waiting on a verdict goes on to its end
            self.answer(task_id, False)
        by_rank = collections.defaultdict(list)
        for task_id, rank in self.ranks.items():
            by_rank[rank].append(self.running[task_id].run_id)
        for rank, run_ids in by_rank.items():
            self.comm.send(run_ids, dest=rank, tag=CANCEL)

    def close(self, status=0):
        if self.closed:
            return
        self.closed = True
        for rank in range(1, self.comm.Get_size()):
            self.comm.send(status or None, dest=rank, tag=TASKS)
        # Every worker says hello once, first thing: take each one's, asked for or not. A
        # hello left unreceived can keep its worker from ending (under srun, its send only
        # completes once rank 0 makes progress).
        self.hosts()


def serve(comm, objective):
    """The worker loop: evaluate what rank 0 sends until it closes the pool.

    Returns the exit status rank 0 asked for (0, or non-zero when the study failed). A CANCEL
    message from rank 0 names the runs to call off (their run ids, so a retried point's next
    attempt is never hit by a call meant for the one before): it kills the run under way if
    it is one of them, and a call that comes after its run finished touches nothing.
    SIGTERM or SIGINT kills every model process of this worker, then the worker exits with 128 +
    the signal's number.
    """
    from mpi4py import MPI

    comm.send(MPI.Get_processor_name(), dest=0, tag=HELLO)
    stop_on_signals()
    worker = Worker(comm)
    try:
        return _serve(comm, objective, worker, Backoff())
    finally:
        worker.drain()
        objective.close()


class Worker:
    """This worker's side of the task it runs (one at a time): the CANCEL messages rank 0 sent
    (the run ids it calls off) and the task's two callbacks, :meth:`cancelled` and
    :meth:`report`, the same bound methods for every task."""

    def __init__(self, comm):
        self.comm, self.rank, self.run_ids = comm, comm.Get_rank(), set()
        self.task_id = self.run_id = None   # the task under way

    def drain(self):
        """Receive every CANCEL already sent. None may be left unreceived at exit: MPICH's
        finalize then does not wait for rank 0, and a worker that exits non-zero first gets
        rank 0 killed by the launcher before it has finished."""
        while self.comm.iprobe(source=0, tag=CANCEL):
            self.run_ids.update(self.comm.recv(source=0, tag=CANCEL))

    def cancelled(self):
        """Whether rank 0 called off the run under way."""
        self.drain()
        return self.run_id in self.run_ids

    def report(self, one: Report):
        """Send ``one``, a report of the task under way, to rank 0 and wait (polling, never
        spinning in MPI) for its verdict."""
        self.comm.send((self.rank, self.task_id, one.to_wire()), dest=0, tag=REPORT)
        backoff = Backoff()
        while (message := self.comm.improbe(source=0, tag=VERDICT)) is None:
            backoff.wait()
        return message.recv()


def _serve(comm, objective, worker, backoff):
    cancelled, report = worker.cancelled, worker.report
    while True:
        message = comm.improbe(source=0, tag=TASKS)
        if message is None:
            backoff.wait()
            continue
        backoff.reset()
        batch = message.recv()
        if batch is None or isinstance(batch, int):
            return batch or 0
        for task_id, params, run_id, *resources in batch:
            worker.task_id, worker.run_id = task_id, run_id
            outcome = objective.evaluate(params, run_id, cancelled, report,
                                         Resources.from_dict(*resources) if resources else None)
            sys.stdout.flush()
            comm.send((worker.rank, task_id, outcome.to_wire()), dest=0, tag=RESULT)


def redirect_output(path):
    """Send this process's stdout and stderr (file descriptors 1 and 2) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)

