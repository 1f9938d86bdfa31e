"""The model runner through the ``py`` implementation: contract, files, values, bad input."""

import json
import sys

import pytest

from emews.models import candle_compat, runner
from emews.evaluate import Objective

MODELS = str(__import__("pathlib").Path(__file__).parent / "support" / "candle_models")


@pytest.fixture
def objective(tmp_path, monkeypatch):
    """An Objective running the CANDLE model runner in this process, and its experiment dir."""
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))

    def make(model_name="toy", **env):
        env = {"MODEL_PYTHON_DIR": MODELS, "CANDLE_DATA_DIR": str(tmp_path / "data"), **env}
        return Objective("py", model_name=model_name, expdir=tmp_path / "EXP001",
                         exp_id="EXP001", model_env=env)

    return make


def received(tmp_path, run_id, model="toy"):
    path = tmp_path / "data" / model / "Output" / "EXP001" / run_id / "received.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_value_is_the_last_epoch_and_the_run_leaves_its_files(objective, tmp_path, capfd):
    outcome = objective().evaluate(json.dumps({"x": 1.5}), "RUN000001")
    assert outcome.status == "done", outcome.error
    assert outcome.value == 3.5
    run_dir = tmp_path / "EXP001" / "run" / "RUN000001"
    assert float((run_dir / "result.txt").read_text()) == 3.5
    assert json.loads((run_dir / "history.txt").read_text())["val_loss"] == [4.5, 2.5, 3.5]
    written = candle_compat.read_default_model(run_dir / "parameters.txt")
    assert written["x"] == 1.5 and written["note"] == "from the default-model file"
    assert written["run_id"] == "RUN000001" and written["experiment_id"] == "EXP001"
    assert "IMPROVE_RESULT 3.5" in capfd.readouterr().out  # the nanny's output is the worker's


def test_json_overrides_the_default_model_and_ids_reach_the_model(objective, tmp_path):
    objective().evaluate(json.dumps({"x": 2.0, "epochs": 9, "units": [4, 2]}), "RUN000002")
    got = received(tmp_path, "RUN000002")
    assert (got["x"], got["epochs"], got["units"]) == (2.0, 9, [4, 2])
    assert got["note"] == "from the default-model file"
    assert got["output_dir"] == str(tmp_path / "data" / "toy" / "Output" / "EXP001" /
                                    "RUN000002")


@pytest.mark.parametrize("epoch, expected", [("last", 2.0), ("min", 1.0), ("max", 3.0)])
def test_model_return_epoch_picks_last_min_or_max(objective, epoch, expected):
    outcome = objective(MODEL_RETURN_EPOCH=epoch).evaluate('{"x": 0}', f"RUN{epoch}")
    assert outcome.value == expected


def test_model_return_picks_another_key(objective):
    assert objective(MODEL_RETURN="loss").evaluate('{"x": 0}', "RUN1").value == 0.25


def test_the_interpreter_stays_warm_between_runs(objective, tmp_path):
    model = objective()
    model.evaluate('{"x": 0}', "RUN1")
    model.evaluate('{"x": 0}', "RUN2")
    assert received(tmp_path, "RUN1")["_imports"] == received(tmp_path, "RUN2")["_imports"]


def test_model_python_script_names_the_module(objective):
    outcome = objective("anything", MODEL_PYTHON_SCRIPT="toy_baseline_keras2.py").evaluate(
        '{"x": 1}', "RUN1")
    assert outcome.status == "done" and outcome.value == 3.0


def test_benchmark_timeout_reaches_the_model_as_params_timeout(objective, tmp_path):
    objective(BENCHMARK_TIMEOUT="42").evaluate('{"x": 1}', "RUN1")
    assert received(tmp_path, "RUN1")["timeout"] == 42.0


def test_the_runner_uses_candle_when_candle_lib_is_absent():
    runner.use_candle()
    assert sys.modules["candle"] is candle_compat


@pytest.mark.parametrize("env, model_name, params, reason", [
    ({}, "nosuch", {}, "MODEL_NAME: no model module 'nosuch_baseline_keras2' on "
                       "MODEL_PYTHON_DIR="),
    ({}, "norun", {}, "must define run() (see emews/models/README.md), got "
                      "'norun_baseline_keras2'"),
    ({"MODEL_RETURN": "val_auc"}, "toy", {"x": 1}, "MODEL_RETURN 'val_auc' is not among the "
                                                   "returned keys ['loss', 'val_loss']"),
    ({}, "toy", {"behaviour": "text"}, "the model returned a non-numeric result: "
                                       "'not a number'"),
    ({}, "toy", {"behaviour": "nan"}, "the model returned NaN"),
    ({}, "toy", {"behaviour": "raise"}, "RuntimeError: the toy model failed on purpose"),
    ({"CANDLE_DEFAULT_MODEL_FILE": "/nonexistent/toy.txt"}, "toy", {},
     "CANDLE_DEFAULT_MODEL_FILE: the default-model file must exist, got '/nonexistent/toy.txt'"),
    ({"FRAMEWORK": "pytorch"}, "toy", {}, "no model module 'toy_baseline_pytorch'"),
])
def test_bad_input_is_one_clear_failure_of_that_run(objective, env, model_name, params, reason):
    outcome = objective(model_name, **env).evaluate(json.dumps(params), "RUN1")
    assert outcome.status == "failed"
    assert reason in outcome.error


