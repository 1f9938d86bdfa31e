"""Supervisor's search spaces: GA JSON as ga_utils.py reads it, makeParamSet with trafo as R's
ParamHelpers reads it. The fixtures in tests/support/supervisor/ mirror Supervisor files (see
the README there)."""

import builtins
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emews.core._algorithm import load
from emews._errors import ConfigError
from emews._space import (Categorical, Constant, Float, Int, Logical, Ordered, Space,
                         TransformedFloat, TransformedInt)

SUPPORT = Path(__file__).parent / "support" / "supervisor"
GA_FILES = sorted(SUPPORT.glob("*.json"))
R_FILES = [SUPPORT / name for name in ("p1b1_nightly.R", "uno_hpo.R", "trafo_forms.R")]


def write(tmp_path, text, name="space.R"):
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line_error(path):
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    message = str(error.value)
    assert message.startswith(str(path)) and "\n" not in message, message
    return message


# --- GA JSON -------------------------------------------------------------------------------


def test_tc1_reads_its_numeric_string_sigma_as_a_number():
    space = Space.from_file(SUPPORT / "tc1_param_space_ga.json")
    assert space["lr"] == Float("lr", 0.0001, 0.01, sigma=0.000495)
    assert space["batch_size"] == Ordered("batch_size", (16, 32, 64, 128, 256), sigma=1.0)
    assert space["conv"] == Constant("conv", "0 0 0")
    assert space["feature_subsample"] == Constant("feature_subsample", 500)


def test_ga_fixtures_read_every_field_ga_utils_reads():
    combo = Space.from_file(SUPPORT / "combo_param_space_ga.json")
    assert combo["epochs"] == Int("epochs", 100, 500, sigma=20)
    # ga_utils.py itself raises on lower == upper (as in Supervisor's adrp and p1b1 GA spaces);
    # emews reads it as a fixed value
    assert combo["warmup_epochs"] == Int("warmup_epochs", 20, 20, sigma=20)
    assert combo["epsilon"].values == (1e-6, 1e-8, 1e-10, 1e-12, 1e-14)
    assert isinstance(combo["residual"], Logical)
    assert combo["use_landmark_genes"] == Constant("use_landmark_genes", 1)
    pbt = Space.from_file(SUPPORT / "tc1_params_full.json")
    assert pbt["optimizer"] == Categorical("optimizer", ("adam", "rmsprop"))
    assert pbt["batch_size"] == Categorical("batch_size", (32, 64))
    for path in GA_FILES:
        space = Space.from_file(path)
        for point in space.sample(np.random.default_rng(1), 20):
            assert space.contains(point) and json.loads(json.dumps(point)) == point


@pytest.mark.parametrize("entry, expected", [
    ({"name": "n", "type": "int", "lower": "8", "upper": " 64 ", "sigma": "4"},
     Int("n", 8, 64, sigma=4.0)),
    ({"name": "n", "type": "int", "lower": 8.0, "upper": 64}, Int("n", 8, 64)),
    ({"name": "x", "type": "float", "lower": "1e-4", "upper": "0.1", "sigma": "0.01"},
     Float("x", 1e-4, 0.1, sigma=0.01)),
    ({"name": "o", "type": "ordered", "element_type": "int", "values": [1, 2], "sigma": "1"},
     Ordered("o", (1, 2), sigma=1.0)),
])
def test_numeric_strings_are_read_with_int_and_float(entry, expected):
    param = Space.from_ga_json([entry])[entry["name"]]
    assert param == expected
    for field in ("lower", "upper", "sigma"):   # 8 == 8.0, so the types are compared too
        assert type(getattr(param, field, None)) is type(getattr(expected, field, None))


@pytest.mark.parametrize("field, value, rule", [
    ("sigma", "0.000495x", "sigma: must be a finite number (or a string holding one"),
    ("sigma", [1], "sigma: must be a finite number"),
    ("lower", True, "lower: must be a finite number"),
    ("upper", "nan", "upper: must be a finite number"),
    ("upper", "inf", "upper: must be a finite number"),
])
def test_a_non_number_names_the_file_the_field_the_rule_and_the_value(tmp_path, field, value,
                                                                     rule):
    entry = {"name": "lr", "type": "float", "lower": 0.0001, "upper": 0.01, "sigma": 0.1}
    entry[field] = value
    message = one_line_error(write(tmp_path, json.dumps([entry]), "space.json"))
    assert f"parameter #0 (lr).{rule}" in message and message.endswith(f"got {value!r}")


