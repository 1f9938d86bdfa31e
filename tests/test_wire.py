"""One wire form for an outcome: the codec's round trip and its checks.

The same study through every transport (in-process, MPI, zmq, PostgreSQL, Swift/T), asserting
the same stored rows, is in tests/test_wire_transports.py.
"""

import dataclasses
import json
import math
import pickle

import pytest

from emews.evaluate import BadOutcome, Outcome
from emews.evaluate import _outcome as codec
from emews._status import Status

SAMPLES = {codec.NUMBER: 1.5, codec.TEXT: "a tail \u00e9 \U0001f600", codec.STATUS: "failed",
           codec.METRICS: {"val_acc": 0.75, "n_params": 1234.0},
           codec.NUMBERS: [0.25, 1234.0], codec.MAYBE_FLAG: False}


def every_field_set():
    """An outcome whose every field is off its default (a new field of a known kind too)."""
    return Outcome(**{f.name: SAMPLES[f.metadata["wire"]] for f in dataclasses.fields(Outcome)})


def same(a, b):
    """Equal outcomes, NaN equal to NaN."""
    def key(o):
        return json.dumps(dataclasses.asdict(o), sort_keys=True)
    return key(a) == key(b)


@pytest.mark.parametrize("carry", [lambda w: w, lambda w: json.loads(json.dumps(w)),
                                   lambda w: pickle.loads(pickle.dumps(w))],
                         ids=["dict", "json", "pickle"])
def test_every_field_makes_the_round_trip(carry):
    outcome = every_field_set()
    wire = outcome.to_wire()
    assert sorted(Outcome.ORDER) == sorted(f.name for f in dataclasses.fields(Outcome))
    assert len(wire) == len(Outcome.ORDER)
    assert Outcome.from_wire(carry(wire)) == outcome


def test_a_plain_done_outcome_travels_without_its_defaults():
    wire = Outcome(0.5, started=10.0, finished=11.0).to_wire()
    assert wire == [0.5, 10.0, 11.0]
    assert Outcome.from_wire(wire) == Outcome(0.5, Status.DONE, started=10.0, finished=11.0)
    assert Outcome(0.5, "failed", "boom").to_wire() == [0.5, 0.0, 0.0, "failed", "boom"]


def test_value_started_and_finished_are_always_on_the_wire_and_checked_as_any_field():
    assert Outcome(2.0).to_wire() == [2.0, 0.0, 0.0]
    assert Outcome(math.inf, started=1.0, finished=2.0).to_wire() == [None, 1.0, 2.0]
    back = Outcome.from_wire([None, 1.0, 2.0])
    assert math.isnan(back.value) and back.status == Status.DONE and back.finished == 2.0
    assert Outcome.from_wire([1, 2.0, 3.0]) == Outcome(1.0, started=2.0, finished=3.0)
    assert type(Outcome.from_wire([1, 2.0, 3.0]).value) is float
    with pytest.raises(BadOutcome, match="'finished'"):
        Outcome.from_wire([1.0, 2.0, "3.0"])


def test_missing_optional_fields_take_their_defaults():
    assert Outcome.from_wire([2]) == Outcome(2.0)
    assert Outcome.from_wire((2,)) == Outcome(2.0)
    assert Outcome.from_wire([None, 0.0, 0.0, "cancelled"]).status == "cancelled"


def test_nan_and_infinities_travel_as_null_and_come_back_as_nan():
    outcome = Outcome(math.nan, "failed", "boom", started=math.nan,
                      metrics={"val_loss": math.inf, "val_acc": math.nan, "ok": 1.0})
    wire = outcome.to_wire()
    assert wire[0] is None and wire[1] is None
    assert wire[6] == {"val_loss": None, "val_acc": None, "ok": 1.0}
    text = json.dumps(wire, allow_nan=False)   # strict JSON: PostgreSQL and Tcl take it
    back = Outcome.from_wire(json.loads(text))
    assert math.isnan(back.value) and math.isnan(back.started)
    assert math.isnan(back.metrics["val_loss"]) and back.metrics["ok"] == 1.0
    assert same(back, Outcome(math.nan, "failed", "boom", started=math.nan,
                              metrics={"val_loss": math.nan, "val_acc": math.nan, "ok": 1.0}))


def test_fields_it_does_not_know_are_ignored():
    """A newer writer's field, after those this reader knows, is skipped."""
    wire = every_field_set().to_wire() + [[1, 2]]
    assert Outcome.from_wire(wire) == every_field_set()


def wire_of(**fields):
    """A wire form with ``fields`` set, the fields before them at their defaults."""
    values = dict(zip(Outcome.ORDER, [1.0, 0.0, 0.0, "done", None, None, {}, [], None]))
    values.update(fields)
    last = max(Outcome.ORDER.index(name) for name in fields)
    return [values[name] for name in Outcome.ORDER[:last + 1]]


@pytest.mark.parametrize("data, field", [
    ({"value": 0.5}, "JSON list"),
    ("0.5", "JSON list"),
    ([], "'value'"),
    (wire_of(value="abc"), "'value' must be a number"),
    (wire_of(value=True), "'value' must be a number"),
    (wire_of(value=10 ** 400), "'value' must be a number"),
    (wire_of(status="duplicate"), "'status' must be one of cancelled, done, failed"),
    (wire_of(status=None), "'status'"),
    (wire_of(error=3), "'error' must be text or null"),
    (wire_of(log_tail=["a"]), "'log_tail'"),
    (wire_of(started="now"), "'started'"),
    (wire_of(metrics=[1.0]), "'metrics' must be an object"),
    (wire_of(metrics={"acc": "high"}), "'metrics'"),
    (wire_of(metrics={1: 0.5}), "'metrics'"),
    (wire_of(objectives=0.5), "'objectives' must be a list of numbers"),
    (wire_of(objectives=[0.5, "big"]), "'objectives'"),
    (wire_of(feasible="yes"), "'feasible' must be true, false or null"),
])
def test_a_malformed_outcome_is_refused_naming_the_field(data, field):
    with pytest.raises(BadOutcome, match=field):
        Outcome.from_wire(data)


def test_a_malformed_outcome_received_fails_its_evaluation():
    outcome = Outcome.received(["abc"])
    assert outcome.status == "failed" and math.isnan(outcome.value)
    assert "a malformed result came back: outcome field 'value'" in outcome.error
    assert Outcome.received([0.5]) == Outcome(0.5)


def test_an_objective_vector_travels_with_nan_as_null():
    outcome = Outcome(0.5, objectives=[0.5, math.nan, 3.0], feasible=True)
    wire = outcome.to_wire()
    assert wire[7:] == [[0.5, None, 3.0], True]
    back = Outcome.from_wire(json.loads(json.dumps(wire, allow_nan=False)))
    assert same(back, outcome) and math.isnan(back.objectives[1])
