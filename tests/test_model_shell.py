"""The Model Shell: ``app`` and ``container`` runs in their own processes.

Parameters travel as JSON in a file: values with quotes, ``;``, ``$()``, backslashes, newlines
and non-ASCII text reach the model unchanged. The singularity/apptainer runtime is a stand-in
script (tests/support/container/singularity) that records its argv and runs the image's
command natively; tests/test_containers.py runs a real Charliecloud container.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from emews._errors import ConfigError
from emews.evaluate import Objective

SUPPORT = Path(__file__).parent / "support"
MODELS = str(SUPPORT / "candle_models")
NASTY = {"x": 1.25, "quote": "it's \"quoted\"", "semicolon": "a; touch PWNED_SEMI",
         "subst": "$(touch PWNED_SUBST) `touch PWNED_TICK`", "vars": "$HOME ${PATH} %s {}",
         "backslash": "C:\\temp\\new\\n\\\\", "newline": "first\nsecond\r\n",
         "unicode": "naïve café ☃ 日本語 \u202e", "glob": "* ?", "empty": "",
         "nested": {"list": ["a'b", "c\"d"], "dash": "--run_id=evil"}}


def check_nothing_ran(*directories):
    for directory in directories:
        assert not list(Path(directory).glob("PWNED*"))


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)

    def make(model_name="toy", timeout=None, **env):
        env = {"MODEL_PYTHON_DIR": MODELS, "CANDLE_DATA_DIR": str(tmp_path / "data"), **env}
        return Objective("app", model_name=model_name, timeout=timeout,
                         expdir=tmp_path / "EXP001", exp_id="EXP001", model_env=env)

    return make


def received(tmp_path, run_id):
    path = tmp_path / "data" / "toy" / "Output" / "EXP001" / run_id / "received.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_an_app_run_goes_through_the_model_shell_into_model_log(app, tmp_path):
    outcome = app().evaluate(json.dumps({"x": 0.5}), "RUN000001")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert outcome.value == 2.5
    run_dir = tmp_path / "EXP001" / "run" / "RUN000001"
    log = (run_dir / "model.log").read_text()
    assert "MODEL.SH: START run RUN000001 of EXP001, model toy" in log
    assert "toy model ran" in log and "IMPROVE_RESULT 2.5" in log
    assert (run_dir / "parameters.txt").is_file() and (run_dir / "history.txt").is_file()
    assert received(tmp_path, "RUN000001")["_pid"] != os.getpid()


def test_parameters_reach_an_app_model_unchanged(app, tmp_path):
    outcome = app().evaluate(json.dumps(NASTY, ensure_ascii=False), "RUN000002")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    got = received(tmp_path, "RUN000002")
    assert {key: got[key] for key in NASTY} == NASTY
    run_dir = tmp_path / "EXP001" / "run" / "RUN000002"
    check_nothing_ran(run_dir, tmp_path, received(tmp_path, "RUN000002")["_cwd"])


def test_the_site_langs_app_is_sourced_and_app_pythonpath_finds_the_model(app, tmp_path):
    langs_app = tmp_path / "langs-app-test.sh"
    langs_app.write_text('export TOY_MARK="set by langs-app"\n')
    outcome = app(MODEL_PYTHON_DIR="", APP_PYTHONPATH=MODELS,
                  EMEWS_LANGS_APP=str(langs_app)).evaluate('{"x": 1}', "RUN1")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert received(tmp_path, "RUN1")["_toy_mark"] == "set by langs-app"


def test_sh_timeout_kills_the_run_and_keeps_its_log_tail(app, tmp_path):
    outcome = app(timeout=3).evaluate('{"x": 1, "behaviour": "sleep", "seconds": 300}', "RUN1")
    assert outcome.status == "failed"
    assert outcome.error == "timeout after 3 s"
    assert "toy model ran" in outcome.log_tail and "emews: timeout after 3 s: the run was killed" in outcome.log_tail
    with pytest.raises(ProcessLookupError):
        os.kill(received(tmp_path, "RUN1")["_pid"], 0)


def test_a_missing_model_module_fails_that_run_with_the_runner_s_reason(app):
    outcome = app("nosuch").evaluate('{"x": 1}', "RUN1")
    assert outcome.status == "failed"
    assert outcome.error.startswith("the model exited with status 1: emews.models.runner: "
                                    "error: MODEL_NAME: no model module 'nosuch_baseline_keras2'")
    assert "MODEL.SH: START" in outcome.log_tail


def test_a_model_exception_leaves_its_traceback_in_the_log_tail(app):
    outcome = app().evaluate('{"behaviour": "raise"}', "RUN1")
    assert outcome.status == "failed"
    assert "RuntimeError: the toy model failed on purpose" in outcome.error
    assert "Traceback" in outcome.log_tail


@pytest.fixture
def container(tmp_path, monkeypatch):
    """An Objective for the container implementation, with stand-in runtimes on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("singularity", "apptainer"):
        shutil.copy(SUPPORT / "container" / "singularity", bin_dir / name)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_ARGV_LOG", str(tmp_path / "argv.jsonl"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    data = tmp_path / "data"
    data.mkdir()

    def make(**env):
        env = {"CANDLE_IMAGE": str(SUPPORT / "container" / "model.sif"),
               "CANDLE_DATA_DIR": str(data), **env}
        return Objective("container", model_name="improve", expdir=tmp_path / "EXP001",
                         exp_id="EXP001", model_env=env)

    def argv():
        return [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]

    return make, argv