@pytest.mark.parametrize("element_type, values, index", [
    ("int", ["16", "32", "x64"], 2), ("int", [16, 32.5], 1), ("float", [1e-6, "1e-8", None], 2),
    ("int", [16, True], 1),
])
def test_a_list_value_that_is_not_of_its_element_type_is_named(tmp_path, element_type, values,
                                                               index):
    entry = {"name": "b", "type": "ordered", "element_type": element_type, "values": values}
    message = one_line_error(write(tmp_path, json.dumps([entry]), "space.json"))
    assert f"parameter #0 (b).values[{index}]: must be of element_type {element_type}" in message
    assert message.endswith(f"got {values[index]!r}")


def test_list_values_that_are_numeric_strings_are_numbers():
    space = Space.from_ga_json([
        {"name": "b", "type": "ordered", "element_type": "int", "values": ["16", 32, 64.0]},
        {"name": "e", "type": "categorical", "element_type": "float", "values": ["1e-6", 1]}])
    assert space["b"].values == (16, 32, 64) and all(type(v) is int for v in space["b"].values)
    assert space["e"].values == (1e-6, 1.0) and all(type(v) is float for v in space["e"].values)


def test_an_int_bound_that_is_not_whole_is_refused(tmp_path):
    entry = {"name": "epochs", "type": "int", "lower": "2.5", "upper": 5}
    message = one_line_error(write(tmp_path, json.dumps([entry]), "space.json"))
    assert "(epochs).lower: must be an integer" in message and "int()" in message


# --- makeParamSet and trafo ----------------------------------------------------------------


def test_p1b1_nightly_searches_x_and_gives_the_model_2_to_the_x():
    space = Space.from_file(SUPPORT / "p1b1_nightly.R")
    latent = space["latent_dim"]
    assert isinstance(latent, TransformedInt) and (latent.lower, latent.upper) == (1, 9)
    assert latent.values == tuple(2 ** x for x in range(1, 10))
    assert latent.trafo.text == "function(x) 2L^x"
    points = space.sample(np.random.default_rng(0), 900)
    counts = {v: sum(p["latent_dim"] == v for p in points) for v in latent.values}
    assert all(60 < c < 140 for c in counts.values()), counts   # uniform over x, not over 2^x
    for point in points[:50]:
        assert space.contains(point) and json.loads(json.dumps(point)) == point


def test_an_integer_trafo_keeps_the_search_on_x():
    param = Space.from_file(SUPPORT / "trafo_forms.R")["batch_size"]
    plain = Int("x", param.lower, param.upper)
    for x, value in zip(range(param.lower, param.upper + 1), param.values):
        assert value == 2 ** x and param.to_unit(value) == plain.to_unit(x)
        assert param.from_unit(plain.to_unit(x)) == value


def test_every_trafo_form_gives_the_values_r_gives():
    space = Space.from_file(SUPPORT / "trafo_forms.R")
    assert space["units"].values == (2, 5, 8, 10)            # round(2.5) is 2: half to even
    assert space["filters"].values == (1, 2, 4, 10, 21, 46, 100)
    assert space["layers"].values == (13, 7, 4, 2.5, 1.75)
    assert space["width"].values == (16, 32, 48, 64, 80)
    assert all(type(v) is int for name in ("units", "filters", "width")
               for v in space[name].values)
    assert json.dumps(space.point([32, 10, 21, 2.5, 48, 0.001, 0.5, 0.45, 0.5, True])) == (
        '{"batch_size": 32, "units": 10, "filters": 21, "layers": 2.5, "width": 48, '
        '"learning_rate": 0.001, "decay": 0.5, "dropout": 0.45, "momentum": 0.5, '
        '"residual": true}')
    lr, decay = space["learning_rate"], space["decay"]
    assert isinstance(lr, TransformedFloat) and lr.log and (lr.lower, lr.upper) == (1e-5, 0.1)
    assert decay.log and decay.upper == 0.5 and decay.lower == pytest.approx(0.5 * math.exp(-4))
    dropout, momentum = space["dropout"], space["momentum"]
    assert not dropout.log and (dropout.lower, dropout.upper) == (0.0, 0.9)
    assert (momentum.lower, momentum.upper) == (0.25, 0.75)        # a decreasing trafo


@pytest.mark.parametrize("name, x_lower, x_upper", [
    ("learning_rate", -5, -1), ("decay", -4, 0), ("dropout", 0, 9)])
