"""Packing evaluations of several slots: what a point asks (emews.pools._requests), where the
Packer places it, and a reservation that keeps the oldest large evaluation from starving."""

import json
from fractions import Fraction

import pytest
from conftest import SUPPORT, peak_slots, stored_rows

from emews.pools._packing import NeverFits, Packer
from emews.pools._requests import Demand, Request
from emews._space import Space
from emews._validation import Invalid


def test_a_request_comes_from_numbers_or_from_the_point_s_parameters():
    demand = Demand({"ranks_per_eval": "$k", "gpus_per_eval": 0.5, "nodes_per_eval": None})
    assert demand.of({"k": 2}) == Request(2, Fraction(1, 2))
    assert demand.parameters == ["k"] and not demand.trivial
    assert Demand({}).trivial and Demand({"ranks_per_eval": 1}).trivial
    with pytest.raises(Invalid, match=r"\[study\].ranks_per_eval \(parameter 'k'\): must be "
                       "positive, got 0"):
        demand.of({"k": 0})
    with pytest.raises(Invalid, match="names the parameter 'k', which the point lacks"):
        demand.of({})
    with pytest.raises(Invalid, match="whole number of GPUs or a fraction of one"):
        Demand({"ranks_per_eval": 2, "gpus_per_eval": 3}).of({})


def test_the_ends_of_a_parameter_are_checked_before_anything_runs():
    space = Space.from_ga_json([{"name": "k", "type": "categorical", "values": [1, 2, 8]},
                                {"name": "g", "type": "int", "lower": 1, "upper": 2}])
    demand = Demand({"ranks_per_eval": "$k"})
    with pytest.raises(Invalid, match="evaluations of 8 ranks, more than the 4 worker"):
        demand.refuse_beyond(space, 4, 0, "the pool")
    demand.refuse_beyond(space, 8, 0, "the pool")
    with pytest.raises(Invalid, match="asks for GPUs, but \\[system\\] gpus_per_node is 0"):
        Demand({"gpus_per_eval": "$g"}).refuse_beyond(space, 8, 0, "the pool")
    with pytest.raises(Invalid, match="names a parameter the search space lacks"):
        Demand({"ranks_per_eval": "$nope"}).refuse_beyond(None, 4, 0, "the pool")


def test_an_evaluation_goes_to_one_host_when_one_has_room_the_fullest_first():
    packer = Packer(["a"] * 4 + ["b"] * 4)
    first = packer.place(Request(3))
    assert first.slots == (0, 1, 2)
    assert packer.place(Request(1)).slots == (3,)        # the fullest host that has room
    assert packer.place(Request(4)).slots == (4, 5, 6, 7)
    assert packer.place(Request(1)) is None and packer.in_use() == 8
    packer.release(first)
    assert packer.place(Request(2, nodes=2)) is None     # 3 free slots, all on host a
    assert packer.place(Request(3)).slots == (0, 1, 2)


def test_gpu_shares_pack_fractions_onto_one_gpu_and_whole_gpus_apart():
    packer = Packer(["a"] * 4, gpus_per_node=2, devices=["4", "6"])
    half = packer.place(Request(1, Fraction(1, 2)))
    other = packer.place(Request(1, Fraction(1, 2)))
    assert half.gpus == ((("4", Fraction(1, 2)),),) and other.gpus == half.gpus  # one GPU
    whole = packer.place(Request(1, Fraction(1)))
    assert whole.gpus == ((("6", Fraction(1)),),)
    assert packer.place(Request(1, Fraction(1, 4))) is None   # both GPUs are full
    packer.release(half)
    assert packer.place(Request(1, Fraction(1, 4))).gpus == ((("4", Fraction(1, 4)),),)


def test_the_oldest_waiting_evaluation_reserves_hosts_and_the_rest_backfill_elsewhere():
    packer = Packer(["a"] * 4 + ["b"] * 4)
    running = [packer.place(Request(1)) for _ in range(5)]   # a full, b: one taken
    assert [p.slots for p in running][-1] == (4,)
    started = packer.schedule([Request(4, nodes=1), Request(1), Request(1), Request(1)])
    assert started == []   # b is reserved for the 4-rank evaluation: nothing else goes there
    for placement in running[:4]:
        packer.release(placement)                            # host a empties
    started = packer.schedule([Request(4, nodes=1), Request(1), Request(1)])
    assert [(i, p.slots) for i, p in started] == [(0, (0, 1, 2, 3)), (1, (5,)), (2, (6,))]


def test_a_request_larger_than_the_pool_never_fits_in_one_line():
    packer = Packer(["a"] * 4 + ["b"] * 4, gpus_per_node=1)
    with pytest.raises(NeverFits, match="an evaluation of 9 ranks can never fit: the pool "
                       "has 8 worker slots"):
        packer.check(Request(9))
    with pytest.raises(NeverFits, match="can never fit: the pool has 2 nodes of 4 slots "
                       "and 1 GPUs each"):
        packer.check(Request(4, Fraction(2), nodes=1))
    packer.check(Request(2, Fraction(2), nodes=2))


@pytest.mark.slow
def test_an_in_process_pool_packs_evaluations_and_each_run_is_told_what_it_holds(
        tmp_path, monkeypatch):
    import emews

    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp_path / "space.json").write_text(json.dumps(
        [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0},
         {"name": "k", "type": "categorical", "values": [1, 2, 3]},
         {"name": "seconds", "type": "constant", "value": 0.05}]))
    result = emews.run({"system": {"pool": "inprocess", "procs": 5, "progress_interval": 60},
                        "study": {"space": str(tmp_path / "space.json"), "budget": 12,
                                  "seed": 5, "objective": "packing_models:held",
                                  "ranks_per_eval": "$k", "isolate": False,
                                  "data_dir": str(tmp_path / "experiments")}})
    rows = stored_rows(result.expdir)
    assert [r["status"] for r in rows] == ["done"] * 12
    assert all(r["metrics"]["ranks"] == r["metrics"]["slots"] == r["params"]["k"]
               for r in rows)
    assert {r["params"]["k"] for r in rows} == {1, 2, 3}
    assert peak_slots(rows) <= 4
