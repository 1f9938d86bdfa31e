"""Conditional spaces in and out: mlrMBO's ``requires`` (parsed, never evaluated), ConfigSpace's
JSON (``emews space import``), forbidden clauses, and the inspection side (show, export, report)
and a resume, where an inactive parameter is absent."""

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import emews as run_emews, one_error_line

from emews._conditions import AllOf, AnyOf, Compare, In, Not
from emews._errors import ConfigError
from emews._space import Space
from emews.store import read_once

SUPERVISOR = Path(__file__).parent / "support" / "supervisor"
R_SET = """param.set <- makeParamSet(
  makeDiscreteParam("optimizer", values = c("sgd", "adam", "rmsprop")),
  makeIntegerParam("depth", lower = 1, upper = 4),
  makeLogicalParam("warmup"),
  makeNumericParam("x", 0, 1, requires = {requires})
)
"""


def r_space(tmp_path, requires):
    path = tmp_path / "space.R"
    path.write_text(R_SET.format(requires=requires))
    return path


# --- mlrMBO's requires ---------------------------------------------------------------------
@pytest.mark.parametrize("requires, condition", [
    ('quote(optimizer == "sgd")', In("optimizer", ("sgd",))),
    ("quote(optimizer != 'sgd')", Not(In("optimizer", ("sgd",)))),
    ('quote(optimizer %in% c("sgd", "adam"))', In("optimizer", ("sgd", "adam"))),
    ('expression(optimizer %in% "adam")', In("optimizer", ("adam",))),
    ("quote(depth >= 3L)", Compare("depth", ">=", 3)),
    ("quote(depth < -1 | depth > 2.5)",
     AnyOf((Compare("depth", "<", -1), Compare("depth", ">", 2.5)))),
    ("quote(warmup)", In("warmup", (True,))),
    ("quote(!warmup)", Not(In("warmup", (True,)))),
    ("quote(warmup == FALSE)", In("warmup", (False,))),
    ('quote(depth == 2 && optimizer == "sgd" || !(warmup & depth %in% c(1, 4)))',
     AnyOf((AllOf((In("depth", (2,)), In("optimizer", ("sgd",)))),
            Not(AllOf((In("warmup", (True,)), In("depth", (1, 4)))))))),
    ('quote(!optimizer == "sgd")', Not(In("optimizer", ("sgd",)))),   # R: !(a == b)
    ("quote(((`depth` == 3)))", In("depth", (3,))),
    ("quote(depth > -Inf && depth <= +-2)",   # signs and Inf as R and the values read them
     AllOf((Compare("depth", ">", -math.inf), Compare("depth", "<=", -2)))),
])
def test_requires_is_read_into_a_condition(tmp_path, requires, condition):
    space = Space.from_file(r_space(tmp_path, requires))
    assert space["x"].condition == condition
    assert [p.condition for p in space.params[:3]] == [None, None, None]


def test_a_space_with_requires_gives_points_with_exactly_their_active_parameters(tmp_path):

    space = Space.from_file(r_space(tmp_path, 'quote(optimizer == "sgd" && depth >= 3)'))
    points = space.sample(np.random.default_rng(1), 200)
    for point in points:
        assert ("x" in point) == (point["optimizer"] == "sgd" and point["depth"] >= 3)
        assert space.contains(point)
    assert any("x" in point for point in points) and not all("x" in point for point in points)


@pytest.mark.parametrize("requires, at", [
    ('quote(system("rm -rf /"))', "system"),
    ("quote(is.na(depth))", "is.na"),
    ("quote(depth <- 3)", "<-"),
    ("quote(depth = 3)", "="),
    ("quote(depth == f(3))", "f"),
    ("quote(depth == other)", "other"),
    ("quote(optimizer %like% 'sg')", "%like%"),
    ("quote(optimizer == 'a'; 1)", ";"),
    ("quote(depth + 1 == 3)", "+"),
    ("quote(depth > 'a')", "'a'"),
    ("quote(depth %in% c(1, c(2)))", "c"),
    ("quote(TRUE)", "TRUE"),
    ('optimizer == "sgd"', "optimizer"),
    ("function(x) x", "function"),
    ("quote(depth == 3) && TRUE", "&&"),
    ("quote()", ")"),
])
def test_requires_outside_the_grammar_is_one_line_naming_file_position_parameter_and_text(
        tmp_path, requires, at):
    path = r_space(tmp_path, requires)
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    message = str(error.value)
    line = R_SET.format(requires=requires).splitlines()[4]
    column = line.index(requires) + requires.rindex(at) + 1
    assert message == (f"{path}:5:{column}: x.requires: must be quote(...) or expression(...) "
                       "of tests on other parameters (==, !=, <, <=, >, >= a literal; %in% "
                       "c(...) of literals; a logical parameter alone) joined by &&, ||, &, |, "
                       f"! and parentheses; R code is never evaluated, got {requires!r}")


