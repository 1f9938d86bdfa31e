"""Steering a running study from another shell: ``emews pause | unpause | stop EXPDIR``.

The commands write the wanted state (:data:`STATES`) into the study's store's meta
``control`` (from any host, for a study on PostgreSQL: ``emews pause URL#EXP_ID``); the master
reads it at most every few ms (:meth:`~emews.store.Store.committed_meta`). Paused, it hands out
no new work; stopped, it also ends the study once the running evaluations are stored. A batch
job of ``emews submit`` sets ``EMEWS_DRAIN_AT`` (seconds since the epoch) a margin before its
walltime ends: from then on the study is stopped the same way, and the next job resumes it.
"""

import os
import time
from pathlib import Path

from .._errors import ConfigError
from .._experiment import open_store
from ..store import open_store as open_location
from ..store._postgres import is_url

STATES = ("running", "paused", "stopped")
CONTROL = "control"     # the store's meta key
DRAIN_VARIABLE = "EMEWS_DRAIN_AT"
REASONS = {"stopped": "stopped on request (emews stop)",
           "walltime": "the job's walltime is about to run out; the next job resumes the study"}


def request(target, state):
    """Ask the study ``target`` (its experiment directory, or its PostgreSQL store's
    ``URL#EXP_ID``) to be ``state`` (one of :data:`STATES`, as the commands give it)."""
    if is_url(target):
        store = open_location(target, create=False)
    elif (Path(target) / "config.json").is_file():
        store = open_store(target)
    else:
        raise ConfigError(str(target), "must be an experiment directory (holding config.json)",
                          str(target), show_value=False)
    try:
        store.set_meta(CONTROL, {"state": state, "time": time.time()})
    finally:
        store.close()


class Control:
    """The master's view of what ``emews pause``, ``unpause`` and ``stop`` asked of the study
    in ``store`` (``None``: always running); a new run starts running."""

    def __init__(self, store=None, drain_at=None):
        self.store = store
        self.seen = None
        self.state = "running"
        self.reason = None
        self.drain_at = drain_at
        if store is not None:
            self.seen = {"state": "running", "time": time.time()}
            store.set_meta(CONTROL, self.seen)   # committed with the run's start

    @classmethod
    def of_job(cls, store):
        """The control of a study run on ``store``, draining at ``EMEWS_DRAIN_AT`` if set."""
        drain_at = os.environ.get(DRAIN_VARIABLE)
        try:
            drain_at = float(drain_at) if drain_at else None
        except ValueError:
            raise ConfigError(DRAIN_VARIABLE, "must be seconds since the epoch",
                              drain_at) from None
        return cls(store, drain_at)

    def current(self):
        """The state asked for last (``stopped`` from the drain time on)."""
        if self.drain_at is not None and time.time() >= self.drain_at:
            self.state, self.reason = "stopped", REASONS["walltime"]
            return self.state
        if self.store is None:
            return self.state
        asked = self.store.committed_meta(CONTROL)
        if asked != self.seen:
            self.seen = asked
            state = asked.get("state") if isinstance(asked, dict) else None
            self.state = state if state in STATES else self.state
            self.reason = REASONS.get(self.state)
        return self.state
