"""Evaluations of several ranks on a real mpiexec pool: mixed sizes from a parameter, the slot
accounting from the stored start and finish times, a request that can never fit, a killed run
that frees its slots, and the same packing through a pool job attached over zmq."""

import pytest
from conftest import stored_rows

pytestmark = pytest.mark.mpi

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "k", "type": "categorical", "values": [1, 2]}]


def packed_study(study, procs=5, budget=10, objective="packing_models:held", **settings):
    return study(space=SPACE, system={"procs": procs, "progress_interval": 60},
                 study={"budget": budget, "seed": 3, "objective": objective,
                        "ranks_per_eval": "$k", **settings})


def peak_slots(rows):
    """The most slots held at once, from the stored start and finish times and each
    evaluation's stored ``slots``; ends come before starts at the same instant."""
    events = sorted([(row["started"], 1, row["metrics"]["slots"]) for row in rows] +
                    [(row["finished"], 0, -row["metrics"]["slots"]) for row in rows])
    held = peak = 0
    for _, _, change in events:
        held += change
        peak = max(peak, held)
    return peak


def experiment(tmp_path):
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir


def test_mixed_sizes_from_a_parameter_never_hold_more_slots_than_the_pool(emews_cli, study,
                                                                          tmp_path):
    done = emews_cli("run", packed_study(study))
    assert done.returncode == 0, done.stderr
    rows = stored_rows(experiment(tmp_path))
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)] * 10
    for row in rows:   # each held what its parameter asked, and its run was told so
        k = row["params"]["k"]
        assert row["metrics"]["slots"] == row["metrics"]["ranks"] == k
        assert row["metrics"]["hosts"] == k   # one host name per rank
    assert {r["params"]["k"] for r in rows} == {1, 2}
    assert 3 <= peak_slots(rows) <= 4   # packed side by side, never beyond the 4 workers


def test_a_request_that_can_never_fit_is_refused_in_one_line_and_nothing_runs(emews_cli,
                                                                              study, tmp_path):
    done = emews_cli("run", packed_study(study, procs=3))   # k = 2 fits 2 workers; k = 3 not
    assert done.returncode == 0, done.stderr
    path = study(space=SPACE[:1] + [{"name": "k", "type": "int", "lower": 1, "upper": 3}],
                 system={"procs": 3}, study={"budget": 4, "objective": "packing_models:held",
                                             "ranks_per_eval": "$k"}, name="big.toml")
    refused = emews_cli("run", path)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"emews: error: {path}: [study].ranks_per_eval: asks for evaluations of 3 ranks, "
        "more than the 2 worker slots of [system] procs = 3, got 3"]
    assert not (tmp_path / "experiments" / "big").exists()


def test_a_killed_run_of_a_two_rank_evaluation_fails_it_and_frees_its_slots(emews_cli, study,
                                                                            tmp_path):
    done = emews_cli("run", packed_study(study, objective="packing_models:dies_when_large"))
    assert done.returncode == 0, done.stderr
    rows = stored_rows(experiment(tmp_path))
    assert len(rows) == 10
    for row in rows:
        k = row["params"]["k"]
        assert row["status"] == ("failed" if k == 2 else "done"), row
        if k == 2:
            assert "signal" in row["error"] or "SIGKILL" in row["error"], row["error"]
    assert {r["status"] for r in rows} == {"done", "failed"}   # the study went on after both
    assert peak_slots(rows) <= 4


@pytest.mark.slow
def test_a_pool_job_attached_over_zmq_packs_the_same_way(study, jobs):
    server, expdir = jobs.serve(packed_study(study, budget=8))
    pool = jobs.pool(expdir, 5)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    pool.communicate(timeout=60)
    assert pool.returncode == 0
    rows = stored_rows(expdir)
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)] * 8
    assert all(r["metrics"]["slots"] == r["metrics"]["ranks"] for r in rows)
    assert 3 <= peak_slots(rows) <= 4
