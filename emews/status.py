"""Every state an evaluation, or one attempt of it, can be in: one set of constants.

::

    queued --> running --> done | failed          (a point's row in the store)
       ^          |
       +----------+  a retried failure goes back to queued as its next attempt
    cancelled     the study ended (abort, stop, drain) while it was queued or running
    interrupted   a killed run left it unfinished; a resume evaluates it again
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


FINAL = frozenset({Status.DONE, Status.FAILED})        # a point that needs no more attempts
POOL_OUTCOMES = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})   # what a pool returns
