"""Evaluations of several ranks on a real mpiexec pool: mixed sizes from a parameter, the slot
accounting from the stored start and finish times, a request that can never fit, a killed run
that frees its slots, and the same packing through a pool job attached over zmq."""

import json
import subprocess
import sys

import pytest
from conftest import peak_slots, query_store, stored_rows, wait_until
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

from emews.store import study_store

pytestmark = pytest.mark.mpi

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "k", "type": "categorical", "values": [1, 2]}]


def packed_study(study, procs=5, budget=10, objective="packing_models:held", **settings):
    return study(space=SPACE, system={"procs": procs, "progress_interval": 60},
                 study={"budget": budget, "seed": 3, "objective": objective,
                        "ranks_per_eval": "$k", **settings})


def experiment(tmp_path):
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.fixture(params=["zmq", "postgres"])
def storage(request):
    """A served study's transport: zmq (``None``: its store is ``results.db``), or a fresh
    PostgreSQL database (its URL), where its pools pop their tasks."""
    if request.param == "zmq":
        return None
    pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")
    return request.getfixturevalue("postgres_url")


@pytest.mark.slow
def test_a_pool_job_attached_to_a_served_study_packs_the_same_way(study, jobs, storage):
    path = packed_study(study, budget=8)
    if storage:
        path.write_text(path.read_text().replace("[system]\n",
                                                 f"[system]\nstorage = {json.dumps(storage)}\n"))
    expdir, _ = jobs.run_served(path, 5)
    store = study_store(expdir, storage, create=False)
    try:
        rows = store.rows()
    finally:
        store.close()
    assert [(r["status"], r["attempt"]) for r in rows] == [("done", 1)] * 8
    assert all(r["metrics"]["slots"] == r["metrics"]["ranks"] == r["params"]["k"]
               for r in rows)
    assert 3 <= peak_slots(rows) <= 4


@pytest.mark.slow
def test_status_shows_the_slots_the_running_evaluations_hold(study, jobs, tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    jobs.env["EMEWS_TEST_GATE"] = str(gate)
    run = jobs.start(sys.executable, "-m", "emews", "run",
                     packed_study(study, procs=4, budget=5, objective="packing_models:gated"))

    def slots():
        expdir = next((tmp_path / "experiments" / "study").glob("EXP*"), None)
        if expdir is None or run.poll() is not None:
            return None
        shown = subprocess.run([sys.executable, "-m", "emews", "status", expdir, "--json"],
                               capture_output=True, text=True, env=jobs.env, timeout=120)
        held = sum(row[0] for row in query_store(
            expdir / "results.db", "SELECT json_extract(params, '$.k') FROM evaluations "
            "WHERE status = 'running'"))
        return json.loads(shown.stdout)["slots"], held

    try:
        wait_until(lambda: (found := slots()) is not None and found[0]["in_use"] == found[1]
                   and found[1] > 0, "emews status showing the slots the store's running "
                   "evaluations hold")
        shown, _ = slots()
        assert shown["pool"] == 3 and 0 < shown["in_use"] <= 3 and shown["gpus"] == 0
    finally:
        (gate / "go").touch()
    out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err
