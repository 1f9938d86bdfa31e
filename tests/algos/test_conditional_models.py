"""gp, mbo and bohb on a conditional space: every proposal holds exactly its active parameters,
the surrogates see inactive parameters apart, and the told history (whose points lack their
inactive parameters) is learnt from."""

import numpy as np
import pytest

from emews.algorithms.bohb import BOHB
from emews.algorithms.mbo import INACTIVE as MBO_INACTIVE
from emews.algorithms.mbo import MBO
from emews.algorithms.skopt_search import INACTIVE as GP_INACTIVE
from emews.algorithms.skopt_search import SkoptSearch
from emews._errors import ConfigError
from emews._space import Space

# two branches with parameters of their own, a chained condition and a numeric test
BRANCHES = Space.from_ga_json([
    {"name": "branch", "type": "categorical", "values": ["a", "b"]},
    {"name": "x", "type": "float", "lower": 0, "upper": 1, "condition": {"branch": ["a"]}},
    {"name": "y", "type": "float", "lower": 0, "upper": 1, "condition": {"branch": ["b"]}},
    {"name": "z", "type": "int", "lower": 0, "upper": 9, "condition": {"branch": ["b"]}},
    {"name": "kind", "type": "categorical", "values": ["p", "q", "r"],
     "condition": {"y": {">": 0.5}}},
    {"name": "seed", "type": "constant", "value": 3},
], "branches.json")
QUICK = {
    "gp": (SkoptSearch, {"n_initial_points": 6, "acq_optimizer_kwargs": {"n_points": 500}}),
    "mbo": (MBO, {"design_size": 6, "n_trees": 30, "focus_points": 200}),
    "bohb": (BOHB, {}),
}


def objective(point):
    """Branch ``a`` is at best 1; branch ``b`` reaches 0 at y = 0.3, z = 2."""
    if point["branch"] == "a":
        return 1 + (point["x"] - 0.4) ** 2
    return (point["y"] - 0.3) ** 2 + ((point["z"] - 2) / 9) ** 2 + 0.1 * (point.get("kind") == "r")


def search(name, seed, budget, batch=1):
    """Every point ``name`` proposes in ``budget`` evaluations, asked ``batch`` at a time
    with the points of the previous ask still in flight."""
    cls, options = QUICK[name]
    algorithm = cls(BRANCHES, seed=seed, **options)
    proposed, running = [], []
    while len(proposed) < budget:
        asked = algorithm.ask(batch)
        proposed += asked
        if running:
            algorithm.tell(running, [objective(p) for p in running])
        running = asked
    algorithm.tell(running, [objective(p) for p in running])
    return proposed


@pytest.mark.parametrize("name", sorted(QUICK))
@pytest.mark.parametrize("batch", [1, 3])
def test_every_proposal_holds_exactly_its_active_parameters(name, batch):
    points = search(name, seed=batch, budget=15, batch=batch)
    outside = [p for p in points if not BRANCHES.contains(p)]
    assert not outside
    assert {p["branch"] for p in points} == {"a", "b"}
    assert any("kind" in p for p in points)   # the chained condition held at least once


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_better_branch_is_found_from_the_told_history_more_often_than_at_random(name):
    """A history told first (points without their inactive parameters, as a resumed study's
    store holds them), then 12 proposals: over 4 seeds, most go to the better branch ``b``,
    where random points go half the time."""
    shares = []
    for seed in range(4):
        cls, options = QUICK[name]
        algorithm = cls(BRANCHES, seed=seed, **options)
        history = BRANCHES.sample(np.random.default_rng(seed), 16)
        algorithm.tell(history, [objective(p) for p in history])
        proposed = []
        for _ in range(12):
            point = algorithm.ask(1)[0]
            algorithm.tell([point], [objective(point)])
            proposed.append(point)
        shares.append(np.mean([p["branch"] == "b" for p in proposed]))
    assert np.mean(shares) > 0.7


def test_gp_and_mbo_see_an_inactive_parameter_out_of_its_range():
    """The surrogates' coordinates of a told point: its inactive parameters at ``INACTIVE``,
    below every value's, whatever placeholder the optimizer's data holds for them."""
    point = {"branch": "a", "x": 0.25, "seed": 3}
    gp = SkoptSearch(BRANCHES, seed=0, n_initial_points=2)
    gp.tell([point], [1.0])
    [row] = gp.optimizer.space.transform(gp.optimizer.Xi)
    assert sorted(set(row) - {0.0, 1.0}) == [GP_INACTIVE, 0.25]
    assert list(row).count(GP_INACTIVE) == 1 + 1 + 3   # y, z and kind's three columns
    mbo = MBO(BRANCHES, seed=0)
    mbo.tell([point], [1.0])
    assert mbo.X == [[0.25, 0.25, MBO_INACTIVE, MBO_INACTIVE, MBO_INACTIVE]]


def test_gp_refuses_lbfgs_on_a_conditional_space():
    with pytest.raises(ConfigError, match=r'acq_optimizer: "lbfgs" needs a space without '
                                          r"conditions .*got 'lbfgs'"):
        SkoptSearch(BRANCHES, acq_optimizer="lbfgs")


def test_bohb_imputes_an_absent_coordinate_from_the_points_where_it_is_present():
    bohb = BOHB(BRANCHES, seed=0, min_points_in_model=2)
    history = BRANCHES.sample(np.random.default_rng(0), 12)
    bohb.tell(history, [objective(p) for p in history])
    X = np.array([unit for unit, _, _ in bohb.told])
    assert np.isnan(X).any()
    imputed = bohb._imputed(X)
    assert not np.isnan(imputed).any()
    for j in range(X.shape[1]):
        present = set(X[~np.isnan(X[:, j]), j])
        assert set(imputed[:, j]) <= present or not present


def test_a_restored_search_proposes_what_the_original_would():
    for name in sorted(QUICK):
        cls, options = QUICK[name]
        first = cls(BRANCHES, seed=5, **options)
        history = BRANCHES.sample(np.random.default_rng(5), 10)
        first.tell(history, [objective(p) for p in history])
        second = cls(BRANCHES, seed=5, **options)
        second.restore(first.state())
        assert second.ask(2) == first.ask(2)
