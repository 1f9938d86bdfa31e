"""``gp`` and ``mbo`` in multi-objective form (ParEGO): the scalarization, exact resumes with
vectors, failures and constraint violations told, and a search that beats random on a front."""

import math

import numpy as np
import pytest

from emews.algorithms.parego import RHO, ObjectiveHistory, evenly_spaced_weights
from emews.core import _pareto as pareto
from emews.core._algorithm import Objectives, load
from emews._errors import ConfigError
from emews._space import Space

SPACE = Space.from_ga_json([{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0}
                            for i in range(4)])
MBO = {"design_size": 8, "n_trees": 20, "focus_points": 200}
GP = {"n_initial_points": 6, "acq_optimizer": "sampling",
      "acq_optimizer_kwargs": {"n_points": 300}}


def zdt1(point):
    """ZDT1 on the space's variables (both objectives to minimize; front f2 = 1 - sqrt(f1))."""
    x = np.array([point[f"x{i}"] for i in range(len(point))])
    g = 1 + 9 * x[1:].mean()
    return [float(x[0]), float(g * (1 - math.sqrt(x[0] / g)))]


def told(point, index):
    """What a study tells: every 7th run failed, every 5th breaks its one constraint."""
    if index % 7 == 6:
        return math.nan
    return Objectives(zdt1(point), violations=[0.5 * (index % 5 == 4)])


def test_each_weight_vector_ranks_by_its_own_chebyshev_distance():
    history = ObjectiveHistory(2)
    for vector in ([0.0, 4.0], [1.0, 2.0], [2.0, 0.0], [2.0, 4.0]):
        history.add(Objectives(vector))
    first = history.scalarize([1.0, 0.0])
    assert first[0] < first[1] < first[2] <= first[3]
    second = history.scalarize([0.0, 1.0])
    assert second[2] < second[1] < second[0] <= second[3]
    even = history.scalarize(history.equal_weights())
    assert even[1] < min(even[0], even[2]) and even[3] == max(even)   # the knee, the nadir


def test_infeasible_points_rank_below_every_feasible_one_and_failures_below_all():
    history = ObjectiveHistory(2)
    history.add(Objectives([5.0, 5.0]))                          # feasible, dominated
    history.add(Objectives([0.0, 0.0], violations=[0.1, 0.0]))   # would dominate: infeasible
    history.add(Objectives([0.0, 0.0], violations=[0.05, 3.0]))  # breaks both: further
    history.add(math.nan)                                        # a failure
    history.add(Objectives([1.0, math.nan]))                     # a failure too
    for weights in ([0.5, 0.5], [0.9, 0.1]):
        values = history.scalarize(weights)
        assert values[0] <= 1 + RHO < values[1] < values[2] < values[3] == values[4]


def test_a_told_point_improves_the_front_when_no_feasible_point_before_matches_it():
    history = ObjectiveHistory(2)
    for value in (Objectives([1.0, 1.0]), Objectives([2.0, 2.0]), Objectives([0.5, 3.0]),
                  Objectives([0.5, 3.0]), math.nan, Objectives([0.0, 0.0], violations=[1.0]),
                  Objectives([0.1, 0.1]), Objectives([0.1, 2.0])):
        history.add(value)
    assert history.improvements() == [True, False, True, False, False, False, True, False]


def test_weights_are_drawn_from_parego_s_evenly_spaced_set_which_holds_each_objective_alone():
    two, three = evenly_spaced_weights(2), evenly_spaced_weights(3)
    assert len(two) == 11 and len(three) == 15 and len(evenly_spaced_weights(4)) == 20
    assert np.allclose(two.sum(axis=1), 1) and np.allclose(three.sum(axis=1), 1)
    assert {1.0, 0.0} <= set(two[:, 0]) and np.allclose(np.unique(two), np.arange(11) / 10)
    drawn = {tuple(ObjectiveHistory(3).weights(np.random.default_rng(seed)))
             for seed in range(200)}
    assert drawn == {tuple(w) for w in three}


def test_while_nothing_is_finite_every_value_is_zero():
    history = ObjectiveHistory(3)
    history.add(math.nan)
    assert list(history.scalarize(history.weights(np.random.default_rng(0)))) == [0.0]


def drive(algorithm, rounds, start=0, width=3):
    """``rounds`` asks of ``width`` points, each told one round later (one round in flight)."""
    asked, pending, index = [], [], start
    for _ in range(rounds):
        points = algorithm.ask(width)
        asked += points
        if pending:
            algorithm.tell(pending, [told(p, index + i) for i, p in enumerate(pending)])
            index += len(pending)
        pending = points
    return asked


