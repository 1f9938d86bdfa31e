"""Freeze-thaw (emews/core/_thaw.py): the pruner pauses runs, the drain thaws the promising ones
from their checkpoints, on a real mpiexec pool, with py, app and container models (a real
Charliecloud image), and on the pool of a served study on both transports."""

import json
import math
import os
import random
import signal
import sys
from pathlib import Path

import pytest

from emews.core import _pruners as pruners
from emews.core._thaw import Thaws, predict
from emews._errors import ConfigError
from emews._result import result_of
from emews._status import Status
from emews.store import SQLiteStore, study_store

SUPPORT = Path(__file__).parent / "support"
sys.path.insert(0, str(SUPPORT))
from freeze_models import STEPS, value_at  # noqa: E402 - beside the tests
from conftest import wait_until  # noqa: E402
from test_fidelity import gated_runs  # noqa: E402
from test_service import storage  # noqa: E402,F401 - fixture: zmq, or a PostgreSQL database
from support.postgres import postgres_server, postgres_url  # noqa: E402,F401 - fixtures
from charliecloud import charliecloud_image_fixture  # noqa: E402,F401 - fixture
from test_swift_workflow import swift_study, swift_t  # noqa: E402,F401

ASHA = {"min_resource": 9, "max_resource": STEPS, "reduction_factor": 3, "pause": True}
RUNG = 9   # the one rung
# one worker: FAST reaches the rung first and goes on; SLOW (slow to learn, the best at the
# end) and WORST are paused there; SLOW's curve predicts a final value below FAST's, WORST's not
FAST, SLOW, WORST = {"x": 0.6, "n": 0}, {"x": 0.2, "n": 3}, {"x": 1.5, "n": 0}


def crossing_curves(shape, steps, count=60):
    """``count`` noisy curves of the fidelity benchmark's kind (``exp``: ``a + exp(-(t - 1) /
    tau)``, ``pow``: ``a + t ** -alpha``; the slow ones end lowest), cut at ``steps``, with
    their noise-free values at step 27."""
    rng = random.Random(1)
    for _ in range(count):
        a, speed = 0.1 + rng.random() * 0.5, rng.random()
        value = (lambda t: a + math.exp(-(t - 1) / (1 + 6 * speed))) if shape == "exp" else \
            (lambda t: a + t ** -(0.3 + 1.2 * (1 - speed)))
        yield {t: value(t) + rng.gauss(0, 0.01) for t in range(1, steps + 1)}, value(27)


def rank_correlation(xs, ys):
    """Spearman's rank correlation of ``xs`` and ``ys`` (no ties)."""
    rx, ry = ([sorted(v).index(x) for x in v] for v in (xs, ys))
    n = len(xs)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))


@pytest.mark.parametrize("shape", ["exp", "pow"])
def test_the_curve_ensemble_ranks_final_values_as_well_as_the_last_value_and_nearer(shape):
    curves = list(crossing_curves(shape, 9))
    truths = [truth for _, truth in curves]
    ensemble = [predict(curve, 27) for curve, _ in curves]
    last = [curve[9] for curve, _ in curves]
    assert rank_correlation(ensemble, truths) >= rank_correlation(last, truths) > 0.8
    error = [sum(abs(p - t) for p, t in zip(v, truths)) for v in (ensemble, last)]
    assert error[0] < 0.6 * error[1]
    # fitted to 3 points (as many as pow3's and exp3's parameters), a curve is its last value
    assert all(predict(curve, 27) == curve[3] for curve, _ in crossing_curves(shape, 3))


def test_a_short_or_broken_curve_is_predicted_by_its_last_value():
    assert predict({1: 1.0, 2: 0.5}, 27) == 0.5
    assert predict({1: None, 2: float("nan")}, 27) == float("inf")
    assert predict({3: 0.4, 1: 1.0, 2: 0.5}, 3) == 0.4      # at its horizon already