@pytest.mark.parametrize("requires, rule, value", [
    ('quote(opt == "sgd")', "x.condition: must test parameters of the space", "'opt'"),
    ('quote(optimizer == "nadam")', "x.condition: must use values that optimizer takes",
     "'nadam'"),
    ("quote(optimizer > 1)", "x.condition: > compares numbers, and optimizer is categorical",
     "1"),
    ("quote(x == 1)", "x.condition: a parameter cannot depend on itself", "'x'"),
])
def test_requires_on_what_the_space_lacks_is_one_line(tmp_path, requires, rule, value):
    path = r_space(tmp_path, requires)
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    assert str(error.value) == f"{path}: {rule}, got {value}"


def test_a_cycle_of_requires_is_one_line(tmp_path):
    path = tmp_path / "space.R"
    path.write_text('makeParamSet(\n  makeNumericParam("a", 0, 1, requires = quote(b > 0.5)),\n'
                    '  makeNumericParam("b", 0, 1, requires = quote(a > 0.5)))\n')
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    assert str(error.value) == f"{path}: conditions must not form a cycle, got ['a', 'b']"


# --- forbidden clauses and the object form --------------------------------------------------
PARAMETERS = [
    {"name": "optimizer", "type": "categorical", "values": ["sgd", "adam"]},
    {"name": "momentum", "type": "float", "lower": 0, "upper": 0.99,
     "condition": {"optimizer": ["sgd"]}},
    {"name": "depth", "type": "int", "lower": 1, "upper": 4},
]


def test_a_point_where_a_forbidden_clause_holds_is_outside_and_never_drawn():

    space = Space.from_ga_json({"parameters": PARAMETERS, "forbidden": [
        {"optimizer": ["adam"], "depth": [4]}, {"momentum": {">": 0.5}}]}, "s.json")
    assert space.forbidden == (AllOf((In("optimizer", ("adam",)), In("depth", (4,)))),
                               Compare("momentum", ">", 0.5))
    assert not space.contains({"optimizer": "adam", "depth": 4})
    assert space.contains({"optimizer": "adam", "depth": 3})
    assert not space.contains({"optimizer": "sgd", "momentum": 0.6, "depth": 1})
    assert space.contains({"optimizer": "sgd", "momentum": 0.4, "depth": 4})  # unknown: allowed
    points = space.sample(np.random.default_rng(2), 400)
    assert all(space.contains(point) for point in points)
    assert {(p["optimizer"], p["depth"]) for p in points} == {
        (o, d) for o in ("sgd", "adam") for d in (1, 2, 3, 4)} - {("adam", 4)}
    assert Space.from_ga_json(space.to_json(), "again.json") == space


@pytest.mark.parametrize("path", sorted(SUPERVISOR.glob("*.json")), ids=lambda p: p.name)
def test_a_space_without_conditions_writes_back_the_same_space(path):
    space = Space.from_file(path)
    assert isinstance(space.to_json(), list)
    assert Space.from_ga_json(json.loads(json.dumps(space.to_json())), "again") == space


