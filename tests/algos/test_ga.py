"""The DEAP genetic algorithms: operators by type, generations, failures, seeds, immigrants."""

import math
import random

import pytest

from emews.core._algorithm import point_key
from emews.algorithms.ga import FAILED_FITNESS, GA, SteadyStateGA, mutate_gene
from emews.algorithms.nsga import NSGA2
from emews._errors import ConfigError
from emews._space import Categorical, Float, Int, Logical, Ordered, Space
from emews.testing import CONDITIONAL, SPACE, bowl, branches

MIXED = Space.from_ga_json(SPACE)
BRANCHES = Space.from_ga_json(CONDITIONAL)


def test_mutation_by_type_keeps_values_legal():
    random.seed(1)
    wide = Float("f", 0.0, 1.0, sigma=5.0)
    assert {mutate_gene(wide, 0.99) for _ in range(200)} >= {0.0, 1.0}   # clamped, not wrapped
    log = Float("lr", 1e-4, 1e-1, log=True)
    assert all(1e-4 <= mutate_gene(log, 1e-3) <= 1e-1 for _ in range(200))
    integer = Int("i", 0, 10, sigma=2)
    steps = [mutate_gene(integer, 5) for _ in range(500)]
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in steps) and len(set(steps)) > 4
    ordered = Ordered("o", (16, 32, 64, 128, 256))
    moves = [mutate_gene(ordered, 64) for _ in range(500)]
    assert set(moves) <= set(ordered.values) and {32, 128} <= set(moves)
    category = Categorical("c", ("relu", "tanh", "sigmoid"))
    assert {mutate_gene(category, "relu") for _ in range(100)} == {"tanh", "sigmoid"}
    assert mutate_gene(Logical("l"), True) is False


def test_a_generation_is_handed_out_once_then_the_ga_waits():
    ga = GA(MIXED, seed=1, population_size=6)
    first, second = ga.ask(4), ga.ask(4)
    assert len(first) == 4 and len(second) == 2 and ga.ask(4) == []
    ga.tell(first, [bowl(p) for p in first])
    assert ga.ask(4) == []          # two of the generation are still out
    ga.tell(second, [bowl(p) for p in second])
    children = ga.ask(10)
    assert 0 < len(children) <= 3 and ga.generation == 2   # offspring_proportion 0.5 of 6
    assert not {point_key(p) for p in children} & {point_key(p) for p in first + second}


def test_failures_get_the_worst_fitness_and_the_search_goes_on():
    ga = GA(MIXED, seed=2, population_size=6, strategy="simple")
    points = ga.ask(6)
    ga.tell(points, [math.nan, math.inf, -math.inf, 1.0, 2.0, 3.0])
    assert sorted(i.fitness.values[0] for i in ga.offspring) == [1.0, 2.0, 3.0] + \
        [FAILED_FITNESS] * 3
    assert MIXED.contains(ga.ask(1)[0])


def test_no_point_is_sent_out_twice():
    tiny = Space.from_ga_json([{"name": "n", "type": "int", "lower": 0, "upper": 3},
                               {"name": "b", "type": "logical"}])
    for algorithm in (GA(tiny, seed=3, population_size=4), SteadyStateGA(tiny, seed=3,
                                                                          population_size=4)):
        sent = []
        for _ in range(40):
            points = algorithm.ask(2)
            sent += [point_key(p) for p in points]
            algorithm.tell(points, [p["n"] for p in points])
        assert len(sent) == len(set(sent)) <= 8
        assert algorithm.ask(2) == [] and algorithm.done()


@pytest.mark.parametrize("cls", [GA, SteadyStateGA])
def test_the_seed_alone_decides_whatever_else_uses_random(cls):
    runs = []
    for noise in (10, 20):
        ga, asked = cls(MIXED, seed=5, population_size=6), []
        for _ in range(6):
            random.seed(noise)       # other code drawing from the global generator
            points = ga.ask(3)
            asked += points
            ga.tell(points, [bowl(p) for p in points])
        runs.append(asked)
    assert runs[0] == runs[1]


