"""Each search runs end to end under a real ``mpiexec -n 4`` and beats its initial design."""

import pytest

from emews.models import analytic
from emews.testing import experiment_rows

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

# name, [algorithm] options, size of its initial design (the first points it proposes),
# function (mixed: Branin plus int, categorical and logical parameters); a budget of 40: at 30,
# mbo's 22 async proposals (their order set by the pool's timing) once ended 0.1 short of its
# design's best
SEARCHES = [
    ("ga", {"population_size": 8}, 8, "mixed"),
    ("ga_async", {"population_size": 8}, 8, "mixed"),
    ("gp", {"n_initial_points": 6, "acq_optimizer": "sampling"}, 6, "branin"),
    ("optuna", {"sampler": "tpe", "n_startup_trials": 8}, 8, "mixed"),
    ("optuna", {"sampler": "cmaes", "popsize": 6}, 7, "branin"),
    ("mbo", {"design_size": 8, "n_trees": 50}, 8, "mixed"),
]


@pytest.mark.parametrize("name, options, initial, function", SEARCHES,
                         ids=[f"{n}-{o.get('sampler', f)}" for n, o, _, f in SEARCHES])
def test_a_search_on_the_mpi_pool_beats_its_initial_design(emews_cli, study, tmp_path, name,
                                                           options, initial, function):
    path = study(space=analytic.space(function), system={"procs": 4},
                 study={"algorithm": name, "budget": 40, "seed": 11, "mode": "async",
                        "objective": f"emews.models.analytic:{function}"},
                 algorithm=options)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    assert "stopped: evaluation budget of 40 reached" in done.stdout
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == 40 and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} <= {1, 2, 3}   # evaluated by the workers
    design = min(r["result"] for r in rows[:initial])
    assert min(r["result"] for r in rows[initial:]) < design
