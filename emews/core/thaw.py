"""Freeze-thaw: which paused runs go on, chosen by a model of their learning curves.

::

    pruner (pause = true) --PAUSE--> Master: the run ends ``paused``, its checkpoint kept;
                                     Thaws.pause(point, attempt, params, curve)
    Master._drain (the budget of evaluations spent, or the search ended), a slot free:
        Thaws.take(best) --> the paused point whose curve predicts the best final value, if
                             better than ``best`` (the best finished value) --> its next attempt,
                             in the same checkpoint directory: it goes on from its checkpoint

A run's curve is what it reported (``emews.report``), over all its attempts. Its final value
is predicted at the study's ``max_resource`` by :func:`predict`: the median of three parametric
curves fitted by least squares, Domhan et al. (IJCAI 2015)'s ``pow3``, ``exp3`` and
``log-linear`` (a small ensemble rather than their MCMC over eleven), falling back to the last
value where fewer than :data:`MIN_POINTS` steps are known or no curve fits. Ranking paused runs
by it rather than by their value at the rung thaws a run that learns slowly but goes on
learning before one that has flattened (``tests/test_thaw.py`` measures both on crossing
curves).
"""

import math
import warnings
from dataclasses import dataclass, field

import numpy

MIN_POINTS = 3     # steps a curve needs before a parametric fit is tried


def _pow3(x, c, a, alpha):
    return c + a * x ** -alpha


def _exp3(x, c, a, b):
    return c + a * numpy.exp(-b * x)


def _log_linear(x, a, b):
    return a + b * numpy.log(x)


CURVES = ((_pow3, (1.0, 1.0, 0.5)), (_exp3, (1.0, 1.0, 0.1)), (_log_linear, (1.0, -0.1)))


def predict(curve, horizon):
    """The value the run of ``curve`` ({step: value}, lower is better) is predicted to reach at
    step ``horizon``: the median of the parametric fits that stay within the curve's range
    widened by its span on each side, else its last value."""
    steps = sorted(s for s, v in curve.items() if s > 0 and v is not None and math.isfinite(v))
    if not steps:
        return math.inf
    last = curve[steps[-1]]
    if len(steps) < MIN_POINTS or horizon <= steps[-1]:
        return last
    from scipy.optimize import curve_fit
    x = numpy.array(steps, dtype=float)
    y = numpy.array([curve[s] for s in steps], dtype=float)
    low, high = y.min(), y.max()
    span = high - low
    predictions = []
    for function, start in CURVES:
        if len(steps) < len(start):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                params, _ = curve_fit(function, x, y, p0=start, maxfev=2000)
                value = float(function(float(horizon), *params))
        except (RuntimeError, ValueError, OverflowError, ZeroDivisionError):
            continue
        if math.isfinite(value) and low - span <= value <= high + span:
            predictions.append(value)
    return float(numpy.median(predictions)) if predictions else last


@dataclass
class Paused:
    """A paused run: its point's ``params`` (JSON text), the ``attempt`` that paused, and the
    point's ``curve`` over all its attempts."""

    params: str
    attempt: int
    curve: dict = field(default_factory=dict)


@dataclass
class Thaws:
    """The study's paused runs, and which one to thaw next (predicted at ``horizon``)."""

    horizon: int
    paused: dict = field(default_factory=dict)    # point id -> Paused
    thawing: dict = field(default_factory=dict)   # point id -> its curve, while it is thawed

    def pause(self, point, attempt, params, curve):
        """Point ``point`` was paused by its attempt ``attempt``, which reported ``curve``
        (added to what its earlier attempts reported, when it was thawed)."""
        self.paused[point] = Paused(params, attempt, {**self.thawing.pop(point, {}), **curve})

    def take(self, best=math.inf):
        """The paused point to thaw now, taken out (``(id, Paused)``), or ``None``: the one
        predicted best, while that prediction is better than ``best``."""
        if not self.paused:
            return None
        value, point = min((predict(run.curve, self.horizon), i)
                           for i, run in self.paused.items())
        if not value < best:
            return None
        self.thawing[point] = self.paused[point].curve
        return point, self.paused.pop(point)
