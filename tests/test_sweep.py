"""The sweep's SmartSim permutation strategies over a table of values (``all_perm``, ``step``,
``random``), checked in the store of real runs; and their bad input."""

import itertools
import json

import pytest

from emews.algorithms.sweep import Sweep
from emews._errors import ConfigError

from conftest import stored_rows

PARAMS = {"x": [0.5, -1.0, 1.5], "n": [0, 1, 2], "act": ["relu", "tanh", "sigmoid"]}
TABLE = '{x = [0.5, -1.0, 1.5], n = [0, 1, 2], act = ["relu", "tanh", "sigmoid"]}'


def write_study(tmp_path, procs, pool, strategy, extra=""):
    (tmp_path / "space.json").write_text(json.dumps([
        {"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
        {"name": "n", "type": "int", "lower": 0, "upper": 3},
        {"name": "act", "type": "categorical", "values": ["relu", "tanh", "sigmoid"]}]))
    path = tmp_path / "sweep.toml"
    path.write_text(f'[system]\nprocs = {procs}\npool = "{pool}"\nprogress_interval = 0.0\n'
                    f'[study]\nalgorithm = "sweep"\nspace = "space.json"\nseed = 11\n'
                    f'objective = "toy_models:quadratic"\nmode = "batch"\n{extra}'
                    f'[algorithm]\nparams = {TABLE}\nstrategy = "{strategy}"\n')
    return path


def expected(strategy):
    names = list(PARAMS)
    if strategy == "all_perm":
        return [dict(zip(names, v)) for v in itertools.product(*PARAMS.values())]
    return [dict(zip(names, v)) for v in zip(*PARAMS.values())]


@pytest.mark.parametrize("strategy", ["all_perm", "step"])
def test_a_table_sweep_evaluates_each_combination_once_in_order(emews_cli, tmp_path, strategy):
    done = emews_cli("run", write_study(tmp_path, 3, "inprocess", strategy))
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "sweep").iterdir()
    evaluations = stored_rows(expdir)
    assert [r["params"] for r in evaluations] == expected(strategy)
    assert all(r["result"] == r["params"]["x"] ** 2 + r["params"]["n"] for r in evaluations)
    assert "the algorithm has no more points to propose" in done.stdout


@pytest.mark.slow
@pytest.mark.mpi
def test_a_random_sweep_draws_distinct_combinations_on_an_mpi_pool(emews_cli, tmp_path):
    done = emews_cli("run", write_study(tmp_path, 3, "mpi", "random", extra="replicas = 2\n"),
                     "--set", "algorithm.n=5")
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "sweep").iterdir()
    evaluations = stored_rows(expdir)
    assert len(evaluations) == 10 and {r["rank"] for r in evaluations} <= {1, 2}
    points = [{k: v for k, v in r["params"].items() if k != "rng_seed"} for r in evaluations]
    unique = list({json.dumps(p, sort_keys=True): p for p in points}.values())
    assert len(unique) == 5 and all(points.count(p) == 2 for p in unique)
    assert all(p in expected("all_perm") for p in unique)
    for point in unique:
        seeds = [r["params"]["rng_seed"] for r, p in zip(evaluations, points) if p == point]
        assert len(set(seeds)) == 2


def test_a_random_sweep_depends_on_the_seed_only():
    def draw(seed):
        return Sweep(None, seed=seed, params=PARAMS, strategy="random", n=6).ask(10)

    assert draw(1) == draw(1) and draw(1) != draw(2) and len(draw(1)) == 6


@pytest.mark.parametrize("options,field,rule", [
    ({"params": PARAMS, "strategy": "step", "n": 2}, "n", "is required by strategy"),
    ({"params": PARAMS, "strategy": "random"}, "n", "is required by strategy"),
    ({"params": PARAMS, "strategy": "random", "n": 28}, "n", "must be an integer >= 1 <= 27"),
    ({"params": PARAMS, "strategy": "zip"}, "strategy", "must be one of ['all_perm', 'step', "),
    ({"params": {"x": [1], "n": [1, 2]}, "strategy": "step"}, "params",
     'strategy = "step" needs lists of the same length'),
    ({"params": {"x": []}}, "params.x", "must be a non-empty list of values"),
    ({"params": [1, 2]}, "params", "must be a table of lists of values"),
    ({}, "", "the sweep needs file (a JSON-lines file of points), params (a table of values "
     "per parameter) or a search space"),
    ({"params": PARAMS, "file": "points.jsonl"}, "", "the sweep takes at most one of file"),
])
def test_bad_sweep_options_are_named_with_the_rule(options, field, rule):
    with pytest.raises(ConfigError) as error:
        Sweep(None, seed=0, **options)
    assert str(error.value).startswith(f"[algorithm]{'.' if field else ''}{field}: {rule}")


