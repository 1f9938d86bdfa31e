"""Faulty models in whole studies on a real ``mpiexec -n 4`` (``python -m emews run``).

Points that segfault, exit, hang past the timeout or return NaN each become a failed row with
its reason; the study finishes its budget. Killing the study leaves no model process behind.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from emews.store import Store

from conftest import SUPPORT, alive, wait_until

pytestmark = [pytest.mark.mpi, pytest.mark.slow, pytest.mark.usefixtures('no_leftovers')]
FAULTY_APP = [sys.executable, str(SUPPORT / "faulty.py")]


def sweep_study(tmp_path, points, procs, **study):
    """A study TOML that evaluates ``points`` once each (the sweep algorithm)."""
    (tmp_path / "points.jsonl").write_text("\n".join(json.dumps(p) for p in points))
    lines = [f"[system]\nprocs = {procs}\nprogress_interval = 0.0\n[study]\n",
             'algorithm = "sweep"\n']
    lines += [f"{key} = {json.dumps(value)}\n" for key, value in study.items()]
    lines.append('[algorithm]\nfile = "points.jsonl"\n')
    path = tmp_path / "study.toml"
    path.write_text("".join(lines))
    return path


def rows(expdir):
    store = Store(Path(expdir) / "results.db")
    try:
        return store.rows()
    finally:
        store.close()


EXPECTED = {
    "ok": ("done", None),
    "segfault": ("failed", "the model was killed by signal 11 (SIGSEGV)"),
    "exit3": ("failed", "the model exited with status 3"),
    "sysexit": ("failed", "the model raised SystemExit: 3"),
    "hang": ("failed", "timeout after 3 s"),
    "nan": ("failed", "the model returned NaN"),
}


def test_a_study_of_faulty_points_finishes_with_each_reason(emews_cli, tmp_path):
    modes = ["ok", "segfault", "ok", "exit3", "hang", "nan", "sysexit", "ok", "segfault", "ok"]
    points = [{"mode": mode, "x": float(i)} for i, mode in enumerate(modes)]
    path = sweep_study(tmp_path, points, 4, objective="faulty:run", timeout=3)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    found = rows(expdir)
    assert sorted(r["params"]["x"] for r in found) == [float(i) for i in range(len(modes))]
    for row in found:
        mode = row["params"]["mode"]
        assert (row["status"], row["error"]) == EXPECTED[mode], row
        if mode == "ok":
            assert row["result"] == row["params"]["x"]
        else:
            assert f"faulty: mode {mode}" in row["log_tail"]
    assert "evaluations" in done.stdout


@pytest.mark.parametrize("impl", ["py", "app"])
def test_sigterm_to_the_study_leaves_no_model_process(tmp_path, impl):
    """Each worker's handler kills its runs' groups; mpiexec may SIGKILL a worker first, and
    then the guard in each group does (both are tested alone in test_evaluate_faults.py)."""
    points = [{"mode": "hang", "x": float(i), "pidfile": str(tmp_path / f"model{i}.pid")}
              for i in range(4)]
    model = {"objective": "faulty:run"} if impl == "py" else {"app": FAULTY_APP}
    path = sweep_study(tmp_path, points, 3, impl=impl, **model)
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    run = subprocess.Popen([sys.executable, "-m", "emews", "run", str(path)], cwd=tmp_path,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        wait_until(lambda: len(list(tmp_path.glob("model*.pid.child"))) == 2)
        pids = [int(p.read_text()) for p in tmp_path.glob("model*.pid*")]
        assert len(pids) == 4 and all(alive(pid) for pid in pids)
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    # which of the handler or the guard kills a group depends on mpiexec's timing (one
    # worker's exit makes it SIGKILL the others), so only the outcome is asserted here
    wait_until(lambda: not any(alive(pid) for pid in pids), "no model process left", timeout=15)
