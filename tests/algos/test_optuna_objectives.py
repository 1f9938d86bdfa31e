"""The Optuna plugin on several objectives: NSGA-II, NSGA-III, multi-objective TPE and GP
samplers by name, all directions "minimize", constraints through ``constraints_func``."""

import importlib.util
import math

import optuna
import pytest

from emews.algorithms.optuna_search import MULTIOBJECTIVE_GP_SINCE, VIOLATIONS, OptunaSearch
from emews.core._algorithm import Objectives
from emews.core._pareto import front
from emews._errors import ConfigError
from emews._space import Space

SQUARE = Space.from_ga_json([{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
                             {"name": "y", "type": "float", "lower": 0.0, "upper": 1.0}])
NO_TORCH = importlib.util.find_spec("torch") is None
OLD_GP = tuple(int(n) for n in optuna.__version__.split(".")[:2]) < MULTIOBJECTIVE_GP_SINCE
MO_SAMPLERS = [("nsga2", {"population_size": 8}), ("nsga3", {"population_size": 8}),
               ("tpe", {"n_startup_trials": 8}),
               pytest.param("gp", {"n_startup_trials": 8}, marks=[
                   pytest.mark.skipif(NO_TORCH, reason="Optuna's GPSampler needs PyTorch"),
                   pytest.mark.skipif(OLD_GP, reason="this Optuna's GPSampler searches one "
                                                     "objective only")])]


def constrained(point):
    """Two objectives pulling x apart; the constraint x + y >= 0.6 breaks the cheap corner."""
    values = [point["x"] ** 2 + point["y"], (1 - point["x"]) ** 2 + point["y"]]
    return Objectives(values, violations=[max(0.6 - point["x"] - point["y"], 0.0)])


def run(algorithm, objective, budget, slots=4):
    told = []
    while len(told) < budget:
        points = algorithm.ask(slots)
        values = [objective(p) for p in points]
        algorithm.tell(points, values)
        told += values
    return told


@pytest.mark.parametrize("sampler, options", MO_SAMPLERS)
def test_mo_samplers_minimize_every_objective_and_keep_infeasible_points_off_the_front(
        sampler, options):
    algorithm = OptunaSearch(SQUARE, seed=2, sampler=sampler, objectives=2, **options)
    told = run(algorithm, constrained, 40)
    study = algorithm.study
    assert [d.name for d in study.directions] == ["MINIMIZE", "MINIMIZE"]
    trials = study.get_trials()
    assert [t.values for t in trials] == [list(v.values) for v in told]
    assert [t.user_attrs.get(VIOLATIONS) for t in trials] == [list(v.violations) for v in told]
    # what constraints_func returned, as Optuna recorded it for its samplers
    assert [list(t.system_attrs["constraints"]) for t in trials] == \
        [list(v.violations) for v in told]
    assert any(not v.feasible for v in told)
    best = study.best_trials   # Optuna's own front: feasible trials only when constrained
    assert best and all(t.user_attrs[VIOLATIONS] == [0.0] for t in best)
    ours = front([list(v.values) for v in told], [v.feasible for v in told])
    assert sorted(t.number for t in best) == ours


def test_constraints_steer_optunas_nsga2_to_the_feasible_region():
    def narrow(point):   # feasible: a band of a fifth of the square
        values = [point["x"], 1 - point["x"] + point["y"]]
        return Objectives(values, violations=[abs(point["y"] - 0.5) - 0.1])

    algorithm = OptunaSearch(SQUARE, seed=5, sampler="nsga2", objectives=2, population_size=8)
    told = run(algorithm, narrow, 96, slots=8)
    first, last = told[:8], told[-24:]
    share = [sum(v.feasible for v in part) / len(part) for part in (first, last)]
    assert share[1] > share[0] + 0.3, share


def test_failures_and_vectors_of_the_wrong_length_fail_their_trials():
    from optuna.trial import TrialState

    algorithm = OptunaSearch(SQUARE, seed=1, sampler="tpe", objectives=2)
    points = algorithm.ask(5)
    algorithm.tell(points, [math.nan, Objectives([1.0]), 0.5, Objectives([1.0, math.inf]),
                            Objectives([1.0, 2.0])])
    states = [t.state for t in algorithm.study.get_trials()]
    assert states == [TrialState.FAIL] * 4 + [TrialState.COMPLETE]
    assert SQUARE.contains(algorithm.ask(1)[0])


def test_told_history_keeps_its_violations():
    algorithm = OptunaSearch(SQUARE, seed=1, sampler="nsga2", objectives=2)
    history = [{"x": 0.1, "y": 0.1}, {"x": 0.9, "y": 0.5}]
    algorithm.tell(history, [constrained(p) for p in history])
    trials = algorithm.study.get_trials()
    assert [t.user_attrs[VIOLATIONS] for t in trials] == [[pytest.approx(0.4)], [0.0]]
    assert [list(t.system_attrs["constraints"]) for t in trials] == \
        [[pytest.approx(0.4)], [0.0]]
    assert [t.number for t in algorithm.study.best_trials] == [1]


@pytest.mark.skipif(not hasattr(optuna.samplers.NSGAIISampler, "_get_generation_key"),
                    reason="this Optuna's genetic samplers do not share BaseGASampler")
@pytest.mark.parametrize("sampler", ["nsga2", "nsga3"])
def test_a_told_history_is_the_first_generation_nsga_breeds_from(sampler):
    """A resumed search is told its history: NSGA's next generation breeds from its best
    (here its front, which fills the population), not from random points."""
    def plane(point):
        return Objectives([point["x"], 1 - point["x"] + point["y"]])

    algorithm = OptunaSearch(SQUARE, seed=3, sampler=sampler, objectives=2, population_size=4)
    best = [{"x": x, "y": 0.0} for x in (0.1, 0.4, 0.6, 0.9)]
    dominated = [{"x": x, "y": 0.8} for x in (0.2, 0.3, 0.7, 0.8)]
    history = best + dominated
    algorithm.tell(history, [plane(p) for p in history])
    asked = algorithm.ask(4)
    study, nsga = algorithm.study, algorithm.study.sampler
    children = [t for t in study.get_trials() if t.number >= len(history)]
    assert [nsga.get_trial_generation(study, t) for t in children] == [1] * 4
    parents = nsga.get_parent_population(study, 1)
    assert sorted((t.params["x"], t.params["y"]) for t in parents) == \
        sorted((p["x"], p["y"]) for p in best)
    assert all(SQUARE.contains(p) for p in asked)


def test_cmaes_refuses_several_objectives_in_one_line():
    with pytest.raises(ConfigError, match=r"^\[algorithm\]\.sampler: CmaEsSampler searches one "
                                          r"objective only, and this study has 2 \(choose one "
                                          r"of tpe, gp, random, qmc, nsga2, nsga3\), got "
                                          r"'cmaes'$"):
        OptunaSearch(SQUARE, sampler="cmaes", objectives=2)
    with pytest.raises(ConfigError, match=r"^\[algorithm\]\.population_size: must be"):
        OptunaSearch(SQUARE, sampler="nsga2", objectives=2, population_size=1)


@pytest.mark.skipif(NO_TORCH or not OLD_GP, reason="needs PyTorch and an Optuna before 4.4")
def test_gp_on_an_optuna_before_4_4_refuses_several_objectives_in_one_line():
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.sampler: Optuna's GPSampler takes "
                                          r"several objectives from Optuna 4.4 on"):
        OptunaSearch(SQUARE, seed=2, sampler="gp", objectives=2)
