"""Pools evaluate tasks for the master: the contract, a non-spinning wait, an in-process pool.

::

    master --submit([Task, ...])--> pool --> workers run Objective.evaluate
    master <--collect()-- [(task, rank, Outcome), ...]
    judge(task, rank, Report) -> prune?   bound by the master (Pool.bind_judge), called by
                                          collect for each report a running model makes

:class:`emews.pools._mpi.MPIPool` spreads tasks over MPI ranks; :class:`InProcessPool` runs them on
threads of the calling process. Every pool hands its outcomes back through their one wire form
(:meth:`~emews.evaluate.Outcome.to_wire`), so that what the store keeps never depends on the pool.
"""

import abc
import concurrent.futures as cf
import functools
import queue
import socket
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from ..evaluate._objective import Objective
from ..evaluate._outcome import Outcome, Report

LONGEST_WAIT = 0.05   # seconds: the longest sleep of a Backoff with a share


class Task(NamedTuple):
    """One point to evaluate: its id in the store, its JSON, its run id and attempt number,
    and the :class:`~emews.evaluate._base.Resources` a packing pool gave it (``None``: one
    rank, as every plain pool runs it)."""

    id: int
    params: str
    run_id: str
    attempt: int = 1
    resources: object = None


Judge = Callable[[Task, int, Report], "bool | str | None"]
"""``judge(task, rank, report)``: whether to stop the run that made ``report`` (``"pause"``,
true as a stop is, when it is paused; ``None``: the verdict comes later, by
:meth:`Pool.answer`)."""

Finished = tuple[Task, int, Outcome]
"""What :meth:`Pool.collect` gives back of a finished task: ``(task, rank, outcome)``."""


def go_on(task: Task, rank: int, report: Report) -> bool:
    """The judge of a pool no master judges through: keep nothing, stop nothing."""
    return False


class Pool(abc.ABC):
    """The pool contract: ``slots`` is how many tasks run at once (the master submits only
    while some are free); ``running`` maps something of the pool's own (a task id, a future)
    to each submitted, unfinished task. :attr:`judge` (bound by :meth:`bind_judge`) answers
    whether to stop a run at each of its reports, called by :meth:`collect` on the master's
    thread only."""

    def __init__(self, slots: int) -> None:
        self.slots = max(int(slots), 1)
        self.running: dict[Hashable, Task] = {}
        self.judge: Judge = go_on

    def bind_judge(self, judge: Judge) -> None:
        """Have ``judge`` take the reports of the running tasks from now on (the master's)."""
        self.judge = judge

    @abc.abstractmethod
    def free_slots(self) -> int:
        """How many more tasks can be submitted now."""

    def hosts(self) -> list[str]:
        """The host of each slot, in slot order (here: this host)."""
        return [socket.gethostname()] * self.slots

    @abc.abstractmethod
    def submit(self, tasks: list[Task], slots: list[int] | None = None) -> list[tuple[Task, int]]:
        """Start ``tasks`` (at most :meth:`free_slots`); return ``(task, rank)`` assignments.
        ``slots`` (a packing pool's) names the index of each task's slot; else the pool picks."""

    def started(self) -> list[tuple[int, int]]:
        """``(task id, rank)`` of the tasks started since, that a packing pool queued at
        :meth:`submit`; each is told once."""
        return []

    def queued(self) -> int:
        """How many tasks of :attr:`running` wait in the pool for a slot (a packing pool's)."""
        return 0

    @abc.abstractmethod
    def collect(self, block: bool = True) -> list[Finished]:
        """Finished tasks as ``(task, rank, outcome)``; with ``block``, wait for at least one,
        or until a report was judged (see :attr:`judge`)."""

    def answer(self, task_id: int, stop: bool) -> None:
        """Give the verdict ``stop`` to the run of task ``task_id`` that waits on a report
        whose judge answered ``None``; a pool whose judges always answer at once has none."""

    def running_tasks(self) -> list[Task]:
        """The submitted, unfinished tasks."""
        return list(self.running.values())

    def hold(self) -> list[Task]:
        """Take back (from :attr:`running`) and return the submitted tasks no worker has
        started yet (``emews pause`` or ``stop``); by default none are held back."""
        return []

    def cancel(self) -> None:
        """Ask every running evaluation to stop; their outcomes still come back by collect."""

    def close(self, status: int = 0) -> None:
        """Stop the workers (they exit with ``status``); safe to call twice."""


