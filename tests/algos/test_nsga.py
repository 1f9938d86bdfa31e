"""NSGA-II and NSGA-III, generational and steady-state: better fronts than random search,
Deb's constrained domination, failures last, exact resumes, and their options."""

import math

import pytest

from emews.algorithms.nsga import (NSGA2, NSGA3, SteadyStateNSGA2, SteadyStateNSGA3,
                                  default_divisions, pareto_individual)
from emews.algorithms.random_search import RandomSearch
from emews.core._algorithm import Objectives, point_key
from emews.core._pareto import hypervolume
from emews._errors import ConfigError
from emews._space import Space
from emews.testing import SPACE, two_bowls

MIXED = Space.from_ga_json(SPACE)
ZDT_VARIABLES = 5
CUBE = Space.from_ga_json([{"name": f"x{i}", "type": "float", "lower": 0.0, "upper": 1.0}
                          for i in range(ZDT_VARIABLES)])
ZDT_REFERENCE = (1.1, 11.0)


def zdt1(point):
    """ZDT1 (Zitzler, Deb and Thiele 2000) on :data:`CUBE`: a convex front at g = 1."""
    x = [point[f"x{i}"] for i in range(ZDT_VARIABLES)]
    g = 1 + 9 * sum(x[1:]) / (ZDT_VARIABLES - 1)
    return [x[0], g * (1 - math.sqrt(x[0] / g))]


def search(algorithm, objective, budget, slots=8):
    """Ask ``slots`` points at a time, tell ``objective``'s values; every vector told."""
    vectors = []
    while len(vectors) < budget:
        points = algorithm.ask(min(slots, budget - len(vectors)))
        assert points, "the search stalled"
        values = [objective(p) for p in points]
        algorithm.tell(points, [Objectives(v) for v in values])
        vectors += values
    return vectors


def search_async(algorithm, objective, budget, slots=8):
    """Keep ``slots`` points out; tell the oldest one's vector, then ask one more in its place
    (a pool whose workers free one at a time); every vector told."""
    out, vectors = algorithm.ask(slots), []
    while len(vectors) < budget:
        assert out, "the search stalled"
        point = out.pop(0)
        vectors.append(objective(point))
        algorithm.tell([point], [Objectives(vectors[-1])])
        out += algorithm.ask(min(slots - len(out), budget - len(vectors) - len(out)))
    return vectors


STEADY = [SteadyStateNSGA2, SteadyStateNSGA3]


