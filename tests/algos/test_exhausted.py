"""gp and mbo on a space of 240 discrete points, in a real (in-process) study with a budget
above that: every point is evaluated once, none again, and the study ends because the search
has nothing left to propose."""

import json

import pytest

import emews
from emews.algorithms.finite import Grid
from emews._space import Space

from conftest import stored_rows

# x and n as the toy objective reads them; act and width only make the space bigger: 240 points
DISCRETE = [{"name": "x", "type": "ordered", "values": [-1.0, -0.5, 0.0, 0.5, 1.0]},
            {"name": "n", "type": "int", "lower": 0, "upper": 3},
            {"name": "act", "type": "categorical", "values": ["relu", "tanh", "gelu"]},
            {"name": "width", "type": "ordered", "values": [8, 16, 32, 64]}]
SEARCHES = {"gp": {"refit_all_below": 20, "acq_optimizer_kwargs": {"n_points": 500}},
            "mbo": {"n_trees": 30}}


def test_the_grid_of_a_small_discrete_space_holds_each_allowed_point_once():
    assert len(Grid.of(Space.from_ga_json(DISCRETE)).points) == 240
    forbidding = Space.from_ga_json({"parameters": DISCRETE,
                                     "forbidden": [{"act": ["gelu"], "width": [8, 16]}]})
    assert len(Grid.of(forbidding).points) == 240 - 5 * 4 * 2
    conditional = Space.from_ga_json(DISCRETE[:3] + [dict(DISCRETE[3],
                                                          condition={"act": ["relu"]})])
    assert len(Grid.of(conditional).points) == 5 * 4 * (4 + 2)
    assert Grid.of(Space.from_ga_json(DISCRETE + [{"name": "lr", "type": "float", "lower": 0, "upper": 1}])) is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "batch"])
@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_a_search_evaluates_every_point_once_and_ends(toy_config, tmp_path, name, mode):
    config = toy_config(algorithm=name, mode=mode, budget=300)
    (tmp_path / "space.json").write_text(json.dumps(DISCRETE))
    config["algorithm"] = SEARCHES[name]
    result = emews.run(config)
    rows = stored_rows(result.expdir)
    assert len(rows) == 240 and {r["status"] for r in rows} == {"done"}
    assert len({json.dumps(r["params"], sort_keys=True) for r in rows}) == 240
    assert result.stop_reason == "the algorithm has no more points to propose"
    assert result.best_value == min(r["result"] for r in rows) == 0.0
