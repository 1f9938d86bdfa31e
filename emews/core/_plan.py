"""What the master is given to run one study: :class:`MasterPlan`, built by
``emews._study.run_master`` for ``Master(pool, store, plan)``. Every field has the default of a
fresh study with nothing configured (a test or a benchmark says only what differs)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..pools._base import Finished
from ._algorithm import Point, Stopper
from ._control import Control
from ._criteria import Criteria
from ._failure import FailurePolicy
from ._pruners import Pruner


class ProgressDisplay(Protocol):
    """What the master tells a display of the study's progress after each turn that brought
    results (:class:`emews.inspect._progress.Progress`)."""

    def update(self, finished: Sequence[Finished], running: int = 0) -> None:
        """Count the ``finished`` results; ``running`` evaluations are in flight or wait."""


@dataclass(frozen=True)
class MasterPlan:
    """The master's orders for one run of a study.

    ``mode``: ``batch`` (a message of points is answered once all of them are evaluated) or
    ``async`` and ``sequential`` (answered with whatever result is ready). ``first_id`` is the
    id of the first new point, ``first_seq`` numbers the ME's proposals (the ``seq`` column).
    ``policy`` is the failure policy, ``limits`` the :class:`~emews.core._algorithm.Stopper`
    of the study (earlier runs' evaluations counted). ``progress`` is told each turn's results.

    A resumed study passes what earlier runs left: ``requeue`` lists the points they left
    unfinished, as ``(id, params, attempt)``: when the ME proposes one of them again, it runs
    as that point's next attempt instead of a new point; ``stored_answers`` lists finished
    points the ME has not been told of, as ``(id, params, value, counted)``: when it proposes
    one again (a search restored from its checkpoint does), it gets the stored ``value`` at
    once, and the limits count ``counted`` (NaN for a failure; ``None``: counted already).

    ``control`` is how ``emews pause`` and ``stop`` reach the master (by default: never).
    ``pruner`` judges the models' reports. ``criteria`` says what the study optimizes
    (:class:`~emews.core._criteria.Criteria` judges each result before it is stored).
    """

    mode: str = "batch"
    first_id: int = 0
    first_seq: int = 0
    policy: FailurePolicy = field(default_factory=FailurePolicy)
    limits: Stopper = field(default_factory=Stopper)
    requeue: tuple[tuple[int, Point, int], ...] = ()
    stored_answers: tuple[tuple[int, Point, float, float | None], ...] = ()
    control: Control = field(default_factory=Control)
    pruner: Pruner = field(default_factory=Pruner)
    criteria: Criteria = Criteria(("value",), ("minimize",))   # minimize ``value``
    progress: ProgressDisplay | None = None
