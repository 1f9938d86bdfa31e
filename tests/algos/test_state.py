"""The checkpoint contract of emews.core._algorithm: the default, the framing of a state, mismatches.

That every built-in algorithm continues exactly from its state is checked by the conformance
suite (``test_conformance.py``)."""

import json
import math

import pytest

from emews.core._algorithm import Algorithm, pack_state, unpack_state
from emews.algorithms.random_search import RandomSearch
from emews.algorithms.sweep import Sweep
from emews._errors import ConfigError
from emews._space import Space
from emews.testing import SPACE, Conformance

MIXED = Space.from_ga_json(SPACE)


class Fixed(Algorithm):
    """An algorithm that keeps no state."""

    def ask(self, n):
        return self.space.sample(self.rng, n)


def test_by_default_an_algorithm_cannot_be_checkpointed():
    algorithm = Fixed(MIXED, seed=1)
    assert algorithm.state() is None
    with pytest.raises(NotImplementedError, match="Fixed saves no state to restore"):
        algorithm.restore(b"")


def test_a_state_is_a_readable_header_and_a_compressed_body():
    algorithm = Fixed(MIXED)
    state = pack_state(algorithm, {"values": [1.5, math.nan, math.inf], "n": 3})
    header, _, body = state.partition(b"\n")
    assert json.loads(header) == {"algorithm": "Fixed", "format": "json"}
    data = unpack_state(algorithm, state)
    assert data["n"] == 3 and data["values"][0] == 1.5 and math.isnan(data["values"][1])
    assert unpack_state(algorithm, pack_state(algorithm, {1, 2}, pickled=True)) == {1, 2}


def test_a_state_of_another_algorithm_is_refused():
    state = RandomSearch(MIXED, seed=1).state()
    with pytest.raises(ConfigError, match=r"^algorithm state: must be a state saved by Fixed, "
                                          r"got 'RandomSearch'$"):
        unpack_state(Fixed(MIXED), state)
    with pytest.raises(ConfigError, match=r"^algorithm state: must be a state saved by "
                                          r"RandomSearch, got b'not a state'$"):
        RandomSearch(MIXED).restore(b"not a state")
    with pytest.raises(ConfigError, match=r"^algorithm state: must be a whole state"):
        RandomSearch(MIXED).restore(state[:-5])


def test_plain_algorithms_save_plain_data(tmp_path):
    points = tmp_path / "points.jsonl"
    points.write_text('{"x": 1}\n{"x": 2}\n{"x": 3}\n')
    sweep = Sweep(None, file=str(points))
    sweep.tell([{"x": 3}], [0.5])
    assert sweep.ask(1) == [{"x": 1}]
    header, _, _ = sweep.state().partition(b"\n")
    assert json.loads(header)["format"] == "json"
    again = Sweep(None, file=str(points))
    again.restore(sweep.state())
    assert again.ask(5) == [{"x": 2}] and again.done()


class MBOCheckpoints(Conformance):
    """The conformance suite of ``mbo`` (slow as a whole in ``test_conformance.py``)."""

    algorithm = "mbo"
    options = {"design_size": 5, "n_trees": 20, "focus_points": 200, "focus_restarts": 2}


def test_mbo_continues_exactly_from_a_state_in_the_quick_tier():
    MBOCheckpoints().test_a_state_keeps_the_points_in_flight()