def test_forbidden_clauses_on_what_the_space_lacks_are_one_line():
    cases = [({"opt": ["adam"]}, "s.json: forbidden[0]: must test parameters of the space, "
              "got 'opt'"),
             ({"optimizer": ["nadam"]}, "s.json: forbidden[0]: must use values that optimizer "
              "takes, got 'nadam'"),
             ([], "s.json: forbidden[0]: a condition must be a non-empty JSON object of parent "
              "parameter: [values] (or $all, $any, $not), got []")]
    for clause, message in cases:
        with pytest.raises(ConfigError) as error:
            Space.from_ga_json({"parameters": PARAMETERS, "forbidden": [clause]}, "s.json")
        assert str(error.value) == message
    with pytest.raises(ConfigError, match=r"^s.json: forbidden: must leave points to draw"):
        Space.from_ga_json({"parameters": PARAMETERS[:1], "forbidden": [
            {"optimizer": ["sgd", "adam"]}]}, "s.json").sample(np.random.default_rng(0))


# --- emews space import --from configspace -------------------------------------------------
def configspace_example():
    """A ConfigSpace space with every kind of hyperparameter, condition and forbidden clause
    that the import reads."""
    from ConfigSpace import (AndConjunction, Categorical, ConfigurationSpace, Constant,
                             EqualsCondition, Float, ForbiddenAndConjunction,
                             ForbiddenEqualsClause, ForbiddenInClause, GreaterThanCondition,
                             InCondition, Integer, LessThanCondition, NotEqualsCondition,
                             OrConjunction, OrdinalHyperparameter)

    space = ConfigurationSpace(seed=3)
    optimizer = Categorical("optimizer", ["sgd", "adam", "rmsprop"])
    lr = Float("lr", (1e-5, 1e-1), log=True)
    momentum = Float("momentum", (0.0, 0.99))
    depth = Integer("depth", (1, 4))
    width3 = Integer("width3", (8, 256), log=True)
    size = OrdinalHyperparameter("size", ["s", "m", "l"])
    decay = Float("decay", (0.0, 1.0))
    warmup = Categorical("warmup", [True, False])
    space.add([optimizer, lr, momentum, depth, width3, size, decay, warmup,
               Constant("seed", 7)])
    space.add([EqualsCondition(momentum, optimizer, "sgd"),
               AndConjunction(GreaterThanCondition(width3, depth, 2),
                              InCondition(width3, optimizer, ["sgd", "adam"])),
               OrConjunction(NotEqualsCondition(decay, optimizer, "adam"),
                             LessThanCondition(decay, lr, 1e-3))])
    space.add([ForbiddenAndConjunction(ForbiddenEqualsClause(optimizer, "adam"),
                                       ForbiddenInClause(size, ["l"])),
               ForbiddenEqualsClause(depth, 4)])
    return space


def native(configuration):
    """A ConfigSpace configuration as a point of plain Python values."""
    return {name: getattr(value, "item", lambda v=value: v)()
            for name, value in dict(configuration).items()}


