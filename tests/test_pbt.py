"""Population-based training (algorithms/pbt.py) on a real mpiexec pool: the checkpoint
handoff (emews/evaluate/_handoff.py), the lineage and the best member's schedule
(``emews show --lineage``, ``--schedule``), a kill mid-segment and the resume."""

import json
import math
import os
import signal
import sys

import pytest

import emews
from emews.core._algorithm import load
from emews.core._segments import SEGMENT, split
from emews._errors import ConfigError
from emews.inspect import _show as show
from emews.models import pbt_toy
from emews._space import Space

from conftest import SUPPORT, wait_until
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures
from test_service import storage  # noqa: F401 - fixture: zmq, or a PostgreSQL database

TC1_SMALL = SUPPORT / "supervisor" / "tc1_params_small.json"

STALL_AT = 5   # tests/support/pbt_models.py: where stalled_toy waits to be killed
BUDGET = 40
POPULATION = {"population_size": 4, "perturbation_interval": 3, "max_steps": 12,
              "quantile": 0.25}


def rounds(pbt, count, value):
    """``count`` rounds: every idle member's next segment asked, and told ``value(params)``;
    the points of each round."""
    asked = []
    for _ in range(count):
        points = pbt.ask(pbt.size)
        pbt.tell(points, [value(split(p)[0]) for p in points])
        asked.append(points)
    return asked


def test_the_bottom_quantile_exploits_the_top_and_explores_by_perturbation():
    space = Space.from_file(TC1_SMALL)   # Supervisor's pbt workflow's space
    pbt = load("pbt")(space, seed=3, population_size=5, quantile=0.2,
                      resample_probability=0.0, perturbation_interval=2)
    first, second = rounds(pbt, 2, lambda p: p["lr"])
    assert [split(p)[1]["name"] for p in first] == [f"m{m}s0" for m in range(5)]
    values = {split(p)[1]["member"]: split(p)[0]["lr"] for p in first}
    worst, best = max(values, key=values.get), min(values, key=values.get)
    for params, record in map(split, second):
        assert space.contains(params)
        assert (record["start"], record["until"], record["parent"]) == (
            2, 4, f"m{record['member']}s0")
        donor = split(first[best])[0]
        if record["member"] != worst:
            assert record["donor"] is None and params == split(first[record["member"]])[0]
            continue
        assert record["donor"] == f"m{best}s0"
        for name in ("drop", "lr"):   # x 0.8 or x 1.2, within the bounds
            assert params[name] in {min(max(donor[name] * f, space[name].lower),
                                        space[name].upper) for f in (0.8, 1.2)}
        assert {k: params[k] for k in ("conv", "feature_subsample", "activation", "optimizer",
                                       "batch_size", "epochs")} == \
            {k: donor[k] for k in ("conv", "feature_subsample", "activation", "optimizer",
                                   "batch_size", "epochs")}


def test_a_member_never_exploits_a_donor_that_has_finished_training():
    pbt = load("pbt")(Space.from_ga_json(pbt_toy.SPACE), seed=1, population_size=4,
                      perturbation_interval=2, max_steps=4)
    first = pbt.ask(4)
    pbt.tell(first, [0.5, 1.0, 1.1, 1.2])   # member 0 the best
    second = pbt.ask(4)
    pbt.tell(second[:1], [0.1])              # member 0 has trained to max_steps
    pbt.tell(second[3:], [math.nan])         # member 3 failed: the worst, still at step 2
    (again,) = [split(p)[1] for p in pbt.ask(4)]
    assert (again["member"], again["donor"], again["start"], again["until"]) == (3, None, 2, 4)


def test_a_member_ahead_that_exploits_one_behind_goes_on_from_the_donors_step():
    pbt = load("pbt")(Space.from_ga_json(pbt_toy.SPACE), seed=1, population_size=4,
                      perturbation_interval=2, quantile=0.25)
    first = pbt.ask(4)
    pbt.tell(first, [0.5, 0.6, 0.7, 0.1])
    second = pbt.ask(4)
    for value in (0.05, 0.04, 0.035):   # member 3 alone trains on, to step 8 (async)
        pbt.tell(second[3:] if value == 0.05 else [ahead], [value])
        (ahead,) = pbt.ask(4)
        assert split(ahead)[1]["member"] == 3
    pbt.tell(second[:3], [0.01, 0.02, 0.03])   # the others reach step 4, better than it
    assert pbt.members[3]["step"] == 8
    pbt.tell([ahead], [0.5])   # its next segment, from 8 to 10: the worst, it exploits
    exploit = [split(p)[1] for p in pbt.ask(4) if split(p)[1]["member"] == 3][0]
    assert (exploit["donor"], exploit["start"], exploit["until"]) == ("m0s1", 4, 6)
    pbt.tell([{"h0": 0.5, "h1": 0.5, SEGMENT: exploit}], [0.001])
    assert pbt.members[3]["step"] == 6 and pbt.members[3]["segment"] == exploit["name"]


