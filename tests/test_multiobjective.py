"""Studies of several objectives and constraints: settings, extraction, the store, what the
algorithm is told and the front in final.json (docs/src/multiobjective.md)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import emews
from emews.core import _pareto as pareto
from emews.core._algorithm import Objectives
from emews.core._criteria import Constraint, Criteria
from emews._errors import ConfigError
from emews.evaluate import Outcome

from conftest import SUPPORT, stored_rows

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


def front_of(expdir, rows):
    """The front in ``expdir``'s final.json as (id, values), ids found by point."""
    final = json.loads((expdir / "final.json").read_text())
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
    assert front_of(result.expdir, rows) == independent_front(rows, ["minimize", "maximize"])
    assert result.pareto == json.loads((result.expdir / "final.json").read_text())["pareto"]
    assert result.best_point is None and 0 < len(result.pareto) < 20


def test_infeasible_points_are_stored_done_marked_and_never_on_the_front(toy_config):
    result = emews.run(toy_config(budget=24, constraints=["size <= 4000", "acc >= 0.6"], **MO))
    rows = stored_rows(result.expdir)
    assert {r["status"] for r in rows} == {"done"}
    for r in rows:
        assert r["feasible"] is (r["objectives"][1] <= 4000 and r["metrics"]["acc"] >= 0.6)
    infeasible = {r["id"] for r in rows if r["feasible"] is False}
    front = front_of(result.expdir, rows)
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
    told = criteria.search_value(judged.objectives, judged.metrics)
    assert isinstance(told, Objectives) and told.values == (0.5, -0.9)
    assert told.violations == (2.0,) and float(told) == 0.5 and not told.feasible
    lacking = criteria.judge(Outcome(0.5, objectives=[0.5, 0.9]))
    assert lacking.status == "failed" and "constraint 'size <= 10'" in lacking.error
    assert math.isnan(lacking.value)


def test_a_classic_eqpy_module_reads_lists_or_the_first_objective(toy_config):
    result = emews.run(toy_config(algorithm="mo_classic_me", mode="batch", budget=6,
                                  directions=["minimize", "maximize"], **MO))
    final = json.loads((result.expdir / "final.json").read_text())
    rows = {json.dumps(r["params"], sort_keys=True): r for r in stored_rows(result.expdir)}
    stored = [rows[json.dumps(p, sort_keys=True)]["objectives"] for p in final["points"]]
    assert final["texts"] == [[loss, -size] for loss, size in stored[:3]]
    assert final["numbers"] == [loss for loss, _ in stored[3:]]
    assert len(final["pareto"]) >= 1 and final["stop_reason"] == "classic ME finished"


def test_a_text_answer_of_lists_decodes_to_objectives_whose_float_is_the_first():
    from emews import eqpy

    text = eqpy.encode_tagged([(0, Objectives([0.5, -3.0])), (1, math.nan), (2, 0.25)])
    assert text == "0:[0.5,-3.0];1:NaN;2:0.25"
    (i, first), (_, failed), (_, plain) = eqpy.decode_tagged(text)
    assert isinstance(first, Objectives) and first.values == (0.5, -3.0) and first == 0.5
    assert math.isnan(failed) and plain == 0.25
    assert math.isnan(eqpy.decode_results("[0.5,oops]")[0])


@pytest.mark.slow
@pytest.mark.mpi
def test_a_two_objective_study_on_an_mpiexec_pool_stores_its_front(study, tmp_path):
    """Three ranks (a master, two workers, isolated py models) under a real mpiexec: the
    front in final.json is the non-dominated set of the stored rows, computed here."""
    path = study(system={"procs": 3, "progress_interval": 60},
                 study={"budget": 16, "seed": 5, "mode": "async", **MO,
                        "directions": ["minimize", "maximize"],
                        "constraints": ["size <= 12000"]})
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    done = subprocess.run([mpiexec, "-n", "3", sys.executable, "-m", "emews", "run", str(path)],
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(SUPPORT)),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    rows = stored_rows(expdir)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} == {1, 2}
    assert all(r["feasible"] is (r["objectives"][1] <= 12000) for r in rows)
    front = front_of(expdir, rows)
    assert front and front == independent_front(rows, ["minimize", "maximize"])
    assert "Pareto front of" in done.stdout


def test_patience_counts_hypervolume_improvements_against_a_derived_reference():
    from emews.core._algorithm import Stopper

    stopper = Stopper(patience=3, tol=0.0)
    first = [Objectives([x, 4.0 - x]) for x in (0.0, 2.0, 4.0)]
    stopper.record(first)                    # the first design: min(patience, 10) vectors
    assert stopper.reference_point == pareto.reference_point([v.values for v in first])
    assert stopper.last_improvement == 3 and stopper.reason() is None
    stopper.record([Objectives([1.0, 1.0])])   # a new corner: the hypervolume grows
    assert stopper.last_improvement == 4
    grown = stopper.hypervolume
    stopper.record([Objectives([3.0, 3.0]), math.nan, Objectives([0.5, 0.5], [1.0])])
    assert stopper.hypervolume == grown      # dominated, failed, infeasible: no growth
    assert stopper.reason() == ("converged: no hypervolume improvement larger than 0.0 in 3 "
                                "evaluations")
    again = Stopper(patience=3, tol=0.0)
    again.restore(json.loads(json.dumps(stopper.counts())))
    assert (again.front, again.hypervolume, again.reference_point) == (
        stopper.front, stopper.hypervolume, stopper.reference_point)


