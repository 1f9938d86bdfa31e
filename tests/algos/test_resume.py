"""A finished study continued with ``--resume`` and a larger budget: no point evaluated twice
(and, of a conditional space, every point with exactly its active parameters)."""

import json

import pytest

import emews
from emews.core._algorithm import point_key
from emews.models import analytic
from emews._space import Space
from emews.testing import CONDITIONAL, experiment_rows


@pytest.mark.parametrize("algorithm, options", [
    ("ga", {"population_size": 6}), ("ga_async", {"population_size": 6}),
    ("nsga2", {"population_size": 6}), ("nsga3", {"population_size": 6}),
    ("nsga2_async", {"population_size": 6}), ("nsga3_async", {"population_size": 6}),
    ("optuna", {"sampler": "tpe", "n_startup_trials": 5}),
    pytest.param("mbo", {"design_size": 6, "n_trees": 30, "focus_points": 300},
                 marks=pytest.mark.slow),
])
@pytest.mark.slow
def test_a_resumed_study_continues_without_repeating_points(tmp_path, algorithm, options):
    first, resumed, rows = run_and_resume(tmp_path, analytic.space("mixed"),
                                          "emews.models.analytic:mixed", algorithm, options,
                                          procs=3, budgets=(10, 22))
    assert first.evaluations == 10
    assert resumed.evaluations == len(rows) == 22
    assert resumed.stop_reason == "evaluation budget of 22 reached"
    assert len({point_key(r["params"]) for r in rows}) == 22
    assert resumed.best_value <= first.best_value


@pytest.mark.parametrize("algorithm, options", [
    ("ga", {"population_size": 6}), ("nsga2_async", {"population_size": 6}),
    ("optuna", {"sampler": "tpe", "n_startup_trials": 5}), ("random", {}),
])
@pytest.mark.slow
def test_a_resumed_conditional_study_keeps_to_active_parameters(tmp_path, algorithm, options):
    # one worker: the results come back in one order, so the seeded searches are reproducible
    first, resumed, rows = run_and_resume(tmp_path, CONDITIONAL, "emews.testing:branches",
                                          algorithm, options, procs=2, budgets=(8, 18))
    assert first.evaluations == 8 and resumed.evaluations == len(rows) == 18
    assert len({point_key(r["params"]) for r in rows}) == 18
    space = Space.from_ga_json(CONDITIONAL)
    assert all(space.contains(r["params"]) for r in rows), [r["params"] for r in rows]
    assert {r["params"]["optimizer"] for r in rows} == {"sgd", "adam"}   # both branches ran


def run_and_resume(tmp_path, space, objective, algorithm, options, procs, budgets):
    """A study of ``budgets[0]`` evaluations on the in-process pool, resumed to ``budgets[1]``:
    the two results and every stored row."""
    (tmp_path / "space.json").write_text(json.dumps(space))
    config = {"system": {"pool": "inprocess", "procs": procs, "progress_interval": 0.0},
              "study": {"name": "resume", "algorithm": algorithm, "budget": budgets[0],
                        "seed": 2, "space": str(tmp_path / "space.json"),
                        "data_dir": str(tmp_path / "data"), "objective": objective},
              "algorithm": options}
    first = emews.run(config)
    resumed = emews.run(None, overrides={"study.budget": budgets[1]}, resume=first.expdir)
    return first, resumed, experiment_rows(tmp_path / "data")
