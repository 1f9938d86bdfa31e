"""Test fixtures for faults: an algorithm that stops to think, and models that wait.

Both wait on files in the directory named by ``EMEWS_TEST_GATE`` (a test's temporary
directory), so a test can hold a study at a known moment and then kill or interrupt it:

* :class:`ThinkingSearch` is the random search, except that each ``tell`` writes ``told-N``
  and then blocks until ``go`` exists, as a slow surrogate fit would (a GP's refit can take
  minutes at a thousand points);
* :func:`gated` writes ``pid-<pid>`` and blocks until ``go`` exists (a long training run).
"""

import math
import os
import time
import uuid
from pathlib import Path

from emews.core._algorithm import Algorithm


def _gate():
    return Path(os.environ["EMEWS_TEST_GATE"])


def _wait_for_go():
    while not (_gate() / "go").exists():
        time.sleep(0.05)


class ThinkingSearch(Algorithm):
    """Uniform random points; every tell blocks until the test says go."""

    def __init__(self, space, seed=None):
        super().__init__(space, seed)
        self.told = 0

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def tell(self, points, values):
        self.told += 1
        (_gate() / f"told-{self.told}").touch()
        _wait_for_go()


def gated(params):
    """Record this process's pid, wait for go, then return x squared."""
    (_gate() / f"pid-{os.getpid()}").touch()
    _wait_for_go()
    return math.fsum([params["x"] ** 2])


def always_fails(params):
    """Fail the same way every time (as a model with a broken data path would)."""
    raise FileNotFoundError("no training data at /nonexistent/train.csv")


def stall_after(params):
    """Return x squared plus n; once ``EMEWS_TEST_STALL_AFTER`` calls have been made, block
    until go (so that a test can kill a study in the middle of a batch)."""
    gate = _gate()
    (gate / f"call-{uuid.uuid4().hex}").touch()
    if len(list(gate.glob("call-*"))) > int(os.environ["EMEWS_TEST_STALL_AFTER"]):
        _wait_for_go()
    return math.fsum([params["x"] ** 2, params["n"]])


def slow_square(params):
    """Train for ``EMEWS_TEST_SECONDS`` (0.3 by default), say so on stdout, return x squared."""
    time.sleep(float(os.environ.get("EMEWS_TEST_SECONDS", "0.3")))
    print(f"evaluated in pid {os.getpid()}", flush=True)
    return math.fsum([params["x"] ** 2])
