"""The model and the ME of the fault benchmark (:mod:`benchmarks.faults`).

:func:`train` sleeps a short, point-dependent time and returns a value; every run that finishes
appends ``{"key": ..., "value": ...}`` to the ledger file ``EMEWS_LEDGER`` before it returns,
so the benchmark can tell a finished evaluation that the study lost from one it never got.
``params["fault"]`` asks for a model fault (``segfault``, ``exit``, ``sysexit``, ``hang``,
``nan``, ``garbage``, ``biglog``); ``ok`` trains normally. The model also leaves
``worker-<pid>`` in the ledger's directory, naming the MPI worker rank that runs it (the parent
of the nanny process it runs in).

:class:`SlowThinker` is the random search with a ``tell`` that takes ``think`` seconds, as a
surrogate refit does; it marks ``thinking`` in the ledger's directory meanwhile.
"""

import ctypes
import fcntl
import json
import math
import os
import sys
import time
from pathlib import Path

from emews.core._algorithm import Algorithm, point_key


def _ledger():
    return Path(os.environ["EMEWS_LEDGER"])


def train(params):
    """A short training run, or the fault ``params["fault"]`` names."""
    (_ledger().parent / f"worker-{os.getppid()}").touch()
    fault = params.get("fault", "ok")
    if fault == "segfault":
        ctypes.string_at(0)
    if fault == "exit":
        os._exit(3)
    if fault == "sysexit":
        sys.exit(4)
    if fault == "hang":
        time.sleep(3600)
    if fault == "biglog":
        sys.stdout.write("x" * 4_000_000 + "\n")
    time.sleep(0.05 + 0.1 * abs(params["x"]))
    value = {"nan": math.nan, "garbage": "not a number"}.get(fault, params["x"] ** 2)
    if isinstance(value, float) and math.isfinite(value):
        record = {"key": point_key({k: v for k, v in params.items()}), "value": value}
        with open(_ledger(), "a") as ledger:
            fcntl.flock(ledger, fcntl.LOCK_EX)
            ledger.write(json.dumps(record) + "\n")
    return value


class SlowThinker(Algorithm):
    """Uniform random points; each tell takes ``think`` seconds."""

    def __init__(self, space, seed=None, think=0.2):
        super().__init__(space, seed)
        self.think = think

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def tell(self, points, values):
        marker = _ledger().parent / "thinking"
        marker.touch()
        time.sleep(self.think)
        marker.unlink()
