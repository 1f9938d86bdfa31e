"""The tasks of part 2 (utilization), one definition for emews and for its peers.

A task is a point of six floats in [0, 1]. It sleeps a lognormal time (median 1 s, sigma 1)
drawn from a hash of the point (:func:`benchmarks.objectives.lognormal_duration`), so the same
point takes the same time whichever scheduler or algorithm proposed it, and returns Hartmann-6
at the point, so that a model-based search has something to learn.
"""

import math
import time

from emews.models import analytic

from .objectives import lognormal_duration

MEDIAN_S, SIGMA = 1.0, 1.0
DESCRIPTION = f"lognormal, median {MEDIAN_S} s, sigma {SIGMA}; value Hartmann-6"


def duration(params):
    """The seconds the task at ``params`` sleeps."""
    return lognormal_duration(params, mean=MEDIAN_S * math.exp(SIGMA ** 2 / 2), sigma=SIGMA)


def value(params):
    """The value the task at ``params`` returns (independent of its duration)."""
    return analytic.hartmann6(params)


def sleep(params):
    """The task: sleep :func:`duration`, return :func:`value` (an objective for emews)."""
    time.sleep(duration(params))
    return value(params)
