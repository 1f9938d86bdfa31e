"""The validation layer (emews._validation): each rule accepts what it names and refuses the
rest with one line naming where, the rule and the value; the zmq message shapes, and the zmq
protocol (emews.service._protocol) checking every message through them."""

import math
import re

import pytest

from emews._errors import ConfigError
from emews.evaluate import Outcome
from emews.service import _protocol as protocol
from emews._status import Status
from emews._validation import (FLAG, MISSING, Choice, Each, Fields, Invalid, Items, Mapping,
                              Maybe, Number, Required, Strings, Table, Text, check, check_keys,
                              env_flag, message, problem, result)

NAME = re.compile(r"[A-Za-z_]\w*$")


@pytest.mark.parametrize("rule, value", [
    (Number(integer=True, minimum=1), 3),
    (Number(minimum=0, maximum=1), 0.5),
    (Number(minimum=0, maximum=1), 1),
    (Number(above=0), 1e-9),
    (Number(finite=False), math.nan),
    (Number(finite=False), -math.inf),
    (FLAG, False),
    (Choice(("a", "b")), "b"),
    (Text(), ""),
    (Text(NAME, "must be a name", one_line=True, nonempty=True), "x_1"),
    (Strings(NAME, "each must be a name", one_line=True), ["a", "b"]),
    (Mapping(NAME, "each key must be a name", lists=True), {"A": "1", "B": ["x", "y"]}),
    (Maybe(Number()), None),
    (Table({"a": Number()}, "t"), {}),
    (Items((Number(), Text()), "[n, s]"), [1, "x"]),
    (Fields({"a": Number()}), {"a": 1, "more": "kept"}),
    (Each(Number()), []),
    (Each(), [object()]),
])
def test_a_rule_returns_the_value_it_accepts(rule, value):
    accepted = check("f.toml: x", rule, value)
    assert accepted == value or (isinstance(value, float) and math.isnan(accepted))


@pytest.mark.parametrize("rule, value, line", [
    (Number(integer=True), 2.0, "f.toml: x: must be an integer, got 2.0"),
    (Number(integer=True), True, "f.toml: x: must be an integer, got True"),
    (Number(integer=True, minimum=2), "20", "f.toml: x: must be an integer >= 2, got '20'"),
    (Number(integer=True, minimum=2), 1, "f.toml: x: must be an integer >= 2, got 1"),
    (Number(minimum=0, maximum=10), math.nan, "f.toml: x: must be a number >= 0 <= 10, got nan"),
    (Number(above=0, maximum=1), 0, "f.toml: x: must be a number > 0 <= 1, got 0"),
    (Number(), math.inf, "f.toml: x: must be a number, got inf"),
    (Number(finite=False), 10 ** 400, f"f.toml: x: must be a number, got {10 ** 400!r}"),
    (Number(integer=True, minimum=1, words=True), "four",
     "f.toml: x: must be an integer, got 'four'"),
    (Number(integer=True, minimum=1, words=True), 0, "f.toml: x: must be positive, got 0"),
    (Number(minimum=0, words=True), -1, "f.toml: x: must not be negative, got -1"),
    (Number(minimum=-1, words=True), -2, "f.toml: x: must be at least -1, got -2"),
    (FLAG, "yes", "f.toml: x: must be true or false, got 'yes'"),
    (Choice(("a", "b")), "c", "f.toml: x: must be one of ['a', 'b'], got 'c'"),
    (Choice(("a", "b")), ["a"], "f.toml: x: must be one of ['a', 'b'], got ['a']"),
    (Text(), 3, "f.toml: x: must be a string, got 3"),
    (Text(nonempty=True), "", "f.toml: x: must be a non-empty string, got ''"),
    (Text(NAME, "must be a name"), "a b", "f.toml: x: must be a name, got 'a b'"),
    (Text(one_line=True), "a\nb", "f.toml: x: must be one line, got 'a\\nb'"),
    (Strings(), ["a", 1], "f.toml: x: must be a list of strings, got ['a', 1]"),
    (Strings(one_line=True), ["a\n"], "f.toml: x: must be a list of one-line strings, got "
                                      "['a\\n']"),
    (Strings(NAME, "each must be a name"), ["a b"], "f.toml: x: each must be a name, got "
                                                    "['a b']"),
    (Mapping(NAME, "each key must be a name"), {"A-B": "1"},
     "f.toml: x: each key must be a name (key 'A-B'), got {'A-B': '1'}"),
    (Mapping(NAME, "each key must be a name"), {"A": ["1"]},
     "f.toml: x: must map each key to a string of one line without '\"' (key 'A'), got "
     "{'A': ['1']}"),
    (Mapping(NAME, "k"), [], "f.toml: x: must be a table, got []"),
    (Maybe(Number()), "1", "f.toml: x: must be a number, got '1'"),
    (Table({"a": Number(), "b": FLAG}, "x"), 5, "f.toml: x: must be a table with keys among "
                                                "a, b, got 5"),
    (Table({"a": Number(), "b": FLAG}, "x"), {"c": 1}, "f.toml: x.c: is not a key of x "
                                                       "(keys: a, b), got 1"),
    (Table({"a": Table({"b": FLAG}, "a")}, "x"), {"a": {"b": 1}},
     "f.toml: x.a.b: must be true or false, got 1"),
    (Items((Number(), Text()), "[n, s]"), [1], "f.toml: x: must be [n, s], got [1]"),
    (Items((Number(), Text()), "[n, s]"), [1, 2], "f.toml: x[1]: must be a string, got 2"),
    (Fields({"a": Number()}), [], "f.toml: x: must be a JSON object, got []"),
    (Fields({"a": Number()}), {}, "f.toml: x.a: is required (must be a number)"),
    (Each(Number()), {}, "f.toml: x: must be a list, got {}"),
    (Each(Number()), [1, "2"], "f.toml: x[1]: must be a number, got '2'"),
    (Required(Choice(("a",))), MISSING, "f.toml: x: is required (must be one of ['a'])"),
])
def test_a_broken_rule_is_one_line_naming_where_the_rule_and_the_value(rule, value, line):
    with pytest.raises(ConfigError) as error:
        check("f.toml: x", rule, value)
    assert str(error.value) == line
    assert problem(rule, value) == error.value.rule