def test_told_history_becomes_the_first_generation(tmp_path):
    history = MIXED.sample(__import__("numpy").random.default_rng(0), 10)
    values = [bowl(p) for p in history]
    ga = GA(MIXED, seed=1, population_size=6)
    ga.tell(history, values)
    children = ga.ask(6)
    assert ga.generation == 2 and children
    best = sorted(values)[:6]
    assert sorted(i.fitness.values[0] for i in ga.population) == best


def test_a_population_file_seeds_the_first_generation(tmp_path):
    space = Space.from_ga_json([{"name": "units", "type": "int", "lower": 1, "upper": 64},
                                {"name": "act", "type": "categorical",
                                 "values": ["relu", "tanh"]},
                                {"name": "bn", "type": "logical"}])
    csv = tmp_path / "init.csv"
    csv.write_text("units,act,bn\n8,tanh,true\n16,relu,False\n")
    jsonl = tmp_path / "init.jsonl"
    jsonl.write_text('{"units": 8, "act": "tanh", "bn": true}\n')
    for path in (csv, jsonl):
        first = GA(space, seed=0, population_size=4, population_file=str(path)).ask(4)
        assert first[0] == {"units": 8, "act": "tanh", "bn": True}
    assert first[1] != {"units": 16, "act": "relu", "bn": False}
    bad = tmp_path / "bad.csv"
    bad.write_text("units,act,bn\n8,tanh,true\n99,elu,true\n")
    with pytest.raises(ConfigError, match=r"bad.csv:3: column units: '99' is outside"):
        GA(space, population_file=str(bad))


def test_the_steady_state_ga_breeds_while_others_run():
    ga = SteadyStateGA(MIXED, seed=4, population_size=4)
    starters = ga.ask(4)
    ga.tell(starters[:2], [1.0, 2.0])
    child = ga.ask(1)
    assert len(child) == 1 and point_key(child[0]) not in {point_key(p) for p in starters}
    ga.tell(starters[2:] + child, [5.0, 6.0, -1.0])
    assert len(ga.population) == 4 and min(i.fitness.values[0] for i in ga.population) == -1.0
    assert max(i.fitness.values[0] for i in ga.population) < 6.0


@pytest.mark.parametrize("options, field", [
    ({"strategy": "plus"}, "strategy"), ({"population_size": 1}, "population_size"),
    ({"mutation_prob": 0.9, "crossover_prob": 0.5}, "mutation_prob"),
    ({"tournament_size": 0}, "tournament_size"), ({"generations": 0}, "generations"),
])
def test_bad_settings_name_the_field(options, field):
    with pytest.raises(ConfigError, match=rf"^\[algorithm\]\.{field}: "):
        GA(MIXED, **options)


@pytest.mark.parametrize("cls", [GA, SteadyStateGA])
def test_the_ga_never_moves_the_global_random_state(cls):
    random.seed(42)
    outside = random.getstate()
    ga = cls(MIXED, seed=5, population_size=4)
    for _ in range(8):
        points = ga.ask(3)
        ga.tell(points, [bowl(p) for p in points])
    ga.restore(ga.state())
    assert len(ga.known) > 8 and random.getstate() == outside   # bred: DEAP was called


@pytest.mark.parametrize("cls", [GA, SteadyStateGA])
def test_a_restored_ga_ends_where_the_original_does(cls):
    def finish(ga):
        asked = []
        while not ga.done() and len(asked) < 30:
            asked.append(ga.ask(2))
            ga.tell(asked[-1], [bowl(p) for p in asked[-1]])
        return asked, ga.ask(2)

    ga = cls(MIXED, seed=6, population_size=4, generations=3)
    for _ in range(3):
        points = ga.ask(2)
        ga.tell(points, [bowl(p) for p in points])
    restored = cls(MIXED, seed=6, population_size=4, generations=3)
    restored.restore(ga.state())
    expected = finish(ga)
    assert ga.done() and expected[1] == []
    assert finish(restored) == expected and restored.done()


