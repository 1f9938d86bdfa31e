"""Freeze-thaw (emews/core/thaw.py): the pruner pauses runs, the drain thaws the promising ones
from their checkpoints, on a real mpiexec pool, with py and app models."""

import json
import random
import sys
from pathlib import Path

import pytest

from emews.core import pruners
from emews.core.thaw import Thaws, predict
from emews.errors import ConfigError
from emews.status import Status
from emews.store import SQLiteStore

SUPPORT = Path(__file__).parent / "support"
sys.path.insert(0, str(SUPPORT))
from freeze_models import STEPS, value_at  # noqa: E402 - beside the tests

ASHA = {"min_resource": 3, "max_resource": STEPS, "reduction_factor": 3, "pause": True}
# one worker: A reaches each rung first and goes on; B (slow to learn, the best at the end)
# and C (the worst) are paused at step 3; B's curve predicts a final value below A's, C's not
FAST, SLOW, WORST = {"x": 0.9, "n": 0}, {"x": 0.0, "n": 3}, {"x": 1.5, "n": 0}


def test_the_curve_ensemble_predicts_power_law_curves_better_than_their_last_value():
    rng = random.Random(0)
    ensemble, last = [], []
    for _ in range(40):
        c, a, alpha = rng.uniform(0, 1), rng.uniform(0.5, 3), rng.uniform(0.3, 1.5)
        curve = {s: c + a * s ** -alpha for s in range(1, 10)}
        truth = c + a * 27 ** -alpha
        ensemble.append(abs(predict(curve, 27) - truth))
        last.append(abs(curve[9] - truth))
    assert sum(ensemble) < 0.1 * sum(last)


def test_a_short_or_broken_curve_is_predicted_by_its_last_value():
    assert predict({1: 1.0, 2: 0.5}, 27) == 0.5
    assert predict({1: None, 2: float("nan")}, 27) == float("inf")
    assert predict({3: 0.4, 1: 1.0, 2: 0.5}, 3) == 0.4      # at its horizon already


def test_thaws_take_the_best_predicted_run_while_it_beats_the_best_value():
    thaws = Thaws(STEPS)
    for point, params in enumerate([FAST, SLOW, WORST]):
        thaws.pause(point, 1, json.dumps(params), {s: value_at(params, s) for s in (1, 2, 3)})
    assert thaws.take(best=0.0) is None                          # none predicted below 0
    point, paused = thaws.take(best=value_at(FAST, STEPS))
    assert point == 1 and paused.attempt == 1 and max(paused.curve) == 3
    assert thaws.take(best=value_at(FAST, STEPS)) is None        # FAST's own, and WORST
    thaws.pause(1, 2, paused.params, {4: value_at(SLOW, 4)})    # paused again: whole curve
    assert sorted(thaws.paused[1].curve) == [1, 2, 3, 4] and thaws.paused[1].attempt == 2


def test_asha_with_pause_pauses_what_it_would_stop_and_stops_nan():
    asha = pruners.make("asha", ASHA)
    assert asha.report((0, 1), 3, 1.0) is False
    assert asha.report((1, 1), 3, 2.0) == pruners.PAUSE
    assert asha.report((2, 1), 3, float("nan")) is True
    with pytest.raises(ConfigError, match=r"\[pruner\].max_resource: must be given with pause"):
        pruners.make("asha", {"pause": True})


def run_study(emews_cli, study, tmp_path, objective, impl="py", budget=3, points=None):
    """Run a sweep of ``points`` (FAST, SLOW, WORST) on one mpiexec worker under asha with
    pause; return its store (read only)."""
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps({**p, "act": "relu"}) + "\n" for p in points or [FAST, SLOW, WORST]))
    model = {"impl": impl, "app": [sys.executable, str(SUPPORT / "freeze_app.py")]} \
        if impl == "app" else {"objective": objective}
    path = study(system={"procs": 2, "progress_interval": 60},
                 study={"algorithm": "sweep", "budget": budget, "pruner": "asha", **model},
                 algorithm={"file": "points.jsonl"}, pruner=ASHA)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    return expdir, SQLiteStore(expdir / "results.db", readonly=True)


def check_thawed(expdir, store):
    """SLOW was paused at step 3 and thawed from its checkpoint: its curve goes on at step 4,
    no step repeated or lost, and it ends with the value an unpaused run reaches; WORST stays
    paused; FAST ran through."""
    rows = {(r["params"]["x"], r["params"]["n"]): r for r in store.rows()}
    fast, slow, worst = (rows[(p["x"], p["n"])] for p in (FAST, SLOW, WORST))
    assert fast["status"] == Status.DONE and fast["attempt"] == 1
    assert fast["result"] == pytest.approx(value_at(FAST, STEPS))
    assert slow["status"] == Status.DONE and slow["attempt"] == 2
    assert slow["result"] == pytest.approx(value_at(SLOW, STEPS))
    assert slow["result"] < fast["result"]
    assert store.best()["id"] == slow["id"]
    assert worst["status"] == Status.PAUSED and worst["result"] == pytest.approx(
        value_at(WORST, 3))
    assert [(a["attempt"], a["status"]) for a in store.attempts(slow["id"])] == [
        (1, Status.PAUSED), (2, Status.DONE)]
    reports = store.reports(slow["id"])
    assert [(r["attempt"], r["step"]) for r in reports] == [(1, s) for s in (1, 2, 3)] + [
        (2, s) for s in range(4, STEPS + 1)]
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
        assert trained == [["1", "2", "3"], [str(s) for s in range(4, STEPS + 1)]]
        assert store.meta("thaw_restarts") is None
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.mpi
def test_a_paused_app_run_is_thawed_from_its_checkpoint(emews_cli, study, tmp_path):
    expdir, store = run_study(emews_cli, study, tmp_path, None, impl="app")
    try:
        check_thawed(expdir, store)
    finally:
        store.close()
