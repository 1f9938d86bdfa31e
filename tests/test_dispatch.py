"""The master's turn on a real mpiexec: several ready results make one transaction and one
message to the ME (and the ME answers with one message of as many points); the rows of those
points ride on the next turn's transaction (group commit). While long runs go on, rank 0 waits
without spinning."""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SUPPORT, query_store, wait_until

pytestmark = pytest.mark.mpi
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")
WORKERS = 3
BURSTS = 3


def transactions(trace):
    """The statements of each committed transaction, in order."""
    found, current = [], None
    for statement in trace.read_text().splitlines():
        if statement.startswith("BEGIN"):
            current = []
        elif statement == "COMMIT":
            found.append(current)
            current = None
        elif current is not None:
            current.append(statement)
    return found


def finished_ids(statements):
    """The ids whose final result a transaction records."""
    return [int(m.group(1)) for s in statements
            if (m := re.match(r"UPDATE evaluations SET status='done'.* WHERE id=(\d+)$", s))]


def row_ids(statement):
    """The ids that start the rows of a (multi-row) ``INSERT ... VALUES (id, ...),(id, ...)``."""
    return [int(i) for i in re.findall(r"(?:VALUES |\),)\((\d+), ", statement)]


def inserted_ids(statements):
    """The ids of the points a transaction inserts."""
    return [i for s in statements if s.startswith("INSERT INTO evaluations ")
            for i in row_ids(s)]


def attempt_ids(statements):
    """The ids of the attempts a transaction writes to the attempt log."""
    return [i for s in statements if s.startswith("INSERT OR REPLACE INTO attempt_log ")
            for i in row_ids(s)]


def test_a_turn_with_several_ready_results_is_one_transaction_and_one_me_message(tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(
        [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0}]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(SUPPORT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", str(WORKERS + 1), sys.executable,
                           str(SUPPORT / "burst_turn.py"), str(tmp_path),
                           str(WORKERS * BURSTS)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    tells = [json.loads(line) for line in (tmp_path / "told.jsonl").read_text().splitlines()]
    assert [len(t["points"]) for t in tells] == [WORKERS] * BURSTS  # one message per turn

    # every write of the study went in one transaction per turn: the turn's results, their
    # attempts, and the rows of the points the ME proposed since the turn before
    with_results = transactions(tmp_path / "trace.sql")
    assert [len(finished_ids(t)) for t in with_results] == [WORKERS] * BURSTS
    for statements in with_results:
        assert attempt_ids(statements) == []    # a done attempt is its evaluations row alone
        assert sorted(inserted_ids(statements)) == sorted(finished_ids(statements))

    db = sqlite3.connect(tmp_path / "results.db")
    rows = db.execute("SELECT id, params, result, status FROM evaluations ORDER BY id").fetchall()
    db.close()
    assert [status for _, _, _, status in rows] == ["done"] * WORKERS * BURSTS
    stored = {json.dumps(json.loads(params), sort_keys=True): result
              for _, params, result, _ in rows}
    for tell in tells:
        for point, value in zip(tell["points"], tell["values"]):
            assert stored[json.dumps(point, sort_keys=True)] == value == point["x"] ** 2
    # each turn's transaction holds exactly the results the ME was then told
    by_id = {i: json.dumps(json.loads(params), sort_keys=True) for i, params, _, _ in rows}
    for statements, tell in zip(with_results, tells):
        assert sorted(by_id[i] for i in finished_ids(statements)) == sorted(
            json.dumps(p, sort_keys=True) for p in tell["points"])


def cpu_seconds(pid):
    """CPU time of every thread of process ``pid`` so far (``schedstat``: nanoseconds)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def test_rank_0_uses_under_2_percent_of_a_core_while_4_workers_run_long_tasks(study, tmp_path):
    """The master's waits for results and for the ME are sleeps and blocking gets: while four
    workers sleep through 3 s runs, rank 0 (master and ME threads) stays below 2% of a core."""
    path = study(system={"procs": 5, "progress_interval": 60},
                 study={"budget": 12, "objective": "toy_models:sleepy", "mode": "async",
                        "seed": 1})
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    job = subprocess.Popen([MPIEXEC, "-n", "5", sys.executable, "-m", "emews", "run", str(path)],
                           cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: list((tmp_path / "experiments").glob("*/EXP*/results.db")),
                   "the store")
        (db_path,) = (tmp_path / "experiments").glob("*/EXP*/results.db")
        count = "SELECT COUNT(*) FROM evaluations WHERE status = '{}'"
        wait_until(lambda: query_store(db_path, count.format("running")) == [(4,)],
                   "four evaluations running")
        (master,) = query_store(db_path, "SELECT value FROM meta WHERE key = 'master'")
        pid = json.loads(master[0])["pid"]
        began, cpu_began = time.monotonic(), cpu_seconds(pid)
        wait_until(lambda: query_store(db_path, count.format("done"))[0][0] >= 8,
                   "two rounds of runs")
        share = (cpu_seconds(pid) - cpu_began) / (time.monotonic() - began)
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, stderr
    assert query_store(db_path, count.format("done")) == [(12,)]
    assert share < 0.02, f"rank 0 used {share:.1%} of a core while it waited"
