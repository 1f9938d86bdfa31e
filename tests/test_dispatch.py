"""The master's turn on a real mpiexec: several ready results make one transaction and one
message to the ME (and the ME answers with one message of as many points); the rows of those
points ride on the next turn's transaction (group commit). (How much of a core rank 0 uses while
it waits is measured in benchmarks/tests/test_dispatch_cpu.py.)"""

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SUPPORT

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


@pytest.mark.slow
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
