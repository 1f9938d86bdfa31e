"""Objectives the benchmarks evaluate: a no-op, and sleeps with lognormal durations.

Both are module-level functions so that every pool (MPI ranks, ``mpi4py.futures``,
``ProcessPoolExecutor``) can pickle a reference to them.
"""

import hashlib
import math
import statistics
import time

from emews.evaluate import Objective

_ECHO = Objective(impl="echo")
SLEEP_MEAN, SLEEP_SIGMA = 0.2, 1.0


def echo(params_json):
    """The no-op task: what ``impl = "echo"`` does with one point (sum of squares)."""
    return _ECHO.evaluate(params_json, "RUN").value


def lognormal_duration(params, mean=SLEEP_MEAN, sigma=SLEEP_SIGMA):
    """A duration drawn lognormal (mean ``mean``, log-sd ``sigma``) from a hash of the point.

    The same point always gets the same duration, whichever algorithm proposed it.
    """
    digest = hashlib.sha256(repr(sorted(params.items())).encode()).digest()
    u = (int.from_bytes(digest[:8], "big") + 0.5) / 2 ** 64
    mu = math.log(mean) - sigma ** 2 / 2
    return math.exp(mu + sigma * statistics.NormalDist().inv_cdf(u))


def sleep_value(params):
    """The value a sleep task returns: the sum of squares of the numeric parameters.

    It does not depend on the duration, so an algorithm cannot learn to propose short tasks.
    """
    return float(sum(v * v for v in params.values() if isinstance(v, (int, float))))


def sleep(params):
    """Sleep for the point's lognormal duration (a training run that uses no CPU)."""
    time.sleep(lognormal_duration(params))
    return sleep_value(params)
