"""The BOHB-like search (algorithms/bohb.py): what its model learns from, and a study of it
with the ``hyperband`` pruner on a real mpiexec pool."""

import math

import pytest

from emews.core import pruners
from emews.core.algorithm import PrunedResult, load
from emews.space import Space
from emews.status import Status
from emews.store import SQLiteStore

from test_fidelity import asha_verdicts, value_at

PLANE = [{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
         {"name": "y", "type": "float", "lower": 0.0, "upper": 1.0}]


def search(**options):
    return load("bohb")(Space.from_ga_json(PLANE), seed=1, **options)


def test_the_model_takes_the_highest_level_with_enough_observations():
    bohb = search(min_points_in_model=1)
    points = [{"x": i / 10, "y": 0.5} for i in range(6)]
    bohb.tell(points[:3], [PrunedResult({1: 3.0, 3: 2.0}), PrunedResult({1: 1.0}), math.nan])
    level, X, y = bohb.observations()     # step 1: two curves and the failure (as the worst)
    assert level == 1 and sorted(y) == [1.0, 3.0, math.inf]
    bohb.tell(points[3:4], [PrunedResult({1: 2.5, 3: 1.5})])
    level, X, y = bohb.observations()     # step 3: two curves and the failure
    assert level == 3 and sorted(y) == [1.5, 2.0, math.inf]
    bohb.tell(points[4:], [0.5, 0.25])    # finished: at the final level and at every step
    level, X, y = bohb.observations()
    assert level == math.inf and sorted(y) == [0.25, 0.5, math.inf]
    assert [u[0] for u in X[:2]] == pytest.approx([0.2, 0.4])   # only finished and failed


def test_a_nan_report_counts_as_the_worst_at_its_step():
    bohb = search(min_points_in_model=1)
    bohb.tell([{"x": 0.1, "y": 0.1}, {"x": 0.2, "y": 0.2}, {"x": 0.3, "y": 0.3}],
              [PrunedResult({1: math.nan}), PrunedResult({1: 2.0}), PrunedResult({1: 1.0})])
    assert sorted(bohb.observations()[2]) == [1.0, 2.0, math.inf]


HYPERBAND = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}


@pytest.mark.slow
@pytest.mark.mpi
def test_a_bohb_study_with_hyperband_on_a_real_mpiexec_pool(emews_cli, study, tmp_path):
    path = study(system={"procs": 4, "progress_interval": 0.0},
                 study={"budget": 24, "objective": "fidelity_models:curve", "seed": 3,
                        "algorithm": "bohb", "mode": "async", "pruner": "hyperband"},
                 pruner=HYPERBAND, algorithm={"min_points_in_model": 2})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        rows, reports = store.rows(), store.reports()
        best_id = store.best()["id"]
    finally:
        store.close()
    assert len(rows) == 24 and {r["status"] for r in rows} <= {Status.DONE, Status.PRUNED}
    pruned = {r["id"]: r for r in rows if r["status"] == Status.PRUNED}
    assert pruned
    stops, bracket_of = {}, pruners.make("hyperband", HYPERBAND).bracket_of
    for bracket, first_rung in enumerate((1, 3, 9)):  # Hyperband's brackets: ASHA from 1, 3, 9
        ours = [r for r in reports if bracket_of(r["id"]) == bracket]
        stops.update(asha_verdicts(ours, min_resource=first_rung))
    assert {run[0] for run in stops} == set(pruned)       # exactly the runs the rule stops
    for (point, _), step in stops.items():
        assert pruned[point]["error"] == f"pruned at step {step}"
        assert step in ((1, 3) if bracket_of(point) == 0 else (3,))
    for row in rows:
        if row["status"] == Status.DONE:
            assert row["result"] == pytest.approx(value_at(row["params"], 9))
    best = min(rows, key=lambda r: r["params"]["x"] ** 2)
    assert best["status"] == Status.DONE and best_id == best["id"]