def test_a_container_run_execs_the_image_s_train_sh_and_reads_improve_result(container,
                                                                            tmp_path):
    make, argv = container
    outcome = make().evaluate(json.dumps({"x": 0.75}), "RUN000004")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    assert outcome.value == 1.5
    run_dir = tmp_path / "EXP001" / "run" / "RUN000004"
    assert not (run_dir / "result.txt").exists()
    (command,) = argv()
    assert Path(command[0]).name == "singularity"
    assert command[1:] == [
        "exec", "--nv", "--bind", f"{tmp_path / 'data'}:/candle_data_dir",
        "--bind", f"{run_dir}:/emews_run",
        "--bind", f"{tmp_path / 'EXP001' / 'checkpoints' / 'RUN000004'}:/emews_run/checkpoints",
        "--pwd", "/emews_run",
        "--env", "CANDLE_DATA_DIR=/candle_data_dir", "--env", "EMEWS_RUN_DIR=/emews_run",
        "--env", "EMEWS_PARAMS_FILE=/emews_run/params.json", "--env", "EXP_ID=EXP001",
        "--env", "RUN_ID=RUN000004", "--env", "EMEWS_CHECKPOINT_DIR=/emews_run/checkpoints",
        str(SUPPORT / "container" / "model.sif"), "train.sh",
        "3", "/candle_data_dir", "--params_file", "/emews_run/params.json",
        "--experiment_id", "EXP001", "--run_id", "RUN000004"]
    got = json.loads((run_dir / "received.json").read_text())
    assert (got["cuda"], got["data_dir"], got["run_id"]) == ("3", str(tmp_path / "data"),
                                                             "RUN000004")


def test_parameters_reach_a_container_model_unchanged(container, tmp_path):
    make, _ = container
    outcome = make().evaluate(json.dumps(NASTY, ensure_ascii=False), "RUN5")
    assert outcome.status == "done", (outcome.error, outcome.log_tail)
    run_dir = tmp_path / "EXP001" / "run" / "RUN5"
    assert json.loads((run_dir / "received.json").read_text(encoding="utf-8"))["params"] == NASTY
    check_nothing_ran(run_dir, tmp_path)


def test_apptainer_gpus_and_extra_args_are_configurable(container):
    make, argv = container
    outcome = make(CANDLE_CONTAINER_RUNTIME="apptainer", CANDLE_CONTAINER_GPUS="none",
                   CANDLE_CONTAINER_ARGS='["--cleanenv"]',
                   MODEL_ACTION="train").evaluate('{"x": 2}', "RUN6")
    assert outcome.value == 4.0
    (command,) = argv()
    assert Path(command[0]).name == "apptainer" and command[1:3] == ["exec", "--bind"]
    assert command[command.index("--cleanenv") + 1] == str(SUPPORT / "container" / "model.sif")


@pytest.mark.parametrize("impl", ["app", "py"])
def test_model_type_singularity_is_the_container_implementation(container, impl):
    make, _ = container
    objective = Objective(impl, model_env={"CANDLE_MODEL_TYPE": "SINGULARITY",
                                           "CANDLE_IMAGE": str(SUPPORT / "container" /
                                                               "model.sif")})
    assert objective.impl == "container"


def test_no_container_runtime_on_path_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="container_runtime .CANDLE_CONTAINER_RUNTIME.: must "
                                          "name an installed runtime: none of"):
        Objective("container", model_env={"CANDLE_IMAGE": "model.sif"})
