"""The master loop: it answers the ME thread's messages by evaluating points on a pool.

::

    ME thread --points--> output_q --> Master --Task--> Pool --> workers
    ME thread <-results-- input_q  <-- Master <-Outcome- Pool
                                         |
                                         +--> Store (every change, committed each turn)

Each result goes through the failure policy (:mod:`emews.failure`): a failed point may be run
again (as ``RUNnnnnnn-2``, ...), told to the ME as failed (NaN or a penalty), or end the study.

In ``batch`` mode the master answers a message of points once all of them are evaluated, with
positional results. In ``async`` mode it answers as soon as any result is ready, with every
result that is ready (tagged with the point's number); the ME then sends as many new points.
Either way the master never blocks while it has something to do, and waits without spinning.
"""

import collections

from . import eqpy
from .errors import MEAborted, ProtocolError, StudyAborted
from .failure import FailurePolicy
from .pool import Task


class Master:
    """Runs one study's message loop on rank 0."""

    def __init__(self, pool, store, mode="batch", progress=None, first_id=0, policy=None):
        self.pool, self.store, self.mode, self.progress = pool, store, mode, progress
        self.policy = policy or FailurePolicy()
        self.first_id = first_id
        self.next_id = first_id
        self.waiting = collections.deque()
        self.unreported = {}

    def run(self, settings):
        """Serve the ME until it sends ``DONE``; return its final message.

        ``settings`` answers the ``Params`` handshake (a settings file path or JSON text).
        Raises :class:`~emews.errors.MEAborted` when the ME dies.
        """
        message = eqpy.output_q_get()
        if message == eqpy.PARAMS:
            eqpy.input_q.put(settings)
            message = eqpy.output_q_get()
        while True:
            if message == eqpy.EQPY_ABORT:
                raise MEAborted(eqpy.output_q_get())
            if message in eqpy.END_MESSAGES:
                final = eqpy.output_q_get()
                self._drain()
                return final
            ids = self._enqueue(eqpy.split_points(message))
            eqpy.input_q.put(self._answer_batch(ids) if self.mode == "batch"
                             else self._answer_async())
            message = eqpy.output_q_get()

    def _enqueue(self, points):
        ids = list(range(self.next_id, self.next_id + len(points)))
        self.next_id += len(points)
        tasks = [Task(i, params, run_id(i)) for i, params in zip(ids, points)]
        self.store.add_queued([(t.id, t.params, t.run_id) for t in tasks])
        self.waiting.extend(tasks)
        self._dispatch()
        return ids

    def _dispatch(self):
        free = self.pool.free_slots()
        if free and self.waiting:
            tasks = [self.waiting.popleft() for _ in range(min(free, len(self.waiting)))]
            self.store.mark_running([(task.id, rank) for task, rank in self.pool.submit(tasks)])

    def _turn(self):
        """Commit, wait for at least one result, record every ready result, refill the pool."""
        self.store.commit()
        finished = self.pool.collect(block=True)
        if not finished:
            raise ProtocolError("the ME is waiting for results but no evaluation is in flight")
        final, abort = [], None
        for task, rank, outcome in finished:
            decision = self.policy.decide(outcome, task.attempt)
            if decision.action == "retry":
                attempt = task.attempt + 1
                self.waiting.appendleft(Task(task.id, task.params, run_id(task.id, attempt),
                                             attempt))
                continue
            final.append((task, rank, outcome))
            self.unreported[task.id] = decision.value
            abort = abort or (decision.reason if decision.action == "abort" else None)
        self.store.finish([(task.id, rank, outcome, task.attempt)
                           for task, rank, outcome in final])
        if abort:
            reason = f"the failure policy aborted the study: {abort}"
            self.store.set_meta("final", {"stop_reason": reason})
            self.store.commit()
            raise StudyAborted(reason)
        self._dispatch()
        self.store.commit()
        if self.progress is not None:
            self.progress.update(final, running=len(self.pool.running) + len(self.waiting))

    def _answer_batch(self, ids):
        while any(i not in self.unreported for i in ids):
            self._turn()
        return eqpy.encode_results([self.unreported.pop(i) for i in ids])

    def _answer_async(self):
        if not self.unreported:
            self._turn()
        pairs = [(i - self.first_id, value) for i, value in sorted(self.unreported.items())]
        self.unreported.clear()
        return eqpy.encode_tagged(pairs)

    def _drain(self):
        """After DONE: finish (and store) whatever is still queued or running."""
        while self.waiting or self.pool.running:
            self._turn()
        self.unreported.clear()
        self.store.commit()


def run_id(task_id, attempt=1):
    """The run id (and run directory) of a point's attempt: ``RUN000042``, ``RUN000042-2``."""
    return f"RUN{task_id:06d}" + (f"-{attempt}" if attempt > 1 else "")