def test_a_rule_returns_what_it_converts_inside_a_table():
    class Double(Number):
        def __call__(self, value):
            return 2 * super().__call__(value)

    assert check("x", Table({"a": Double()}, "x"), {"a": 2}) == {"a": 4}
    assert check("x", Items((Double(),), "[n]"), [3]) == [6]
    assert check("x", Each(Double()), [1, 2]) == [2, 4]
    assert check("x", Fields({"a": Double()}), {"a": 1, "b": 1}) == {"a": 2, "b": 1}


@pytest.mark.parametrize("rule, text, value", [
    (Number(integer=True), "12", 12), (Number(), "2.5", 2.5), (Number(), "soon", "soon"),
    (FLAG, " Yes ", True), (FLAG, "0", False), (FLAG, "FALSE", False), (FLAG, "maybe", "maybe"),
    (Text(), "a", "a"), (Maybe(Number(integer=True)), "3", 3),
])
def test_from_text_reads_an_environment_variable(rule, text, value):
    assert rule.from_text(text) == value


def test_env_flag_is_the_one_boolean_environment_parser():
    assert env_flag("FLAG", True, {}) is True
    assert env_flag("FLAG", False, {"FLAG": " "}) is False
    assert env_flag("FLAG", False, {"FLAG": "yes"}) is True
    assert env_flag("FLAG", True, {"FLAG": "0"}) is False
    with pytest.raises(ConfigError) as error:
        env_flag("FLAG", True, {"FLAG": "sometimes"})
    assert str(error.value) == "FLAG: must be true or false, got 'sometimes'"


def test_check_keys_names_unknown_and_missing_keys_and_checks_each_value():
    rules = {"a": Number(integer=True), "b": Choice(("x", "y"))}

    def where(key):
        return f"s.toml: [t].{key}"

    assert check_keys({"a": 1, "b": "x"}, rules, where, "is not a key") == {"a": 1, "b": "x"}
    cases = [({"a": 1, "b": "x", "c": 2}, "s.toml: [t].c: is not a key, got 2"),
             ({"a": 1}, "s.toml: [t].b: is required (must be one of ['x', 'y'])"),
             ({"a": 1.5, "b": "x"}, "s.toml: [t].a: must be an integer, got 1.5")]
    for table, line in cases:
        with pytest.raises(ConfigError) as error:
            check_keys(table, rules, where, "is not a key", required=("b",))
        assert str(error.value) == line


GOOD_MESSAGES = [
    {"op": "hello", "pool": "p1", "workers": 4, "host": "n1", "pid": 7, "received": 0},
    {"op": "want", "free": 2, "received": 10},
    {"op": "results", "results": [[1, 1, 2, {"value": 0.5, "started": 1.0, "finished": 2.0}]],
     "free": 1, "received": 3},
    {"op": "heartbeat"}, {"op": "bye"}, {"op": "cancel"}, {"op": "who"},
    {"op": "tasks", "tasks": [[1, '{"x": 1}', "RUN001", 1]]},
    {"op": "ack", "ids": [1, 2]},
    {"op": "stop", "reason": "budget"},
    {"op": "study", "config": {"study": {}}, "expdir": "/x/EXP001", "lease": 60.0},
]

OPS = "['ack', 'bye', 'cancel', 'heartbeat', 'hello', 'reports', 'results', 'stop', 'study', " \
      "'tasks', 'verdicts', 'want', 'who']"


@pytest.mark.parametrize("data", GOOD_MESSAGES, ids=[m["op"] for m in GOOD_MESSAGES])
def test_a_good_message_is_accepted(data):
    assert message(data) == data


