"""Every state an evaluation, or one attempt of it, can be in: one set of constants.

::

    queued --> running --> done | failed | pruned (a point's row in the store)
       ^          |
       +----------+  a retried failure goes back to queued as its next attempt
    cancelled     the study ended (abort, stop, drain) while it was queued or running
    interrupted   a killed run left it unfinished; a resume evaluates it again
    pruned        the pruner stopped it at a report (``emews.report``): final, never run again,
                  counted against the budget, never the best; its result is the last reported
    duplicate     a second result for an attempt that already had one (kept, never counted)

``Status`` is a ``str`` enum: ``Status.DONE == "done"``, and it is stored and sent as that text.
"""

import enum


class Status(enum.StrEnum):
    """The state of an evaluation or an attempt."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    DUPLICATE = "duplicate"
    PRUNED = "pruned"


FINAL = frozenset({Status.DONE, Status.FAILED, Status.PRUNED})   # a point needing no more attempts
POOL_OUTCOMES = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED, Status.PRUNED})
                                                        # what a pool returns
