"""Freeze-thaw: which paused runs go on, chosen by a model of their learning curves.

A pruner with ``pause = true`` pauses runs (the master calls :meth:`Thaws.pause`); once nothing
is left to propose, ``Master._thaw`` fills a free slot with the paused run whose curve (what it
reported, over all its attempts) :func:`predict` ranks best at ``max_resource`` (once, when it
pauses: about 2 ms), as its point's next attempt in the same checkpoint directory. A thaw
predicted to beat the best finished value runs to its end; any other only fills a slot, and is
paused again once no other work runs. docs/src/fidelity.md (Freeze-thaw) says more.
"""

import json
import math
import warnings
from dataclasses import dataclass, field

import numpy

from .._status import Status
from ._segments import SEGMENT

CURVES = (   # Domhan et al.'s curves, each with the parameters its fit starts from
    (lambda x, c, a, alpha: c + a * x ** -alpha, (1.0, 1.0, 0.5)),   # pow3
    (lambda x, c, a, b: c + a * numpy.exp(-b * x), (1.0, 1.0, 0.1)),   # exp3
    (lambda x, a, b: a + b * numpy.log(x), (1.0, -0.1)),   # log-linear
)


def predict(curve, horizon):
    """The value the run of ``curve`` ({step: value}, lower is better) is predicted to reach at
    step ``horizon``: the median of its last value and of the fits of :data:`CURVES` to more
    points than they have parameters that stay within its range widened by its span each side."""
    steps = sorted(s for s, v in curve.items() if s > 0 and v is not None and math.isfinite(v))
    if not steps:
        return math.inf
    last = curve[steps[-1]]
    if horizon <= steps[-1]:
        return last
    from scipy.optimize import curve_fit
    x = numpy.array(steps, dtype=float)
    y = numpy.array([curve[s] for s in steps], dtype=float)
    low, high = y.min(), y.max()
    span = high - low
    predictions = [last]
    for function, start in CURVES:
        if len(steps) <= len(start):   # as many points as parameters: any curve fits them
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
    return float(numpy.median(predictions))


@dataclass
class Paused:
    """A paused run: its point's ``params`` (JSON text), the ``attempt`` that paused, the
    point's ``curve`` over all its attempts, and the value it is ``predicted`` to end at."""

    params: str
    attempt: int
    curve: dict
    predicted: float


@dataclass
class Thaws:
    """The study's paused runs, and which one to thaw next (predicted at ``horizon``;
    ``None``: a study that pauses nothing, and thaws nothing)."""

    horizon: int | None = None
    paused: dict = field(default_factory=dict)    # point id -> Paused
    thawing: dict = field(default_factory=dict)   # point id -> its curve, while it is thawed
    continues: dict = field(default_factory=dict)   # a thaw's (id, attempt) -> the run it goes on
    predictions: dict = field(default_factory=dict)   # a thaw's (id, attempt) -> its prediction

    def run_of(self, run):
        """The run ``run`` (``(id, attempt)``) goes on: the first of its point's paused
        run and its thaws; itself, when it is no thaw."""
        return self.continues.get(run, run)

    def pause(self, point, attempt, params, curve):
        """Point ``point`` was paused by its attempt ``attempt``, which reported ``curve``
        (added to what its earlier attempts reported, when it was thawed)."""
        curve = {**self.thawing.pop(point, {}), **curve}
        self.predictions.pop((point, attempt), None)
        self.paused[point] = Paused(params, attempt, curve, predict(curve, self.horizon))

    def take(self, best=math.inf, fill=False):
        """The paused point predicted best, taken out (``(id, Paused)``), if that prediction
        beats ``best`` or with ``fill`` (a free slot that nothing else would use); else ``None``."""
        if not self.paused:
            return None
        value, point = min((run.predicted, i) for i, run in self.paused.items())
        if not (value < best or fill):
            return None
        self.thawing[point] = self.paused[point].curve
        return point, self.paused.pop(point)

    def next_thaw(self, best=math.inf, fill=False):
        """The next thaw (see :meth:`take`) as ``(id, attempt, params, step)``, or ``None``: a
        segment (:mod:`emews.core._segments`; ``params`` JSON text) from the ``step`` its point's
        curve reached to ``horizon``, in the point's own checkpoint directory."""
        taken = self.take(best, fill) if self.horizon is not None else None
        if taken is None:
            return None
        point, run = taken
        attempt, step = run.attempt + 1, max(run.curve, default=0)
        record = {"member": point, "name": f"thaw{point}-{attempt}", "parent": None,
                  "donor": None, "start": step, "until": self.horizon}
        self.continues[(point, attempt)] = self.run_of((point, run.attempt))
        self.predictions[(point, attempt)] = run.predicted
        return point, attempt, json.dumps({**json.loads(run.params), SEGMENT: record}), step

    def retried(self, run, attempt):
        """The thaw ``run`` failed and runs again as ``attempt``: that goes on in its place."""
        for table in (self.continues, self.predictions):
            if run in table:
                table[(run[0], attempt)] = table.pop(run)

    def filler(self, run, best):
        """Whether ``run`` (``(id, attempt)``) is a thaw predicted to end no better than
        ``best`` (the best finished value now): paused again once no other work runs."""
        return run in self.predictions and not self.predictions[run] < best

    def resume(self, attempts, paused, reports):
        """Take back which runs thaws go on (from the paused ``attempts``, in order) and the
        ``paused`` points (rows) with their curves (``reports``), as earlier runs stored them."""
        for row in attempts:
            if row["status"] == Status.PAUSED:
                run = (row["id"], row["attempt"])
                self.continues[(row["id"], row["attempt"] + 1)] = self.run_of(run)
        if self.horizon is not None:
            for row in paused:
                self.pause(row["id"], row["attempt"], json.dumps(row["params"]),
                           {r["step"]: r["value"] for r in reports if r["id"] == row["id"]})