@pytest.mark.slow
@pytest.mark.parametrize("cls", [NSGA2, NSGA3] + STEADY)
def test_fronts_beat_random_search_at_the_same_budget(cls):
    drive = search_async if cls in STEADY else search
    gains = []
    for seed in range(6):   # paired: the same seed for both
        ours = hypervolume(drive(cls(CUBE, seed=seed, objectives=2), zdt1, 160),
                           ZDT_REFERENCE)
        chance = hypervolume(search(RandomSearch(CUBE, seed=seed), zdt1, 160), ZDT_REFERENCE)
        gains.append(ours - chance)
    assert min(gains) > 0.3 and sorted(gains)[len(gains) // 2] > 0.8, gains


def test_constrained_domination_is_debs_rule():
    fitness = pareto_individual(2)().fitness.__class__

    def made(values, violation):
        made = fitness(values)
        made.violation = violation
        return made

    feasible, better_but_broken = made((5.0, 5.0), 0.0), made((1.0, 1.0), 0.5)
    assert feasible.dominates(better_but_broken) and not better_but_broken.dominates(feasible)
    less_broken = made((9.0, 9.0), 0.1)
    assert less_broken.dominates(better_but_broken)
    assert made((1.0, 2.0), 0.0).dominates(made((1.0, 3.0), 0.0))
    assert not made((1.0, 2.0), 0.0).dominates(made((2.0, 1.0), 0.0))
    assert made((1.0, 1.0), 0.5) == better_but_broken != made((1.0, 1.0), 0.0)


@pytest.mark.parametrize("cls", [NSGA2, NSGA3] + STEADY)
def test_infeasible_points_stay_off_the_first_front_while_feasible_ones_exist(cls):
    from deap.tools.emo import sortNondominated

    def constrained(point):   # the lower half of x0 is the better one, but forbidden
        values = zdt1(point)
        return Objectives(values, violations=[0.5 - point["x0"]])

    algorithm = cls(CUBE, seed=3, objectives=2, population_size=12)
    broken = 0
    for _ in range(8):
        points = algorithm.ask(12)
        values = [constrained(p) for p in points]
        broken += sum(not v.feasible for v in values)
        algorithm.tell(points, values)
    population = algorithm.population
    assert broken > 10 and population
    first = sortNondominated(population, len(population), first_front_only=True)[0]
    assert all(i.fitness.violation == 0.0 for i in first)
    assert all(i.fitness.violation == 0.0 for i in population)   # enough feasible ones


@pytest.mark.parametrize("cls", [NSGA2, NSGA3])
def test_failures_are_chosen_last_and_wrong_vectors_are_failures(cls):
    algorithm = cls(CUBE, seed=4, objectives=2, population_size=6)
    points = algorithm.ask(6)
    algorithm.tell(points, [math.nan, Objectives([1.0, math.inf]), Objectives([1.0]),
                            0.5, Objectives([2.0, 2.0], [3.0]), Objectives([1.0, 1.0])])
    chosen = algorithm._select(algorithm.offspring, 2)
    assert [i.fitness.values for i in chosen] == [(1.0, 1.0), (2.0, 2.0)]
    assert all(math.isinf(i.fitness.violation) for i in algorithm._select(
        algorithm.offspring, 6)[2:])
    assert CUBE.contains(algorithm.ask(1)[0])


@pytest.mark.parametrize("cls", [NSGA2, NSGA3])
def test_a_resumed_population_equals_the_uninterrupted_one(cls):
    def population(algorithm):
        return sorted((list(i), i.fitness.values, i.fitness.violation)
                      for i in algorithm.population)

    def rounds(algorithm, count):
        for _ in range(count):
            points = algorithm.ask(5)
            algorithm.tell(points, [two_bowls(p) for p in points])

    uninterrupted = cls(MIXED, seed=9, objectives=2, population_size=8)
    rounds(uninterrupted, 5)
    state = uninterrupted.state()
    rounds(uninterrupted, 7)
    resumed = cls(MIXED, seed=9, objectives=2, population_size=8)
    resumed.restore(state)
    rounds(resumed, 7)
    assert uninterrupted.generation == resumed.generation >= 4
    assert population(resumed) == population(uninterrupted)


@pytest.mark.parametrize("cls", STEADY)
def test_the_steady_state_forms_breed_while_others_run_and_cut_back_by_fronts(cls):
    algorithm = cls(CUBE, seed=5, objectives=2, population_size=4)
    starters = algorithm.ask(4)
    algorithm.tell(starters[:2], [Objectives([1.0, 4.0]), Objectives([4.0, 1.0])])
    child = algorithm.ask(1)   # two of four back: a child already
    assert len(child) == 1 and point_key(child[0]) not in {point_key(p) for p in starters}
    algorithm.tell(starters[2:], [Objectives([2.0, 2.0]), Objectives([5.0, 5.0])])
    assert len(algorithm.population) == 4 and algorithm.generation == 0
    algorithm.tell(child, [Objectives([0.5, 0.5])])   # five: the dominated worst goes
    assert sorted(i.fitness.values for i in algorithm.population) == \
        [(0.5, 0.5), (1.0, 4.0), (2.0, 2.0), (4.0, 1.0)]
    algorithm.tell(algorithm.ask(1), [Objectives([0.1, 0.6], violations=[1.0])])
    assert all(i.fitness.violation == 0.0 for i in algorithm.population)   # infeasible: out


@pytest.mark.parametrize("cls", STEADY)
def test_a_steady_state_form_restored_with_children_in_flight_goes_on_as_the_original(cls):
    def go_on(algorithm, out, budget):
        """Tell the oldest point of ``out`` and put one more there, ``budget`` times."""
        asked = []
        for _ in range(budget):
            point = out.pop(0)
            algorithm.tell([point], [two_bowls(point)])
            asked += algorithm.ask(1)
            out.append(asked[-1])
        return asked, sorted((list(i), i.fitness.values, i.fitness.violation)
                             for i in algorithm.population)

    original = cls(MIXED, seed=9, objectives=2, population_size=6)
    out = original.ask(4)
    go_on(original, out, 12)   # out: four children still in flight
    restored = cls(MIXED, seed=9, objectives=2, population_size=6)
    restored.restore(original.state())
    assert restored.state() == original.state()
    assert sorted(restored.waiting) == sorted(point_key(p) for p in out) and len(out) == 4
    expected = go_on(original, list(out), 20)
    assert go_on(restored, list(out), 20) == expected
    assert len(expected[1]) == 6 and original.proposed == restored.proposed == 36


def test_nsga3_reference_points_fill_the_population_by_default():
    assert default_divisions(2, 20) == 19 and default_divisions(3, 20) == 4
    assert default_divisions(1, 20) == 1 and default_divisions(3, 2) == 1
    assert len(NSGA3(CUBE, objectives=3, population_size=20).reference_points) == 15
    assert len(NSGA3(CUBE, objectives=3, reference_divisions=2).reference_points) == 6


def test_options_are_checked():
    with pytest.raises(ConfigError, match=r"^\[algorithm\]\.objectives: must be"):
        NSGA2(CUBE, objectives=0)
    with pytest.raises(ConfigError, match=r"^\[algorithm\]\.reference_divisions: must be"):
        NSGA3(CUBE, reference_divisions=0)
    with pytest.raises(ConfigError, match=r"^\[algorithm\]\.strategy: is not an option of "
                                          r"NSGA2"):
        NSGA2(CUBE, strategy="simple")
    assert NSGA2(CUBE).toolbox.mutate.keywords["indpb"] == 1 / ZDT_VARIABLES