def test_a_users_explore_stays_within_the_space(monkeypatch):
    monkeypatch.syspath_prepend(str(SUPPORT))
    space = Space.from_file(TC1_SMALL)
    halving = load("pbt")(space, seed=1, population_size=4, explore="pbt_models:halve_lr")
    for points in rounds(halving, 5, lambda p: p["drop"] + p["lr"]):
        assert all(space.contains(split(p)[0]) for p in points)
    exploits = [split(p) for p in rounds(halving, 1, lambda p: p["lr"])[0]
                if split(p)[1]["donor"] is not None]
    assert exploits
    for params, record in exploits:
        donor = halving.members[int(record["donor"][1:].split("s")[0])]["params"]
        assert params == {**donor, "lr": max(donor["lr"] / 2, 1e-4)}
    broken = load("pbt")(space, seed=1, population_size=4, explore="pbt_models:out_of_space")
    with pytest.raises(ValueError, match="pbt_models:out_of_space returned .* not a point "
                                         "of the search space"):
        rounds(broken, 3, lambda p: p["lr"])
    with pytest.raises(ConfigError, match=r"\[algorithm\].explore"):
        load("pbt")(space, explore="perturbation")


@pytest.mark.slow   # scikit-learn's GP: seconds to import on a busy machine
def test_pb2_learns_from_the_gains_and_stays_within_the_space():
    space = Space.from_file(TC1_SMALL)
    pb2 = load("pbt")(space, seed=1, population_size=4, explore="pb2", max_steps=20)
    for points in rounds(pb2, 5, lambda p: p["drop"] + p["lr"]):
        assert all(space.contains(split(p)[0]) for p in points)
    assert len(pb2.pb2) == 12 and pb2.done()   # a gain for every segment after the first


@pytest.mark.parametrize("option, value, rule", [
    ("population_size", 1, "must be an integer >= 2"),
    ("perturbation_interval", 0, "must be an integer >= 1"),
    ("quantile", 0.7, "must be a number > 0 <= 0.5"),
    ("resample_probability", 2, "must be a number >= 0 <= 1"),
    ("factors", [], "must be a list of positive numbers"),
    ("max_steps", 0, "must be an integer >= 1"),
    ("explore", "nope", "must be one of ['perturb', 'pb2', 'module:function']"),
    ("explore", "math:pi", "must name a callable"),
])
def test_a_bad_option_is_one_line_naming_it_the_rule_and_the_value(option, value, rule):
    with pytest.raises(ConfigError) as error:
        load("pbt")(Space.from_ga_json(pbt_toy.SPACE), **{option: value})
    assert str(error.value) == f"[algorithm].{option}: {rule}, got {value!r}"


def pbt_study(study, procs=4, mode="async", objective="pbt_models:toy", storage=None,
              **options):
    """A study of the toy's population (a budget to spare: the search ends by itself once
    every member is at max_steps, after more segments where members exploit donors behind
    them), its store ``storage`` (a PostgreSQL URL) or the experiment directory's."""
    system = {"procs": procs, "progress_interval": 0.0}
    if storage:
        system["storage"] = storage
    return study(space=pbt_toy.SPACE, system=system,
                 study={"budget": BUDGET, "objective": objective, "seed": 2, "algorithm": "pbt",
                        "mode": mode},
                 algorithm={**POPULATION, **options})


def expdir_of(tmp_path, name="study"):
    (expdir,) = (tmp_path / "experiments" / name).iterdir()
    return expdir


def checkpoint(expdir, segment):
    """The bytes of ``theta.json`` in a segment's checkpoint directory (its segment link)."""
    return (expdir / "checkpoints" / "segments" / segment / pbt_toy.CHECKPOINT).read_bytes()


def run_dir(expdir, study, segment):
    (row,) = [r for r in study.rows if r["id"] == segment["id"]]
    return expdir / "run" / row["run_id"]


@pytest.mark.slow
@pytest.mark.mpi
def test_a_population_on_a_real_mpiexec_pool(emews_cli, study, tmp_path):
    done = emews_cli("run", pbt_study(study))
    assert done.returncode == 0, done.stderr
    check_population(expdir_of(tmp_path), emews_cli)


