"""emews' stand-in for candle_lib's parameter layer: default-model files, overrides, directories."""

import pytest

from emews._errors import ConfigError
from emews.models import candle_compat as candle

DEFINITIONS = [{"name": "classes", "type": int, "default": 2},
               {"name": "width", "type": int, "default": 8}]


def default_model(tmp_path, text, name="m_default_model.txt"):
    path = tmp_path / name
    path.write_text("[Global_Params]\n" + text)
    return path


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)
    return tmp_path / "data"


def finalize(tmp_path, argv=(), required=None):
    bmk = candle.Benchmark(str(tmp_path), "m_default_model.txt", "keras",
                           additional_definitions=[dict(d) for d in DEFINITIONS],
                           required=required)
    return candle.finalize_parameters(bmk, list(argv))


def test_values_are_python_literals(tmp_path, data_dir):
    default_model(tmp_path, "model_name = 'm'\ndense = [64, 32]\nlr = 1e-3\nflag = True\n"
                  "nothing = None\nname = 'a;b $(x)'\n")
    params = finalize(tmp_path)
    assert params["dense"] == [64, 32] and params["lr"] == 0.001 and params["flag"] is True
    assert params["nothing"] is None and params["name"] == "a;b $(x)"


def test_code_in_a_default_model_file_is_refused_not_run(tmp_path, data_dir):
    marker = tmp_path / "ran"
    default_model(tmp_path, f"model_name = 'm'\nepochs = open({str(marker)!r}, 'w')\n")
    with pytest.raises(ConfigError) as error:
        finalize(tmp_path)
    assert "m_default_model.txt: [Global_Params] epochs" in str(error.value)
    assert "must be a Python literal" in str(error.value)
    assert not marker.exists()


def test_command_line_beats_file_beats_definition_defaults(tmp_path, data_dir):
    default_model(tmp_path, "model_name = 'm'\nepochs = 3\nclasses = 5\ndense = [1]\n")
    params = finalize(tmp_path, ["--epochs", "7", "--dense", "16", "8"])
    assert params["epochs"] == 7 and params["dense"] == [16, 8]
    assert params["classes"] == 5 and params["width"] == 8
    assert (params["experiment_id"], params["run_id"], params["timeout"]) == \
        ("EXP000", "RUN000", -1)


def test_config_file_on_the_command_line_replaces_the_default_model(tmp_path, data_dir):
    default_model(tmp_path, "model_name = 'm'\nepochs = 3\n")
    default_model(tmp_path, "model_name = 'm'\nepochs = 11\n", name="other.txt")
    assert finalize(tmp_path, ["--config_file", "other.txt"])["epochs"] == 11


def test_directories_live_under_candle_data_dir_with_the_ids(tmp_path, data_dir):
    default_model(tmp_path, "model_name = 'm'\n")
    params = finalize(tmp_path, ["--experiment_id", "EXP007", "--run_id", "RUN000003"])
    assert params["data_dir"] == str(data_dir / "m" / "Data")
    assert params["output_dir"] == str(data_dir / "m" / "Output" / "EXP007" / "RUN000003")
    assert (data_dir / "m" / "Output" / "EXP007" / "RUN000003").is_dir()


def test_candle_output_dir_moves_only_the_output(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("CANDLE_OUTPUT_DIR", str(tmp_path / "out"))
    default_model(tmp_path, "model_name = 'm'\n")
    params = finalize(tmp_path)
    assert params["data_dir"] == str(data_dir / "m" / "Data")
    assert params["output_dir"] == str(tmp_path / "out" / "m" / "Output" / "EXP000" / "RUN000")


@pytest.mark.parametrize("text, argv, message", [
    ("model_name = 'm'\n", [], "must set the model's required parameters, got ['epochs']"),
    ("epochs = 1\n", [], "must set model_name"),
])
def test_missing_parameters_are_named(tmp_path, data_dir, text, argv, message):
    default_model(tmp_path, text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        finalize(tmp_path, argv, required=["epochs"])


def test_a_missing_default_model_file_is_named(tmp_path, data_dir):
    with pytest.raises(ConfigError, match="m_default_model.txt: the default-model file must "
                                          "exist"):
        finalize(tmp_path)


def test_candle_data_dir_is_required(tmp_path, monkeypatch):
    monkeypatch.delenv("CANDLE_DATA_DIR", raising=False)
    default_model(tmp_path, "model_name = 'm'\n")
    with pytest.raises(ConfigError, match="CANDLE_DATA_DIR"):
        finalize(tmp_path)


def test_what_the_stand_in_lacks_names_candle_lib():
    with pytest.raises(AttributeError, match="install candle_lib"):
        candle.fetch_file  # noqa: B018 - the attribute access is the test
