"""A small space of discrete values, enumerated, for the model-based searches (``gp``,
``mbo``): every point of it, and which of them the search has been told.

On a space whose free parameters are all discrete (categorical, ordered, logical, integer)
and that has at most :data:`LARGEST` points, a search knows when it has tried everything:
it proposes only points neither told nor in flight, fewer than asked when fewer are left,
none once every point is told, and is then done, so the study ends ("the algorithm has no
more points to propose") instead of evaluating known points again.
"""

import itertools
import math

from emews.plugin import Categorical, Logical, point_key

LARGEST = 10_000   # a space of more points is not enumerated (its searches rarely exhaust it)


class Grid:
    """Every point of a small discrete space (:meth:`of`), and the keys of those told."""

    def __init__(self, points):
        self.points = points   # point key -> point
        self.told = set()

    @classmethod
    def of(cls, space, largest=LARGEST):
        """The grid of ``space`` (each point once: a conditional point without its inactive
        values, none where a forbidden clause holds), or None when a free parameter is a
        float range or the space has more than ``largest`` combinations of values."""
        lists = [_values(p) for p in space.free]
        if any(v is None for v in lists) or math.prod(map(len, lists)) > largest:
            return None
        points = {}
        for values in itertools.product(*lists):
            try:
                point = space.point(values)
            except ValueError:   # forbidden
                continue
            points.setdefault(point_key(point), point)
        return cls(points)

    def tell(self, point):
        """Count ``point`` as told."""
        self.told.add(point_key(point))

    def untried(self, busy=()):
        """The points neither told nor among the keys ``busy`` (in flight), in the grid's
        order."""
        return [p for key, p in self.points.items() if key not in self.told and key not in busy]

    def exhausted(self):
        """True once every point has been told."""
        return self.told.issuperset(self.points)


def _values(param):
    """Every value of a discrete parameter, in order; None for a float range."""
    if isinstance(param, Logical):
        return [False, True]
    if isinstance(param, Categorical):
        return list(param.values)
    if param.kind == "int":
        return list(range(int(param.lower), int(param.upper) + 1))
    return [param.lower] if param.lower == param.upper else None
