"""The BOHB-like search (algorithms/bohb.py): what its model learns from, and a study of it
with the ``hyperband`` pruner on a real mpiexec pool."""

import math

import pytest

from emews.core import _pruners as pruners
from emews.core._algorithm import PrunedResult, load
from emews._space import Space
from emews._status import Status
from emews.store import SQLiteStore

from test_fidelity import asha_verdicts, value_at

PLANE = [{"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
         {"name": "y", "type": "float", "lower": 0.0, "upper": 1.0}]


def search(**options):
    return load("bohb")(Space.from_ga_json(PLANE), seed=1, **options)


def test_the_model_ranks_runs_by_the_budget_they_reached_then_their_value_there():
    bohb = search(min_points_in_model=1)
    points = [{"x": i / 10, "y": 0.5} for i in range(7)]
    bohb.tell(points[:2], [PrunedResult({1: 3.0, 3: 2.0}), PrunedResult({1: 1.0})])
    assert bohb.observations() is None                # fewer than min_points_in_model + 2
    bohb.tell(points[2:], [math.nan, PrunedResult({1: 2.5, 3: 1.5}), 0.5, 0.25,
                           PrunedResult({1: 0.1})])
    order = [round(u[0] * 10) for u in bohb.observations()]
    # finished by value; stopped at step 3 (2.0 at step 3 beats nothing stopped earlier)
    # before those stopped at step 1, each by its value there; the failure last
    assert order == [5, 4, 3, 0, 6, 1, 2]


def test_a_nan_report_counts_as_the_worst_at_its_step():
    bohb = search(min_points_in_model=1)
    bohb.tell([{"x": 0.1, "y": 0.1}, {"x": 0.2, "y": 0.2}, {"x": 0.3, "y": 0.3}],
              [PrunedResult({1: math.nan}), PrunedResult({1: 2.0}), PrunedResult({2: 9.0})])
    assert [u[0] for u in bohb.observations()] == pytest.approx([0.3, 0.2, 0.1])


def test_the_bandwidth_does_not_shrink_with_a_tight_good_set():
    """Scott's rule on the unit range, as Optuna's multivariate TPE: a cluster of good points
    keeps the bandwidth of as many points spread out (the normal-reference one followed the
    spread and settled the search short of the optimum)."""
    import numpy as np

    bohb = search()
    tight = np.array([[0.5 + i / 1000, 0.5] for i in range(4)])
    spread = np.array([[i / 3, 1 - i / 3] for i in range(4)])
    assert bohb._bandwidths(tight) == pytest.approx([0.2 * 4 ** (-1 / 6)] * 2)
    assert bohb._bandwidths(spread) == pytest.approx(bohb._bandwidths(tight))
    assert search(min_bandwidth=0.5)._bandwidths(tight) == pytest.approx([0.5, 0.5])


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