def test_a_numeric_trafo_keeps_the_search_on_x(name, x_lower, x_upper):
    param = Space.from_file(SUPPORT / "trafo_forms.R")[name]
    for u in np.linspace(0, 1, 11):
        x = x_lower + u * (x_upper - x_lower)
        assert param.from_unit(u) == pytest.approx(param.trafo(x), rel=1e-12)
        assert param.to_unit(param.trafo(x)) == pytest.approx(u, abs=1e-12)


@pytest.mark.parametrize("algorithm, package", [
    ("random", None), ("ga", "deap"), ("optuna", "optuna"),
    pytest.param("mbo", "sklearn", marks=pytest.mark.slow),
    pytest.param("gp", "skopt", marks=pytest.mark.slow)])
def test_algorithms_propose_transformed_values(algorithm, package):
    if package:
        pytest.importorskip(package)
    space = Space.from_file(SUPPORT / "trafo_forms.R")
    search = load(algorithm)(space, seed=3)
    for _ in range(3):
        points = search.ask(4)
        assert all(space.contains(p) and p["batch_size"] in (32, 64, 128, 256, 512, 1024)
                   for p in points)
        search.tell(points, [math.log2(p["batch_size"]) + p["dropout"] for p in points])


@pytest.mark.parametrize("trafo, at", [
    ('function(x) system("rm -rf /")', "system"),
    ('function(x) round(system("rm -rf /"))', "system"),
    ('function(x) eval(parse(text = "2^x"))', "eval"),
    ("function(x) { file.remove('a'); 2^x }", "file.remove"),
    ("function(x) log(x)", "log"),
    ("function(x) 2^y", "y"),
    ("function(x) x[1]", "["),
    ("function(x) 2 ^", "^"),
    ("function(x, y) x", ","),
    ("2^x", "2"),
    ("function(x) `2`", "`2`"),
])
def test_anything_outside_the_grammar_is_refused_with_one_line(tmp_path, trafo, at):
    text = f'param.set <- makeParamSet(\n  makeIntegerParam("b", 1, 3, trafo = {trafo})\n)\n'
    message = one_line_error(write(tmp_path, text))
    column = text.splitlines()[1].index(trafo) + trafo.index(at) + 1
    assert message.startswith(f"{tmp_path / 'space.R'}:2:{column}: b.trafo: must be function(x)")
    assert "R code is never evaluated" in message and message.endswith(f"got {trafo!r}")


