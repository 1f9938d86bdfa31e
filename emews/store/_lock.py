"""One writer per study: an exclusive lock on ``EXPDIR/lock`` that names its holder.

The lock is an ``flock`` held on an open file for as long as the study runs, so the kernel
releases it when the holder dies, however it dies: a lock left by a killed run is stale and the
next run takes it over. The file names the holder, for the message that a second run gets.

``emews run`` started alone holds the lock while its ``mpiexec`` runs and hands the job a token
(``EMEWS_LOCK_TOKEN``): rank 0 of that job finds its token in the file and runs under the lock
its parent holds.
"""

import fcntl
import json
import os
import socket
import time
import uuid
from pathlib import Path

from .._errors import ConfigError

TOKEN_VARIABLE = "EMEWS_LOCK_TOKEN"


class StudyLock:
    """The lock of one experiment directory; :meth:`acquire` it, :meth:`release` it."""

    def __init__(self, expdir):
        self.path = Path(expdir) / "lock"
        self.handle = None
        self.token = None

    def acquire(self):
        """Take the lock, or raise a ConfigError naming the live holder; inside a job whose
        parent holds the lock (its token in the environment), succeed without taking it again."""
        inherited = os.environ.get(TOKEN_VARIABLE)
        if inherited and self.holder().get("token") == inherited:
            return self
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            holder = self.holder()
            raise ConfigError(str(self.path.parent), "is in use by a live run (pid "
                              f"{holder.get('pid', '?')} on host {holder.get('host', '?')}, "
                              "since " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(
                                  holder.get("since", 0))) + "); one run per study at a time",
                              None, show_value=False) from None
        self.token = uuid.uuid4().hex
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                 "since": time.time(), "token": self.token}))
        handle.flush()
        self.handle = handle
        return self

    def holder(self):
        """What the lock file says of its holder (empty when there is none)."""
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    def release(self):
        """Let go of the lock (safe to call twice, and when it was inherited)."""
        if self.handle is not None:
            self.handle.close()
            self.handle = None
