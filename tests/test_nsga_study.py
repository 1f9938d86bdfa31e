"""nsga2 and its steady-state forms in whole studies of two objectives: on a real mpiexec pool
(rows and front stored), killed mid-batch then resumed (its population equals an uninterrupted
run's: the driver checkpoints in batch mode), and finished then resumed in async mode (the
history told as vectors; ours evaluate no point twice)."""

import json
import os
import signal
import subprocess
import sys

import pytest

import emews
from emews.core import _pareto as pareto
from emews.core._algorithm import load
from emews._space import Space
from emews.store import study_store
from emews.testing import experiment_rows

from conftest import SUPPORT, stored_rows, wait_until

pytestmark = pytest.mark.slow
TWO = {"objectives": ["loss", "size"], "constraints": ["size <= 4000"]}


def final_front(expdir):
    final = json.loads((expdir / "final.json").read_text())
    return sorted(json.dumps(p, sort_keys=True) for p in final["pareto"])


def stored_front(rows):
    done = [r for r in rows if r["status"] == "done"]
    indices = pareto.front([r["objectives"] for r in done], [r["feasible"] for r in done])
    return sorted(json.dumps({"point": done[i]["params"], "values": done[i]["objectives"]},
                             sort_keys=True) for i in indices)


@pytest.mark.mpi
@pytest.mark.parametrize("algorithm", ["nsga2", "nsga2_async", "nsga3_async"])
def test_an_nsga_study_on_the_mpi_pool_stores_its_rows_and_front(emews_cli, study, tmp_path,
                                                                   algorithm):
    path = study(system={"procs": 4},
                 study={"algorithm": algorithm, "budget": 24, "seed": 3, "mode": "async",
                        "objective": "mo_models:loss_and_size", **TWO},
                 algorithm={"population_size": 8})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = experiment_rows(tmp_path / "experiments")
    assert len(rows) == 24 and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} <= {1, 2, 3}   # evaluated by the workers
    assert all(r["feasible"] is (r["objectives"][1] <= 4000) for r in rows)
    assert any(r["feasible"] is False for r in rows)
    (expdir,) = [e for s in (tmp_path / "experiments").iterdir() for e in s.iterdir()]
    assert final_front(expdir) == stored_front(rows) != []


def population(expdir, space, algorithm):
    """The population of the checkpoint of ``algorithm`` in the store of ``expdir``."""
    store = study_store(expdir, readonly=True)
    try:
        state, _ = store.checkpoint("me")
    finally:
        store.close()
    algorithm = load(algorithm)(space, seed=11, objectives=2, population_size=4)
    algorithm.restore(state)
    return [(list(i), i.fitness.values, i.fitness.violation) for i in algorithm.population]


@pytest.mark.parametrize("algorithm", ["nsga2", "nsga2_async"])
def test_a_resumed_nsga_study_has_the_population_of_an_uninterrupted_one(study, tmp_path,
                                                                        algorithm):
    budget, stall = 16, 6
    path = study(system={"procs": 3, "pool": "inprocess", "progress_interval": 60},
                 study={"algorithm": algorithm, "mode": "batch", "batch_size": 4,
                        "budget": budget, "seed": 11,
                        "objective": "mo_stall:loss_and_size_stalling", **TWO},
                 algorithm={"population_size": 4})
    space = Space.from_file(tmp_path / "space.json")
    gate = tmp_path / "gate"
    gate.mkdir()
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_GATE=str(gate),
               EMEWS_TEST_STALL_AFTER=str(stall))

    def emews(*args):
        return subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=tmp_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)

    killed = emews("run", path, "--name", "killed")
    wait_until(lambda: len(list(gate.glob("call-*"))) > stall, "a run past the stall point")
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    (expdir,) = (tmp_path / "experiments" / "killed").iterdir()
    interrupted = population(expdir, space, algorithm)
    (gate / "go").touch()
    for process in (emews("run", "--resume", expdir), emews("run", path, "--name", "straight")):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    (reference,) = (tmp_path / "experiments" / "straight").iterdir()

    resumed = population(expdir, space, algorithm)
    uninterrupted = population(reference, space, algorithm)
    assert len(resumed) == 4 and resumed == uninterrupted != interrupted
    rows, straight = stored_rows(expdir), stored_rows(reference)
    assert [r["status"] for r in rows] == ["done"] * budget
    assert [(r["params"], r["objectives"], r["feasible"]) for r in rows] == \
        [(r["params"], r["objectives"], r["feasible"]) for r in straight]
    assert {r["feasible"] for r in rows} == {True, False}


# Optuna's NSGA-II breeds children equal to their parents at times: it may evaluate a point
# twice, resumed or not; ours never does (distinct)
@pytest.mark.parametrize("algorithm, options, distinct", [
    ("nsga2", {"population_size": 6}, True), ("nsga3", {"population_size": 6}, True),
    ("nsga2_async", {"population_size": 6}, True), ("nsga3_async", {"population_size": 6}, True),
    ("optuna", {"sampler": "nsga2", "population_size": 6}, False),
    ("optuna", {"sampler": "tpe"}, True)])
def test_a_finished_two_objective_study_resumed_in_async_mode_goes_on(toy_config, algorithm,
                                                                      options, distinct):
    config = toy_config(algorithm=algorithm, mode="async", objective="mo_models:loss_and_size",
                        **TWO) | {"algorithm": options}
    first = emews.run(config)
    resumed = emews.run(None, overrides={"study.budget": 24}, resume=first.expdir)
    rows = stored_rows(resumed.expdir)
    assert resumed.evaluations == len(rows) == 24 and {r["status"] for r in rows} == {"done"}
    points = {json.dumps(r["params"], sort_keys=True) for r in rows}
    assert len(points) == 24 or not distinct
    assert final_front(resumed.expdir) == stored_front(rows)
