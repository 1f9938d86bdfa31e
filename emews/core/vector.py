"""The value told of an evaluation in a study of several objectives or with constraints:
:class:`Objectives` (part of the algorithm contract, :mod:`emews.core.algorithm`; here, apart,
so that the EQ/Py wire (:mod:`emews.core.eqpy`) decodes it too)."""

import math


class Objectives(float):
    """The result of an evaluation in a study of several objectives, or with constraints.

    As a float it is the first objective (so an algorithm of one objective, or a classic ME
    reading one number, sees that). ``values`` holds every objective in the order of
    ``[study] objectives``, each to minimize (the driver negates those to maximize);
    ``violations`` holds one number per constraint, in the order of ``[study] constraints``:
    how far the point breaks it (0.0 when it holds). A failed evaluation is told as a plain
    ``NaN``, never as an :class:`Objectives`.
    """

    def __new__(cls, values, violations=()):
        values = tuple(float(v) for v in values)
        self = super().__new__(cls, values[0] if values else math.nan)
        self.values = values
        self.violations = tuple(float(v) for v in violations)
        return self

    @property
    def feasible(self):
        """True when the point breaks no constraint."""
        return all(v <= 0.0 for v in self.violations)

    def __reduce__(self):
        return Objectives, (self.values, self.violations)

    def __repr__(self):
        return f"Objectives({list(self.values)!r}, violations={list(self.violations)!r})"
