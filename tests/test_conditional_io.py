"""Conditional spaces in and out: mlrMBO's ``requires`` (parsed, never evaluated), ConfigSpace's
JSON (``emews space import``), forbidden clauses, and the inspection side (show, export, report)
and a resume, where an inactive parameter is absent."""

import pytest

from emews.conditions import AllOf, AnyOf, Compare, In, Not
from emews.errors import ConfigError
from emews.space import Space

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
])
def test_requires_is_read_into_a_condition(tmp_path, requires, condition):
    space = Space.from_file(r_space(tmp_path, requires))
    assert space["x"].condition == condition
    assert [p.condition for p in space.params[:3]] == [None, None, None]


def test_a_space_with_requires_gives_points_with_exactly_their_active_parameters(tmp_path):
    import numpy as np

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
