"""Conditional search spaces: the JSON ``condition`` form, activity and its three-valued logic."""

import numpy as np
import pytest

from emews import _conditions as conditions
from emews._errors import ConfigError
from emews._space import Space

OPTIMIZER = {"name": "optimizer", "type": "categorical", "values": ["sgd", "adam"]}
SPACE = [
    OPTIMIZER,
    {"name": "momentum", "type": "float", "lower": 0, "upper": 0.99,
     "condition": {"optimizer": ["sgd"]}},
    {"name": "nesterov", "type": "logical", "condition": {"momentum": {">": 0.5}}},
    {"name": "depth", "type": "int", "lower": 1, "upper": 4},
    {"name": "width3", "type": "int", "lower": 8, "upper": 256,
     "condition": {"depth": {">=": 3}}},
    {"name": "seed", "type": "constant", "value": 7},
]


def test_sampled_points_hold_exactly_their_active_parameters():
    space = Space.from_ga_json(SPACE, "s.json")
    points = space.sample(np.random.default_rng(0), 300)
    for point in points:
        assert space.contains(point)
        assert ("momentum" in point) == (point["optimizer"] == "sgd")
        assert ("nesterov" in point) == (point.get("momentum", 0) > 0.5)
        assert ("width3" in point) == (point["depth"] >= 3)
    assert {len(point) for point in points} == {3, 4, 5, 6}


def test_a_point_with_an_inactive_value_or_without_an_active_one_is_outside():
    space = Space.from_ga_json(SPACE, "s.json")
    assert not space.contains({"optimizer": "adam", "momentum": 0.1, "depth": 1, "seed": 7})
    assert not space.contains({"optimizer": "sgd", "depth": 1, "seed": 7})
    assert space.contains({"optimizer": "sgd", "momentum": 0.1, "depth": 1, "seed": 7})


def test_unit_coordinates_round_trip_and_leave_inactive_parameters_out():
    space = Space.from_ga_json(SPACE, "s.json")
    point = space.from_unit([0.9, 0.9, 0.9, 0.1, 0.9])
    assert point == {"optimizer": "adam", "depth": 1, "seed": 7}
    assert space.to_unit(point, inactive=-1.0) == [0.75, -1.0, -1.0, 0.125, -1.0]
    assert space.from_unit(space.to_unit(point)) == point


def test_a_test_on_an_inactive_parent_is_unknown_and_its_negation_too():
    condition = conditions.parse({"$not": {"momentum": {"<=": 0.5}}}, "c")
    assert condition.truth({}) is None and not condition.holds({})
    assert condition.holds({"momentum": 0.9})
    either = conditions.parse({"$any": [{"a": [1]}, {"b": [2]}]}, "c")
    assert either.truth({"b": 2}) is True and either.truth({"b": 3}) is None
    assert either.truth({"a": 0, "b": 3}) is False


def test_the_json_form_reads_back_equal():
    data = {"optimizer": {"!=": "adam"}, "$any": [{"depth": {">": 2, "<=": 4}}, {"x": [True]}]}
    condition = conditions.parse(data, "c")
    assert conditions.parse(condition.to_json(), "c") == condition


def test_true_is_not_one():
    assert not conditions.parse({"flag": [1]}, "c").holds({"flag": True})


@pytest.mark.parametrize("condition, rule, value", [
    ({"zz": ["a"]}, "must test parameters of the space", "zz"),
    ({"optimizer": ["rmsprop"]}, "must use values that optimizer takes", "rmsprop"),
    ({"m": {">": 0.1}}, "cannot depend on itself", "m"),
    ({"optimizer": {">": 1}}, "compares numbers", "1"),
    ({"$or": []}, "must be one of ['$all', '$any', '$not']", "$or"),
    ({"optimizer": {"~": 1}}, "a comparison must be one of", "~"),
    ({"optimizer": []}, "at least one value", "[]"),
    ([], "non-empty JSON object", "[]"),
])
def test_a_bad_condition_is_one_line_naming_the_file_parameter_rule_and_value(
        condition, rule, value):
    entry = {"name": "m", "type": "float", "lower": 0, "upper": 1, "condition": condition}
    with pytest.raises(ConfigError) as error:
        Space.from_ga_json([OPTIMIZER, entry], "space.json")
    message = str(error.value)
    assert message.startswith("space.json") and "m" in message and rule in message
    assert value in message and "\n" not in message


def test_a_cycle_is_refused_naming_its_parameters():
    entries = [{"name": "a", "type": "int", "lower": 0, "upper": 3, "condition": {"b": {">": 1}}},
               {"name": "b", "type": "int", "lower": 0, "upper": 3, "condition": {"a": {">": 1}}}]
    with pytest.raises(ConfigError, match=r"space.json: conditions must not form a cycle, "
                                          r"got \['a', 'b'\]"):
        Space.from_ga_json(entries, "space.json")


def test_complete_draws_what_a_point_newly_needs_parents_first():
    space = Space.from_ga_json(SPACE, "s.json")
    drawn = []

    def draw(param):
        drawn.append(param.name)
        return {"momentum": 0.9, "nesterov": True, "width3": 64}[param.name]

    values = {"optimizer": "sgd", "depth": 3, "nesterov": False}   # nesterov's parent lacking
    point = space.complete(values, draw)
    assert drawn == ["momentum", "width3"]   # nesterov was set: kept, now that it is active
    assert point == {"optimizer": "sgd", "momentum": 0.9, "nesterov": False, "depth": 3,
                     "width3": 64, "seed": 7}
    adam = space.complete({"optimizer": "adam", "momentum": 0.2, "depth": 1}, draw)
    assert adam == {"optimizer": "adam", "depth": 1, "seed": 7} and len(drawn) == 2