@pytest.mark.parametrize("data, line", [
    ([1], f"must be a JSON object whose op is one of {OPS}, got [1]"),
    ({"op": "hi"}, f"must be a JSON object whose op is one of {OPS}, got {{'op': 'hi'}}"),
    ({"op": "drain"}, f"must be a JSON object whose op is one of {OPS}, got {{'op': 'drain'}}"),
    ({"op": "want", "free": True, "received": 1}, "want.free: must be an integer, got True"),
    ({"op": "want", "free": 1}, "want.received: is required (must be an integer)"),
    ({"op": "tasks", "tasks": [[1, {}, "R", 1]]}, "tasks.tasks[0][1]: must be a string, got {}"),
    ({"op": "tasks", "tasks": [[1, "{}", "R"]]},
     "tasks.tasks[0]: must be [id, params, run_id, attempt], got [1, '{}', 'R']"),
    ({"op": "ack", "ids": "1,2"}, "ack.ids: must be a list, got '1,2'"),
    ({"op": "results", "results": {}, "free": 1, "received": 1},
     "results.results: must be a list, got {}"),
    ({"op": "results", "results": []}, "results.free: is required (must be an integer)"),
    ({"op": "study", "config": [], "expdir": "x", "lease": 1},
     "study.config: must be a JSON object, got []"),
    ({"op": "study", "config": {}, "expdir": "x"}, "study.lease: is required (must be a number)"),
    ({"op": "study", "config": {}, "expdir": "x", "lease": math.nan},
     "study.lease: must be a number, got nan"),
    ({"op": "reports", "reports": [[1, 1, 2]]},
     "reports.reports[0]: must be [id, attempt, rank, report], got [1, 1, 2]"),
    ({"op": "verdicts", "verdicts": [[1, "yes"]]},
     "verdicts.verdicts[0][1]: must be true or false, got 'yes'"),
])
def test_a_bad_message_is_one_line_naming_the_op_field_rule_and_value(data, line):
    with pytest.raises(Invalid) as error:
        message(data)
    assert str(error.value) == line


def test_a_result_entry_is_checked_alone_and_its_outcome_left_to_the_outcome_decoder():
    good = [3, 2, 1, {"value": None, "status": "failed", "error": "boom"}]
    assert result(good) == good
    assert result([3, 2, 1, "not an outcome"]) == [3, 2, 1, "not an outcome"]  # from_wire's
    for entry, line in [
            ([3, 2, 1], "result: must be [id, attempt, rank, outcome], got [3, 2, 1]"),
            ([3, 2, 1, {}, 5], "result: must be [id, attempt, rank, outcome], got [3, 2, 1, {}, "
                               "5]"),
            ({"id": 3}, "result: must be [id, attempt, rank, outcome], got {'id': 3}"),
            (["3", 2, 1, {"value": 1.0}], "result[0]: must be an integer, got '3'"),
            ([3, 2.0, 1, {"value": 1.0}], "result[1]: must be an integer, got 2.0"),
            ([3, 2, True, {"value": 1.0}], "result[2]: must be an integer, got True")]:
        with pytest.raises(Invalid) as error:
            result(entry)
        assert str(error.value) == line


def test_the_zmq_protocol_checks_every_message_through_the_validation_layer():
    sent = Outcome(0.25, started=1.0, finished=2.0, metrics={"val_acc": 0.9})
    frame = protocol.encode("results", results=[[4, 2, 1, sent.to_wire()]], free=0, received=4)
    decoded = protocol.decode(frame)
    assert [protocol.result(entry) for entry in decoded["results"]] == [(4, 2, 1, sent)]
    for frame, line in [
            (b'{"op": "want", "free": "many", "received": 0}',
             "a malformed message: want.free: must be an integer, got 'many'"),
            (b'{"op": "drain"}', f"a malformed message: must be a JSON object whose op is one "
                                 f"of {OPS}, got {{'op': 'drain'}}"),
            (b"\xff not json", "a message that is not JSON"),
            (b" " * (protocol.MAX_MESSAGE + 1),
             f"a message of {protocol.MAX_MESSAGE + 1} bytes (at most {protocol.MAX_MESSAGE})")]:
        with pytest.raises(protocol.BadMessage) as error:
            protocol.decode(frame)
        assert str(error.value) == line
    for entry, line in [
            (["4", 2, 1, sent.to_wire()], "a malformed result[0]: must be an integer, got '4'"),
            ([4, 2, 1, ["abc"]], "a result of task 4: outcome field 'value' must be a "
                                 "number, or null for NaN, got 'abc'"),
            ([4, 2, 1, sent.to_wire()[:3] + [Status.DUPLICATE]],
             "a result of task 4: outcome field 'status' must be")]:
        with pytest.raises(protocol.BadMessage) as error:
            protocol.result(entry)
        assert str(error.value).startswith(line) and "\n" not in str(error.value)
