"""``emews status`` on a study that is running, from a second process: read-only, never in the
writer's way, agreeing with the store before and after."""

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}]


def emews(*args, cwd, **kwargs):
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    return subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def finished_count(db):
    """Finished evaluations, read with a read-only connection of the test's own."""
    if not db.exists():
        return 0
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return connection.execute("SELECT COUNT(*) FROM evaluations WHERE status IN "
                                  "('done', 'failed')").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not made yet
        return 0
    finally:
        connection.close()


@pytest.mark.slow
def test_status_of_a_running_study_from_a_second_process(tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(SPACE))
    (tmp_path / "study.toml").write_text(
        '[system]\npool = "inprocess"\nprocs = 3\n[study]\nspace = "space.json"\nbudget = 6\n'
        'objective = "toy_models:sleepy"\nseed = 1\n')
    run = emews("run", "study.toml", cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        expdir = None
        while time.monotonic() < deadline:  # poll for the first finished evaluation
            found = list((tmp_path / "experiments" / "study").glob("EXP*"))
            if found and finished_count(found[0] / "results.db") >= 1:
                expdir = found[0]
                break
            assert run.poll() is None, run.communicate()
            time.sleep(0.1)
        assert expdir is not None, "no evaluation finished within 120 s"
        before = finished_count(expdir / "results.db")
        status = emews("status", expdir, "--json", cwd=tmp_path)
        out, err = status.communicate(timeout=120)
        after = finished_count(expdir / "results.db")
        assert status.returncode == 0, err
        info = json.loads(out)
        assert run.poll() is None, "the study ended before status could see it running"
        assert info["state"] == "running" and info["stop_reason"] is None
        assert before <= info["finished"] <= after < 6
        assert info["budget"] == 6 and info["remaining"] == 6 - info["finished"]
        assert info["counts"]["running"] >= 1 and info["rate_per_minute"] > 0
        assert info["eta_seconds"] > 0
    finally:
        out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err  # a reader never got in the writer's way
    final = emews("status", expdir, "--json", cwd=tmp_path)
    info = json.loads(final.communicate(timeout=120)[0])
    assert info["state"] == "finished" and info["finished"] == finished_count(
        expdir / "results.db") == 6
    assert info["stop_reason"] == "evaluation budget of 6 reached"
    assert info["remaining"] is None and info["eta_seconds"] is None


def running_count(db):
    """Evaluations the store holds as running, read with the test's own connection."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return connection.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'running'"
                                  ).fetchone()[0]
    finally:
        connection.close()


@pytest.mark.slow
def test_status_of_a_resumed_study_says_it_runs_not_its_old_end(tmp_path, monkeypatch):
    from conftest import wait_until

    (tmp_path / "space.json").write_text(json.dumps(SPACE))
    (tmp_path / "study.toml").write_text(
        '[system]\npool = "inprocess"\nprocs = 2\n[study]\nspace = "space.json"\nbudget = 4\n'
        'objective = "dashboard_models:gated"\nseed = 1\n')
    gate = tmp_path / "gate"
    gate.touch()   # the first run's evaluations all return at once
    monkeypatch.setenv("DASHBOARD_GATE", str(gate))
    first = emews("run", "study.toml", cwd=tmp_path)
    assert first.wait(timeout=120) == 0, first.communicate()
    (expdir,) = (tmp_path / "experiments" / "study").glob("EXP*")
    gate.unlink()  # the resumed run's points with x > 0 hold until the gate is back
    resumed = emews("run", "--resume", expdir, "--budget", 40, cwd=tmp_path)
    try:
        wait_until(lambda: running_count(expdir / "results.db") == 1, "a held evaluation")
        status = emews("status", expdir, "--json", cwd=tmp_path)
        info = json.loads(status.communicate(timeout=120)[0])
        text = emews("status", expdir, cwd=tmp_path).communicate(timeout=120)[0]
        assert info["state"] == "running" and info["stop_reason"] is None
        assert info["budget"] == 40 and info["remaining"] == 40 - info["finished"]
        assert f"study: {expdir} (running)" in text and "stop" not in text
    finally:
        gate.touch()
    assert resumed.wait(timeout=240) == 0, resumed.communicate()
    info = json.loads(emews("status", expdir, "--json", cwd=tmp_path).communicate(timeout=120)[0])
    assert info["state"] == "finished" and info["finished"] == 40
    assert info["stop_reason"] == "evaluation budget of 40 reached"
