"""Pareto fronts and hypervolumes of objective vectors, each objective to minimize.

The arithmetic is moocore's; this module only says which points count. A vector with a NaN or
an infinity (a failed run), or an infeasible one, is on no front and adds no volume. Callers
turn objectives to maximize into ones to minimize (:func:`minimized`) before asking.
"""

import math

import numpy as np

from .._status import Status


def _moocore():
    import moocore  # ~0.2 s to import: only when a front is asked for
    return moocore


def usable(vectors, feasible=None):
    """The indices of the vectors that can be on a front: all finite, and feasible."""
    return [i for i, vector in enumerate(vectors)
            if all(math.isfinite(v) for v in vector) and (feasible is None or feasible[i])]


def front(vectors, feasible=None):
    """The indices (in order) of the non-dominated vectors among the usable ones (see
    :func:`usable`); of equal vectors, every copy is kept."""
    candidates = usable(vectors, feasible)
    if not candidates:
        return []
    data = np.asarray([vectors[i] for i in candidates], dtype=float)
    keep = _moocore().is_nondominated(data, keep_weakly=True)
    return [i for i, kept in zip(candidates, keep) if kept]


def hypervolume(vectors, reference, feasible=None):
    """The volume that the usable vectors dominate, bounded by ``reference`` (one number per
    objective); vectors not below the reference in every objective add nothing."""
    reference = np.asarray(reference, dtype=float)
    data = [vectors[i] for i in usable(vectors, feasible)]
    data = [v for v in data if all(x < r for x, r in zip(v, reference))]
    if not data:
        return 0.0
    return float(_moocore().hypervolume(np.asarray(data, dtype=float), ref=reference))


def reference_point(vectors, margin=0.1):
    """A reference point derived from a first design: the worst usable value of each
    objective plus ``margin`` of its range (plus ``margin`` when the range is 0); ``None``
    when no vector is usable."""
    data = [vectors[i] for i in usable(vectors)]
    if not data:
        return None
    data = np.asarray(data, dtype=float)
    worst, spread = data.max(axis=0), data.max(axis=0) - data.min(axis=0)
    return [float(w + margin * (s if s > 0 else 1.0)) for w, s in zip(worst, spread)]


def minimized(values, directions):
    """``values`` turned to minimize: those whose direction is ``"maximize"`` negated."""
    return [-v if d == "maximize" else v for v, d in zip(values, directions)]


def front_rows(rows, directions):
    """The rows (as :meth:`emews.store.Store.rows` gives them, in their order) on the study's
    front: the ``done`` ones with an objective vector, feasible (``feasible`` not False), that
    no other such row dominates, each objective in its ``directions``."""
    rows = [row for row in rows if row["status"] == Status.DONE and row.get("objectives")
            and row.get("feasible") is not False]
    vectors = [minimized([math.nan if v is None else v for v in row["objectives"]], directions)
               for row in rows]
    return [rows[i] for i in front(vectors)]