def test_a_table_point_outside_the_space_is_refused(tmp_path):
    from emews._space import Space

    space = Space.from_ga_json([{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0}])
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.params: point 1 must be a point of "
                                          r"the search space \(x\)"):
        Sweep(space, params={"x": [0.5, 2.0]})


GRID_SPACE = [  # a space of Supervisor's GA JSON (as models/mixed_space.json) with no range
    {"name": "act", "type": "categorical", "values": ["relu", "tanh"]},
    {"name": "units", "type": "ordered", "element_type": "int", "values": [16, 32, 64]},
    {"name": "bias", "type": "logical"},
    {"name": "epochs", "type": "constant", "value": 3}]


def test_a_sweep_with_no_points_sweeps_the_grid_of_its_space(emews_cli, tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(GRID_SPACE))
    study = tmp_path / "grid.toml"
    study.write_text('[system]\nprocs = 3\npool = "inprocess"\nprogress_interval = 0.0\n'
                     '[study]\nalgorithm = "sweep"\nspace = "space.json"\nimpl = "echo"\n')
    done = emews_cli("run", study)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "grid").iterdir()
    grid = [{"act": a, "units": u, "bias": b, "epochs": 3}
            for a, u, b in itertools.product(["relu", "tanh"], [16, 32, 64], [True, False])]
    assert [r["params"] for r in stored_rows(expdir)] == grid
    assert "the algorithm has no more points to propose" in done.stdout


def test_a_sweep_of_a_space_with_a_float_range_is_refused_in_one_line(emews_cli, tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(
        GRID_SPACE + [{"name": "lr", "type": "float", "lower": 0.001, "upper": 0.1}]))
    study = tmp_path / "grid.toml"
    study.write_text('[system]\nprocs = 2\npool = "inprocess"\n'
                     '[study]\nalgorithm = "sweep"\nspace = "space.json"\nimpl = "echo"\n')
    done = emews_cli("run", study)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "space.json: lr" in line and "a float range has none" in line
    assert "give [algorithm].params its values" in line
    assert not (tmp_path / "experiments").exists()


CONDITIONAL_GRID = [   # momentum only for SGD, nesterov only with momentum 0.9, width3 only
    {"name": "optimizer", "type": "categorical", "values": ["sgd", "adam"]},   # at depth 3
    {"name": "momentum", "type": "ordered", "element_type": "float", "values": [0.5, 0.9],
     "condition": {"optimizer": ["sgd"]}},
    {"name": "nesterov", "type": "logical", "condition": {"momentum": [0.9]}},
    {"name": "depth", "type": "ordered", "element_type": "int", "values": [1, 3]},
    {"name": "width3", "type": "ordered", "element_type": "int", "values": [16, 64],
     "condition": {"depth": [3]}}]


def test_the_grid_of_a_conditional_space_holds_each_valid_combination_once():
    from emews._space import Space

    space = Space.from_ga_json(CONDITIONAL_GRID)
    depths = [{"depth": 1}, {"depth": 3, "width3": 16}, {"depth": 3, "width3": 64}]
    branches = [{"optimizer": "sgd", "momentum": 0.5}]
    branches += [{"optimizer": "sgd", "momentum": 0.9, "nesterov": b} for b in (True, False)]
    branches += [{"optimizer": "adam"}]
    grid = [branch | depth for branch in branches for depth in depths]
    assert Sweep(space).ask(100) == grid   # 12 of the 32 combinations, in all_perm order
    drawn = Sweep(space, seed=1, params=space_table(), strategy="random", n=12).ask(100)
    assert sorted(map(json.dumps, drawn)) == sorted(map(json.dumps, grid))
    with pytest.raises(ConfigError, match=r"\[algorithm\]\.n: must be an integer >= 1 <= 12"):
        Sweep(space, params=space_table(), strategy="random", n=13)


def space_table():
    """A table of every value of :data:`CONDITIONAL_GRID`'s parameters, inactive ones too."""
    return {"optimizer": ["sgd", "adam"], "momentum": [0.5, 0.9], "nesterov": [True, False],
            "depth": [1, 3], "width3": [16, 64]}
