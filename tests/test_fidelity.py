"""Learning curves and pruning: ``emews.report`` through every path to the master, the store's
reports, the pruners' rules (ASHA replayed from the store), and bad reports."""

import json
import math
from pathlib import Path

import pytest

import emews
from emews.core import pruners
from emews.errors import ConfigError
from emews.evaluate import Objective
from emews.status import Status
from emews.store import SQLiteStore

ASHA = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}


def value_at(params, step):
    """The curve of tests/support/fidelity_models.py's models."""
    return params["x"] ** 2 + 1.0 / step


@pytest.fixture
def open_study():
    """``open_study(expdir)``: its store, read-only (closed at the end of the test)."""
    stores = []

    def make(expdir):
        stores.append(SQLiteStore(expdir / "results.db", readonly=True))
        return stores[-1]

    yield make
    for store in stores:
        store.close()


def asha_verdicts(reports, min_resource=1, max_resource=9, eta=3):
    """The ASHA rule, written out for the test: replaying ``reports`` in the order stored,
    ``{(id, attempt): step it must stop at}`` for every run the rule stops."""
    rungs, passed, stops = {}, {}, {}
    for row in reports:
        run = (row["id"], row["attempt"])
        if run in stops:
            continue
        value = math.inf if row["value"] is None else row["value"]
        k = passed.get(run, 0)
        while min_resource * eta ** k <= row["step"] and min_resource * eta ** k < max_resource:
            rungs.setdefault(k, []).append(value)
            passed[run] = k = k + 1
            best = sorted(rungs[k - 1])[max(len(rungs[k - 1]) // eta - 1, 0)]
            if math.isinf(value) or value > best:
                stops[run] = row["step"]
                break
    return stops


def check_asha_study(store, budget):
    """The stored study follows ASHA: rungs, stops, the best never pruned, curves kept."""
    rows, reports = store.rows(), store.reports()
    assert len(rows) == budget and {r["status"] for r in rows} <= {Status.DONE, Status.PRUNED}
    stops = asha_verdicts(reports)
    pruned = {(r["id"], r["attempt"]): r for r in rows if r["status"] == Status.PRUNED}
    assert set(pruned) == set(stops) and pruned      # exactly the runs the rule stops
    for run, row in pruned.items():
        curve = [r for r in reports if (r["id"], r["attempt"]) == run]
        assert curve[-1]["step"] == stops[run] in (1, 3)         # stopped at a rung step
        assert row["result"] == curve[-1]["value"] and row["error"] == f"pruned at step {stops[run]}"
        assert [r["step"] for r in curve] == list(range(1, stops[run] + 1))
    for row in rows:
        if row["status"] == Status.DONE:
            assert [r["step"] for r in reports if r["id"] == row["id"]] == list(range(1, 10))
            assert row["result"] == pytest.approx(value_at(row["params"], 9))
    best = min(rows, key=lambda r: r["params"]["x"] ** 2)
    assert best["status"] == Status.DONE and store.best()["id"] == best["id"]
    assert all(r["metrics"]["accuracy"] == pytest.approx(1 / (1 + r["step"])) for r in reports)


@pytest.mark.parametrize("isolate", [True, False], ids=["nanny", "in-process"])
def test_an_asha_study_in_process_stops_runs_at_rungs_by_the_rule(toy_config, isolate,
                                                                  open_study):
    config = toy_config(objective="fidelity_models:curve", budget=14, isolate=isolate,
                        pruner="asha")
    config["pruner"] = ASHA
    result = emews.run(config)
    store = open_study(result.expdir)
    check_asha_study(store, 14)
    for row in store.rows(Status.PRUNED):   # the model trained no step past its stop
        trained = (result.expdir / "run" / row["run_id"] / "trained.txt").read_text()
        assert trained.split() == [str(s) for s in range(1, int(row["error"][-1]) + 1)]


@pytest.mark.mpi
def test_an_asha_study_on_a_real_mpiexec_pool_follows_the_rule(emews_cli, study, tmp_path,
                                                               open_study):
    path = study(system={"procs": 4, "progress_interval": 0.0},
                 study={"budget": 14, "objective": "fidelity_models:curve", "seed": 3,
                        "pruner": "asha"},
                 pruner=ASHA)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = open_study(expdir)
    check_asha_study(store, 14)
    assert {row["rank"] for row in store.rows()} <= {1, 2, 3}


MODELS = Path(__file__).parent / "support" / "candle_models"


class Judge:
    """A pool's side of the reports: keeps each, and stops the run at ``stop_at``."""

    def __init__(self, stop_at=None):
        self.reports, self.stop_at = [], stop_at

    def __call__(self, report):
        self.reports.append(report)
        return report.step == self.stop_at


@pytest.fixture
def keras_objective(tmp_path, monkeypatch):
    """``make(impl)``: an Objective running the Keras model ``curve`` through the CANDLE
    runner (``py`` in a nanny, or ``app`` through the Model Shell)."""
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)

    def make(impl):
        env = {"MODEL_PYTHON_DIR": str(MODELS), "CANDLE_DATA_DIR": str(tmp_path / "data"),
               "APP_PYTHONPATH": str(MODELS)}
        return Objective(impl, model_name="curve", expdir=tmp_path / "EXP001",
                         exp_id="EXP001", model_env=env, grace=2.0)

    return make


def epochs_begun(tmp_path, run_id):
    path = tmp_path / "data" / "curve" / "Output" / "EXP001" / run_id / "epochs.txt"
    return [int(line) for line in path.read_text().split()]


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["py", "app"])
def test_a_keras_model_reports_every_epoch_and_is_stopped(keras_objective, tmp_path, impl):
    objective = keras_objective(impl)
    try:
        judge = Judge()
        outcome = objective.evaluate(json.dumps({"epochs": 4}), "RUN000001", report=judge)
        assert outcome.status == Status.DONE, outcome.error
        assert [r.step for r in judge.reports] == [1, 2, 3, 4]
        assert all(set(r.metrics) == {"loss", "val_loss"} and r.value == r.metrics["val_loss"]
                   for r in judge.reports)
        assert outcome.value == pytest.approx(judge.reports[-1].value)
        judge = Judge(stop_at=2)
        outcome = objective.evaluate(json.dumps({"epochs": 40}), "RUN000002", report=judge)
    finally:
        objective.close()
    assert outcome.status == Status.PRUNED and outcome.error == "pruned at step 2"
    assert outcome.value == pytest.approx(judge.reports[1].value)
    begun = epochs_begun(tmp_path, "RUN000002")
    if impl == "py":      # stopped at the end of epoch 2, through Keras's stop_training
        assert [r.step for r in judge.reports] == [1, 2] and begun == [1, 2]
    else:                 # an app trains on until its signal: stopped long before epoch 40
        assert [r.step for r in judge.reports][:2] == [1, 2] and len(begun) < 40
