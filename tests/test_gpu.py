"""Studies that train on a real CUDA GPU under a real mpiexec pool (skipped where PyTorch or a
GPU is missing, as in CI; ``bash scripts/gpu_check.sh`` runs them on a GPU machine):

* evaluations of half a GPU: two share the GPU, never more, each trains on it, and ASHA stops
  the hopeless ones at its rungs;
* a data-parallel evaluation of two ranks, each bound to the GPU by the launcher
  (``CUDA_VISIBLE_DEVICES``), averaging gradients over ``emews.comm()``;
* freeze-thaw on half a GPU: ASHA pauses runs rather than stopping them, and the drain thaws
  them from their checkpoints (the network and its optimizer), each going on at the epoch after
  its pause with the losses that an uninterrupted training of its point reports.
"""

import sys

import pytest
from conftest import SUPPORT, peak_slots, query_store, stored_rows

from emews.store import SQLiteStore

pytestmark = [pytest.mark.mpi, pytest.mark.gpu]

torch = pytest.importorskip("torch", reason="the GPU tests need PyTorch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here", allow_module_level=True)
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
from gpu_models import curve  # noqa: E402 - beside the tests

SPACE = [{"name": "hidden_units", "type": "int", "lower": 8, "upper": 128},
         {"name": "learning_rate", "type": "float", "lower": 0.01, "upper": 1.0, "log": True},
         {"name": "epochs", "type": "constant", "value": 9}]
ASHA = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}


def experiment(tmp_path):
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir


def test_evaluations_of_half_a_gpu_share_it_two_at_a_time_and_asha_prunes_them(
        emews_cli, study, tmp_path):
    path = study(space=SPACE, system={"procs": 5, "gpus_per_node": 1, "progress_interval": 60},
                 study={"budget": 12, "seed": 3, "objective": "gpu_models:train",
                        "gpus_per_eval": 0.5, "pruner": "asha"},
                 pruner=ASHA)
    done = emews_cli("run", path, timeout=600)
    assert done.returncode == 0, done.stderr
    expdir = experiment(tmp_path)
    rows = stored_rows(expdir)
    assert len(rows) == 12 and {r["status"] for r in rows} <= {"done", "pruned"}
    finished = [r for r in rows if r["status"] == "done"]
    assert finished, "ASHA finishes some runs"
    memory = torch.cuda.get_device_properties(0).total_memory
    for row in finished:   # trained on the GPU the pool gave it, which is GPU 0
        metrics = row["metrics"]
        assert metrics["given_gpu"] == metrics["cuda_index"] == 0
        assert metrics["gpu_memory"] == memory and metrics["peak_allocated"] > 0
    assert peak_slots(rows, slots=lambda row: 1) == 2   # 4 workers, half a GPU each, 1 GPU
    last_steps = dict(query_store(expdir / "results.db",
                                  "SELECT id, MAX(step) FROM reports GROUP BY id"))
    for row in rows:
        assert last_steps[row["id"]] == (9 if row["status"] == "done" else
                                         int(row["error"].rsplit(" ", 1)[1]))
        if row["status"] == "pruned":
            assert last_steps[row["id"]] in (1, 3)   # ASHA's rungs below max_resource


def test_a_data_parallel_evaluation_of_two_ranks_trains_on_the_gpu_it_is_bound_to(
        emews_cli, study, tmp_path):
    path = study(space=SPACE, system={"procs": 3, "gpus_per_node": 1, "progress_interval": 60},
                 study={"budget": 3, "seed": 3, "objective": "gpu_models:train_data_parallel",
                        "ranks_per_eval": 2, "gpus_per_eval": 1})
    done = emews_cli("run", path, timeout=600)
    assert done.returncode == 0, done.stderr
    expdir = experiment(tmp_path)
    rows = stored_rows(expdir)
    assert [r["status"] for r in rows] == ["done"] * 3
    memory = torch.cuda.get_device_properties(0).total_memory
    for row in rows:
        metrics = row["metrics"]
        assert metrics["world"] == 2 and metrics["slots"] == 2
        assert metrics["ranks_on_gpu0"] == 2   # the launcher bound each rank to GPU 0
        assert metrics["visible_gpu"] == metrics["cuda_index"] == 0
        assert metrics["gpu_memory"] == memory
    steps = query_store(expdir / "results.db", "SELECT id, step FROM reports ORDER BY n")
    for row in rows:   # rank 0's reports reached the store, epoch by epoch
        assert [s for i, s in steps if i == row["id"]] == list(range(1, 10))


def test_paused_runs_on_half_a_gpu_are_thawed_from_their_checkpoints(emews_cli, study, tmp_path):
    path = study(space=SPACE, system={"procs": 5, "gpus_per_node": 1, "progress_interval": 60},
                 study={"budget": 12, "seed": 3, "objective": "gpu_models:train_checkpointed",
                        "gpus_per_eval": 0.5, "pruner": "asha"},
                 pruner={**ASHA, "pause": True})
    done = emews_cli("run", path, timeout=600)
    assert done.returncode == 0, done.stderr
    expdir = experiment(tmp_path)
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        rows, attempts = store.rows(), store.attempts()
        reports = {row["id"]: store.reports(row["id"]) for row in rows}
    finally:
        store.close()
    assert len(rows) == 12 and {r["status"] for r in rows} <= {"done", "paused"}
    assert any(r["status"] == "done" for r in rows), "ASHA lets some runs finish"
    ran = [a for a in attempts if a["started"] is not None]
    thawed = {a["id"] for a in ran if a["attempt"] > 1}
    assert thawed, "the drain thaws the runs ASHA paused"
    assert peak_slots(ran, slots=lambda attempt: 1) == 2   # half a GPU each, 1 GPU
    device = torch.device("cuda", 0)
    for row in rows:
        steps = [r["step"] for r in reports[row["id"]]]
        assert steps == list(range(1, steps[-1] + 1))   # no epoch repeated or lost
        expected = curve(row["params"], device)   # an uninterrupted training's losses
        assert [r["value"] for r in reports[row["id"]]] == pytest.approx(
            [expected[step] for step in steps], rel=1e-4)
        assert row["result"] == pytest.approx(expected[steps[-1]], rel=1e-4)
        if row["status"] == "done":
            assert steps[-1] == 9
            assert row["metrics"]["given_gpu"] == row["metrics"]["cuda_index"] == 0
        if row["id"] in thawed:   # each attempt trained on from its checkpoint
            trained = [[int(e) for e in (expdir / "run" / a["run_id"] / "trained.txt")
                        .read_text().split()]
                       for a in ran if a["id"] == row["id"]]
            assert sum(trained, []) == steps and len(trained) > 1
