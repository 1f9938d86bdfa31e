"""Configuration: TOML files, environment variables, the command line, and their precedence."""

import pytest

from emews import _config as config
from emews._errors import ConfigError


def test_defaults_fill_what_no_file_sets(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[study]\nalgorithm = "random"\n')
    cfg = config.load(path, environ={})
    assert cfg.system.procs == 4 and cfg.study.mode == "async"
    assert cfg.study.name == "s"


def test_precedence_command_line_then_environment_then_file_then_default(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[system]\nprocs = 3\n[study]\nmodel_return = \"loss\"\nbudget = 9\n")
    env = {"PROCS": "5", "MODEL_RETURN": "val_accuracy"}
    cfg = config.load(path, {"system.procs": 7}, environ=env)
    assert cfg.system.procs == 7
    assert cfg.study.model_return == "val_accuracy"
    assert cfg.study.budget == 9
    assert cfg.study.tol == 0.0


def test_system_and_study_may_sit_in_two_files(tmp_path):
    (tmp_path / "sys.toml").write_text("[system]\nprocs = 6\n")
    (tmp_path / "prm.toml").write_text('[study]\nalgorithm = "sweep"\n[algorithm]\nfile = "p.jsonl"\n')
    cfg = config.load([tmp_path / "sys.toml", tmp_path / "prm.toml"], environ={})
    assert cfg.system.procs == 6 and cfg.study.algorithm == "sweep"
    assert cfg.algorithm["file"] == str(tmp_path / "p.jsonl")


def test_relative_paths_are_relative_to_the_file_that_names_them(tmp_path):
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "s.toml"
    path.write_text('[study]\nspace = "space.json"\n')
    assert config.load(path, environ={}).study.space == str(tmp_path / "sub" / "space.json")


@pytest.mark.parametrize("text, fragment", [
    ("[study]\nbudget = -3\n", "s.toml: [study].budget: must be positive, got -3"),
    ("[study]\nbudjet = 3\n", "s.toml: [study].budjet: is not a setting of [study]"),
    ('[study]\nmode = "sometimes"\n', "[study].mode: must be one of ['async', 'batch', 'sequential']"),
    ("[system]\nprocs = \"four\"\n", "[system].procs: must be an integer, got 'four'"),
    ("[stuff]\na = 1\n", "s.toml: [stuff]: must be one of the tables"),
    ("[study\n", "s.toml: must be valid TOML"),
])
def test_bad_settings_name_file_field_rule_and_value(tmp_path, text, fragment):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        config.load(path, environ={})
    assert fragment in str(error.value)


def test_bad_environment_values_name_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="environment variable PROCS: must be an integer"):
        config.load({}, environ={"PROCS": "many"})


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.toml: the configuration file must be readable"):
        config.load(tmp_path / "nope.toml", environ={})


def test_command_line_values_are_read_as_toml_never_evaluated():
    assert config.parse_override("study.budget=12") == ("study.budget", 12)
    assert config.parse_override("study.algorithm=__import__('os')") == \
        ("study.algorithm", "__import__('os')")
    assert config.parse_override('study.app=["python3", "x.py"]') == \
        ("study.app", ["python3", "x.py"])


@pytest.mark.parametrize("argv, expected", [
    (["run", "s.toml", "--procs", "3", "--seed", "5", "--data-dir", "d", "--set", "study.seed=1"],
     {"system.procs": 3, "study.seed": 5, "study.data_dir": "d"}),
    (["serve", "s.toml", "--bind", "0.0.0.0", "--port", "7", "--lease", "2.5", "--budget", "4"],
     {"service.bind": "0.0.0.0", "service.port": 7, "service.lease": 2.5, "study.budget": 4}),
    (["submit", "s.toml", "--site", "x", "--walltime", "1:00:00", "--queue", "debug",
      "--set", "study.tol=0.5"],
     {"study.tol": 0.5, "system.walltime": "1:00:00", "system.queue": "debug"}),
])
def test_each_command_s_options_set_their_settings(argv, expected):
    from emews._cli import parser

    assert config.command_overrides("emews " + argv[0], parser().parse_args(argv)) == expected
