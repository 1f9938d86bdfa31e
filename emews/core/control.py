"""Steering a running study from another shell: ``emews pause | unpause | stop EXPDIR``.

::

    emews pause EXPDIR  --writes-->  EXPDIR/control.json  <--read each turn--  Master

The commands write the wanted state (``running``, ``paused`` or ``stopped``) into
``control.json``; the master looks at the file's modification time each turn (a ``stat``, no
read unless it changed). Paused, it hands out no new work (running evaluations finish and are
stored); stopped, it also ends the study once they have, with the reason recorded.

A batch job written by ``emews submit`` sets ``EMEWS_DRAIN_AT`` (seconds since the epoch) a
margin before its walltime ends: from then on the study is stopped the same way, so that every
result is stored before the scheduler kills the job, and the next job resumes it.
"""

import json
import os
import time
from pathlib import Path

from ..errors import ConfigError
from ..experiment import write_json

STATES = ("running", "paused", "stopped")
CONTROL_FILE = "control.json"
DRAIN_VARIABLE = "EMEWS_DRAIN_AT"
REASONS = {"stopped": "stopped on request (emews stop)",
           "walltime": "the job's walltime is about to run out; the next job resumes the study"}


def request(expdir, state):
    """Ask the study in ``expdir`` to be ``state``."""
    expdir = Path(expdir)
    if not (expdir / "config.json").is_file():
        raise ConfigError(str(expdir), "must be an experiment directory (holding config.json)",
                          str(expdir), show_value=False)
    if state not in STATES:
        raise ConfigError("state", f"must be one of {list(STATES)}", state)
    write_json(expdir / CONTROL_FILE, {"state": state, "time": time.time()})


class Control:
    """The master's view of ``control.json`` (``None`` path: always running)."""

    def __init__(self, expdir=None, drain_at=None):
        self.path = None if expdir is None else Path(expdir) / CONTROL_FILE
        self.seen = None
        self.state = "running"
        self.reason = None
        self.drain_at = drain_at
        if self.path is not None:
            self.path.unlink(missing_ok=True)  # a new run starts running

    @classmethod
    def of_job(cls, expdir):
        """The control of a study run in ``expdir``, draining at ``EMEWS_DRAIN_AT`` if set."""
        drain_at = os.environ.get(DRAIN_VARIABLE)
        try:
            drain_at = float(drain_at) if drain_at else None
        except ValueError:
            raise ConfigError(DRAIN_VARIABLE, "must be seconds since the epoch",
                              drain_at) from None
        return cls(expdir, drain_at)

    def current(self):
        """The state asked for last (``stopped`` from the drain time on)."""
        if self.drain_at is not None and time.time() >= self.drain_at:
            self.state, self.reason = "stopped", REASONS["walltime"]
            return self.state
        if self.path is None:
            return self.state
        try:
            stamp = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            return self.state
        if stamp != self.seen:
            self.seen = stamp
            try:
                state = json.loads(self.path.read_text()).get("state")
            except (OSError, ValueError):
                state = None
            self.state = state if state in STATES else self.state
            self.reason = REASONS.get(self.state)
        return self.state
