"""One study through every transport an outcome travels: the same stored rows on each.

The study sweeps :data:`POINTS` with ``toy_models:several_metrics``, a model that returns
``val_loss`` with ``val_acc`` (NaN for some points) and ``n_params`` beside it, and fails for
others. Run in-process, on an MPI pool (``mpiexec``), served over zmq (``emews serve`` and an
attached ``emews pool`` job), served through PostgreSQL, and under Swift/T, it must leave the
rows of :func:`expected_rows` each time: the same params, result, status, error, attempt,
metrics, objective vector and feasibility (ranks and times differ): the study has two
objectives, ``val_loss`` and ``n_params``, and the constraint :data:`CONSTRAINT`.
"""

import json

import pytest

from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures
from support.swift_t import swift_t  # noqa: F401 - fixture

from emews.store import SQLiteStore, study_store

POINTS = [{"x": x, "n": n, "act": act} for x in (0.5, -1.0) for n in (0, 2)
          for act in ("relu", "tanh")]
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "n", "type": "int", "lower": 0, "upper": 3},
         {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]
OBJECTIVE = "toy_models:several_metrics"
OBJECTIVES = ["val_loss", "n_params"]
CONSTRAINT = "n_params <= 2000"


def expected_rows():
    """What every transport must store for :data:`POINTS`, as :func:`comparable` gives it."""
    rows = []
    for i, point in enumerate(POINTS):
        if point["act"] == "tanh" and point["x"] < 0:
            rows.append((i, point, "failed", None, "RuntimeError: tanh with a negative x: -1.0",
                         1, {}, None, None))
            continue
        loss, size = point["x"] ** 2 + point["n"], 1000.0 * (point["n"] + 1)
        metrics = {"val_loss": loss, "val_acc": None if point["n"] == 2 else 1.0 / (1.0 + loss),
                   "n_params": size}
        rows.append((i, point, "done", loss, None, 1, metrics, [loss, size], size <= 2000))
    return rows


def comparable(store):
    """The store's evaluations, and its attempts, without ranks and times."""
    try:
        rows = [(r["id"], r["params"], r["status"], r["result"], r["error"], r["attempt"],
                 r["metrics"], r["objectives"], r["feasible"]) for r in store.rows()]
        attempts = [(a["id"], a["attempt"], a["status"], a["result"], a["metrics"],
                     a["objectives"], a["feasible"]) for a in store.attempts()]
        return rows, attempts
    finally:
        store.close()


def assert_the_expected_rows(store):
    rows, attempts = comparable(store)
    assert rows == expected_rows()
    assert attempts == [(i, attempt, status, result, metrics, objectives, feasible)
                        for i, _, status, result, _, attempt, metrics, objectives, feasible
                        in expected_rows()]


@pytest.fixture
def sweep(tmp_path, study):
    """``make(**system)``: the study file of the sweep, with ``system`` in its [system]."""
    points = tmp_path / "points.jsonl"
    points.write_text("".join(json.dumps(p) + "\n" for p in POINTS))

    def make(**system):
        return study(space=SPACE, system={"progress_interval": 60, **system},
                     study={"algorithm": "sweep", "budget": len(POINTS), "seed": 4,
                            "objective": OBJECTIVE, "mode": "batch",
                            "objectives": OBJECTIVES, "constraints": [CONSTRAINT]},
                     algorithm={"file": str(points)}, service={"lease": 30.0})

    return make


def run_study(emews_cli, tmp_path, path):
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stdout + done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return SQLiteStore(expdir / "results.db", create=False)


def serve_study(jobs, path):
    server, expdir = jobs.serve(path)
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=240)
    assert server.returncode == 0, out + err
    pool.communicate(timeout=60)
    assert pool.returncode == 0
    return expdir


def test_in_process(emews_cli, tmp_path, sweep):
    assert_the_expected_rows(run_study(emews_cli, tmp_path, sweep(pool="inprocess", procs=3)))


@pytest.mark.slow
@pytest.mark.mpi
def test_mpi_pool(emews_cli, tmp_path, sweep):
    assert_the_expected_rows(run_study(emews_cli, tmp_path, sweep(pool="mpi", procs=3)))


@pytest.mark.mpi
@pytest.mark.slow
def test_zmq_service_and_an_attached_pool(jobs, sweep):
    expdir = serve_study(jobs, sweep(procs=3))
    assert_the_expected_rows(SQLiteStore(expdir / "results.db", create=False))


@pytest.mark.mpi
@pytest.mark.slow
def test_postgresql_service_and_a_database_pool(jobs, sweep, postgres_url):
    expdir = serve_study(jobs, sweep(procs=3, storage=postgres_url))
    assert not (expdir / "results.db").exists()
    assert_the_expected_rows(study_store(expdir, postgres_url, create=False))


@pytest.mark.slow
def test_swift_t(tmp_path, swift_t):
    from test_swift_workflow import swift_study

    settings = {"algorithm": "sweep", "options": {"file": str(tmp_path / "points.jsonl")},
                "space": SPACE, "seed": 4, "batch_size": 2, "stop": {"budget": len(POINTS)},
                "constraints": [CONSTRAINT]}
    (tmp_path / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in POINTS))
    expdir = swift_study(tmp_path, swift_t, settings, 4, OBJECTIVE, "toy",
                         MODEL_RETURN=",".join(OBJECTIVES))
    assert_the_expected_rows(SQLiteStore(expdir / "results.db", create=False))
