"""The mlrMBO-like search: design, surrogate error, focus search, multipoint, limits."""

import collections
import math

import numpy as np
import pytest

from emews.algorithms.mbo import MBO, FocusSearch, Surrogate
from emews._errors import ConfigError
from emews.models import analytic
from emews._space import Space

FOREST = {"n_estimators": 50, "max_features": 1.0, "min_samples_leaf": 1, "splitter": "best"}
GRID = Space.from_ga_json([{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
                           {"name": "n", "type": "int", "lower": 0, "upper": 3},
                           {"name": "act", "type": "categorical",
                            "values": ["relu", "tanh", "elu", "gelu"]}])
QUICK = {"n_trees": 30, "focus_points": 300, "focus_restarts": 2}


def test_trees_cut_at_random_thresholds_by_default_and_at_the_best_on_request():
    """``split = "random"`` (the default) cuts each node at a random threshold, so the 50 trees'
    cuts of 1-D data spread over the gaps between points; ``"best"`` (R's randomForest) cuts
    the same data only halfway between two of its values (neighbours in a bootstrap sample)."""
    X = np.linspace(0.0, 1.0, 9).reshape(-1, 1)
    y = X[:, 0] ** 2

    def cuts(split):
        model = MBO(Space.from_ga_json([{"name": "x", "type": "float", "lower": 0.0,
                                         "upper": 1.0}]), seed=0, split=split)
        assert model.forest["splitter"] == split
        settings = dict(model.forest, n_estimators=50)
        trees = Surrogate(X, y, settings, "jackknife", np.random.default_rng(0)).trees
        return {round(float(t), 9) for tree in trees for t, f in zip(tree.threshold,
                                                                      tree.feature) if f >= 0}

    midpoints = {round(float(a + b) / 2, 9) for a in X[:, 0] for b in X[:, 0] if a < b}
    assert cuts("best") <= midpoints
    assert len(cuts("random") - midpoints) > 20
    assert MBO(GRID).forest["splitter"] == "random"


def test_the_forest_learns_the_log_of_the_values_on_every_space_mixed_ones_too():
    """``y_transform = "log"`` is the default on a space with a categorical parameter too
    (measured better there: mbo.py's notes); ``none`` on request."""
    numeric = Space.from_ga_json([{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0}])
    assert MBO(numeric).y_transform == MBO(GRID).y_transform == "log"
    assert MBO(GRID, y_transform="none").y_transform == "none"


@pytest.mark.parametrize("se_method", ["jackknife", "bootstrap"])
def test_the_standard_error_is_larger_where_the_data_disagree(se_method):
    rng = np.random.default_rng(0)
    X = rng.random((60, 1))
    y = np.where(X[:, 0] < 0.5, 1.0, rng.normal(0, 3, 60))
    model = Surrogate(X, y, FOREST, se_method, rng)
    mean, se = model.predict(np.array([[0.1], [0.2], [0.7], [0.8]]))
    assert np.allclose(mean[:2], 1.0) and se[:2].max() < 0.1 < se[2:].min()


def test_expected_improvement_is_positive_only_where_improvement_is_possible():
    rng = np.random.default_rng(1)
    X = np.linspace(0, 1, 20)[:, None]
    model = Surrogate(X, (X[:, 0] - 0.3) ** 2, FOREST, "jackknife", rng)
    criterion = model.expected_improvement(best=0.0)
    assert criterion(np.array([[0.3]]))[0] < criterion(np.array([[0.9]]))[0] <= 0


def test_focus_search_finds_the_minimum_of_a_mixed_criterion():
    search = FocusSearch(GRID, points=300, maxit=5, restarts=2)
    tanh = GRID["act"].to_unit("tanh")

    def criterion(X):
        return (X[:, 0] - 0.37) ** 2 + (X[:, 1] - GRID["n"].to_unit(2)) ** 2 + (X[:, 2] != tanh)

    best = GRID.from_unit(search.minimize(criterion, np.random.default_rng(2)))
    assert abs(best["x"] - 0.37) < 0.01 and best["n"] == 2 and best["act"] == "tanh"


def test_the_design_is_a_latin_hypercube_that_shares_values_equally():
    design = MBO(GRID, seed=3, design_size=8).ask(8)
    assert collections.Counter(p["n"] for p in design) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert set(collections.Counter(p["act"] for p in design).values()) == {2}
    assert sorted(int(p["x"] * 8) for p in design) == list(range(8))


def test_told_history_counts_towards_the_design():
    mbo = MBO(GRID, seed=4, design_size=8, **QUICK)
    history = GRID.sample(np.random.default_rng(0), 5)
    mbo.tell(history, [p["x"] for p in history])
    assert len(mbo.ask(8)) == 8 and mbo.iterations == 1 and len(mbo.design) == 0


@pytest.mark.parametrize("multipoint", ["kb", "qlcb", "cl"])
def test_several_points_at_once_are_distinct_and_new(multipoint):
    mbo = MBO(GRID, seed=5, design_size=6, multipoint=multipoint, **QUICK)
    design = mbo.ask(6)
    mbo.tell(design, [p["x"] + p["n"] for p in design])
    batch = mbo.ask(4)
    units = [tuple(GRID.to_unit(p)) for p in design + batch]
    assert len(batch) == 4 and len(set(units)) == 10 and mbo.iterations == 1


def test_a_point_believed_at_the_forests_mean_keeps_the_mean_and_shrinks_the_error():
    """The kriging believer: dropped into the leaves at the forest's own mean there, a point
    in flight leaves that mean about where it was and makes the standard error smaller, so
    the next proposal looks elsewhere for uncertainty (a lie at the minimum would pull the
    mean down instead)."""
    rng = np.random.default_rng(3)
    X = rng.random((40, 2))
    model = Surrogate(X, np.sin(6 * X[:, 0]) + X[:, 1], dict(FOREST, splitter="random"),
                      "jackknife", rng)
    pending = rng.random((5, 2))
    mean, se = model.predict(pending)
    for point, m, s in zip(pending, mean, se):
        after_mean, after_se = model.with_points([point], [m]).predict(point[None])
        assert after_se[0] < s and abs(after_mean[0] - m) < 0.5 * s


@pytest.mark.parametrize("pending", ["believer", "lie"])
def test_points_in_flight_join_the_data_believed_or_told_the_lie(pending):
    mbo = MBO(GRID, seed=8, design_size=6, pending=pending, **QUICK)
    design = mbo.ask(6)
    mbo.tell(design, [p["x"] + p["n"] for p in design])
    running = mbo.ask(3)
    X, y = mbo._data()
    assert len(running) == 3 and len(X) == len(y) == 9
    told, believed = y[:6], y[6:]
    if pending == "lie":
        assert np.all(believed == told.min())
    else:   # the forest's means: within the told values, not all at the lie
        assert told.min() <= believed.min() and believed.max() <= told.max()
        assert believed.max() > told.min()


def test_failures_are_imputed_above_the_worst_value():
    mbo = MBO(GRID, seed=6, design_size=4, y_transform="none", **QUICK)   # the values as told
    points = mbo.ask(4)
    mbo.tell(points, [1.0, math.nan, 3.0, -math.inf])
    _, y = mbo._data()
    assert sorted(y) == [1.0, 3.0, 3.2, 3.2]


def test_the_budget_and_the_iteration_limit_end_the_search():
    mbo = MBO(GRID, seed=7, design_size=4, max_budget=7, **QUICK)
    asked = mbo.ask(10)
    mbo.tell(asked, [p["x"] for p in asked])
    more = mbo.ask(10)
    assert len(asked) == 4 and len(more) == 3 and mbo.done() and mbo.ask(1) == []
    mbo = MBO(GRID, seed=7, design_size=4, max_iterations=2, propose_points=2, **QUICK)
    for _ in range(4):
        points = mbo.ask(3)
        mbo.tell(points, [p["x"] for p in points])
    assert mbo.iterations == 2 and mbo.done() and mbo.ask(3) == []


@pytest.mark.slow
def test_mbo_improves_on_its_design_on_branin():
    """On each of five seeds the model-based points beat the design's best; the median best
    is within 1 of Branin's minimum (0.398) after 24 evaluations, 8 of them the design."""
    space = Space.from_ga_json(analytic.space("branin"))
    bests = []
    for seed in range(5):
        mbo = MBO(space, seed=seed, design_size=8, **QUICK)
        values = []
        while len(values) < 24:
            points = mbo.ask(2)
            values += [analytic.branin(p) for p in points]
            mbo.tell(points, values[-len(points):])
        assert min(values[8:]) < min(values[:8])
        bests.append(min(values))
    assert np.median(bests) < 1.0


@pytest.mark.parametrize("options, field", [
    ({"infill": "aei"}, "infill"), ({"multipoint": "moimbo"}, "multipoint"),
    ({"se_method": "sd"}, "se_method"), ({"design_size": -1}, "design_size"),
    ({"cb_lambda": -1}, "cb_lambda"), ({"n_trees": 1}, "n_trees"), ({"cl_lie": "median"}, "cl_lie"),
    ({"split": "extra"}, "split"), ({"pending": "penalty"}, "pending"),
])
def test_bad_settings_name_the_field(options, field):
    with pytest.raises(ConfigError, match=rf"^\[algorithm\]\.{field}: "):
        MBO(GRID, **options)
