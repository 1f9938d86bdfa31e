"""Forbidden clauses: a point where one holds is outside the space, so Space.point and
Space.from_unit refuse it, and no search proposes one, even where the objective is best
there."""

import pytest

from emews.algorithms.bohb import BOHB
from emews.algorithms.ga import GA, SteadyStateGA
from emews.algorithms.mbo import MBO
from emews.algorithms.optuna_search import OptunaSearch
from emews.algorithms.skopt_search import SkoptSearch
from emews._space import Space

# the objective's best region (kind "a", x below 0.5; and kind "b" with size 16) is forbidden
SPACE = Space.from_ga_json({"parameters": [
    {"name": "kind", "type": "categorical", "values": ["a", "b", "c"]},
    {"name": "x", "type": "float", "lower": 0, "upper": 1},
    {"name": "size", "type": "ordered", "values": [16, 32, 64]}],
    "forbidden": [{"kind": ["a"], "x": {"<": 0.5}}, {"kind": ["b"], "size": [16]}]},
    "forbidden.json")
QUICK = {
    "gp": (SkoptSearch, {"n_initial_points": 5, "acq_optimizer_kwargs": {"n_points": 500}}),
    "gp sobol": (SkoptSearch, {"n_initial_points": 5, "initial_point_generator": "sobol",
                               "acq_optimizer_kwargs": {"n_points": 500}}),
    # One seed's 24 points decide whether a search reaches kind "a" (the last assertion of
    # test_gp_and_mbo_propose_only_allowed_points), which is about the forbidden region, not
    # about mbo's transform of the values: over 40 seeds of this problem, kind "a" was never
    # reached in 8 and 7 runs (batch 1 and 3) untransformed and in 9 and 10 with "log" (the
    # default, better on the benchmarks' mixed spaces: mbo.py's notes), median best value
    # 0.765 and 0.786 against 0.751 and 0.757.
    "mbo": (MBO, {"design_size": 5, "n_trees": 30, "focus_points": 200, "y_transform": "none"}),
}


# searches that breed or sample points a forbidden clause may exclude: each draws it again
BREEDERS = {
    "optuna tpe": (OptunaSearch, {"sampler": "tpe", "n_startup_trials": 4}),
    "optuna cmaes": (OptunaSearch, {"sampler": "cmaes", "popsize": 4}),
    "ga": (GA, {"population_size": 6}),
    "ga_async": (SteadyStateGA, {"population_size": 6}),
    "bohb": (BOHB, {"min_points_in_model": 4}),
}


def objective(point):
    return point["x"] + (point["kind"] != "a") + point["size"] / 64


def test_point_and_from_unit_refuse_a_point_where_a_forbidden_clause_holds():
    with pytest.raises(ValueError, match="a forbidden clause holds on the point"):
        SPACE.point(["a", 0.25, 32])
    with pytest.raises(ValueError, match="a forbidden clause holds on the point"):
        SPACE.from_unit([0.5, 0.9, 0.1])    # kind "b", size 16
    assert SPACE.point(["a", 0.75, 16]) == {"kind": "a", "x": 0.75, "size": 16}
    assert SPACE.from_unit([0.9, 0.25, 0.1]) == {"kind": "c", "x": 0.25, "size": 16}


@pytest.mark.parametrize("name", sorted(QUICK))
@pytest.mark.parametrize("batch", [1, 3])
def test_gp_and_mbo_propose_only_allowed_points(name, batch):
    cls, options = QUICK[name]
    algorithm = cls(SPACE, seed=batch, **options)
    proposed, running = [], []
    while len(proposed) < 24:
        asked = algorithm.ask(batch)
        proposed += asked
        if running:
            algorithm.tell(running, [objective(p) for p in running])
        running = asked
    assert len(proposed) >= 24
    assert [p for p in proposed if not SPACE.contains(p)] == []
    # the search went where it could: kind "a" at x >= 0.5 is the best allowed region
    assert any(p["kind"] == "a" for p in proposed[10:])


@pytest.mark.parametrize("name", sorted(BREEDERS))
@pytest.mark.parametrize("batch", [1, 3])
def test_ga_bohb_and_optuna_propose_only_allowed_points(name, batch):
    cls, options = BREEDERS[name]
    algorithm = cls(SPACE, seed=batch, **options)
    proposed = []
    while len(proposed) < 40:
        asked = algorithm.ask(batch)
        assert asked, f"{name} proposed nothing after {len(proposed)} points"
        proposed += asked
        algorithm.tell(asked, [objective(p) for p in asked])
    assert [p for p in proposed if not SPACE.contains(p)] == []
