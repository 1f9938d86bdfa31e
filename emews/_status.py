"""Every state an evaluation, or one attempt of it, can be in: one set of constants.

::

    queued --> running --> done | failed | pruned (a point's row in the store)
       ^          |
       +----------+  a retried failure goes back to queued as its next attempt
    cancelled     the study ended (abort, stop, drain) while it was queued or running
    interrupted   a killed run left it unfinished; a resume evaluates it again
    pruned        the pruner stopped it at a report (``emews.report``): final, never run again,
                  counted against the budget, never the best; its result is the last reported
    paused        the pruner paused it at a report (``[pruner] pause``): as pruned, but its
                  checkpoint is kept and the master may thaw it, as its next attempt, until
                  the study ends (``queued`` again); not final: a resumed study may thaw it
    duplicate     a second result for an attempt that already had one (kept, never counted)

Each state is its text (``Status.DONE == "done"``), as it is stored and sent: plain ``str``
constants, which the master reads for every result several times quicker than enum members.
"""

from typing import Final


class Status:
    """The state of an evaluation or an attempt (each one its text)."""

    QUEUED: Final = "queued"
    RUNNING: Final = "running"
    DONE: Final = "done"
    FAILED: Final = "failed"
    CANCELLED: Final = "cancelled"
    INTERRUPTED: Final = "interrupted"
    DUPLICATE: Final = "duplicate"
    PRUNED: Final = "pruned"
    PAUSED: Final = "paused"


# every state, in the order Status lists them
STATUSES = tuple(text for name, text in vars(Status).items() if name.isupper())
FINAL = frozenset({Status.DONE, Status.FAILED, Status.PRUNED})   # a point needing no more attempts
TOLD = FINAL | {Status.PAUSED}     # a point the search was told of (a paused one as pruned)
# what a pool returns
POOL_OUTCOMES = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED, Status.PRUNED})
