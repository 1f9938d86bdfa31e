"""One study, with failing and pruned runs and a kill mid-run followed by a resume, run under
``emews run`` and under a real Swift/T (swift/workflow.sh): both store the same rows and tell
the search the same values (apart from ranks and times), as both run the one master."""

import json
import os
import subprocess
import sys

import pytest

from conftest import SUPPORT, wait_until
from test_swift_workflow import SWIFT, environment, kill_job, swift_t  # noqa: F401 - fixture

from emews.store import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.mpi]

SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}]
ALGORITHM = "recording_algorithm:RecordingRandom"
# Seed 18's eight points: fails once, pruned, fails once, always fails, blocked twice
# (the fifth and sixth), pruned, done (tests/support/same_study_models.py).
SEED, BATCH, BUDGET = 18, 2, 8
FAILURE = {"retries": 1, "penalty": 100.0}
PRUNER = {"min_resource": 1}
OBJECTIVE = "same_study_models:model"


def stored_running(expdir):
    """How many of the study's points its store shows ``running``."""
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        return sum(row["status"] == "running" for row in store.rows())
    finally:
        store.close()


def killed_then_resumed(start, env, expdir, cwd, started=lambda: True):
    """Start the study (``start``: its command), kill the whole job once both workers block
    in its third batch (and ``started()``), then ``emews run --resume`` it to the end."""
    with open(cwd / "killed.txt", "w") as output:
        job = subprocess.Popen(start, env=env, cwd=cwd, stdout=output,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: len(list(expdir.glob("run/*/blocked"))) == 2 and started(),
                   "both workers blocked in the third batch", timeout=240)
    finally:
        kill_job(job, expdir)
    done = subprocess.run([sys.executable, "-m", "emews", "run", "--resume", str(expdir)],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def under_emews_run(root, study):
    root.mkdir()
    config = study(name="study.toml", space=SPACE,
                   system={"procs": 3, "pool": "inprocess", "progress_interval": 60},
                   study={"algorithm": ALGORITHM, "mode": "batch", "seed": SEED,
                          "batch_size": BATCH, "budget": BUDGET, "objective": OBJECTIVE,
                          "pruner": "asha", "data_dir": str(root)},
                   algorithm={"record": str(root / "told.jsonl")}, failure=FAILURE,
                   pruner=PRUNER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "TURBINE_"))}
    env["PYTHONPATH"] = str(SUPPORT)
    expdir = root / "s" / "EXP001"
    # the master commits the running status of what it handed out a few ms after its turn:
    # killed before that, the blocked points would be run again as first attempts (and block)
    killed_then_resumed([sys.executable, "-m", "emews", "run", str(config), "--name", "s"],
                        env, expdir, root, started=lambda: stored_running(expdir) == 2)
    return expdir


def under_swift_t(root, swift_t):  # noqa: F811 - the fixture's value
    root.mkdir()
    settings = root / "settings.json"
    settings.write_text(json.dumps({
        "algorithm": ALGORITHM, "options": {"record": str(root / "told.jsonl")},
        "space": SPACE, "seed": SEED, "batch_size": BATCH, "stop": {"budget": BUDGET},
        "failure": FAILURE, "pruner": "asha", "pruner_options": PRUNER}))
    env = environment(swift_t, CANDLE_DATA_DIR=str(root), MODEL_NAME="s",
                      CANDLE_MODEL_IMPL="py", EMEWS_OBJECTIVE=OBJECTIVE, PROCS="4")
    killed_then_resumed(["bash", str(SWIFT / "workflow.sh"), "local", str(settings)], env,
                        root / "s" / "EXP001", root)
    return root / "s" / "EXP001"


def kept(expdir):
    """What the study stored, apart from ranks, times and the error texts of failures, and
    apart from the attempts that the kill interrupted: ``emews run`` knows them started
    (``running``, kept as ``interrupted``); Swift/T's workers never say when they start a task
    (it stays ``queued`` until its outcome comes back), so none is kept there."""
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        return ([(r["id"], r["run_id"], r["seq"], r["params"], r["status"], r["result"],
                  r["attempt"]) for r in store.rows()],
                [(a["id"], a["attempt"], a["status"], a["result"]) for a in store.attempts()
                 if a["status"] != "interrupted"],
                [(r["id"], r["attempt"], r["step"], r["value"]) for r in store.reports()],
                {k: v for k, v in store.meta("final").items() if k != "elapsed"})
    finally:
        store.close()


def told(root):
    return [json.loads(line) for line in (root / "told.jsonl").read_text().splitlines()]


def test_a_study_resumed_after_failures_and_pruning_is_the_same_under_emews_run_and_swift_t(
        tmp_path, study, swift_t):  # noqa: F811 - the fixture
    run = under_emews_run(tmp_path / "run", study)
    swift = under_swift_t(tmp_path / "swift", swift_t)
    rows, attempts, reports, final = kept(run)
    assert kept(swift) == (rows, attempts, reports, final)
    assert told(tmp_path / "swift") == told(tmp_path / "run")

    # the study is what it means to be: every kind of run, each as the policy says
    assert [row[4] for row in rows] == \
        ["done", "pruned", "done", "failed", "done", "done", "pruned", "done"]
    assert [row[6] for row in rows] == [2, 1, 2, 2, 2, 2, 1, 1]
    assert [(a[0], a[1], a[2]) for a in attempts if a[2] not in ("done", "pruned")] == \
        [(0, 1, "failed"), (2, 1, "failed"), (3, 1, "failed"), (3, 2, "failed")]
    assert reports == [(1, 1, 1, None), (6, 1, 1, None)]     # stopped at their first step
    values = {json.dumps(entry["point"]): entry["value"] for entry in told(tmp_path / "run")}
    assert [values[json.dumps(row[3])] for row in rows] == \
        [row[5] if row[4] == "done" else 100.0 if row[4] == "failed" else None
         for row in rows]
