"""NaN and the infinities as JSON's null: one encoder (emews.core._vector.json_numbers) behind
every writer of numbers as JSON: the store's metrics and objective vectors, the EQ/Py wire, the
told values of a resume, an outcome's wire form and ``emews show --format json``'s curves."""

import json
import math

import pytest

from emews import eqpy
from emews.core._criteria import as_json, from_json
from emews.core._vector import Objectives, finite_or_none, json_numbers
from emews.evaluate._outcome import Outcome, Report
from emews.store._base import numbers_json

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_each_non_finite_number_is_null_nested_in_lists_tuples_and_dicts(value):
    data = {"a": [1.5, value, {"b": (value, 2, "text")}], "c": value, "d": None, "e": True}
    assert json_numbers(data) == {"a": [1.5, None, {"b": [None, 2, "text"]}], "c": None,
                                  "d": None, "e": True}
    assert json.loads(json.dumps(json_numbers(data), allow_nan=False))["c"] is None
    assert finite_or_none(value) is None and finite_or_none(-0.5) == -0.5


@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_every_writer_of_numbers_as_json_writes_null(value):
    assert json.loads(numbers_json({"loss": value, "acc": 0.5})) == {"loss": None, "acc": 0.5}
    assert json.loads(numbers_json((value, 1.0))) == [None, 1.0]
    assert eqpy.format_value(Objectives([0.5, value])) == "[0.5,null]"
    wire = Outcome(value, metrics={"acc": value}, objectives=[value, 2.0]).to_wire()
    assert (wire[0], wire[6], wire[7]) == (None, {"acc": None}, [None, 2.0])
    assert Report(3, value, {"acc": value}).to_wire()["metrics"] == {"acc": None}
    told = as_json(Objectives([0.5, value], [value]))
    assert told == {"values": [0.5, None], "violations": [None]}
    json.dumps(told, allow_nan=False)


def test_a_told_value_with_a_non_finite_number_reads_back_as_nan():
    back = from_json(json.loads(json.dumps(as_json(Objectives([0.5, INF], [NAN, 0.0])))))
    assert back.values[0] == 0.5 and math.isnan(back.values[1])
    assert math.isnan(back.violations[0]) and back.violations[1] == 0.0
    assert as_json(NAN) is None and math.isnan(from_json(None)) and from_json(0.25) == 0.25
    parsed = eqpy.parse_value(eqpy.format_value(Objectives([0.5, -INF])))
    assert parsed.values[0] == 0.5 and math.isnan(parsed.values[1])