def test_a_model_whose_own_default_model_file_is_missing_fails_naming_it(objective):
    outcome = objective("nodefault").evaluate("{}", "RUN1")
    assert outcome.status == "failed"
    assert outcome.error.endswith("nodefault_default_model.txt: the default-model file must "
                                  "exist")


def test_a_string_for_a_list_valued_parameter_becomes_a_list(objective, tmp_path):
    objective().evaluate(json.dumps({"x": 0, "layers": "64 32", "name": "a b"}), "RUN1")
    assert received(tmp_path, "RUN1")["layers"] == [64, 32]
    assert received(tmp_path, "RUN1")["name"] == "a b"


def test_the_command_line_runner_passes_extra_arguments_to_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MODEL_NAME", "toy")
    monkeypatch.setenv("MODEL_PYTHON_DIR", MODELS)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "params.json").write_text('{"x": 1}')
    code = runner.main(["--params_file", str(tmp_path / "params.json"), "--run_dir",
                        str(tmp_path / "run"), "--experiment_id", "EXP001", "--run_id", "R7",
                        "--epochs", "5"])
    assert code == 0 and float((tmp_path / "run" / "result.txt").read_text()) == 3.0
    got = json.loads((tmp_path / "data" / "toy" / "Output" / "EXP001" / "R7" /
                      "received.json").read_text())
    assert got["epochs"] == 5 and got["run_id"] == "R7"


def test_the_command_line_runner_names_a_bad_params_file(tmp_path, capsys):
    (tmp_path / "params.json").write_text("[1, 2]")
    assert runner.main(["--params_file", str(tmp_path / "params.json")]) == 1
    assert capsys.readouterr().err.strip().endswith("params.json: must hold a JSON object, "
                                                    "got 'list'")


def test_an_importable_candle_lib_is_used_rather_than_the_stand_in(tmp_path, monkeypatch):
    (tmp_path / "candle.py").write_text('ORIGIN = "an installed candle"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "candle", raising=False)
    runner.use_candle()
    assert sys.modules["candle"].ORIGIN == "an installed candle"


def test_a_study_records_each_bad_run_and_goes_on(tmp_path, monkeypatch):
    import emews
    from emews.store import SQLiteStore

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)
    (tmp_path / "space.json").write_text(json.dumps([
        {"name": "x", "type": "float", "lower": 0.0, "upper": 1.0},
        {"name": "behaviour", "type": "categorical", "values": ["ok", "text", "nan"]}]))
    result = emews.run({
        "system": {"pool": "inprocess", "procs": 2, "progress_interval": 0.0},
        "study": {"name": "bad", "space": str(tmp_path / "space.json"), "budget": 12, "seed": 1,
                  "impl": "py", "model_name": "toy", "data_dir": str(tmp_path / "data")},
        "model": {"python_dir": MODELS}})
    store = SQLiteStore(result.expdir / "results.db")
    rows = store.rows()
    store.close()
    assert len(rows) == 12 and result.evaluations == 12
    reasons = {"text": "the model returned a non-numeric result: 'not a number'",
               "nan": "the model returned NaN"}
    for row in rows:
        behaviour = row["params"]["behaviour"]
        if behaviour == "ok":
            assert row["status"] == "done" and row["result"] == row["params"]["x"] + 2
        else:
            assert row["status"] == "failed" and row["error"] == reasons[behaviour]
    assert {r["params"]["behaviour"] for r in rows} == {"ok", "text", "nan"}


@pytest.mark.parametrize("epoch, expected", [("last", [2.0, 0.25]), ("min", [1.0, 0.25])])
def test_several_objectives_come_from_the_history_each_at_its_epoch(objective, tmp_path,
                                                                   epoch, expected):
    """MODEL_RETURN as a list (docs/src/multiobjective.md): the runner extracts each objective
    at MODEL_RETURN_EPOCH."""
    model = Objective("py", model_name="toy", model_return="val_loss,loss",
                      expdir=tmp_path / "EXP001", exp_id="EXP001",
                      model_env={"MODEL_PYTHON_DIR": MODELS, "MODEL_RETURN_EPOCH": epoch,
                                 "CANDLE_DATA_DIR": str(tmp_path / "data")})
    outcome = model.evaluate('{"x": 0}', "RUN1")
    assert outcome.status == "done" and outcome.objectives == expected
    assert outcome.value == expected[0] and outcome.metrics["loss"] == 0.25