@pytest.mark.parametrize("name,options", [("mbo", MBO),
                                          pytest.param("gp", GP, marks=pytest.mark.slow)])
def test_a_multiobjective_search_continues_exactly_from_its_state(name, options):
    first = load(name)(SPACE, seed=4, objectives=2, **options)
    drive(first, 4)
    state = first.state()
    again = load(name)(SPACE, seed=4, objectives=2, **options)
    again.restore(state)
    assert drive(again, 2, start=9) == drive(first, 2, start=9)


@pytest.mark.parametrize("name,options", [("mbo", MBO),
                                          pytest.param("gp", GP, marks=pytest.mark.slow)])
def test_a_multiobjective_search_finds_more_hypervolume_than_random(name, options):
    def volume(algorithm, budget=30):
        vectors = []
        for _ in range(budget):
            [point] = algorithm.ask(1)
            vectors.append(zdt1(point))
            algorithm.tell([point], [Objectives(vectors[-1])])
        return pareto.hypervolume(vectors, [1.1, 11.0])

    ours = [volume(load(name)(SPACE, seed=s, objectives=2, **options)) for s in range(3)]
    chance = [volume(load("random")(SPACE, seed=s)) for s in range(3)]
    assert np.median(ours) > np.median(chance)


@pytest.mark.parametrize("name", ["gp", "mbo"])
def test_one_objective_keeps_no_history_and_two_refuse_a_bad_count(name):
    assert load(name).multiobjective
    assert load(name)(SPACE, seed=1).history is None
    with pytest.raises(Exception, match=r"\[algorithm\]\.objectives"):
        load(name)(SPACE, seed=1, objectives=0)


def test_a_relabeled_forest_predicts_from_the_new_values_with_the_same_splits():
    from emews.algorithms.mbo import Surrogate

    rng = np.random.default_rng(3)
    X, y = rng.random((30, 4)), rng.random(30)
    forest = {"n_estimators": 10, "max_features": 1.0, "min_samples_leaf": 1,
              "splitter": "random"}
    model = Surrogate(X, y, forest, "jackknife", np.random.default_rng(1))
    probe = rng.random((20, 4))
    mean, se = model.predict(probe)
    same, same_se = model.relabeled(y).predict(probe)
    assert np.allclose(same, mean) and np.allclose(same_se, se)
    scaled, scaled_se = model.relabeled(3 * y + 1).predict(probe)
    assert np.allclose(scaled, 3 * mean + 1) and np.allclose(scaled_se, 3 * se)


def test_gp_on_several_objectives_estimates_its_kernel_less_often_unless_told_otherwise():
    one, two = load("gp")(SPACE, seed=1), load("gp")(SPACE, seed=1, objectives=2)
    assert (one.refit_all_below, one.refit_growth, one.optimizer.acq_func) == \
        (100, 0.1, "gp_hedge")
    assert (two.refit_all_below, two.refit_growth, two.optimizer.acq_func) == (0, 0.25, "EI")
    told = load("gp")(SPACE, seed=1, objectives=2, refit_all_below=50, refit_growth=0.1,
                      acq_func_kwargs={"xi": 0.1}, acq_optimizer_kwargs={"n_points": 500})
    assert (told.refit_all_below, told.refit_growth, told.optimizer.acq_func_kwargs,
            told.optimizer.n_points) == (50, 0.1, {"xi": 0.1}, 500)


def test_gp_on_several_objectives_refuses_an_acquisition_other_than_ei():
    with pytest.raises(ConfigError, match=r'\[algorithm\]\.acq_func: must be "EI" with '
                                          r'several objectives.*LCB'):
        load("gp")(SPACE, seed=1, objectives=2, acq_func="LCB")


def count_on_the_front(acq_optimizer, seed):
    """How many of 40 points of ``gp`` on ZDT1 in 8 variables lie where the front does, every
    variable but the first at its lower bound (g = 1)."""
    space = Space.from_ga_json([{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0}
                                for i in range(8)])
    algorithm = load("gp")(space, seed=seed, objectives=2, n_initial_points=10,
                           acq_optimizer=acq_optimizer)
    on_front = 0
    for _ in range(40):
        [point] = algorithm.ask(1)
        on_front += all(point[f"x{i}"] == 0.0 for i in range(1, 8))
        algorithm.tell([point], [Objectives(zdt1(point))])
    return on_front


@pytest.mark.slow
def test_gp_on_several_objectives_reaches_a_front_on_the_bounds_by_local_search():
    """ZDT's front lies on the bounds: L-BFGS-B on log EI near the best told points reaches it,
    no sampled candidate does."""
    assert sum(count_on_the_front("lbfgs", seed) for seed in range(6)) > 0
    assert count_on_the_front("sampling", 1) == 0