class Backoff:
    """Wait without spinning: sleeps that double from 10 us up to ``maximum`` until progress.

    ``first`` is the first wait after a reset (0: poll at once). With a ``share``, a wait that
    has lasted a while may grow beyond ``maximum``, up to that share of the time waited so far
    (at most :data:`LONGEST_WAIT`): a long wait wakes less often, and what comes late is picked
    up late by about that share of its time at most.
    """

    def __init__(self, maximum: float = 0.002, first: float = 0.0, share: float = 0.0) -> None:
        self.maximum, self.first, self.share = maximum, first, share
        self.delay: float = first
        self.since: float | None = None

    def reset(self) -> None:
        """Progress was made: wait ``first`` (poll at once by default) next time."""
        self.delay, self.since = self.first, None

    @property
    def longest(self) -> bool:
        """True once the waits have grown to ``maximum`` (nothing came for a while)."""
        return self.delay >= self.maximum

    def wait(self, waiter: Callable[[float], Any] = time.sleep) -> Any:
        """Return ``waiter(delay)`` (a sleep, or a queue's ``get`` that ends early), then
        lengthen the delay."""
        if self.share and self.since is None:
            self.since = time.monotonic()
        result = waiter(self.delay)
        limit = self.maximum
        if self.share and self.since is not None:
            limit = max(limit, min(self.share * (time.monotonic() - self.since), LONGEST_WAIT))
        self.delay = min(max(self.delay * 2, 1e-5), limit)
        return result


Verdicts = queue.SimpleQueue["bool | str | None"]
Event = cf.Future[Outcome] | tuple[Task, Report, Verdicts]
"""What comes to an :class:`InProcessPool`'s master thread: a finished future, or a report of
a worker thread, with the queue its verdict goes back by."""


class InProcessPool(Pool):
    """Evaluate on ``workers`` threads of this process (rank 0); their finished futures and
    reports come to the master's thread through one queue (``events``)."""

    def __init__(self, objective: Objective, workers: int = 1) -> None:
        super().__init__(workers)
        self.objective = objective
        self.executor = cf.ThreadPoolExecutor(self.slots, thread_name_prefix="emews-worker")
        self.cancelled = threading.Event()
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()

    def free_slots(self) -> int:
        return self.slots - len(self.running)

    def submit(self, tasks: list[Task], slots: list[int] | None = None) -> list[tuple[Task, int]]:
        for task in tasks:
            future = self.executor.submit(self.objective.evaluate, task.params, task.run_id,
                                          self.cancelled.is_set,
                                          functools.partial(self._report, task),
                                          task.resources)
            self.running[future] = task
            future.add_done_callback(self.events.put)
        return [(task, 0) for task in tasks]

    def _report(self, task: Task, report: Report) -> bool | str | None:
        """On a worker thread: hand ``report`` to the master's thread, wait for its answer."""
        answer: Verdicts = queue.SimpleQueue()
        self.events.put((task, report, answer))
        return answer.get()

    def collect(self, block: bool = True) -> list[Finished]:
        """Finished tasks; with ``block``, wait for one, or for reports (judged here)."""
        finished: list[Finished] = []
        judged = False
        while self.running or finished:
            try:
                event = self.events.get(block=block and not finished and not judged)
            except queue.Empty:
                break
            if isinstance(event, tuple):
                task, report, answer = event
                answer.put(self.judge(task, 0, report))
                judged = True
            elif event in self.running:
                finished.append((self.running.pop(event), 0,
                                 Outcome.received(event.result().to_wire())))
        return finished

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self, status: int = 0) -> None:
        self.executor.shutdown(wait=True)
        self.objective.close()
