"""The failure policy: what the master does with a failed, timed-out or NaN evaluation.

::

    Outcome(status='failed') + attempt --> FailurePolicy.decide() --> retry | fail(value) | abort

Set in ``[failure]``: ``retries`` (run a failed point again up to that many times), then
``on_failure``: ``fail`` tells the algorithm the point failed, as ``penalty`` when one is set
(for algorithms that need a number) and as NaN otherwise; ``abort`` ends the study. Whatever
the decision, the store keeps every finished attempt's status, reason and log tail.

:func:`classify` is where every driver (``emews run``, ``emews serve``, Swift/T) turns an
outcome into what the store keeps, what the algorithm is told and what the limits count.
"""

import math
from dataclasses import dataclass

from ._algorithm import PrunedResult
from .._errors import ConfigError
from .._status import Status

ACTIONS = ("fail", "abort")


@dataclass(slots=True)
class Decision:
    """What an outcome comes to: the ``outcome`` (as judged by the study's criteria, from
    :func:`classify`), the ``status`` its attempt is stored with (``queued`` when it runs
    again), the ``action`` (``done``, ``pruned``, ``retry``, ``fail`` or ``abort``), the value
    the algorithm is told (``search_value``: ``done``, ``pruned`` and ``fail``), the value the
    limits count (``limit_value``: NaN unless done) and the ``reason`` of a failure."""

    outcome: object
    status: str
    action: str
    search_value: object = math.nan
    limit_value: object = math.nan
    reason: str | None = None


@dataclass(frozen=True)
class FailurePolicy:
    """Retry a failure up to ``retries`` times, then ``fail`` (with ``penalty``) or ``abort``."""

    retries: int = 0
    on_failure: str = "fail"
    penalty: float | None = None

    def __post_init__(self):
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ConfigError("[failure].retries", "must be an integer >= 0", self.retries)
        if self.on_failure not in ACTIONS:
            raise ConfigError("[failure].on_failure", f"must be one of {list(ACTIONS)}",
                              self.on_failure)
        if self.penalty is not None and not math.isfinite(self.penalty):
            raise ConfigError("[failure].penalty", "must be a finite number", self.penalty)

    @classmethod
    def from_config(cls, table):
        """The policy of a study's :class:`~emews._config.Failure` (its ``[failure]`` table)."""
        return cls(table.retries, table.on_failure, table.penalty)

    def decide(self, outcome, attempt):
        """The :class:`Decision` on ``outcome``, a failure (no value, or NaN), the result of
        attempt number ``attempt`` (from 1)."""
        reason = outcome.error or "the evaluation produced no value"
        if attempt <= self.retries:
            return Decision(outcome, Status.QUEUED, "retry", reason=reason)
        if self.on_failure == "abort":
            return Decision(outcome, Status.FAILED, "abort", reason=reason)
        return Decision(outcome, Status.FAILED, "fail",
                        math.nan if self.penalty is None else self.penalty, reason=reason)


def classify(outcome, attempt, policy, criteria, curve=None):
    """The :class:`Decision` on ``outcome``, the result of attempt number ``attempt`` (from 1),
    under the failure ``policy`` and the study's ``criteria``: a pruned run is final (never
    retried) and told as a :class:`~emews.core._algorithm.PrunedResult` with its ``curve``
    (step -> value); an interrupted one (a lost lease) runs again whatever the policy."""
    outcome = criteria.judge(outcome)
    if outcome.status == Status.DONE and not math.isnan(outcome.value):   # the common case
        value = criteria.search_value(outcome.objectives, outcome.metrics) if criteria.vector \
            else outcome.value
        return Decision(outcome, Status.DONE, "done", value, value)
    if outcome.status == Status.PRUNED:
        return Decision(outcome, Status.PRUNED, "pruned", PrunedResult(curve))
    if outcome.status == Status.INTERRUPTED:
        return Decision(outcome, Status.QUEUED, "retry")
    return policy.decide(outcome, attempt)
