"""The analytic test functions: known minima, domains, and the space files beside them."""

import json
from pathlib import Path

import numpy as np
import pytest

from emews.models import analytic
from emews._space import Space

MINIMIZERS = {
    "branin": {"x1": np.pi, "x2": 2.275},
    "hartmann6": dict(zip([f"x{i}" for i in range(1, 7)],
                          [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573])),
    "ackley": {f"x{i}": 0.0 for i in range(1, 6)},
    "rosenbrock": {f"x{i}": 1.0 for i in range(1, 5)},
    "levy": {f"x{i}": 1.0 for i in range(1, 5)},
    "sphere": {f"x{i}": 0.0 for i in range(1, 4)},
    "mixed": {"x1": np.pi, "x2": 2.275, "n": 2, "act": "relu", "bn": True},
}


@pytest.mark.parametrize("name", sorted(MINIMIZERS))
def test_each_function_reaches_its_minimum_and_nothing_lower(name):
    function = getattr(analytic, name)
    assert function(MINIMIZERS[name]) == pytest.approx(analytic.MINIMA[name], abs=1e-5)
    space = Space.from_file(Path(analytic.__file__).parent / f"{name}_space.json")
    values = [function(p) for p in space.sample(np.random.default_rng(0), 500)]
    assert min(values) > analytic.MINIMA[name] and all(np.isfinite(values))


@pytest.mark.parametrize("name", sorted(MINIMIZERS))
def test_the_space_files_match_the_domains(name):
    path = Path(analytic.__file__).parent / f"{name}_space.json"
    assert json.loads(path.read_text()) == analytic.space(name)


def test_coordinates_follow_numeric_name_order():
    params = {f"x{i}": float(i) for i in range(1, 12)}
    assert list(analytic.coordinates(params)) == list(range(1, 12))
    assert len(analytic.space("ackley", 8)) == 8
