"""Each built-in search runs a study of a conditional space on a real ``mpiexec`` pool: the
store's rows hold, for every point, exactly its active parameters (no inactive value, every
active child with its parent's value)."""

import pytest

from emews._space import Space
from emews.testing import CONDITIONAL, experiment_rows

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

# every parameter's values, inactive ones included: the sweep keeps the valid combinations
TABLE = {"optimizer": ["sgd", "adam"], "lr": [1e-3, 1e-2], "dropout": [0.1, 0.3],
         "momentum": [0.3, 0.9], "nesterov": [True, False], "depth": [2, 3],
         "width3": [16, 64], "epochs": [3]}
SEARCHES = [
    ("ga", {"population_size": 6}),
    ("ga_async", {"population_size": 6}),
    ("nsga2", {"population_size": 6}),
    ("optuna", {"sampler": "tpe", "n_startup_trials": 4}),
    ("random", {}),
    ("sweep", {"strategy": "random", "n": 30}),
    ("gp", {"n_initial_points": 4, "acq_optimizer": "sampling"}),
    ("mbo", {"design_size": 4, "n_trees": 20}),
    ("bohb", {"min_points_in_model": 3}),
]


@pytest.mark.parametrize("name, options", SEARCHES, ids=[getattr(search, "values", search)[0]
                                                         for search in SEARCHES])
def test_a_search_on_the_mpi_pool_stores_only_active_parameters(emews_cli, study, tmp_path,
                                                                name, options):
    tables = {"algorithm.params": TABLE} if name == "sweep" else {}
    path = study(space=CONDITIONAL, system={"procs": 3},
                 study={"algorithm": name, "budget": 12, "seed": 5, "mode": "async",
                        "objective": "emews.testing:branches"},
                 algorithm=options, **tables)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == 12 and {r["status"] for r in rows} == {"done"}, rows
    assert {r["rank"] for r in rows} <= {1, 2}   # evaluated by the workers
    space = Space.from_ga_json(CONDITIONAL)
    for point in (r["params"] for r in rows):
        assert space.contains(point), point
        assert ("momentum" in point) == (point["optimizer"] == "sgd"), point
        assert ("nesterov" in point) == (point.get("momentum", 0.0) > 0.5), point
        assert ("width3" in point) == (point["depth"] >= 3), point
    branches = {(r["params"]["optimizer"], r["params"]["depth"] >= 3) for r in rows}
    assert len(branches) >= 2, branches   # the search went down more than one branch