@pytest.mark.slow
@pytest.mark.mpi
def test_a_population_on_a_served_studys_pool(emews_cli, study, jobs, storage):
    """The same on the pool of a served study (emews serve; mpiexec emews pool EXPDIR), on
    both transports (zmq, PostgreSQL), which shares the experiment directory's filesystem.
    In batch mode, every member ends each segment before the next are asked for, so that the
    bottom member always exploits (asynchronously, the top ones may reach max_steps first on a
    served pool's timing: no exploit, seen once in a CI rehearsal)."""
    expdir, _ = jobs.run_served(pbt_study(study, procs=5, mode="batch", storage=storage), 5)
    check_population(expdir, emews_cli)


@pytest.mark.slow
@pytest.mark.mpi
def test_a_served_pool_that_cannot_see_the_experiment_directory_fails_each_segment(
        study, jobs, postgres_url, tmp_path):
    """A pool on a host without the study's experiment directory (here: the study's row in its
    PostgreSQL database names one this host lacks) writes to a directory of its own, where no
    segment can start: each fails in one line naming the missing directory."""
    import psycopg

    server, expdir = jobs.serve(pbt_study(study, procs=5, storage=postgres_url))
    elsewhere = "/elsewhere/EXP001"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE emews_studies SET expdir=%s", (elsewhere,))
    workdir = tmp_path / "pool"
    pool = jobs.pool(f"{postgres_url}#{expdir}", 5, "--workdir", workdir)
    out, err = server.communicate(timeout=300)
    assert server.returncode == 1, err   # every evaluation failed
    assert f"{BUDGET} evaluations ({BUDGET} failed)" in out
    pool.communicate(timeout=60)
    rows = emews.load(expdir).rows
    assert len(rows) == BUDGET
    for row in rows:
        name = row["params"][SEGMENT]["name"]
        assert (row["status"], row["error"]) == (
            "failed", f"segment {name}: this pool cannot see the study's experiment directory "
            f"{elsewhere} (it writes to {workdir}): checkpoints are handed over through a "
            f"filesystem that the study and its pools share")
    assert not (workdir / "checkpoints").exists()


def check_population(expdir, emews_cli):
    """A finished population of the toy: exploit copied exactly the donor's checkpoint,
    explore kept to the space, the stored lineage is what the members saw and reported, and
    the best member's schedule replayed gives its curve."""
    loaded = emews.load(expdir)
    segments = show.lineage(loaded)
    assert loaded.final["stop_reason"] == "the algorithm has no more points to propose"
    assert SEGMENT not in loaded.param_names
    assert {s["status"] for s in segments} == {"done"}
    assert sorted({s["member"] for s in segments}) == [0, 1, 2, 3]
    curves = loaded.curves()
    by_name = {s["name"]: s for s in segments}
    exploits = [s for s in segments if s["donor"] is not None]
    assert exploits, "no member exploited another"
    for segment in segments:
        directory = run_dir(expdir, loaded, segment)
        start = segment["donor"] or segment["parent"]
        # exploit copies exactly the donor's checkpoint (else the member's own goes on)
        found = (directory / "start.json").read_bytes()
        assert found == (checkpoint(expdir, start) if start else b""), segment
        # what the member reports matches the stored lineage
        started_at = json.loads(found)["step"] if found else 0
        assert started_at == segment["start"] == (by_name[start]["until"] if start else 0)
        assert int((directory / "until.txt").read_text()) == segment["until"]
        assert sorted(curves[segment["id"]]) == list(range(segment["start"] + 1,
                                                           segment["until"] + 1))
        assert segment["until"] - segment["start"] == 3
        # explore stays within the space
        assert set(segment["params"]) == {"h0", "h1"}
        assert all(0.0 <= v <= 1.0 for v in segment["params"].values()), segment
    assert all(max(s["until"] for s in segments if s["member"] == m) == 12 for m in range(4))
    members = {m: (expdir / "run" / f"member{m}.log").read_text().splitlines()
               for m in range(4)}
    assert sum(len(lines) for lines in members.values()) == len(segments)
    assert sum("exploit" in line for lines in members.values() for line in lines) \
        == len(exploits)

    # the best member's schedule, replayed as one training, gives its curve
    shown = emews_cli("show", expdir, "--schedule")
    assert shown.returncode == 0, shown.stderr
    schedule = json.loads(shown.stdout)
    best = min(segments, key=lambda s: (s["value"], s["id"]))   # two may tie
    assert (schedule["id"], schedule["until"], schedule["value"]) == (best["id"], 12,
                                                                      best["value"])
    chain, segment = [], best
    while segment is not None:
        chain.append(segment)
        segment = by_name.get(segment["donor"] or segment["parent"])
    assert schedule["schedule"] == {str(s["start"]): s["params"] for s in reversed(chain)}
    stored = {step: value for s in chain for step, value in curves[s["id"]].items()}
    assert pbt_toy.replay(schedule) == stored
    assert stored[12] == best["value"]

    table = emews_cli("show", expdir, "--lineage")
    assert table.returncode == 0, table.stderr
    assert f"lineage of {len(segments)} segments, 4 members" in table.stdout
    listed = json.loads(emews_cli("show", expdir, "--lineage", "--json").stdout)
    assert [(s["id"], s["name"], s["parent"], s["donor"]) for s in listed] == \
        [(s["id"], s["name"], s["parent"], s["donor"]) for s in segments]