def test_thaws_take_the_best_predicted_run_while_it_beats_the_best_value():
    thaws = Thaws(STEPS)
    for point, params in enumerate([FAST, SLOW, WORST]):
        thaws.pause(point, 1, json.dumps(params),
                    {s: value_at(params, s) for s in range(1, RUNG + 1)})
    assert thaws.take(best=0.0) is None                          # none predicted below 0
    point, paused = thaws.take(best=value_at(FAST, STEPS))
    assert point == 1 and paused.attempt == 1 and max(paused.curve) == RUNG
    assert thaws.take(best=value_at(FAST, STEPS)) is None        # FAST's own, and WORST
    thaws.pause(1, 2, paused.params, {10: value_at(SLOW, 10)})  # paused again: whole curve
    assert sorted(thaws.paused[1].curve) == list(range(1, 11)) and thaws.paused[1].attempt == 2


def test_with_fill_the_best_predicted_run_is_thawed_whatever_its_promise_as_a_filler():
    thaws = Thaws(STEPS)
    for point, params in enumerate([FAST, SLOW, WORST]):
        thaws.pause(point, 1, json.dumps(params),
                    {s: value_at(params, s) for s in range(1, RUNG + 1)})
    assert thaws.next_thaw(best=0.0) is None
    point, attempt, _, step = thaws.next_thaw(best=0.0, fill=True)
    assert (point, attempt, step) == (1, 2, RUNG)                # SLOW, predicted the best
    assert thaws.filler((1, 2), best=0.0) and not thaws.filler((1, 2), best=math.inf)
    assert not thaws.filler((0, 1), best=0.0)                     # no thaw
    thaws.retried((1, 2), 3)
    assert thaws.filler((1, 3), best=0.0) and not thaws.filler((1, 2), best=0.0)
    thaws.pause(1, 3, json.dumps(SLOW), {10: value_at(SLOW, 10)})
    assert not thaws.filler((1, 3), best=0.0) and sorted(thaws.paused) == [0, 1, 2]


def test_asha_with_pause_pauses_what_it_would_stop_and_stops_nan():
    asha = pruners.make("asha", ASHA)
    assert asha.report((0, 1), RUNG, 1.0) is False
    assert asha.report((1, 1), RUNG, 2.0) == pruners.PAUSE
    assert asha.report((2, 1), RUNG, float("nan")) is True
    with pytest.raises(ConfigError, match=r"\[pruner\].max_resource: must be given with pause"):
        pruners.make("asha", {"pause": True})
    with pytest.raises(ConfigError, match=r"\[pruner\].pause: does not apply to pruner 'median'"):
        pruners.make("median", {"pause": True})


def test_hyperband_with_pause_pauses_in_every_bracket_that_stops_runs():
    hyperband = pruners.make("hyperband", dict(ASHA, min_resource=3))   # 3, 9 (27: none)
    points = {b: [i for i in range(100) if hyperband.bracket_of(i) == b][:2] for b in (0, 1)}
    for bracket, step in ((0, 3), (1, 9)):
        first, second = points[bracket]
        assert hyperband.report((first, 1), step, 1.0) is False
        assert hyperband.report((second, 1), step, 2.0) == pruners.PAUSE