def genes(space, point):
    """The genes of ``point`` as the GA holds them: ``None`` for an inactive parameter."""
    return [point.get(p.name) for p in space.free]


@pytest.mark.parametrize("cls", [GA, SteadyStateGA, NSGA2])
def test_on_a_conditional_space_inactive_genes_are_unset_and_never_proposed(cls):
    ga, sent = cls(BRANCHES, seed=7, population_size=8), []
    for _ in range(30):
        points = ga.ask(4)
        assert all(BRANCHES.contains(p) for p in points), points
        sent += points
        ga.tell(points, [branches(p) for p in points])
    keys = {point_key(p) for p in sent}
    assert len(sent) == len(keys) > 60   # no two differ only in inactive genes
    assert {p["optimizer"] for p in sent} == {"sgd", "adam"}
    assert any("nesterov" in p for p in sent) and any("width3" in p for p in sent)
    bred = ga.population + (ga.offspring or []) + ga.queue
    assert len(bred) >= 8
    for individual in bred:   # a child of parents of other branches holds only its own genes
        assert list(individual) == genes(BRANCHES, BRANCHES.point(individual)), individual


def test_a_mutation_that_activates_a_parameter_draws_its_gene_and_unsets_the_others():
    ga = GA(BRANCHES, seed=1, population_size=4)
    adam = {"optimizer": "adam", "lr": 0.01, "dropout": 0.1, "depth": 3, "width3": 64,
            "epochs": 3}
    sgd = {"optimizer": "sgd", "lr": 0.01, "dropout": 0.1, "momentum": 0.9, "nesterov": True,
           "depth": 1, "epochs": 3}
    random.seed(3)
    for _ in range(20):   # every gene mutated: adam becomes sgd with a momentum drawn
        mutated, = ga._mutate(ga._individual(adam), indpb=1.0)
        point = BRANCHES.point(mutated)
        assert point["optimizer"] == "sgd" and 0 <= point["momentum"] <= 0.99
        assert list(mutated) == genes(BRANCHES, point)
        mutated, = ga._mutate(ga._individual(sgd), indpb=1.0)   # and sgd adam: no momentum
        point = BRANCHES.point(mutated)
        assert "momentum" not in point and list(mutated) == genes(BRANCHES, point)
        assert mutated[BRANCHES.free.index(BRANCHES["momentum"])] is None
    first, second = ga._mate(ga._individual(adam), ga._individual(sgd), indpb=0.5)
    for child in (first, second):
        assert list(child) == genes(BRANCHES, BRANCHES.point(child))


def test_a_population_file_of_a_conditional_space_leaves_inactive_cells_empty(tmp_path):
    csv = tmp_path / "init.csv"
    csv.write_text("optimizer,lr,dropout,momentum,nesterov,depth,width3\n"
                   "adam,0.01,0.1,0.9,,2,64\nsgd,0.01,0.2,0.3,,3,16\n")
    first = GA(BRANCHES, seed=0, population_size=4, population_file=str(csv)).ask(4)
    assert first[:2] == [{"optimizer": "adam", "lr": 0.01, "dropout": 0.1, "depth": 2,
                          "epochs": 3},
                         {"optimizer": "sgd", "lr": 0.01, "dropout": 0.2, "momentum": 0.3,
                          "depth": 3, "width3": 16, "epochs": 3}]
    csv.write_text("optimizer,lr,dropout,momentum,nesterov,depth,width3\n"
                   "sgd,0.01,0.1,,,2,\n")
    with pytest.raises(ConfigError, match=r"init.csv:2: column momentum: must have a value "
                                          r"\(empty only where the parameter is inactive\)"):
        GA(BRANCHES, population_file=str(csv))