def test_a_configspace_file_imports_with_its_conditions_and_forbidden_clauses(tmp_path):
    from ConfigSpace import Configuration

    theirs = configspace_example()
    theirs.to_json(tmp_path / "cs.json")
    done = run_emews("space", "import", "--from", "configspace", "cs.json", "-o", "space.json",
                     cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "emews: wrote space.json\n", done.stderr
    ours = Space.from_file(tmp_path / "space.json")
    printed = run_emews("space", "import", "--from", "configspace", "cs.json", cwd=tmp_path)
    assert json.loads(printed.stdout) == json.loads((tmp_path / "space.json").read_text())
    assert {p.name: p.condition for p in ours.params if p.condition} == {
        "momentum": In("optimizer", ("sgd",)),
        "width3": AllOf((Compare("depth", ">", 2), In("optimizer", ("sgd", "adam")))),
        "decay": AnyOf((Not(In("optimizer", ("adam",))), Compare("lr", "<", 1e-3)))}
    assert ours.forbidden == (AllOf((In("optimizer", ("adam",)), In("size", ("l",)))),
                              In("depth", (4,)))
    assert (ours["lr"].log, ours["width3"].log, ours["size"].values) == (True, True,
                                                                         ("s", "m", "l"))
    drawn_by_them = [native(c) for c in theirs.sample_configuration(300)]
    assert all(ours.contains(point) for point in drawn_by_them)
    drawn_by_us = ours.sample(np.random.default_rng(4), 300)
    for point in drawn_by_us:
        Configuration(theirs, values=point)   # raises for an inactive value or a forbidden one
    assert {len(point) for point in drawn_by_us} == {len(p) for p in drawn_by_them}
    assert Space.from_ga_json(ours.to_json(), "again") == ours


@pytest.mark.parametrize("change, message", [
    (lambda d: d["hyperparameters"].append({"type": "normal_float", "name": "z", "mu": 0,
                                            "sigma": 1, "lower": -1, "upper": 1}),
     "cs.json: hyperparameters[9] (z).type: must be one of uniform_float, uniform_int, "
     "categorical, ordinal, constant, got 'normal_float'"),
    (lambda d: momentum(d).update(parent="opt"),
     "cs.json: momentum.condition: must test parameters of the space, got 'opt'"),
    (lambda d: momentum(d).update(value="nadam"),
     "cs.json: momentum.condition: must use values that optimizer takes, got 'nadam'"),
    (lambda d: d["conditions"].append({"type": "GT", "child": "optimizer",
                                       "parent": "momentum", "value": 0.5}),
     "cs.json: conditions must not form a cycle, got ['decay', 'momentum', 'optimizer', "
     "'width3']"),
    (lambda d: d["forbiddens"].append({"type": "RELATION", "left": "lr", "right": "decay"}),
     "cs.json: forbiddens[2].type: must be one of EQUALS, IN, AND, got 'RELATION'"),
    (lambda d: d["forbiddens"].append({"type": "EQUALS", "name": "size", "value": "xl"}),
     "cs.json: forbidden[2]: must use values that size takes, got 'xl'"),
])
def test_a_bad_configspace_file_is_one_line_and_writes_nothing(tmp_path, change, message):
    data = json.loads(_configspace_json(tmp_path))
    change(data)
    (tmp_path / "cs.json").write_text(json.dumps(data))
    done = run_emews("space", "import", "--from", "configspace", "cs.json", "-o", "out.json",
                     cwd=tmp_path)
    assert one_error_line(done) == message
    assert not (tmp_path / "out.json").exists()


def momentum(data):
    """The condition of momentum in ConfigSpace's JSON ``data``."""
    return next(c for c in data["conditions"] if c["child"] == "momentum")


def _configspace_json(tmp_path):
    configspace_example().to_json(tmp_path / "example.json")
    return (tmp_path / "example.json").read_text()


@pytest.mark.parametrize("requires, message", [
    ('quote(opt == "sgd")', "space.R: x.condition: must test parameters of the space, got "
     "'opt'"),
    ('quote(optimizer == "nadam")', "space.R: x.condition: must use values that optimizer "
     "takes, got 'nadam'"),
    ("quote(x > 0.5)", "space.R: x.condition: a parameter cannot depend on itself, got 'x'"),
    ("quote(system('ls'))", "space.R:5:48: x.requires: must be quote(...) or expression(...) "
     "of tests on other parameters (==, !=, <, <=, >, >= a literal; %in% c(...) of literals; a "
     "logical parameter alone) joined by &&, ||, &, |, ! and parentheses; R code is never "
     "evaluated, got \"quote(system('ls'))\""),
])
def test_a_bad_requires_is_one_line_through_emews_run(tmp_path, requires, message):
    r_space(tmp_path, requires)
    (tmp_path / "s.toml").write_text('[study]\nobjective = "toy_models:quadratic"\nbudget = 2\n'
                                     'space = "space.R"\n')
    before = sorted(tmp_path.iterdir())
    assert one_error_line(run_emews("run", "s.toml", cwd=tmp_path)) == f"{tmp_path}/{message}"
    assert sorted(tmp_path.iterdir()) == before


# --- a conditional study: the model, the store, show, export, report, resume ---------------
CONDITIONAL = [
    {"name": "optimizer", "type": "categorical", "values": ["sgd", "adam"]},
    {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1e-1, "log": True},
    {"name": "momentum", "type": "float", "lower": 0, "upper": 0.99,
     "condition": {"optimizer": ["sgd"]}},
    {"name": "beta", "type": "float", "lower": 0, "upper": 1,
     "condition": {"optimizer": ["adam"]}},
    {"name": "warmup", "type": "logical", "condition": {"beta": {">": 0.5}}},
]
STUDY = ('[system]\nprocs = 2\npool = "inprocess"\n[study]\n'
         'objective = "conditional_models:branches"\nbudget = 12\nseed = 5\n'
         'space = "space.json"\nmodel_return = "loss"\n')


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A conditional study of 12 evaluations, resumed to 24: its experiment directory."""
    home = tmp_path_factory.mktemp("conditional")
    (home / "s.toml").write_text(STUDY)
    (home / "space.json").write_text(json.dumps({"parameters": CONDITIONAL, "forbidden": [
        {"optimizer": ["sgd"], "momentum": {"<": 0.1}}]}))
    done = run_emews("run", "s.toml", cwd=home)
    assert done.returncode == 0, done.stderr
    expdir = home / "experiments/s/EXP001"
    first = read_once(expdir, None, lambda store: store.rows())
    done = run_emews("run", "--resume", expdir, "--budget", "24", cwd=home)
    assert done.returncode == 0, done.stderr
    return expdir, first


def test_a_resumed_conditional_study_stores_only_active_parameters_and_repeats_no_point(
        resumed):
    expdir, first = resumed
    space = Space.from_file(expdir.parent.parent.parent / "space.json")
    rows = read_once(expdir, None, lambda store: store.rows())
    assert len(first) == 12 and len(rows) == 24 and {row["status"] for row in rows} == {"done"}
    assert [(r["id"], r["params"], r["result"]) for r in rows[:12]] == [
        (r["id"], r["params"], r["result"]) for r in first]
    for row in rows:
        assert space.contains(row["params"]), row["params"]
        assert row["metrics"]["received"] == len(row["params"])   # the model got just those
    keys = [json.dumps(row["params"], sort_keys=True) for row in rows]
    assert len(set(keys)) == 24
    assert {len(row["params"]) for row in rows} == {3, 4}


def test_show_and_csv_export_leave_an_inactive_parameter_empty_and_read_back(resumed,
                                                                             tmp_path):
    expdir, _ = resumed
    space = Space.from_file(expdir.parent.parent.parent / "space.json")
    rows = {row["id"]: row for row in read_once(expdir, None, lambda store: store.rows())}
    done = run_emews("export", expdir, "--to", "csv", tmp_path / "e.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = run_emews("show", expdir, "--csv", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    for text in ((tmp_path / "e.csv").read_text(), shown.stdout):
        records = list(csv.DictReader(text.splitlines()))
        assert len(records) == 24
        for record in records:
            point = rows[int(record["id"])]["params"]
            assert {n for n in space.names if record[n] != ""} == set(point)
            assert space.parse(record) == point
    shown = run_emews("show", expdir, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    records = json.loads(shown.stdout)
    assert len(records) == 24
    for record in records:
        assert {n for n in space.names if n in record} == set(rows[record["id"]]["params"])
    table = run_emews("show", expdir, "--top", "24", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.startswith("┃ "))
    header = [cell.strip() for cell in header.strip("┃ ").split("┃")]
    lines = [line for line in table.stdout.splitlines() if line.startswith("│ ")]
    assert len(lines) == 24
    for line in lines:
        cells = dict(zip(header, (cell.strip() for cell in line.strip("│ ").split("│"))))
        point = rows[int(cells["id"])]["params"]
        assert {n for n in space.names if cells[n] != "-"} == set(point)


def test_a_csv_row_with_an_inactive_value_or_without_an_active_one_is_refused():
    space = Space.from_ga_json(CONDITIONAL, "s.json")
    assert space.parse({"optimizer": "sgd", "lr": "0.01", "momentum": "0.5", "beta": "",
                        "warmup": ""}) == {"optimizer": "sgd", "lr": 0.01, "momentum": 0.5}
    for cells, message in [
            ({"optimizer": "sgd", "lr": "0.01", "momentum": "0.5", "beta": "0.2"},
             "the point must set exactly its active parameters (optimizer, lr, momentum), and "
             "sets optimizer, lr, momentum, beta"),
            ({"optimizer": "adam", "lr": "0.01", "beta": "0.7"},
             "the point must set exactly its active parameters (optimizer, lr, beta, warmup), "
             "and sets optimizer, lr, beta"),
            ({"optimizer": "adam", "lr": "2", "beta": "0.1"},
             "column lr: '2' is outside [0.0001, 0.1]")]:
        with pytest.raises(ValueError) as error:
            space.parse(cells)
        assert str(error.value) == message


@pytest.mark.slow
def test_the_optuna_export_leaves_an_inactive_parameter_out_of_params_and_distributions(
        resumed, tmp_path):
    import optuna

    expdir, _ = resumed
    rows = {row["id"]: row for row in read_once(expdir, None, lambda store: store.rows())}
    url = f"sqlite:///{tmp_path / 'o.db'}"
    done = run_emews("export", expdir, "--to", "optuna", url, "--study-name", "c", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="c", storage=url).trials
    assert len(trials) == 24
    for trial in trials:
        point = rows[trial.user_attrs["emews_id"]]["params"]
        assert trial.params == point and set(trial.distributions) == set(point)
        assert trial.distributions["lr"] == optuna.distributions.FloatDistribution(
            1e-4, 1e-1, log=True)
        if "warmup" in point:
            assert trial.distributions["warmup"] == optuna.distributions.CategoricalDistribution(
                [False, True])


@pytest.mark.slow
def test_the_report_leaves_an_inactive_parameter_out_of_its_figures(resumed, tmp_path):
    import math

    from emews.inspect import load
    from emews.inspect import _report as report

    expdir, _ = resumed
    study = load(expdir)
    coordinates = report.Coordinates(study)
    plt = report.plot.pyplot()
    figure, _ = report._params(plt, study, coordinates)
    done = study.done
    for axes in figure.axes:
        name = axes.get_xlabel()
        if name:
            assert len(axes.collections[0].get_offsets()) == sum(name in r["params"]
                                                                 for r in done)
    figure, _ = report._parallel(plt, study, coordinates)
    names = coordinates.varying()
    best = done[:math.ceil(len(done) / 4)]
    lines = figure.axes[0].get_lines()[:len(best)]
    drawn = sorted(tuple(not math.isnan(y) for y in line.get_ydata()[:-1]) for line in lines)
    assert drawn == sorted(tuple(n in r["params"] for n in names) for r in best)
    assert any(not all(flags) for flags in drawn)
    ranked = report.importance(study, coordinates)
    assert {name for name, _, _ in ranked} == set(names)
    done = run_emews("report", expdir, "-o", tmp_path / "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript is not on PATH; CI installs r-base-core and "
                           "r-cran-paramhelpers from .ci/apt-packages")
def test_requires_gives_the_activity_r_paramhelpers_gives(tmp_path):
    """Our points, each with one parameter added, taken away or redrawn, are in our space exactly
    when R's ParamHelpers finds them feasible (each parameter set exactly when its requires is
    TRUE, NA counting as not)."""
    path = SUPERVISOR / "requires_forms.R"
    space = Space.from_file(path)
    rng = np.random.default_rng(6)
    points = []
    for point in space.sample(rng, 60):
        points.append(point)
        for param in space.params:   # one parameter toggled, or set to another value
            toggled, redrawn = dict(point), {**point, param.name: param.sample(rng)}
            if param.name in toggled:
                del toggled[param.name]
            else:
                toggled[param.name] = param.sample(rng)
            points += [toggled, redrawn]
    with open(tmp_path / "points.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(space.names)
        for point in points:
            writer.writerow(["NA" if name not in point else str(point[name]).upper()
                             if isinstance(point[name], bool) else point[name]
                             for name in space.names])
    done = subprocess.run(["Rscript", str(SUPERVISOR / "paramhelpers_requires.R"), str(path),
                           str(tmp_path / "points.csv")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ours = [f"feasible {str(space.contains(point)).upper()} " for point in points]
    assert done.stdout.splitlines() == ours
    assert 60 < ours.count("feasible TRUE ") < len(ours) - 60 * 8   # redrawn ones both ways


def test_the_dashboard_leaves_an_inactive_parameter_out_of_each_trial(resumed):
    from emews.inspect._optuna_view import StoreView

    expdir, _ = resumed
    rows = {row["id"]: row for row in read_once(expdir, None, lambda store: store.rows())}
    trials = StoreView([expdir]).get_all_trials(0)
    assert len(trials) == 24
    for trial in trials:
        point = rows[trial.user_attrs["emews_id"]]["params"]
        assert trial.params == point and set(trial.distributions) == set(point)
