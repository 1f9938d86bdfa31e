"""The checkpoint handoff of population-based training (emews/evaluate/_handoff.py), on real
files: a segment's start checkpoint, copied into its own directory through the real
objective (py and app models), a missing donor, a run again, bad records."""

import json
import sys
from pathlib import Path

import pytest

from emews.core._segments import SEGMENT
from emews.evaluate import Objective
from emews.evaluate._base import EvaluationFailed, RunContext
from emews.evaluate._handoff import TRAIN_UNTIL, clone, mark_unshared, prepare
from emews.models import pbt_toy

from conftest import SUPPORT

H = {"h0": 0.5, "h1": 0.25}


def record(name, parent=None, donor=None, start=0, until=3, member=0):
    return {"member": member, "name": name, "parent": parent, "donor": donor,
            "start": start, "until": until}


def point(params, **segment):
    return json.dumps({**params, SEGMENT: record(**segment)})


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy py model (tests/support/pbt_models.py:toy), in this interpreter."""
    monkeypatch.syspath_prepend(str(SUPPORT))
    objective = Objective(impl="py", objective="pbt_models:toy", expdir=tmp_path,
                          isolate=False)
    yield objective
    objective.close()


def started(expdir, run_id):
    """What a run found in its checkpoint directory (its ``start.json``)."""
    return (expdir / "run" / run_id / "start.json").read_bytes()


def test_segments_start_from_their_parent_or_donor_each_in_its_own_directory(toy, tmp_path):
    assert toy.evaluate(point(H, name="m0s0"), "RUN000001").status == "done"
    assert toy.evaluate(point({"h0": 0.9, "h1": 0.9}, name="m1s0", member=1),
                        "RUN000002").status == "done"
    donor = (tmp_path / "checkpoints" / "RUN000002" / "theta.json").read_bytes()
    assert json.loads(donor)["step"] == 3
    # m0 goes on from its own; then exploits m1: a copy of exactly m1's checkpoint
    outcome = toy.evaluate(point(H, name="m0s1", parent="m0s0", start=3, until=6), "RUN000003")
    assert outcome.status == "done"
    assert json.loads(started(tmp_path, "RUN000003"))["step"] == 3
    assert toy.evaluate(point(H, name="m0s2", parent="m0s1", donor="m1s0", start=3, until=6),
                        "RUN000004").status == "done"
    assert started(tmp_path, "RUN000004") == donor
    assert (tmp_path / "checkpoints" / "RUN000002" / "theta.json").read_bytes() == donor
    assert json.loads((tmp_path / "checkpoints" / "RUN000004" / "theta.json").read_text())[
        "step"] == 6
    links = tmp_path / "checkpoints" / "segments"
    assert {p.name: p.resolve().name for p in links.iterdir()} == {
        "m0s0": "RUN000001", "m1s0": "RUN000002", "m0s1": "RUN000003", "m0s2": "RUN000004"}
    log = (tmp_path / "run" / "member0.log").read_text().splitlines()
    assert [line.split(" ", 3)[3] for line in log] == [
        "m0s0: starts from nothing", "m0s1: goes on from m0s0",
        "m0s2: exploit: starts from m1s0's checkpoint (../RUN000002), step 3"]
    assert [line.split(" ")[2] for line in log] == ["RUN000001", "RUN000003", "RUN000004"]


def test_a_missing_or_unreadable_donor_is_one_line_and_the_member_goes_on_from_its_own(toy, tmp_path):
    assert toy.evaluate(point(H, name="m0s0"), "RUN000001").status == "done"
    own = (tmp_path / "checkpoints" / "RUN000001" / "theta.json").read_bytes()
    outcome = toy.evaluate(point(H, name="m0s1", parent="m0s0", donor="m1s0", start=3,
                                 until=6), "RUN000002")
    assert outcome.status == "done"
    assert started(tmp_path, "RUN000002") == own
    line = (tmp_path / "run" / "member0.log").read_text().splitlines()[-1]
    assert line.endswith("RUN000002 m0s1: the donor m1s0's checkpoint is missing: goes on "
                         "from its own, m0s0")
    links = tmp_path / "checkpoints" / "segments"
    (links / "m2s0").symlink_to("../no-such-run")
    (tmp_path / "checkpoints" / "broken").write_text("not a checkpoint directory")
    (links / "m3s0").symlink_to("../broken")
    for run_id, donor, problem in (("RUN000003", "m2s0", "is missing"),
                                   ("RUN000004", "m3s0", "is not a directory")):
        outcome = toy.evaluate(point(H, name=f"m0s{run_id[-1]}", parent="m0s0", donor=donor,
                                     start=3, until=6), run_id)
        assert outcome.status == "done" and started(tmp_path, run_id) == own
        line = (tmp_path / "run" / "member0.log").read_text().splitlines()[-1]
        assert line.endswith(f"the donor {donor}'s checkpoint {problem}: goes on from its "
                             f"own, m0s0")


def test_a_run_again_keeps_what_it_saved_and_copies_nothing(tmp_path):
    context = RunContext("EXP001", "RUN000001-2", "toy", tmp_path)
    directory = tmp_path / "checkpoints" / "RUN000001"
    directory.mkdir(parents=True)
    (directory / "theta.json").write_text('{"theta": [0.1, 0.1], "step": 5}')
    prepare(context, record("m0s1", parent="m0s0", start=3, until=6))
    assert (directory / "theta.json").read_text() == '{"theta": [0.1, 0.1], "step": 5}'
    assert context.env[TRAIN_UNTIL] == "6"
    assert (tmp_path / "checkpoints" / "segments" / "m0s1").resolve() == directory
    assert not (tmp_path / "run" / "member0.log").exists()


def test_a_missing_own_checkpoint_or_a_bad_record_fails_the_run_in_one_line(toy, tmp_path):
    outcome = toy.evaluate(point(H, name="m0s1", parent="m0s0", start=3, until=6),
                           "RUN000001")
    assert (outcome.status, outcome.error) == (
        "failed", "segment m0s1: the member's own checkpoint m0s0 is missing")
    bad = json.dumps({**H, SEGMENT: record("../m0s1")})
    outcome = toy.evaluate(bad, "RUN000002")
    assert outcome.status == "failed" and outcome.error.startswith(
        f"a point's {SEGMENT}.name must be a name of letters, digits")
    assert not (tmp_path / "m0s1").exists()
    with pytest.raises(EvaluationFailed, match="whole number of 0 or more, got -1"):
        prepare(RunContext("EXP001", "RUN000003", "toy", tmp_path),
                record("m0s0", until=-1))


def test_a_pool_that_cannot_see_the_experiment_directory_fails_every_segment_in_one_line(
        toy, tmp_path):
    """A served study's pool on a host without the study's EXPDIR writes to a directory of its
    own (emews/service/_links.py marks it): no segment can start there, not even a first one,
    whose checkpoint no other pool could find."""
    mark_unshared(tmp_path, "/elsewhere/EXP001")
    for run_id, segment in (("RUN000001", {"name": "m0s0"}),
                            ("RUN000002", {"name": "m0s1", "parent": "m0s0", "start": 3,
                                           "until": 6})):
        outcome = toy.evaluate(point(H, **segment), run_id)
        assert (outcome.status, outcome.error) == (
            "failed", f"segment {segment['name']}: this pool cannot see the study's experiment "
            f"directory /elsewhere/EXP001 (it writes to {tmp_path}): checkpoints are handed "
            f"over through a filesystem that the study and its pools share")
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "run").exists()


def test_clone_copies_a_file_exactly(tmp_path):
    source = tmp_path / "weights.bin"
    source.write_bytes(bytes(range(256)) * 4096)
    clone(source, tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == source.read_bytes()


def test_an_app_model_exploits_through_its_checkpoint_directory(tmp_path):
    objective = Objective(impl="app", app=[sys.executable, str(SUPPORT / "pbt_app.py")],
                          expdir=tmp_path, model_env={"PYTHONPATH": str(Path.cwd())})
    try:
        donor = objective.evaluate(point({"h0": 0.9, "h1": 0.9}, name="m1s0", member=1),
                                   "RUN000001")
        assert donor.status == "done", donor.error
        copied = (tmp_path / "checkpoints" / "RUN000001" / "theta.json").read_bytes()
        got = objective.evaluate(point(H, name="m0s1", donor="m1s0", start=3, until=6),
                                 "RUN000002")
    finally:
        objective.close()
    assert got.status == "done", got.error
    assert started(tmp_path, "RUN000002") == copied
    params = json.loads((tmp_path / "run" / "RUN000002" / "params.json").read_text())
    assert params == H    # the model's point has no segment record
    theta = json.loads(copied)["theta"]
    for _ in range(3):
        theta = pbt_toy.step(theta, H)
    assert got.value == pbt_toy.loss(theta)
