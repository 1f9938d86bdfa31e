"""Studies of several objectives and constraints: settings, extraction, the store, what the
algorithm is told and the front in final.json (docs/src/multiobjective.md)."""

import json
import math

import pytest

import emews
from emews.core import pareto
from emews.core.algorithm import Objectives
from emews.core.criteria import Constraint, Criteria
from emews.errors import ConfigError
from emews.evaluate import Outcome

from conftest import stored_rows

MO = {"objective": "mo_models:loss_and_size", "objectives": ["loss", "size"]}


def independent_front(rows, directions):
    """The non-dominated feasible done rows by definition (no library), as (id, values)."""
    sign = [-1.0 if d == "maximize" else 1.0 for d in directions]
    ok = [r for r in rows if r["status"] == "done" and r["feasible"] is not False]
    vec = {r["id"]: [s * v for s, v in zip(sign, r["objectives"])] for r in ok}

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and a != b

    return sorted((r["id"], r["objectives"]) for r in ok
                  if not any(dominates(vec[o["id"]], vec[r["id"]]) for o in ok))


def front_of(result, rows):
    """The final.json front as (id, values), ids found by point."""
    final = json.loads((result.expdir / "final.json").read_text())
    assert "best_point" not in final and "best_value" not in final
    ids = {json.dumps(r["params"], sort_keys=True): r["id"] for r in rows}
    return sorted((ids[json.dumps(p["point"], sort_keys=True)], p["values"])
                  for p in final["pareto"])


def test_two_objectives_are_stored_and_the_front_is_the_non_dominated_set(toy_config):
    result = emews.run(toy_config(budget=20, directions=["minimize", "maximize"], **MO))
    rows = stored_rows(result.expdir)
    assert len(rows) == 20 and {r["status"] for r in rows} == {"done"}
    for r in rows:
        x, n = r["params"]["x"], r["params"]["n"]
        assert r["objectives"] == [pytest.approx((x - 2.0) ** 2 + n),
                                   pytest.approx((x + 2.0) ** 2 * 1000.0)]
        assert r["result"] == r["objectives"][0] and r["feasible"] is None
        assert r["metrics"]["acc"] == pytest.approx(1.0 - abs(x) / 4)
    assert front_of(result, rows) == independent_front(rows, ["minimize", "maximize"])
    assert result.pareto == json.loads((result.expdir / "final.json").read_text())["pareto"]
    assert result.best_point is None and 0 < len(result.pareto) < 20


def test_infeasible_points_are_stored_done_marked_and_never_on_the_front(toy_config):
    result = emews.run(toy_config(budget=24, constraints=["size <= 4000", "acc >= 0.6"], **MO))
    rows = stored_rows(result.expdir)
    assert {r["status"] for r in rows} == {"done"}
    for r in rows:
        assert r["feasible"] is (r["objectives"][1] <= 4000 and r["metrics"]["acc"] >= 0.6)
    infeasible = {r["id"] for r in rows if r["feasible"] is False}
    front = front_of(result, rows)
    assert infeasible and front and not infeasible & {i for i, _ in front}
    assert front == independent_front(rows, ["minimize", "minimize"])


def test_a_missing_or_nan_objective_fails_its_run_naming_it(toy_config):
    result = emews.run(toy_config(objective="mo_models:lacks_size", budget=24,
                                  objectives=["loss", "size"]))
    rows = stored_rows(result.expdir)
    for r in rows:
        n = r["params"]["n"]
        if n == 3:
            assert r["status"] == "failed" and "objective 'size'" in r["error"] \
                and "'size' is not among the returned keys" in r["error"]
        elif n == 2:
            assert r["status"] == "failed" and r["error"].startswith(
                "objective 'size': the model returned NaN")
        else:
            assert r["status"] == "done" and len(r["objectives"]) == 2
    assert {r["params"]["n"] for r in rows if r["status"] == "failed"} == {2, 3}


def test_model_return_as_a_list_means_the_same_as_objectives(toy_config):
    result = emews.run(toy_config(budget=6, objective="mo_models:loss_and_size",
                                  model_return="loss,size"))
    config = json.loads((result.expdir / "config.json").read_text())["study"]
    assert config["objectives"] == ["loss", "size"] and config["model_return"] == "loss"
    assert all(len(r["objectives"]) == 2 for r in stored_rows(result.expdir))


@pytest.mark.parametrize("study, where, rule", [
    ({"directions": ["minimize"]}, "[study].directions", "one direction per objective (2"),
    ({"directions": ["minimize", "up"]}, "[study].directions", "one of minimize, maximize"),
    ({"constraints": ["size < = 3"]}, "[study].constraints", "NAME OP NUMBER"),
    ({"constraints": ["size <= 1e400"]}, "[study].constraints", "finite number"),
    ({"constraints": ["__import__('os') <= 1"]}, "[study].constraints", "NAME OP NUMBER"),
    ({"target": 0.5}, "[study].target", "no single value to reach"),
    ({"algorithm": "ga"}, "[study].algorithm", "searches one objective only; the study has 2"),
    ({"pruner": "median"}, "[study].pruner", "a pruner compares one value"),
    ({"objectives": ["loss", "loss"]}, "[study].objectives", "each objective once"),
    ({"model_return": "loss,acc"}, "[study].objectives", "same list as [study].model_return"),
    ({"reference_point": [1.0]}, "[study].reference_point", "one number per objective"),
])
def test_bad_settings_are_refused_in_one_line(toy_config, study, where, rule):
    with pytest.raises(ConfigError) as error:
        emews.run(toy_config(**{**MO, **study}))
    line = str(error.value)
    assert "\n" not in line and where in line and rule in line


def test_constraints_are_parsed_never_evaluated_and_violations_are_distances():
    c = Constraint.parse(" params<=2e6", "[study].constraints")
    assert (c.name, c.op, c.bound) == ("params", "<=", 2e6)
    assert c.violation(1e6) == 0.0 and c.violation(2.5e6) == 0.5e6
    assert Constraint.parse("acc > 0.5", "w").violation(0.5) > 0.0
    assert Constraint.parse("acc >= 0.5", "w").violation(0.5) == 0.0
    assert Constraint.parse("acc >= 0.5", "w").violation(0.25) == 0.25


def test_the_algorithm_is_told_values_to_minimize_and_violations():
    criteria = Criteria(("loss", "acc"), ("minimize", "maximize"),
                        (Constraint("size", "<=", 10.0),))
    judged = criteria.judge(Outcome(0.5, objectives=[0.5, 0.9], metrics={"size": 12.0}))
    assert judged.status == "done" and judged.feasible is False
    told = criteria.told(judged.objectives, judged.metrics)
    assert isinstance(told, Objectives) and told.values == (0.5, -0.9)
    assert told.violations == (2.0,) and float(told) == 0.5 and not told.feasible
    lacking = criteria.judge(Outcome(0.5, objectives=[0.5, 0.9]))
    assert lacking.status == "failed" and "constraint 'size <= 10'" in lacking.error
    assert math.isnan(lacking.value)
