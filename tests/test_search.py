"""The ME driver's Search: points left running by a killed run are proposed first, once."""

import json

from emews.core._algorithm import Stopper
from emews.algorithms.sweep import Sweep
from emews.core._me import Limits, Search

A, B, C = {"x": 1}, {"x": 2}, {"x": 3}


def sweep(tmp_path, points):
    path = tmp_path / "points.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in points))
    return Sweep(None, file=str(path))


def test_a_replayed_point_is_not_proposed_again_when_the_algorithm_asks_it(tmp_path):
    search = Search(sweep(tmp_path, [A, B, C]), Limits(stopper=Stopper()), pending=[A])
    assert search.propose(2) == [A, B]
    assert search.propose(2) == [C]


def test_each_replayed_copy_hides_one_proposal_only(tmp_path):
    search = Search(sweep(tmp_path, [A, A, B]), Limits(stopper=Stopper()), pending=[A])
    assert search.propose(1) == [A]
    assert search.propose(3) == [A, B]


def test_a_fresh_search_proposes_what_the_algorithm_asks(tmp_path):
    search = Search(sweep(tmp_path, [A, B, A]), Limits(stopper=Stopper()))
    assert search.propose(3) == [A, B, A]
