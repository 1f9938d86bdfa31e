"""Workers on a real mpiexec: one GPU each, and the failure policy across MPI ranks."""

import pytest

from emews.store import SQLiteStore

pytestmark = pytest.mark.mpi


def evaluations(tmp_path):
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = SQLiteStore(expdir / "results.db")
    try:
        return store.rows()
    finally:
        store.close()


@pytest.mark.slow
def test_each_worker_takes_its_own_gpu_from_rank_offset_and_gpus_per_node(emews_cli, study,
                                                                          tmp_path):
    path = study(system={"procs": 3, "gpus_per_node": 2},
                 study={"budget": 8, "objective": "failing_models:visible_device", "seed": 1})
    done = emews_cli("run", path, env={"CANDLE_CUDA_OFFSET": "1"})
    assert done.returncode == 0, done.stderr
    rows = evaluations(tmp_path)
    assert {r["rank"] for r in rows} == {1, 2}
    assert all(r["result"] == (r["rank"] + 1) % 2 for r in rows)


@pytest.mark.slow
def test_failed_points_are_retried_on_the_pool(emews_cli, study, tmp_path):
    path = study(system={"procs": 3}, failure={"retries": 1},
                 study={"budget": 6, "objective": "failing_models:fails_first_attempt"})
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    rows = evaluations(tmp_path)
    assert len(rows) == 6 and all(r["status"] == "done" and r["attempt"] == 2 for r in rows)


@pytest.mark.slow
def test_an_abort_policy_ends_the_mpi_run_with_the_reason(emews_cli, study, tmp_path):
    path = study(system={"procs": 3}, failure={"on_failure": "abort"},
                 study={"budget": 30, "objective": "failing_models:fails_when_negative",
                        "seed": 2})
    done = emews_cli("run", path)
    assert done.returncode == 1
    assert "the failure policy aborted the study: ValueError: x must not be negative" in \
        done.stderr
    rows = evaluations(tmp_path)
    assert any(r["status"] == "failed" for r in rows)
