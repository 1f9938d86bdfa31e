"""CANDLE/Supervisor's model execution conventions, run for real.

Checked against Supervisor's workflows/common/sh/model.sh, workflows/common/python/
model_runner.py and runner_utils.py, and workflows/common/sh/utils.sh (get_expid):

1. ``FRAMEWORK=keras`` means the ``<model>_baseline_keras2`` module (``keras2`` still works);
2. ``model.sh FRAMEWORK PARAMS EXPID RUNID MODEL_TYPE MODEL_NAME MODEL_ACTION`` runs the model,
   with PARAMS written to ``params.json`` and never run through a shell;
3. results ``IMPROVE_RESULT <v>``, ``<metric> <v>``, a bare number; ``None``, ``nan`` and
   ``inf`` fail the evaluation with that reason;
4. ``parameters.txt`` (``[Global Params]``, ``[Monitor Params]``), ``rank.txt``,
   ``run_command.txt``, ``../output.csv``; a run directory holding ``stop.marker`` is not run,
   and a run that stops before its epochs leaves one;
5. ``[study] experiment_numbering = "supervisor"`` numbers experiments from ``EXP000``.

The toy models are in tests/support/supervisor_models/.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emews import _config as configuration
from emews import _experiment as experiment
from emews._errors import ConfigError
from emews.evaluate import EvaluationFailed, Objective
from emews.evaluate._app import model_shell
from emews.evaluate._model_output import parse_result, read_app_result, read_improve_result
from emews.models import candle_compat, runner

SUPPORT = Path(__file__).parent / "support" / "supervisor_models"
MODELS = str(SUPPORT)
EVIL = "$(touch PWNED_SUBST) `touch PWNED_TICK`; touch PWNED_SEMI 'quote\" \\ \n naïve"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The model's settings, CANDLE_DATA_DIR under tmp_path, this interpreter's python3."""
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)
    monkeypatch.delenv("ADLB_RANK_SELF", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return {"MODEL_PYTHON_DIR": MODELS, "CANDLE_DATA_DIR": str(tmp_path / "data")}


def ran(tmp_path, exp_id, run_id):
    path = tmp_path / "data" / "sup" / "Output" / exp_id / run_id / "ran.json"
    return json.loads(path.read_text(encoding="utf-8"))


def py_objective(tmp_path, env, **extra):
    return Objective("py", model_name="sup", expdir=tmp_path / "EXP000", exp_id="EXP000",
                     model_env={**env, **extra})


def app_objective(tmp_path, env, app=None, **extra):
    return Objective("app", app=app, model_name="sup", expdir=tmp_path / "EXP000",
                     exp_id="EXP000", model_env={**env, **extra})


def model_sh(tmp_path, env, *args, **extra):
    """``bash model.sh ARGS...`` as Supervisor's Swift app function runs it."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("EMEWS_RUN_DIR", "ADLB_RANK_SELF")}
    environ.update(env, TURBINE_OUTPUT=str(tmp_path / "EXP000"), MODEL_RETURN="val_loss",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    environ.update(extra)
    return subprocess.run(["bash", model_shell(), *args], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=120, check=False)


# 1. FRAMEWORK=keras

@pytest.mark.parametrize("framework", ["keras", "keras2"])
def test_framework_keras_and_keras2_both_run_the_keras2_baseline(tmp_path, env, framework):
    spec = runner.ModelSpec("sup", framework=framework)
    assert spec.module_name == "sup_baseline_keras2"
    outcome = py_objective(tmp_path, env, FRAMEWORK=framework).evaluate('{"x": 0.5}', "RUN1")
    assert outcome.status == "done", outcome.error
    assert outcome.value == 0.5
    assert ran(tmp_path, "EXP000", "RUN1")["x"] == 0.5


def test_another_framework_names_its_own_baseline(tmp_path, env):
    outcome = py_objective(tmp_path, env, FRAMEWORK="pytorch").evaluate('{"x": 1}', "RUN1")
    assert outcome.status == "failed"
    assert "no model module 'sup_baseline_pytorch'" in outcome.error


# 2. model.sh's 7-argument call

def test_model_sh_runs_supervisor_s_seven_argument_call(tmp_path, env):
    params = {"x": 0.25, "dense": "16 8", "evil": EVIL}
    done = model_sh(tmp_path, env, "keras", json.dumps(params), "EXP000", "RUN000001",
                    "BENCHMARK", "sup", "train")
    run_dir = tmp_path / "EXP000" / "RUN000001"
    log = (run_dir / "model.log").read_text(encoding="utf-8")
    assert done.returncode == 0, (done.stdout, done.stderr, log)
    assert done.stdout == f"redirecting to: LOG_FILE={run_dir}/model.log\n"
    assert json.loads((run_dir / "params.json").read_text(encoding="utf-8")) == params
    assert (run_dir / "result.txt").read_text() == "0.25\n"
    got = ran(tmp_path, "EXP000", "RUN000001")
    assert (got["x"], got["dense"], got["evil"]) == (0.25, [16, 8], EVIL)
    assert (got["experiment_id"], got["run_id"]) == ("EXP000", "RUN000001")
    assert "MODEL.SH: START (Supervisor's call)" in log and "IMPROVE_RESULT 0.25" in log
    assert "MODEL.SH: END: SUCCESS" in log and "Warning" not in log
    assert (run_dir / "rank.txt").read_text() == "None\n"
    assert (run_dir / "parameters.txt").read_text().startswith("[Global Params]\n")
    assert (run_dir / "run_command.txt").read_text() == (
        f"python3 -u -m emews.models.runner --params_file {run_dir}/params.json --run_dir "
        f"{run_dir} --experiment_id EXP000 --run_id RUN000001\n")
    rows = list(csv.reader((run_dir.parent / "output.csv").open(encoding="utf-8")))
    assert rows == [["0.25", "16 8", EVIL, "RUN000001", "0.25"]]
    assert not list(tmp_path.rglob("PWNED*"))


def test_model_sh_keeps_its_own_convention(tmp_path):
    done = subprocess.run(["bash", model_shell(), "printf", "%s|", "a b", "$(x)"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.endswith("a b|$(x)|")


def test_a_failed_model_under_the_seven_argument_call_exits_1_or_is_ignored(tmp_path, env):
    args = ("keras", '{"x": "not a number"}', "EXP000", "RUN2", "BENCHMARK", "sup", "train")
    done = model_sh(tmp_path, env, *args)
    log = (tmp_path / "EXP000" / "RUN2" / "model.log").read_text()
    assert done.returncode == 1, log
    assert "MODEL ERROR! (CODE=1)" in log and "ABORTING WORKFLOW (exit 1)" in log
    done = model_sh(tmp_path, env, *args, IGNORE_ERRORS="1")
    assert done.returncode == 0
    assert not (tmp_path / "EXP000" / "RUN2" / "result.txt").exists()  # Supervisor's NaN


def test_a_nan_result_under_the_seven_argument_call_fails_the_run(tmp_path, env):
    done = model_sh(tmp_path, env, "keras", '{"x": "nan"}', "EXP000", "RUN3", "BENCHMARK",
                    "sup", "train")
    run_dir = tmp_path / "EXP000" / "RUN3"
    log = (run_dir / "model.log").read_text()
    assert done.returncode == 1, log
    assert "emews.models.runner: error: the model returned NaN" in log
    assert not (run_dir / "result.txt").exists() and not (run_dir / "output.csv").exists()


@pytest.mark.slow
def test_sh_timeout_under_the_seven_argument_call_stops_the_model(tmp_path, env):
    # 8 s: time for the model's interpreter to start and say so on a loaded machine
    done = model_sh(tmp_path, env, "keras", '{"x": 1, "sleep": 300}', "EXP000", "RUN6",
                    "BENCHMARK", "sup", "train", SH_TIMEOUT="8")
    run_dir = tmp_path / "EXP000" / "RUN6"
    log = (run_dir / "model.log").read_text()
    assert done.returncode == 1, log
    assert "sup model ran" in log and "TIMEOUT ERROR! (timeout=8)" in log
    assert not (run_dir / "result.txt").exists()


def test_the_result_reader_of_model_sh_rejects_nan_and_writes_files(tmp_path):
    run_dir = tmp_path / "run" / "RUN4"
    run_dir.mkdir(parents=True)
    (run_dir / "params.json").write_text('{"lr": 0.1, "dense": "8 4"}')
    (run_dir / "model.log").write_text("noise\nIMPROVE_RESULT nan\n")
    command = [sys.executable, "-m", "emews.evaluate", "record-run", str(run_dir), "RUN4", "--",
               "python3", "-u", "x.py"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "the model reported NaN as its result" in done.stderr
    (run_dir / "model.log").write_text("IMPROVE_RESULT val_loss 1.5e-05\n")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (run_dir / "result.txt").read_text() == "1.5e-05\n"
    assert (run_dir / "run_command.txt").read_text() == "python3 -u x.py\n"
    assert (tmp_path / "run" / "output.csv").read_text() == "0.1,8 4,RUN4,1.5e-05\n"


def test_model_sh_seven_argument_singularity_call(tmp_path, env, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    container = Path(__file__).parent / "support" / "container"
    (bin_dir / "singularity").symlink_to(container / "singularity")
    data = tmp_path / "data"
    data.mkdir()
    done = model_sh(tmp_path, env, "keras", '{"x": 1.5}', "EXP000", "RUN5", "SINGULARITY",
                    str(container / "model.sif"), "train",
                    STANDIN_ARGV_LOG=str(tmp_path / "argv.jsonl"), CANDLE_CUDA_OFFSET="1",
                    PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                         f"{os.environ['PATH']}")
    run_dir = data / "model" / "Output" / "EXP000" / "RUN5"
    assert done.returncode == 0, (done.stdout, (run_dir / "model.log").read_text())
    assert (run_dir / "result.txt").read_text() == "3.0\n"
    (argv,) = [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert argv[1:] == ["exec", "--nv", "--bind", f"{data}:/candle_data_dir", "--bind",
                        f"{run_dir}:/emews_run", "--pwd", "/emews_run",
                        "--env", "CANDLE_DATA_DIR=/candle_data_dir",
                        "--env", "EMEWS_RUN_DIR=/emews_run",
                        "--env", "EMEWS_PARAMS_FILE=/emews_run/params.json",
                        "--env", "EXP_ID=EXP000", "--env", "RUN_ID=RUN5",
                        str(container / "model.sif"), "train.sh", "1",
                        "/candle_data_dir", "--params_file", "/emews_run/params.json",
                        "--experiment_id", "EXP000", "--run_id", "RUN5"]
    assert (run_dir / "run_command.txt").read_text().startswith("singularity exec --nv --bind")
    assert (run_dir.parent / "output.csv").read_text() == "1.5,RUN5,3.0\n"


# 3. result forms

@pytest.mark.parametrize("text, value", [
    ("0.5", 0.5), ("IMPROVE_RESULT 0.25", 0.25), ("val_loss 0.123", 0.123),
    ("IMPROVE_RESULT val_loss 0.123", 0.123), ("val_loss: 0.5\n", 0.5), ("-2", -2.0),
    ("1e-05", 1e-05)])
def test_result_forms_are_parsed(text, value):
    assert parse_result(text, "val_loss") == value


@pytest.mark.parametrize("text, reason", [
    ("None", "None"), ("nan", "NaN"), ("NaN", "NaN"), ("inf", "inf"), ("-inf", "-inf"),
    ("IMPROVE_RESULT val_loss nan", "NaN"), ("", "nothing")])
def test_none_nan_and_inf_fail_the_evaluation(text, reason):
    with pytest.raises(EvaluationFailed, match=f"the model reported {reason} as its result"):
        parse_result(text, "val_loss")


def test_a_labelled_improve_result_of_model_return_wins_in_an_app_s_and_a_container_s_log(tmp_path):
    log = tmp_path / "model.log"
    log.write_text("IMPROVE_RESULT val_loss 0.3\nepoch done\nIMPROVE_RESULT val_acc 0.9\n"
                   "2024-01-01 MODEL RUNNER INFO IMPROVE_RESULT: '0.7'\n")
    assert read_improve_result(log, "val_loss") == 0.3
    assert read_improve_result(log) == 0.7  # unlabelled: the last line, as Supervisor's awk
    assert read_app_result(None, log, "val_loss") == 0.3   # a container's log, read alike
    (tmp_path / "result.txt").write_text("val_loss 0.125\n")
    assert read_app_result(tmp_path, log, "val_loss") == 0.125


@pytest.mark.parametrize("lines, result_txt, status, expected", [
    (["IMPROVE_RESULT 0.25"], None, "done", 0.25),
    (["IMPROVE_RESULT val_loss 0.123"], None, "done", 0.123),
    (["IMPROVE_RESULT val_acc 0.9", "IMPROVE_RESULT val_loss 0.4"], None, "done", 0.4),
    ([], "0.5\n", "done", 0.5),
    ([], "val_loss 0.75\n", "done", 0.75),
    (["IMPROVE_RESULT None"], None, "failed", "the model reported None as its result"),
    (["IMPROVE_RESULT nan"], None, "failed", "the model reported NaN as its result"),
    ([], "inf\n", "failed", "the model reported inf as its result")])
def test_an_app_s_reported_result_is_read_as_supervisor_reads_it(tmp_path, env, lines,
                                                                  result_txt, status, expected):
    point = {"lines": lines, **({"result_txt": result_txt} if result_txt else {})}
    objective = app_objective(tmp_path, env,
                              app=[sys.executable, str(SUPPORT / "report_result.py")])
    outcome = objective.evaluate(json.dumps(point), "RUN1")
    assert outcome.status == status, (outcome.error, outcome.log_tail)
    if status == "done":
        assert outcome.value == expected
    else:
        assert outcome.error.startswith(expected)


# 4. the files a run leaves; stop.marker

def test_parameters_txt_has_supervisor_s_sections_and_reads_back(tmp_path, env):
    outcome = py_objective(tmp_path, env, BENCHMARK_TIMEOUT="30").evaluate(
        json.dumps({"x": 2, "dense": "16 8", "note": "it's"}), "RUN1")
    assert outcome.status == "done", outcome.error
    text = (tmp_path / "EXP000" / "run" / "RUN1" / "parameters.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == "[Global Params]"
    assert "x=2" in lines and "dense=[16, 8]" in lines and "note=\"it's\"" in lines
    assert "model_name='sup'" in lines and "run_id='RUN1'" in lines
    assert lines[-2:] == ["[Monitor Params]", "timeout=30.0"]
    params = candle_compat.read_default_model(tmp_path / "EXP000" / "run" / "RUN1" /
                                              "parameters.txt")
    assert (params["x"], params["dense"], params["note"], params["timeout"]) == (
        2, [16, 8], "it's", 30.0)


def test_an_app_run_leaves_rank_run_command_and_output_csv(tmp_path, env, monkeypatch):
    monkeypatch.setenv("ADLB_RANK_SELF", "5")
    objective = app_objective(tmp_path, env)
    for run_id, x in (("RUN1", 0.5), ("RUN2", 1.0)):
        outcome = objective.evaluate(json.dumps({"x": x, "note": "a,b \"c\""}), run_id)
        assert outcome.status == "done", (outcome.error, outcome.log_tail)
    run_dir = tmp_path / "EXP000" / "run" / "RUN1"
    assert (run_dir / "rank.txt").read_text() == "5\n"
    assert (run_dir / "run_command.txt").read_text() == "python3 -u -m emews.models.runner\n"
    rows = list(csv.reader((run_dir.parent / "output.csv").open()))
    assert rows == [["0.5", 'a,b "c"', "RUN1", "0.5"], ["1.0", 'a,b "c"', "RUN2", "1.0"]]


def test_rank_txt_is_none_outside_swift_t_as_in_supervisor(tmp_path, env):
    outcome = py_objective(tmp_path, env).evaluate('{"x": 1}', "RUN1")
    assert outcome.status == "done", outcome.error
    assert (tmp_path / "EXP000" / "run" / "RUN1" / "rank.txt").read_text() == "None\n"


def test_a_run_directory_holding_stop_marker_is_not_run(tmp_path, env):
    for impl in ("py", "app"):
        run_dir = tmp_path / "EXP000" / "run" / f"RUN_{impl}"
        run_dir.mkdir(parents=True)
        (run_dir / "stop.marker").write_text("early stopping: 1/3\n")
        make = py_objective if impl == "py" else app_objective
        outcome = make(tmp_path, env).evaluate('{"x": 1}', f"RUN_{impl}")
        assert outcome.status == "failed"
        assert "stop.marker: exists: the run is skipped" in outcome.error
        assert "early stopping: 1/3" in outcome.error
        assert not (tmp_path / "data" / "sup" / "Output" / "EXP000" / f"RUN_{impl}" /
                    "ran.json").exists()
        assert not (run_dir / "parameters.txt").exists()


def test_a_run_stopping_before_its_epochs_leaves_stop_marker(tmp_path, env):
    objective = py_objective(tmp_path, env)
    outcome = objective.evaluate('{"x": 1, "epochs": 3, "stop_after": 2}', "RUN1")
    assert outcome.status == "done" and outcome.value == 2.0
    marker = tmp_path / "EXP000" / "run" / "RUN1" / "stop.marker"
    assert marker.read_text() == "early stopping: 2/3\n"
    outcome = objective.evaluate('{"x": 1, "epochs": 3}', "RUN2")
    assert outcome.status == "done"
    assert not (tmp_path / "EXP000" / "run" / "RUN2" / "stop.marker").exists()


# 5. experiment numbering

def test_supervisor_numbering_starts_at_exp000_and_fills_the_first_gap(tmp_path):
    made = [experiment.create(tmp_path, "w", "supervisor").name for _ in range(3)]
    assert made == ["EXP000", "EXP001", "EXP002"]
    (tmp_path / "w" / "EXP001").rename(tmp_path / "w" / "old")
    assert experiment.create(tmp_path, "w", "supervisor").name == "EXP001"
    assert experiment.create(tmp_path, "w", "supervisor").name == "EXP003"
    assert experiment.create(tmp_path, "v").name == "EXP001"  # emews' default
    assert experiment.create(tmp_path, "w").name == "EXP004"


def test_experiment_numbering_setting(tmp_path):
    toml = tmp_path / "study.toml"
    toml.write_text('[study]\nexperiment_numbering = "supervisor"\n')
    assert configuration.load([toml], environ={}).study.experiment_numbering == "supervisor"
    assert configuration.load([], environ={}).study.experiment_numbering == "emews"
    toml.write_text('[study]\nexperiment_numbering = "swift"\n')
    with pytest.raises(ConfigError, match="experiment_numbering.*must be one of"):
        configuration.load([toml], environ={})
