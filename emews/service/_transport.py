"""What a remote pool's core asks of a transport: one link on the study's side, one on a pool's.

::

    RemotePool (core) --ServiceLink-->  zmq ROUTER  |  EQ-SQL's queues in PostgreSQL
    Attachment (core) --PoolLink----->  zmq DEALER  |  the same queues, popped by the pool

A link only moves things (tasks, results, lease renewals, the study's word to its pools); what
they mean is decided once, in :mod:`._core`.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..evaluate._outcome import Outcome, Report
from ..pools._base import Finished, Task
from ..store._base import Store

DRAIN, CANCEL, STOP = "drain", "cancel", "stop"   # what the study may tell its pools

Instruction = tuple[str, str]
"""What the study tells a pool: ``(DRAIN | CANCEL | STOP, reason)``."""


class Received(NamedTuple):
    """One result a pool reported: the task's id, the attempt it answers (``None``: a foreign
    worker's result, for whatever attempt the study holds), the worker's rank, the outcome, and
    whether the transport knows that the task had its result already (``late``)."""

    task_id: int
    attempt: int | None
    rank: int
    outcome: Outcome
    late: bool = False


class ServiceLink(ABC):
    """The study's side: hands leased tasks to the pools and brings their results back."""

    def share(self, store: Store) -> None:
        """Carry this link's exchanges in the commits of the study's ``store``, where the
        transport can (its own database); by default it does not."""

    @abstractmethod
    def demand(self, running: int) -> int:
        """How many more tasks the pools take now, with ``running`` tasks out."""

    @abstractmethod
    def send(self, tasks: Sequence[Task]) -> None:
        """Hand ``tasks`` (:class:`~emews.pools._base.Task`, at most :meth:`demand`) to the
        pools, each under a lease."""

    @abstractmethod
    def receive(self) -> tuple[list[Received], bool]:
        """Without waiting: ``(results, heard)``, the :class:`Received` results that came, and
        whether anything came at all (a pool that attached or asked for work is news too)."""

    @abstractmethod
    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for news; return whether some came."""

    # The reports (emews.report) that came with the last receive, as (task id, attempt, rank,
    # Report); their models wait for answer. None by default.
    incoming: list[tuple[int, int, int, Report]] = []

    def answer(self, verdicts: Sequence[tuple[int, bool]]) -> None:
        """Send ``(task id, stop)`` verdicts on the reports of :attr:`incoming`."""

    @abstractmethod
    def expired(self) -> list[tuple[int, str]]:
        """Tasks whose lease ran out since the last call, released: ``[(task id, holder)]``."""

    @abstractmethod
    def withdraw(self, ids: Sequence[int]) -> list[int]:
        """Take back the tasks of ``ids`` that no pool has started; return their ids."""

    @abstractmethod
    def cancel(self) -> None:
        """Tell the pools to cancel what they run and to drain."""

    @abstractmethod
    def close(self) -> None:
        """Tell the pools that the study ended; release the transport (safe to call twice)."""


class PoolLink(ABC):
    """A pool job's side: learns the study, reports results and takes tasks, renews its
    leases."""

    @abstractmethod
    def learn_study(self) -> dict[str, Any]:
        """The study this pool serves: ``{"config": dict, "expdir": str, "lease": seconds}``."""

    @abstractmethod
    def report_and_take(self, finished: Sequence[Finished], free: int, ask: bool, renew: bool
                        ) -> list[Task]:
        """One exchange with the study, in one round trip where the transport allows: report
        ``finished`` (``(task, rank, outcome)``), renew this pool's leases if ``renew``, and
        return up to ``free`` tasks to run (new ones only if ``ask``)."""

    @abstractmethod
    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for news from the study; return whether some came."""

    carries_reports = False   # whether reports reach the study (else: answered "go on")

    def report(self, entries: Sequence[tuple[Task, int, Report]]) -> None:
        """Send ``(task, rank, Report)`` reports to the study (see :attr:`carries_reports`)."""

    def verdicts(self) -> list[tuple[int, bool]]:
        """The study's ``(task id, stop)`` answers to reports that came since the last call."""
        return []

    @abstractmethod
    def instruction(self) -> Instruction | None:
        """What the study last told this pool: ``None``, or ``(DRAIN | CANCEL | STOP,
        reason)``."""

    def owed(self) -> int:
        """Tasks held but not yet run, plus results not yet confirmed: a draining pool leaves
        only when none are left."""
        return 0

    @abstractmethod
    def close(self) -> None:
        """Say goodbye and release the transport (safe to call twice)."""
