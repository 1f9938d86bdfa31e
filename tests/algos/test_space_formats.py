"""Search spaces from mlrMBO's R makeParamSet, uniform bins, CSV cells, logical element types."""

import collections
import json

import numpy as np
import pytest

from emews._errors import ConfigError
from emews._space import Categorical, Float, Int, Logical, Ordered, Space

R_FILE = """
# NT3-style parameter set, as CANDLE/Supervisor's mlrMBO workflows write them
param.set <- makeParamSet(
  makeDiscreteParam("batch_size", values = c(16, 32, 64)),
  makeIntegerParam("epochs", lower = 2, upper = 5L),   # an R integer literal
  makeNumericParam("drop", 0, 0.9),                     # positional bounds
  makeNumericParam("learning_rate", lower = 1e-5, upper = .1, default = 0.01),
  makeDiscreteParam("activation", values = list("relu", 'tanh', "a \\"quoted\\" one")),
  makeDiscreteParam("scale", values = c(0.5, 1)),
  makeLogicalParam("warmup_lr")
#  makeDiscreteParam("commented_out", values = c("x"))
)
"""


def write(tmp_path, text, name="space.R"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_r_param_set_is_parsed_into_native_types(tmp_path):
    space = Space.from_file(write(tmp_path, R_FILE))
    assert space.names == ["batch_size", "epochs", "drop", "learning_rate", "activation",
                           "scale", "warmup_lr"]
    assert space["batch_size"] == Categorical("batch_size", (16, 32, 64))
    assert space["epochs"] == Int("epochs", 2, 5)
    assert space["drop"] == Float("drop", 0.0, 0.9)
    assert space["learning_rate"] == Float("learning_rate", 1e-5, 0.1)
    assert space["activation"].values == ("relu", "tanh", 'a "quoted" one')
    assert space["scale"].values == (0.5, 1.0) and isinstance(space["warmup_lr"], Logical)
    for point in space.sample(np.random.default_rng(0), 50):
        assert space.contains(point) and json.loads(json.dumps(point)) == point


def test_the_reader_is_chosen_by_content_when_the_extension_says_nothing(tmp_path):
    path = write(tmp_path, "makeParamSet(makeLogicalParam('bn'))", name="space.txt")
    assert Space.from_file(path).names == ["bn"]
    path = write(tmp_path, '[{"name": "bn", "type": "logical"}]', name="space.cfg")
    assert Space.from_file(path).names == ["bn"]


@pytest.mark.parametrize("text, where, fragment", [
    ('p <- makeParamSet(makeIntegerParam("b", lower=5, upper=10, requires = quote(f(a))))',
     ":1:77", "b.requires: must be quote(...) or expression(...) of tests on other parameters"),
    ('p <- makeParamSet(makeIntegerParam("b", lower=5, upper=10, requires = quote(a == 1)))',
     "", "b.condition: must test parameters of the space, got 'a'"),
    ('makeParamSet(makeNumericParam("lr", lower = exp(-5), upper = 1))', ":1:45",
     "must be a literal"),
    ('makeParamSet(makeNumericParam("lr", lower = 0))', ":1:14", "lr.upper: is required"),
    ('makeParamSet(makeNumericParam("lr", lower = 1, upper = 0))', ":1:14",
     "lower <= upper must hold"),
    ('makeParamSet(makeIntegerParam("n", lower = 1.5, upper = 3))', ":1:36",
     "must be a whole number"),
    ('makeParamSet(makeNumericParam("lr", lower = -Inf, upper = 1))', ":1:37",
     "must be a finite number"),
    ('makeParamSet(makeDiscreteParam("a", values = c(1, "x")))', ":1:37",
     "must be a non-empty c(...) of numbers, of strings or of logicals"),
    ('makeParamSet(makeVectorParam("a", len = 2))', ":1:14", "must be one of makeNumericParam"),
    ('makeParamSet(\n  makeLogicalParam("a"),\n  makeLogicalParam("a"))', "space.R",
     "parameter names must be unique"),
    ('makeParamSet(makeLogicalParam("a")', "at the end of the file", "expected ',' or ')'"),
    ('x <- 1\nmakeParamSet(makeLogicalParam("a"))', ":1:6", "must hold one makeParamSet"),
    ('makeParamSet(makeLogicalParam("a")) ; system("rm -rf /")', ":1:39",
     "nothing may follow"),
    ('makeParamSet(makeLogicalParam("a") $ 1)', ":1:36", "expected ',' or ')'"),
    ('makeParamSet()', "space.R", "at least one parameter"),
    ('makeParamSet(makeLogicalParam("é" § 1))', ":1:35", "not part of the makeParamSet subset"),
])
def test_bad_r_files_name_the_position_the_rule_and_the_value(tmp_path, text, where, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        Space.from_file(path)
    message = str(error.value)
    assert message.startswith(str(path)) and where in message and fragment in message, message


def test_uniform_coordinates_give_every_listed_value_an_equal_share():
    rng = np.random.default_rng(0)
    for param in (Categorical("c", ("a", "b", "c")), Ordered("o", (1, 2, 4, 8)),
                  Int("i", 0, 2), Logical("l")):
        counts = collections.Counter(param.from_unit(u) for u in rng.random(12000))
        share = 12000 / len(counts)
        assert all(abs(c - share) < 0.06 * share for c in counts.values()), counts
        assert all(param.from_unit(param.to_unit(v)) == v for v in counts)


def test_cells_are_parsed_by_type():
    assert Int("i", 0, 9).parse("7") == 7 and Float("f", 0, 1).parse("0.25") == 0.25
    assert Categorical("c", (16, 32)).parse("32") == 32
    assert Categorical("c", ("relu", "tanh")).parse("tanh") == "tanh"
    assert Logical("l").parse("TRUE") is True and Logical("l").parse("false") is False
    for param, text in ((Int("i", 0, 9), "7.5"), (Int("i", 0, 9), "10"),
                        (Categorical("c", ("relu",)), "elu"), (Logical("l"), "yes")):
        with pytest.raises(ValueError):
            param.parse(text)


def test_logical_element_types_read_strings_as_written():
    space = Space.from_ga_json([{"name": "o", "type": "categorical", "element_type": "logical",
                                 "values": ["true", "False", True]}])
    assert space["o"].values == (True, False, True)
