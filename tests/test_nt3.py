"""The NT3-style Keras model: trained for real through ``py`` and ``app``, soft-stopped, and its
example HPO run end to end on a local MPI pool. TensorFlow makes every one of these slow."""

import json
from pathlib import Path

import pytest

from emews.models import candle_compat
from emews.evaluate import Objective
from emews.store import SQLiteStore

pytestmark = pytest.mark.slow
REPO = Path(__file__).parent.parent


@pytest.fixture
def nt3(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)

    def make(impl, **env):
        return Objective(impl, model_name="nt3", expdir=tmp_path / "EXP001", exp_id="EXP001",
                         model_env={"CANDLE_DATA_DIR": str(tmp_path / "data"),
                                    "TF_NUM_INTRAOP_THREADS": "1", **env})

    return make


def check_one_epoch(outcome, run_dir):
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    history = json.loads((run_dir / "history.txt").read_text())
    assert len(history["val_loss"]) == 1 and outcome.value == history["val_loss"][0]
    assert 0 < outcome.value < 5 and 0 <= history["val_accuracy"][0] <= 1
    assert float((run_dir / "result.txt").read_text()) == outcome.value
    params = candle_compat.read_default_model(run_dir / "parameters.txt")
    assert params["epochs"] == 1 and params["dense"] == [8] and params["model_name"] == "nt3"


def test_nt3_trains_one_epoch_in_the_worker_s_interpreter(nt3, tmp_path):
    outcome = nt3("py").evaluate('{"epochs": 1, "dense": "8"}', "RUN000001")
    check_one_epoch(outcome, tmp_path / "EXP001" / "run" / "RUN000001")


def test_nt3_trains_one_epoch_through_the_model_shell(nt3, tmp_path):
    outcome = nt3("app").evaluate('{"epochs": 1, "dense": "8"}', "RUN000002")
    run_dir = tmp_path / "EXP001" / "run" / "RUN000002"
    check_one_epoch(outcome, run_dir)
    log = (run_dir / "model.log").read_text()
    assert "MODEL.SH: START" in log and "val_loss: " in log and "IMPROVE_RESULT" in log


def test_benchmark_timeout_stops_training_softly_with_a_result(nt3, tmp_path):
    outcome = nt3("py", BENCHMARK_TIMEOUT="1").evaluate('{"epochs": 400}', "RUN000003")
    assert outcome.status == "done", outcome.error
    history = json.loads((tmp_path / "EXP001" / "run" / "RUN000003" / "history.txt").read_text())
    assert 1 <= len(history["val_loss"]) < 400
    assert outcome.value == history["val_loss"][-1]


@pytest.mark.mpi
def test_the_nt3_example_hpo_runs_on_the_mpi_pool(emews_cli, tmp_path):
    done = emews_cli("run", REPO / "examples" / "nt3_hpo" / "study.toml", "--budget", "4",
                     "--data-dir", tmp_path / "data", timeout=400)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "data" / "nt3_hpo").iterdir()
    store = SQLiteStore(expdir / "results.db")
    rows = store.rows()
    store.close()
    assert len(rows) == 4 and {r["status"] for r in rows} == {"done"}
    assert {r["rank"] for r in rows} <= {1, 2}
    assert all(0 < r["result"] < 5 for r in rows)
    assert "best value" in done.stdout
    for row in rows:  # every final metric of the Keras History is kept; val_loss is the result
        assert {"loss", "val_loss", "accuracy", "val_accuracy"} <= set(row["metrics"])
        assert row["metrics"]["val_loss"] == pytest.approx(row["result"])