def test_loading_never_evaluates_or_runs_anything(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a search-space reader tried to evaluate or run something")

    hostile = write(tmp_path, 'makeParamSet(makeNumericParam("a", 0, 1, trafo = function(x) '
                    'system("touch pwned")))')
    try:   # restored before any failure is reported: pytest itself needs compile()
        for module, name in ((builtins, "eval"), (builtins, "exec"), (builtins, "compile"),
                             (os, "system"), (subprocess, "Popen")):
            monkeypatch.setattr(module, name, refuse)
        for path in GA_FILES + R_FILES:
            Space.from_file(path)
        with pytest.raises(ConfigError, match="a.trafo: must be function"):
            Space.from_file(hostile)
    finally:
        monkeypatch.undo()
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("param, rule", [
    ('makeNumericParam("lr", -5, -1, trafo = function(x) x^2)',
     "lr.trafo: on a numeric parameter the trafo must be linear"),
    ('makeNumericParam("lr", -5, -1, trafo = function(x) round(10^x))',
     "round() and as.integer() need makeIntegerParam"),
    ('makeIntegerParam("n", -1, 1, trafo = function(x) 1 / x)',
     "n.trafo: function(x) 1 / x must give a finite real number for every x in [lower, upper]"),
    ('makeNumericParam("lr", 0, 1000, trafo = function(x) exp(x))',
     "lr.trafo: function(x) exp(x) must give a finite real number"),
    ('makeIntegerParam("n", 0, 100000, trafo = function(x) x * 2)',
     "n.trafo: an integer parameter with a trafo may span at most 100000 values"),
    ('makeDiscreteParam("d", values = c(1, 2), trafo = function(x) 2^x)',
     "argument 'trafo' is not supported"),
])
def test_trafos_that_cannot_be_searched_on_x_are_refused(tmp_path, param, rule):
    message = one_line_error(write(tmp_path, f"makeParamSet({param})"))
    assert rule in message, message


# --- R ParamHelpers agrees -----------------------------------------------------------------


def paramhelpers_view(path):
    """ParamHelpers' records for a param set file: {id: {type, bounds, values, trafo}}."""
    result = subprocess.run(["Rscript", str(SUPPORT / "paramhelpers_view.R"), str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    params = {}
    for line in result.stdout.splitlines():
        record, name, first, second = line.split("\t")[:4]
        if record == "param":
            bounds = tuple(float(b) if b else None for b in line.split("\t")[3:5])
            params[name] = {"type": first, "bounds": bounds, "values": [], "trafo": []}
        elif record == "value":
            value = {"numeric": float, "logical": lambda t: t == "TRUE"}.get(first, str)(second)
            params[name]["values"].append(value)
        else:
            params[name]["trafo"].append((float(first), float(second)))
    return params


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript is not on PATH; CI installs r-base-core and "
                           "r-cran-paramhelpers from .ci/apt-packages")
@pytest.mark.parametrize("path", R_FILES, ids=lambda p: p.name)
def test_values_equal_those_of_r_paramhelpers(path):
    ours, theirs = Space.from_file(path), paramhelpers_view(path)
    assert ours.names == list(theirs)
    for name, r in theirs.items():
        param = ours[name]
        if r["type"] == "discrete":
            assert type(param) is Categorical and list(param.values) == r["values"]
        elif r["type"] == "logical":
            assert type(param) is Logical and r["values"] == [True, False]
        elif r["type"] == "integer" and r["trafo"]:
            assert type(param) is TransformedInt and (param.lower, param.upper) == r["bounds"]
            assert [x for x, _ in r["trafo"]] == list(range(param.lower, param.upper + 1))
            assert list(param.values) == pytest.approx([y for _, y in r["trafo"]], rel=1e-14)
        elif r["type"] == "numeric" and r["trafo"]:
            assert type(param) is TransformedFloat
            ends = sorted((r["trafo"][0][1], r["trafo"][-1][1]))
            assert [param.lower, param.upper] == pytest.approx(ends, rel=1e-14)
            x_lower, x_upper = r["bounds"]
            increasing = r["trafo"][-1][1] >= r["trafo"][0][1]
            for x, y in r["trafo"]:
                assert param.trafo(x) == pytest.approx(y, rel=1e-14)
                u = (x - x_lower) / (x_upper - x_lower)   # x's place on its scale
                u = u if increasing else 1 - u
                assert param.from_unit(u) == pytest.approx(y, rel=1e-12)
        else:
            kind = {"integer": Int, "numeric": Float}[r["type"]]
            assert type(param) is kind and (param.lower, param.upper) == r["bounds"]


# --- async-search's as_problem.py ----------------------------------------------------------------

def test_an_async_search_problem_file_is_read_as_skopt_reads_its_dimensions():
    path = Path(__file__).parent / "support" / "supervisor_cfg" / "async-search" / "python" / \
        "as_problem.py"
    space = Space.from_file(path)
    assert space.names == ["x", "epochs", "dense"]
    x, epochs, dense = (space[name] for name in space.names)
    assert isinstance(x, Float) and (x.lower, x.upper) == (0.0, 4.0)   # (float, float): Real
    assert isinstance(epochs, Int) and (epochs.lower, epochs.upper) == (1, 3)  # ints: Integer
    assert isinstance(dense, Categorical) and dense.values == ("8 4", "16 8")


@pytest.mark.parametrize("line, rule", [
    ('space["x"] = make_range(0, 1)', "space[NAME] must be assigned a literal"),
    ('space["x"] = (0, "one")', "must be a (lower, upper) range of numbers"),
    ('space["x"] = (3, 1)', "must be a (lower, upper) range of numbers, lower <= upper"),
    ('space["x"] = []', "lower <= upper, or a non-empty [values] list"),
    ('other["x"] = (0, 1)', "must assign the dimensions as space[NAME]"),
])
def test_an_async_search_problem_file_that_is_not_literal_is_one_error_and_never_runs(
        tmp_path, line, rule):
    path = tmp_path / "as_problem.py"
    path.write_text(f'import os\nos.mkdir("{tmp_path}/ran")\nspace = {{}}\n{line}\n')
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    assert str(error.value).startswith(str(path)) and rule in str(error.value)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("bounds", [[0.1, 0.001], [8, 4], [1, "2"], [1]])
def test_a_random_workflow_range_that_is_not_low_then_high_is_one_error_naming_it(
        tmp_path, bounds):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"parameters": {"epochs": [1, 2], "lr": bounds},
                                "samples": {"num": [4]}}))
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    assert "parameters.lr" in str(error.value) and "low <= high" in str(error.value)
