"""The EQ/Py queue protocol: wire format and the ME thread's life and death."""

import json
import math
import sys
import types

import pytest

from emews import eqpy

from conftest import SUPPORT

AWKWARD = ['say "hi"; then \\ go', "line\nbreak", "naïve ☃", "$(rm -rf /);`x`", ";;;"]


@pytest.mark.parametrize("text", AWKWARD)
def test_points_survive_the_wire_whatever_their_strings(text):
    points = [{"s": text, "i": 3}, {"s": text + text, "f": 0.5, "b": True}]
    message = eqpy.encode_points(points)
    assert len(eqpy.split_points(message)) == 2
    assert eqpy.decode_points(message) == points


def test_points_are_written_as_json_writes_them_in_the_me_s_key_order_with_semicolons_escaped():
    point = {"z": "naïve; ☃", "a": 1e-300, "nan": math.nan, "l": [1, None, {"k": True}],
             "f": -0.0}
    assert eqpy.encode_points([point, {"x": 1}]) == (
        '{"z": "naïve\\u003b ☃", "a": 1e-300, "nan": NaN, "l": [1, null, {"k": true}], '
        '"f": -0.0};{"x": 1}')
    for text in AWKWARD:
        point = {"s": text, text: 0.5}
        assert eqpy.split_points(eqpy.encode_points([point])) == [
            json.dumps(point, ensure_ascii=False).replace(";", "\\u003b")]


@pytest.mark.parametrize("points", [[], [{}], [{}, {}], [{"l": [{"a": 1}, {"b": [{}, {}]}]}, {"x": 1}],
                                    [{"d": {"e": {}}, "s": "},\x1f{"}, {"t": ";"}, {}]])
def test_a_message_of_points_is_each_point_as_json_writes_it(points):
    assert eqpy.encode_points(points) == ";".join(
        json.dumps(point, ensure_ascii=False).replace(";", "\\u003b") for point in points)
    assert eqpy.decode_points(eqpy.encode_points(points)) == points


def test_batch_results_keep_order_and_nan():
    values = [0.25, math.nan, -3.0]
    decoded = eqpy.decode_results(eqpy.encode_results(values))
    assert decoded[0] == 0.25 and math.isnan(decoded[1]) and decoded[2] == -3.0


def test_non_numeric_results_become_nan():
    assert all(math.isnan(v) for v in eqpy.decode_results("abc;;None"))


def test_tagged_results_round_trip():
    pairs = eqpy.decode_tagged(eqpy.encode_tagged([(7, 1.5), (2, math.nan)]))
    assert pairs[0] == (7, 1.5) and pairs[1][0] == 2 and math.isnan(pairs[1][1])


def test_an_in_process_answer_is_the_wire_text_to_a_classic_me_and_values_to_the_driver():
    def run():
        eqpy.OUT_put("classic:" + eqpy.IN_get())
        eqpy.OUT_put(repr(eqpy.IN_get_tagged()))
        eqpy.OUT_put(repr(eqpy.IN_get_results()))
        eqpy.OUT_put(repr(eqpy.IN_get_tagged()))    # a text answer, as Swift/T sends
        eqpy.OUT_put("DONE")

    eqpy.init(_module("answers_me", run))
    eqpy.input_q.put(eqpy.Answer([(3, 0.1), (1, math.nan)], tagged=True))
    assert eqpy.output_q_get() == "classic:3:0.1;1:NaN"
    eqpy.input_q.put(eqpy.Answer([(4, 2)], tagged=True))
    assert eqpy.output_q_get() == "[(4, 2.0)]"              # floats, as the text gives
    eqpy.input_q.put(eqpy.Answer([1.5, math.inf]))
    assert eqpy.output_q_get() == "[1.5, inf]"
    eqpy.input_q.put(eqpy.encode_tagged([(0, -1.25)]))
    assert eqpy.output_q_get() == "[(0, -1.25)]"
    assert eqpy.output_q_get() == "DONE"


def _module(name, run):
    module = types.ModuleType(name)
    module.run = run
    return module


def test_init_runs_me_in_a_daemon_thread_and_relays_messages():
    def run():
        eqpy.OUT_put("Params")
        eqpy.OUT_put("echo:" + eqpy.IN_get())
        eqpy.OUT_put("DONE")
        eqpy.OUT_put("final")

    thread = eqpy.init(_module("relay_me", run))
    assert thread.daemon
    assert eqpy.output_q_get() == "Params"
    eqpy.input_q.put("settings.json")
    assert [eqpy.output_q_get() for _ in range(3)] == ["echo:settings.json", "DONE", "final"]
    thread.join(10)
    assert not thread.is_alive()


def test_me_exception_gives_abort_then_traceback():
    def run():
        raise KeyError("boom in the ME")

    eqpy.init(_module("raising_me", run))
    assert eqpy.output_q_get() == eqpy.EQPY_ABORT
    trace = eqpy.output_q_get()
    assert "Traceback" in trace and "boom in the ME" in trace


def test_me_returning_without_done_is_an_abort():
    eqpy.init(_module("quiet_me", lambda: eqpy.OUT_put("1")))
    assert eqpy.output_q_get() == "1"
    assert eqpy.output_q_get() == eqpy.EQPY_ABORT
    assert "without sending DONE" in eqpy.output_q_get()


def test_classic_modules_can_import_eqpy_by_its_old_name():
    sys.modules.pop("classic_me", None)
    sys.path.insert(0, str(SUPPORT))
    try:
        import classic_me  # its source says ``import eqpy``
    finally:
        sys.path.remove(str(SUPPORT))
    assert classic_me.eqpy is eqpy
    eqpy.init(classic_me)
    assert eqpy.output_q_get() == "Params"
    eqpy.input_q.put("settings.json")
    assert len(eqpy.decode_points(eqpy.output_q_get())) == 4
    eqpy.stop()


def test_stop_ends_an_me_waiting_for_an_answer():
    def waits():
        eqpy.OUT_put("1")
        eqpy.IN_get()
        eqpy.OUT_put("never")

    thread = eqpy.init(_module("waiting_me", waits))
    assert eqpy.output_q_get() == "1"
    eqpy.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert eqpy.output_q_get() == eqpy.EQPY_ABORT and "Stopped" in eqpy.output_q_get()


def test_stop_returns_once_an_me_still_computing_has_ended():
    finished = []

    def computes_after_its_last_answer():   # as a GP still fitting when the study ends
        eqpy.OUT_put("1")
        try:
            eqpy.IN_get()
        finally:
            finished.append(sum(i * i for i in range(2_000_000)))

    thread = eqpy.init(_module("computing_me", computes_after_its_last_answer))
    assert eqpy.output_q_get() == "1"
    eqpy.stop()
    assert finished and not thread.is_alive()   # no daemon left inside native code at exit


def test_an_me_left_from_an_earlier_study_never_takes_the_next_studys_messages():
    def left_behind():
        eqpy.OUT_put("waiting")
        eqpy.OUT_put("left behind got " + eqpy.IN_get())

    def current():
        eqpy.OUT_put("ready")
        eqpy.OUT_put("current got " + eqpy.IN_get())

    eqpy.init(_module("left_behind", left_behind))
    old_input, old_output = eqpy.input_q, eqpy.output_q
    assert old_output.get(timeout=10) == "waiting"
    eqpy.init(_module("current", current))
    assert eqpy.output_q_get() == "ready"
    eqpy.input_q.put("answer")
    assert eqpy.output_q_get() == "current got answer"
    old_input.put("old answer")
    assert old_output.get(timeout=10) == "left behind got old answer"