def kill_mid_segment(study, tmp_path, jobs, emews_cli, mode):
    """A study of ``stalled_toy`` killed while a member is mid-segment, then resumed; its
    experiment directory."""
    gate = tmp_path / "gate"
    gate.mkdir()
    path = pbt_study(study, procs=5, mode=mode, objective="pbt_models:stalled_toy")
    jobs.env["EMEWS_TEST_GATE"] = str(gate)
    job = jobs.start(sys.executable, "-m", "emews", "run", path)
    wait_until(lambda: (gate / "stalled").exists(), "a member stalled at step 5")
    os.killpg(job.pid, signal.SIGKILL)
    job.communicate(timeout=120)
    expdir = expdir_of(tmp_path)
    resumed = emews_cli("run", "--resume", expdir, env={"EMEWS_TEST_GATE": str(gate)})
    assert resumed.returncode == 0, resumed.stderr
    return expdir


def check_killed_member_went_on_from_its_checkpoint(expdir):
    """The member killed mid-segment went on from its checkpoint at step 5 (pbt_models'
    STALL_AT), not from its segment's start: its run again reported steps 6 on only; so did
    any other run that was killed (each from where it was: its attempt counted again, or not
    where the store had not yet marked it running), and no other."""
    loaded = emews.load(expdir)
    curves = loaded.curves()
    killed = []
    for s in show.lineage(loaded):
        found = (run_dir(expdir, loaded, s) / "start.json").read_text()
        started = json.loads(found)["step"] if found else 0
        assert sorted(curves.get(s["id"], {})) == list(range(started + 1, s["until"] + 1))
        if started != s["start"]:   # killed after its last step: reports nothing again
            assert s["start"] < started <= s["until"], s
            killed.append((s["start"], started))
    assert (3, STALL_AT) in killed


@pytest.mark.slow
@pytest.mark.mpi
def test_a_killed_batch_study_resumes_to_the_same_population(emews_cli, study, tmp_path, jobs,
                                                              no_leftovers):
    """Killed while a member is mid-segment, a batch study resumes from the search's state:
    the population ends as an uninterrupted study's."""
    expdir = kill_mid_segment(study, tmp_path, jobs, emews_cli, "batch")
    reference = study(name="reference.toml", space=pbt_toy.SPACE,
                      system={"procs": 5, "progress_interval": 0.0},
                      study={"budget": BUDGET, "objective": "pbt_models:toy", "seed": 2,
                             "algorithm": "pbt", "mode": "batch", "name": "reference"},
                      algorithm=POPULATION)
    assert emews_cli("run", reference).returncode == 0
    keys = ("member", "name", "parent", "donor", "start", "until", "params", "value")
    got = show.lineage(emews.load(expdir))
    want = show.lineage(emews.load(expdir_of(tmp_path, "reference")))
    assert [{k: s[k] for k in keys} for s in got] == [{k: s[k] for k in keys} for s in want]
    check_killed_member_went_on_from_its_checkpoint(expdir)


@pytest.mark.slow
@pytest.mark.mpi
def test_a_killed_async_study_resumes_its_population_each_member_once(
        emews_cli, study, tmp_path, jobs, no_leftovers):
    """Killed while a member is mid-segment, an async study resumes from its history: the
    members whose segments were running are not given a second one; every member's segments
    follow each other, to max_steps."""
    expdir = kill_mid_segment(study, tmp_path, jobs, emews_cli, "async")
    loaded = emews.load(expdir)
    assert loaded.final["stop_reason"] == "the algorithm has no more points to propose"
    segments = show.lineage(loaded)
    assert len({s["name"] for s in segments}) == len(segments)
    by_name = {s["name"]: s for s in segments}
    for m in range(4):
        mine = sorted((s for s in segments if s["member"] == m), key=lambda s: s["id"])
        assert [s["name"] for s in mine] == [f"m{m}s{i}" for i in range(len(mine))]
        assert [s["parent"] for s in mine] == [None] + [s["name"] for s in mine[:-1]]
        assert all(s["start"] == (by_name[s["donor"] or s["parent"]]["until"]
                                  if s["parent"] else 0) for s in mine)
        assert mine[-1]["until"] == 12
    check_killed_member_went_on_from_its_checkpoint(expdir)
