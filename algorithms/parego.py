"""ParEGO's scalarizations: several objectives told as one number to a one-objective surrogate.

Knowles (2006), "ParEGO: a hybrid algorithm with on-line landscape approximation for
expensive multiobjective optimization problems". Before each proposal a weight vector ``w`` is
drawn, with equal chances, from ParEGO's evenly spaced set (every ``w`` whose components are
multiples of ``1/s`` and sum to 1, ``s`` the smallest giving at least :data:`WEIGHT_VECTORS`:
11 vectors for 2 objectives, 15 for 3, as Knowles's), which holds each objective alone: the
ends of the front are searched as often as any other direction. Every objective is normalized
to [0, 1] by the smallest and largest value told so far, and each told point is given the
augmented Chebyshev value ``max_j(w_j f_j) + rho * sum_j(w_j f_j)`` (``rho`` = 0.05, ParEGO's):
the surrogate fitted to those values looks for a point of the front in the direction ``w``.

A point that breaks a constraint (:attr:`emews.plugin.Objectives.feasible` False) is
penalized: its value is ``1 + rho`` (no feasible point's value exceeds it) plus its total
violation, each constraint's violation divided by the largest seen for that constraint, so it
ranks below every feasible point and, among infeasible ones, the nearer to feasibility the
better. A failure (``NaN``) is given :func:`emews.plugin.failure_value` of the others,
as the one-objective searches do.
"""

import functools
import itertools
import math

import numpy as np

from emews.plugin import failure_value

RHO = 0.05
WEIGHT_VECTORS = 11   # the fewest in the evenly spaced set (Knowles's s = 10 for 2 objectives)


@functools.lru_cache(maxsize=None)
def evenly_spaced_weights(objectives):
    """ParEGO's weight vectors for ``objectives`` objectives: every vector of multiples of
    ``1/s`` that sum to 1, for the smallest ``s`` that gives :data:`WEIGHT_VECTORS` or more."""
    steps = 1
    while math.comb(steps + objectives - 1, objectives - 1) < WEIGHT_VECTORS:
        steps += 1
    return np.array([c for c in itertools.product(range(steps + 1), repeat=objectives)
                     if sum(c) == steps], dtype=float) / steps


class ObjectiveHistory:
    """The objective vectors and constraint violations of told points, in the order told."""

    def __init__(self, objectives, vectors=(), violations=()):
        self.objectives = int(objectives)
        self.vectors = [None if v is None else list(v) for v in vectors]   # None: a failure
        self.violations = [list(v) for v in violations]

    def add(self, value):
        """Record one told value: an :class:`~emews.plugin.Objectives`, or a plain
        number, which in a study of several objectives is a failure (``NaN``) and is
        recorded as one whatever it is."""
        values = getattr(value, "values", None)
        if values is None or len(values) != self.objectives or \
                not all(math.isfinite(v) for v in values):
            self.vectors.append(None)
            self.violations.append([])
        else:
            self.vectors.append([float(v) for v in values])
            self.violations.append([max(float(v), 0.0) for v in value.violations])

    def __len__(self):
        return len(self.vectors)

    def weights(self, rng):
        """A weight vector of :func:`evenly_spaced_weights` drawn with ``rng`` (a numpy
        Generator)."""
        table = evenly_spaced_weights(self.objectives)
        return table[rng.integers(len(table))].copy()

    def equal_weights(self):
        """The weight vector that gives every objective the same share."""
        return np.full(self.objectives, 1.0 / self.objectives)

    def scalarize(self, weights):
        """Every told point's augmented Chebyshev value under ``weights`` (an array in the
        order told; infeasible points penalized, failures imputed; all 0.0 while no value
        is finite)."""
        told = len(self.vectors)
        finite = [i for i, v in enumerate(self.vectors) if v is not None]
        scalars = np.full(told, math.nan)
        if not finite:
            return np.zeros(told)
        data = np.asarray([self.vectors[i] for i in finite], dtype=float)
        low, span = data.min(axis=0), np.ptp(data, axis=0)
        span[span <= 0] = 1.0
        weighted = (data - low) / span * np.asarray(weights, dtype=float)
        scalars[finite] = weighted.max(axis=1) + RHO * weighted.sum(axis=1)
        excess = self._excess()
        broken = [i for i in finite if excess[i] > 0]
        scalars[broken] = 1.0 + RHO + excess[broken]
        penalty = failure_value(list(scalars[finite]))
        scalars[np.isnan(scalars)] = penalty
        return scalars

    def improvements(self):
        """For each told point, in the order told, whether it improved the front when told:
        feasible, finite, and not matched or beaten in every objective by a feasible point
        told before it."""
        excess = self._excess()
        flags, earlier = [], np.empty((0, self.objectives))
        for vector, over in zip(self.vectors, excess):
            if vector is None or over > 0:
                flags.append(False)
                continue
            flags.append(not np.any(np.all(earlier <= vector, axis=1)))
            earlier = np.vstack([earlier, vector])
        return flags

    def _excess(self):
        """Each told point's total violation, each constraint scaled by its largest one."""
        width = max((len(v) for v in self.violations), default=0)
        if width == 0:
            return np.zeros(len(self.violations))
        table = np.zeros((len(self.violations), width))
        for i, row in enumerate(self.violations):
            table[i, :len(row)] = row
        scale = table.max(axis=0)
        scale[scale <= 0] = 1.0
        return (table / scale).sum(axis=1)

    def to_json(self):
        """Plain data for a state (see :func:`emews.plugin.pack_state`)."""
        return {"objectives": self.objectives, "vectors": self.vectors,
                "violations": self.violations}

    @classmethod
    def from_json(cls, data):
        """The history that :meth:`to_json` wrote."""
        return cls(data["objectives"], data["vectors"], data["violations"])
