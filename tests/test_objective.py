"""Building the objective from a configuration or from Supervisor's environment variables."""

import pytest

from emews import _config as configuration
from emews._errors import ConfigError
from emews.evaluate import Objective, from_env


def test_model_settings_reach_the_model_as_supervisor_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEWORK", "pytorch")
    (tmp_path / "study.toml").write_text(
        '[system]\nlangs_app = "langs-app-x.sh"\n'
        '[study]\nimpl = "app"\nmodel_name = "nt3"\ntimeout = 90\n'
        '[model]\nframework = "keras2"\npython_dir = "models"\nbenchmark_timeout = 30\n'
        'return_epoch = "min"\n')
    cfg = configuration.load(tmp_path / "study.toml")
    objective = Objective.from_config(cfg, tmp_path / "EXP001")
    env = objective.model_env
    assert env["FRAMEWORK"] == "pytorch"  # the environment wins over the file
    assert env["MODEL_PYTHON_DIR"] == str(tmp_path / "models")
    assert env["BENCHMARK_TIMEOUT"] == "30.0" and env["MODEL_RETURN_EPOCH"] == "min"
    assert env["MODEL_NAME"] == "nt3" and env["EMEWS_LANGS_APP"] == str(tmp_path /
                                                                        "langs-app-x.sh")
    assert (objective.impl, objective.timeout, objective.exp_id) == ("app", 90.0, "EXP001")


@pytest.mark.parametrize("table, key, value", [("model", "return_epoch", "median"),
                                               ("model", "type", "DOCKER"),
                                               ("system", "gpus_per_node", -1)])
def test_bad_model_settings_are_config_errors(table, key, value):
    with pytest.raises(ConfigError, match=rf"\[{table}\].{key}: must"):
        configuration.load({table: {key: value}})


def test_supervisor_environment_builds_the_same_objective(monkeypatch, tmp_path):
    for name, value in {"CANDLE_MODEL_IMPL": "app", "MODEL_NAME": "toy", "SH_TIMEOUT": "12",
                        "BENCHMARK_TIMEOUT": "5", "TURBINE_OUTPUT": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    objective = from_env()
    assert (objective.impl, objective.timeout, objective.expdir) == ("app", 12.0, tmp_path)
    assert objective.model_env["BENCHMARK_TIMEOUT"] == "5"


def test_a_bad_sh_timeout_is_named(monkeypatch):
    monkeypatch.setenv("SH_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="SH_TIMEOUT: must be a number of seconds, got 'soon'"):
        from_env()


def test_echo_runs_nothing_and_reports_the_sum_of_squares():
    outcome = Objective("echo").evaluate('{"a": 3, "b": 4.0, "c": "text"}', "RUN1")
    assert (outcome.status, outcome.value) == ("done", 25.0)