def sweep(study, tmp_path, objective, impl="py", storage=None, image=None):
    """The study file of a sweep of FAST, SLOW and WORST on one mpiexec worker under asha
    with pause (its store ``storage``, a PostgreSQL URL, or the experiment directory's). An
    ``app`` model is freeze_app.py; a ``container`` model the Charliecloud ``image``'s
    train.sh, told its behaviour ``freeze`` by a constant of the space."""
    points = [{**p, "act": "relu"} for p in (FAST, SLOW, WORST)]
    model, tables = {"objective": objective}, {}
    if impl == "app":
        model = {"impl": impl, "app": [sys.executable, str(SUPPORT / "freeze_app.py")]}
    if impl == "container":
        model = {"impl": impl}
        points = [{**p, "behaviour": "freeze"} for p in points]
        tables = {"model": {"image": str(image), "container_runtime": "charliecloud"},
                  "space": [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
                            {"name": "n", "type": "int", "lower": 0, "upper": 3},
                            {"name": "act", "type": "categorical", "values": ["relu"]},
                            {"name": "behaviour", "type": "constant", "value": "freeze"}]}
    (tmp_path / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    system = {"procs": 2, "progress_interval": 60, **({"storage": storage} if storage else {})}
    return study(system=system,
                 study={"algorithm": "sweep", "budget": 3, "pruner": "asha", **model},
                 algorithm={"file": "points.jsonl"}, pruner=ASHA, **tables)


def run_study(emews_cli, study, tmp_path, objective, impl="py", image=None):
    """Run :func:`sweep`; return its experiment directory and store (read only)."""
    done = emews_cli("run", sweep(study, tmp_path, objective, impl, image=image))
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir, SQLiteStore(expdir / "results.db", readonly=True)


def check_store_thawed(expdir, storage=None):
    """:func:`check_thawed` on the study's store (``storage``: its PostgreSQL URL, or the
    experiment directory's), opened read only for it; SLOW's row."""
    store = study_store(expdir, storage, readonly=True)
    try:
        return check_thawed(expdir, store)
    finally:
        store.close()


def check_thawed(expdir, store, attempts=((1, Status.PAUSED, RUNG), (2, Status.DONE, STEPS))):
    """SLOW was paused at the rung and thawed from its checkpoint: its curve goes on at the next
    step,
    no step repeated or lost, and it ends with the value an unpaused run reaches; WORST stays
    paused; FAST ran through. ``attempts``: SLOW's, as ``(attempt, status, last step)``."""
    rows = {(r["params"]["x"], r["params"]["n"]): r for r in store.rows()}
    fast, slow, worst = (rows[(p["x"], p["n"])] for p in (FAST, SLOW, WORST))
    assert fast["status"] == Status.DONE and fast["attempt"] == 1
    assert fast["result"] == pytest.approx(value_at(FAST, STEPS))
    assert slow["status"] == Status.DONE and slow["attempt"] == len(attempts)
    assert slow["result"] == pytest.approx(value_at(SLOW, STEPS))
    assert slow["result"] < fast["result"]
    assert store.best()["id"] == slow["id"]
    assert worst["status"] == Status.PAUSED and worst["result"] == pytest.approx(
        value_at(WORST, RUNG))
    assert worst["error"] == f"paused at step {RUNG}"
    assert [(a["attempt"], a["status"]) for a in store.attempts(slow["id"])] == [
        (attempt, status) for attempt, status, _ in attempts]
    reports = store.reports(slow["id"])
    assert [r["step"] for r in reports] == list(range(1, STEPS + 1))   # none repeated or lost
    assert [max(r["step"] for r in reports if r["attempt"] == attempt)
            for attempt, _, _ in attempts] == [last for _, _, last in attempts]
    assert all(r["value"] == pytest.approx(value_at(SLOW, r["step"])) for r in reports)
    return slow


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_py_run_is_thawed_from_its_checkpoint(emews_cli, study, tmp_path):
    expdir, store = run_study(emews_cli, study, tmp_path, "freeze_models:checkpointed")
    try:
        slow = check_thawed(expdir, store)
        trained = [(expdir / "run" / run_id / "trained.txt").read_text().split()
                   for run_id in (f"RUN{slow['id']:06d}", slow["run_id"])]
        assert trained == [[str(s) for s in range(1, RUNG + 1)],
                           [str(s) for s in range(RUNG + 1, STEPS + 1)]]
        assert store.meta("thaw_restarts") is None
        (worst,) = store.rows(Status.PAUSED)
    finally:
        store.close()
    result = result_of(expdir)
    assert (result.evaluations, result.pruned) == (3, 1)   # WORST, paused, is counted
    assert json.loads((expdir / "final.json").read_text())["evaluations"] == 3
    status = emews_cli("status", expdir)
    assert status.returncode == 0, status.stderr
    assert "evaluations: 3 finished of a budget of 3 (done 2, paused 1)" in status.stdout
    assert "paused: 1 runs, their checkpoints kept" in status.stdout
    shown = emews_cli("show", expdir, "--paused", "--json")
    assert shown.returncode == 0, shown.stderr
    (run,) = json.loads(shown.stdout)
    assert (run["id"], run["run_id"], run["step"]) == (worst["id"], worst["run_id"], RUNG)
    assert run["value"] == pytest.approx(value_at(WORST, RUNG))
    assert value_at(WORST, STEPS) < run["predicted"] < value_at(WORST, RUNG)   # it learns on
    table = emews_cli("show", expdir, "--paused")
    assert "1 paused runs, the most promising first" in table.stdout, table.stderr
    report = emews_cli("report", expdir)
    assert report.returncode == 0, report.stderr
    page = (expdir / "report.html").read_text()
    assert "Paused and thawed runs" in page and "The curves of the 2 runs the pruner paused" in page
    assert (expdir / "report_thaws.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_app_run_is_thawed_from_its_checkpoint(emews_cli, study, tmp_path):
    expdir, store = run_study(emews_cli, study, tmp_path, None, impl="app")
    store.close()
    check_store_thawed(expdir)


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_container_run_is_thawed_from_its_checkpoint_inside_the_image(
        emews_cli, study, tmp_path, charliecloud_image):
    # the image's train.sh (bash and awk, no Python) trains freeze_app.py's curve; the point's
    # checkpoint directory is bound inside it, and the thaw is told EMEWS_TRAIN_FROM there
    expdir, store = run_study(emews_cli, study, tmp_path, None, "container", charliecloud_image)
    store.close()
    slow = check_store_thawed(expdir)
    runs = [expdir / "run" / run_id for run_id in (f"RUN{slow['id']:06d}", slow["run_id"])]
    logs = [(run / "model.log").read_text() for run in runs]
    assert all(f"inside image {charliecloud_image.name} " in log for log in logs)
    # set on ch-run's command line (model.sh logs it), not only inherited from the worker
    assert f"--set-env=EMEWS_TRAIN_FROM={RUNG} --set-env=EMEWS_TRAIN_UNTIL={STEPS} " in logs[1]
    paused, thawed = ((run / "trained.txt").read_text().split() for run in runs)
    # paused at the rung, it may train on until its signal comes; its thaw goes on after the
    # checkpoint of step 9, which it kept inside the container
    assert paused[:RUNG] == [str(s) for s in range(1, RUNG + 1)]
    assert thawed == [str(s) for s in range(RUNG + 1, STEPS + 1)]
    checkpoints = expdir / "checkpoints" / f"RUN{slow['id']:06d}"
    assert sorted(int(p.name.split("-")[1]) for p in checkpoints.glob("step-*")) == list(
        range(1, STEPS + 1))


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_run_is_thawed_on_a_served_studys_pool(study, tmp_path, jobs, storage):
    """The same on the one worker of a served study's pool (emews serve; mpiexec emews pool
    EXPDIR), on both transports: the served study runs the same master, drain and thaws."""
    expdir, _ = jobs.run_served(sweep(study, tmp_path, "freeze_models:checkpointed",
                                      storage=storage), 2)
    check_store_thawed(expdir, storage)


@pytest.mark.slow
@pytest.mark.mpi
def test_a_model_without_checkpoints_is_thawed_from_step_0_and_this_is_recorded(
        emews_cli, study, tmp_path):
    expdir, store = run_study(emews_cli, study, tmp_path, "freeze_models:forgetful")
    try:
        (slow,) = [r for r in store.rows() if r["params"]["n"] == SLOW["n"]]
        assert slow["status"] == Status.DONE and slow["attempt"] == 2
        assert slow["result"] == pytest.approx(value_at(SLOW, STEPS))
        assert [r["step"] for r in store.reports(slow["id"]) if r["attempt"] == 2] == list(
            range(1, STEPS + 1))
        assert store.meta("thaw_restarts") == [
            {"id": slow["id"], "attempt": 2, "run_id": slow["run_id"]}]
        log = (expdir / "run" / f"member{slow['id']}.log").read_text()
        assert f"{slow['run_id']} thaw{slow['id']}-2: starts from nothing" in log
    finally:
        store.close()


def gated_models(gate):
    """The pids of the processes whose environment names ``gate`` (the gated models)."""
    wanted = f"EMEWS_TEST_GATE={gate}".encode()
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:   # gone meanwhile, or not ours to read
            continue
    return pids


@pytest.mark.slow
@pytest.mark.mpi
def test_a_study_killed_while_it_thaws_resumes_its_paused_runs(study, tmp_path):
    # FAST's 27 reports, SLOW's and WORST's 9 each, then SLOW's thaw trains steps 10 to 12
    # and waits before step 13: the study is killed there, with SLOW thawing and WORST paused
    path = sweep(study, tmp_path, "freeze_models:gated")
    stall = STEPS + 2 * RUNG + 3
    run, gate = gated_runs(tmp_path, stall=stall)
    killed = run(path)
    wait_until(lambda: len(list(gate.glob("report-*"))) > stall, "the thaw's wait at step 13")
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        (slow,) = [r for r in store.rows() if r["params"]["n"] == SLOW["n"]]
        wait_until(lambda: [(r["attempt"], r["step"]) for r in store.reports(slow["id"])][-1]
                   == (2, 12), "the thaw's report of step 12 in the store")
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()
        # the models run in sessions of their own and end with their workers, within the
        # deathsig's grace: none of the killed study's may still train when the gate opens
        wait_until(lambda: not gated_models(gate), "the killed study's models to end")
        rows = [(r["params"]["n"], r["status"], r["attempt"]) for r in store.rows()]
        assert rows[1] in ((3, Status.RUNNING, 2), (3, Status.CANCELLED, 2))  # as it died
        assert rows[::2] == [(0, Status.DONE, 1), (0, Status.PAUSED, 1)]
    finally:
        store.close()

    (gate / "go").touch()
    resumed = run("--resume", expdir)
    assert resumed.communicate(timeout=300)[0] is not None and resumed.returncode == 0
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        slow = check_thawed(expdir, store, attempts=[
            (1, Status.PAUSED, RUNG), (2, Status.PAUSED, 12), (3, Status.DONE, STEPS)])
        assert (expdir / "run" / slow["run_id"] / "trained.txt").read_text().split() == [
            str(s) for s in range(13, STEPS + 1)]
    finally:
        store.close()


# the drain's test (freeze_models.drained on two workers): LONG reaches the rung first and runs
# on; PAUSED and WORSE are paused there, both predicted worse than LONG's final value; LONG2
# is the point a larger budget adds
LONG, PAUSED, WORSE, LONG2 = ({"x": 0.6, "n": 0, "role": "long"},
                              {"x": 1.0, "n": 3, "role": "paused"},
                              {"x": 1.5, "n": 0, "role": "paused"},
                              {"x": 0.5, "n": 0, "role": "long"})


def check_drained(store, attempts):
    """PAUSED is paused, as its last attempt of ``attempts`` (``(attempt, last step)``, the
    first paused at the rung): its curve went on at the next step in each, none repeated or
    lost; WORSE stays paused at the rung; the LONG runs ran through."""
    rows = {(r["params"]["x"], r["params"]["n"]): r for r in store.rows()}
    paused, worse = rows[(PAUSED["x"], PAUSED["n"])], rows[(WORSE["x"], WORSE["n"])]
    longs = [r for r in rows.values() if r["params"]["role"] == "long"]
    assert all(r["status"] == Status.DONE and r["attempt"] == 1 for r in longs)
    assert (worse["status"], worse["attempt"]) == (Status.PAUSED, 1)
    last = attempts[-1]
    assert (paused["status"], paused["attempt"]) == (Status.PAUSED, last[0])
    assert paused["error"] == f"paused at step {last[1]}"
    assert paused["result"] == pytest.approx(value_at(PAUSED, last[1]))
    assert [(a["attempt"], a["status"]) for a in store.attempts(paused["id"])] == [
        (attempt, Status.PAUSED) for attempt, _ in attempts]
    reports = store.reports(paused["id"])
    assert [r["step"] for r in reports] == list(range(1, last[1] + 1))   # none repeated or lost
    assert [max(r["step"] for r in reports if r["attempt"] == attempt)
            for attempt, _ in attempts] == [step for _, step in attempts]
    return paused


@pytest.mark.slow
@pytest.mark.mpi
def test_the_drain_thaws_paused_runs_into_free_workers_and_pauses_them_again_at_the_end(
        emews_cli, study, tmp_path):
    # two workers, a budget of 3: once PAUSED and WORSE are paused, LONG is the last evaluation
    # and the second worker is free: PAUSED, predicted the better of the two (but no better
    # than LONG), is thawed there; it trains step 10, and waits before step 11 until LONG has
    # ended (LONG waits for the thaw before its last step); its report of step 11 pauses it
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps(p) + "\n" for p in (LONG, PAUSED, WORSE, LONG2)))
    space = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
             {"name": "n", "type": "int", "lower": 0, "upper": 3},
             {"name": "role", "type": "categorical", "values": ["long", "paused"]}]
    path = study(space=space, system={"procs": 3, "progress_interval": 60},
                 study={"algorithm": "sweep", "budget": 3, "pruner": "asha",
                        "objective": "freeze_models:drained"},
                 algorithm={"file": "points.jsonl"}, pruner=ASHA)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        paused = check_drained(store, [(1, RUNG), (2, RUNG + 2)])
        thaw = expdir / "run" / paused["run_id"] / "trained.txt"
        assert thaw.read_text().split() == [str(RUNG + 1), str(RUNG + 2)]
    finally:
        store.close()
    # a larger budget: LONG2 runs, and PAUSED is thawed again beside it, paused again after it
    resumed = emews_cli("run", "--resume", expdir, "--budget", "4")
    assert resumed.returncode == 0, resumed.stderr
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        paused = check_drained(store, [(1, RUNG), (2, RUNG + 2), (3, RUNG + 4)])
        assert len(store.rows()) == 4
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_run_under_swift_t_is_thawed_from_the_steps_it_trained_to_the_end(
        tmp_path, swift_t):  # noqa: F811 - the fixture
    # a Swift/T worker cannot hear the pruner: each run trains to its end, and the master
    # judges its reports when its outcome comes back; SLOW, paused at the rung there, is
    # thawed from the steps it already trained, without training again
    points = [{**p, "act": "relu"} for p in (FAST, SLOW, WORST)]
    (tmp_path / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    settings = {"algorithm": "sweep", "options": {"file": str(tmp_path / "points.jsonl")},
                "space": [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
                          {"name": "n", "type": "int", "lower": 0, "upper": 3},
                          {"name": "act", "type": "categorical", "values": ["relu"]}],
                "batch_size": 1, "stop": {"budget": 3}, "pruner": "asha",
                "pruner_options": ASHA}
    expdir = swift_study(tmp_path, swift_t, settings, 3, "freeze_models:checkpointed", "s")
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        slow = check_thawed(expdir, store)
    finally:
        store.close()
    trained = (expdir / "run" / f"RUN{slow['id']:06d}" / "trained.txt").read_text().split()
    assert trained == [str(s) for s in range(1, STEPS + 1)]   # once, to the end
    assert not (expdir / "run" / slow["run_id"] / "trained.txt").exists()   # never again