def test_a_given_reference_point_is_taken_in_each_objectives_direction(toy_config):
    from emews import _config as config

    cfg = config.load(toy_config(**MO, directions=["minimize", "maximize"],
                                 reference_point=[10.0, 100.0], patience=5), environ={})
    assert cfg.stop["reference_point"] == [10.0, -100.0]


def told_records(path):
    """What RecordingObjectives was told: {point key: (values, violations)}."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [(json.dumps(r["point"], sort_keys=True), r["values"], r["violations"])
            for r in lines]


def test_the_algorithm_is_told_objectives_and_a_resume_tells_the_history_alike(toy_config,
                                                                                tmp_path):
    """Async: a resumed search is told the stored rows as its history, as Objectives (each
    to minimize, with the violations) just as the first run told them."""
    record = tmp_path / "told.jsonl"
    first = emews.run(toy_config(budget=8, algorithm="recording_algorithm:RecordingObjectives",
                                 directions=["minimize", "maximize"],
                                 constraints=["size <= 9000"], **MO)
                      | {"algorithm": {"record": str(record)}})
    told_first = told_records(record)
    record.unlink()
    resumed = emews.run(None, {"study.budget": 14}, resume=first.expdir)
    rows = stored_rows(resumed.expdir)
    assert len(rows) == 14 and all(len(r["objectives"]) == 2 for r in rows)
    assert all(r["feasible"] is (r["objectives"][1] <= 9000) for r in rows)
    expected = {json.dumps(r["params"], sort_keys=True): (
        [r["objectives"][0], -r["objectives"][1]], [max(r["objectives"][1] - 9000, 0.0)])
        for r in rows}
    history = told_records(record)[:8]
    assert sorted(told_first) == sorted(history)
    assert all(expected[key] == (values, violations) for key, values, violations in history)
    assert front_of(resumed.expdir, rows) == independent_front(rows, ["minimize", "maximize"])


def test_an_app_runs_objectives_are_its_last_labelled_result_lines(tmp_path):
    """A Model Shell run's log (RUN_DIR/model.log, as model.sh leaves it) and result.txt."""
    from emews.evaluate._base import EvaluationFailed
    from emews.evaluate._model_output import read_app_result

    log = tmp_path / "model.log"
    log.write_text("epoch 1\nIMPROVE_RESULT loss 0.5\nIMPROVE_RESULT params 100\n"
                   "IMPROVE_RESULT 0.25\nIMPROVE_RESULT loss: 0.25\n")
    value = read_app_result(tmp_path, log, "loss,params")
    assert value.objectives == [0.25, 100.0] and value == 0.25
    (tmp_path / "result.txt").write_text("params 80\n")   # result.txt wins over the log
    assert read_app_result(tmp_path, log, "loss,params").objectives == [0.25, 80.0]
    with pytest.raises(EvaluationFailed, match="objective 'latency': the model reported no "
                                               "result line labelled 'latency'"):
        read_app_result(tmp_path, log, "loss,latency")
    log.write_text("IMPROVE_RESULT loss nan\nIMPROVE_RESULT params 1\n")
    with pytest.raises(EvaluationFailed, match="objective 'loss': the model reported NaN"):
        read_app_result(tmp_path, log, "loss,params")


def test_a_resume_that_changes_what_the_study_optimizes_is_refused(toy_config):
    first = emews.run(toy_config(budget=4, **MO))
    for change in ({"study.directions": ["minimize", "maximize"]},
                   {"study.constraints": ["size <= 3"]}):
        with pytest.raises(ConfigError, match=r"--resume: \[study\] objectives, directions and "
                                              "constraints: must be the same"):
            emews.run(None, {"study.budget": 6, **change}, resume=first.expdir)
    assert len(stored_rows(first.expdir)) == 4


def test_a_study_stops_when_its_front_stops_growing(toy_config):
    config = toy_config(budget=300, patience=6, mode="batch", batch_size=2, **MO)
    config["system"]["procs"] = 2   # one worker: the stored finish order is the order counted
    result = emews.run(config)
    rows = stored_rows(result.expdir)
    assert result.stop_reason == ("converged: no hypervolume improvement larger than 0.0 in 6 "
                                  "evaluations")
    assert 6 <= len(rows) < 300
    vectors = [r["objectives"] for r in sorted(rows, key=lambda r: (r["finished"], r["id"]))]
    reference = pareto.reference_point(vectors[:6])      # the first design: min(patience, 10)
    last_growth, volume = 6, pareto.hypervolume(vectors[:6], reference)
    for n in range(7, len(vectors) + 1):
        grown = pareto.hypervolume(vectors[:n], reference)
        last_growth, volume = (n, grown) if grown > volume else (last_growth, volume)
        if n - last_growth >= 6:
            break
    assert len(rows) in (n, n + 1)     # the first count 6 past the last growth (a batch of 2)


def test_a_reference_point_without_several_objectives_is_refused(toy_config):
    with pytest.raises(ConfigError, match=r"\[study\].reference_point: applies to a study of "
                                          "several objectives or constraints only"):
        emews.run(toy_config(reference_point=[1.0]))
