"""Pareto fronts and hypervolumes (emews.core._pareto) and the Objectives value of the
algorithm contract."""

import math
import pickle

import numpy as np
import pytest

from emews.core import _pareto as pareto
from emews.core._algorithm import Objectives


def brute_front(vectors, feasible):
    """The front by definition: usable vectors that no usable vector dominates."""
    ok = [i for i, v in enumerate(vectors) if all(map(math.isfinite, v)) and feasible[i]]
    return [i for i in ok if not any(
        all(a <= b for a, b in zip(vectors[j], vectors[i])) and vectors[j] != vectors[i]
        for j in ok)]


@pytest.mark.parametrize("seed", range(5))
def test_front_is_the_set_no_point_dominates(seed):
    rng = np.random.default_rng(seed)
    vectors = [tuple(float(x) for x in rng.integers(0, 6, 3)) for _ in range(40)]
    vectors[3] = (math.nan, 0.0, 0.0)
    feasible = [bool(f) for f in rng.random(40) > 0.2]
    assert pareto.front(vectors, feasible) == brute_front(vectors, feasible)


def test_hypervolume_of_a_staircase():
    # three boxes of 1 x 1 below the reference (3, 3): 1x2 + 1x1 ... computed by hand
    vectors = [(1.0, 2.0), (2.0, 1.0), (2.5, 2.5), (5.0, 0.0)]
    # (1,2) adds 2x1, (2,1) adds 1x2, their overlap (2..3, 2..3) once: 2 + 2 - 1 = 3
    assert pareto.hypervolume(vectors, [3.0, 3.0]) == pytest.approx(3.0)
    assert pareto.hypervolume(vectors, [3.0, 3.0], feasible=[False, True, True, True]) \
        == pytest.approx(2.0)
    assert pareto.hypervolume([(4.0, 4.0)], [3.0, 3.0]) == 0.0


def test_reference_point_lies_beyond_the_worst_values():
    assert pareto.reference_point([(0.0, 10.0), (1.0, 10.0), (math.inf, 0.0)]) \
        == pytest.approx([1.1, 10.1])
    assert pareto.reference_point([(math.nan, 1.0)]) is None


def test_objectives_is_its_first_value_and_survives_pickling():
    value = Objectives([0.25, -3.0], violations=[0.0, 1.5])
    assert float(value) == 0.25 and value.values == (0.25, -3.0)
    assert not value.feasible and Objectives([1.0, 2.0]).feasible
    copy = pickle.loads(pickle.dumps(value))
    assert (copy.values, copy.violations, float(copy)) == ((0.25, -3.0), (0.0, 1.5), 0.25)


def test_front_rows_are_the_feasible_non_dominated_done_rows_in_their_directions():
    """Rows as Store.rows() gives them; "size" is maximized: the front negates it."""
    rows = [{"id": 0, "status": "done", "objectives": [1.0, 10.0], "feasible": True},
            {"id": 1, "status": "done", "objectives": [2.0, 20.0], "feasible": True},
            {"id": 2, "status": "done", "objectives": [0.5, 30.0], "feasible": False},
            {"id": 3, "status": "failed", "objectives": None, "feasible": None},
            {"id": 4, "status": "done", "objectives": [3.0, 15.0], "feasible": None},
            {"id": 5, "status": "done", "objectives": [0.8, 5.0], "feasible": True}]
    assert [r["id"] for r in pareto.front_rows(rows, ["minimize", "maximize"])] == [0, 1, 5]
    assert [r["id"] for r in pareto.front_rows(rows, ["minimize", "minimize"])] == [5]
