"""A seeded batch-mode study, killed with SIGKILL mid-batch and resumed, proposes exactly the
points of an uninterrupted run: the ME driver checkpoints the algorithm's state after each tell,
and the master answers the points proposed again after the checkpoint from the store."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SUPPORT, wait_until


pytestmark = pytest.mark.slow
BUDGET, BATCH, STALL = 12, 4, 6
ALGORITHMS = {
    "random": {},
    "sweep": {"file": "points.jsonl"},
    "ga": {},
    "gp": {"n_initial_points": 4},
    "optuna": {"sampler": "tpe"},
    "mbo": {"design_size": 4},
}


def points_in_order(expdir):
    db = sqlite3.connect(Path(expdir) / "results.db")
    try:
        return db.execute("SELECT params, status FROM evaluations ORDER BY seq").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_a_killed_and_resumed_batch_study_proposes_what_an_uninterrupted_one_does(
        algorithm, study, tmp_path):
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps({"x": i / 8 - 1, "n": i % 4, "act": "relu"}) + "\n" for i in range(BUDGET)))
    path = study(system={"procs": 3, "pool": "inprocess", "progress_interval": 60},
                 study={"algorithm": algorithm, "mode": "batch", "batch_size": BATCH,
                        "budget": BUDGET, "seed": 11, "objective": "fault_me:stall_after"},
                 algorithm=ALGORITHMS[algorithm])
    gate = tmp_path / "gate"
    gate.mkdir()
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_GATE=str(gate),
               EMEWS_TEST_STALL_AFTER=str(STALL))

    def emews(*args, **kwargs):
        return subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=tmp_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, **kwargs)

    killed = emews("run", path, "--name", "killed")
    wait_until(lambda: len(list(gate.glob("call-*"))) > STALL, "a run past the stall point")
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    (expdir,) = (tmp_path / "experiments" / "killed").iterdir()
    assert 0 < sum(status == "done" for _, status in points_in_order(expdir)) < BUDGET

    (gate / "go").touch()
    resumed = emews("run", "--resume", expdir)
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    straight = emews("run", path, "--name", "straight")
    _, stderr = straight.communicate(timeout=300)
    assert straight.returncode == 0, stderr
    (reference,) = (tmp_path / "experiments" / "straight").iterdir()

    after_resume, uninterrupted = points_in_order(expdir), points_in_order(reference)
    assert [status for _, status in after_resume] == ["done"] * BUDGET
    assert [json.loads(p) for p, _ in after_resume] == [json.loads(p) for p, _ in uninterrupted]
