"""Group commit: the store writes a master turn in one transaction, and every result the ME was
handed is in the store, whenever the master is killed (kill -9, a real mpiexec)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from conftest import SUPPORT, query_store, wait_until
from emews._errors import StoreError
from emews.evaluate import Outcome
from emews.store import SQLiteStore, _schema as schema

KILLS = 2


def other_connection(path):
    return sqlite3.connect(path, timeout=30)


def test_writes_wait_for_commit_and_are_committed_in_one_transaction(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", None, 1)])
    store.finish([(0, 1, Outcome(0.5, "done", started=1.0, finished=2.0), 1, "done")])
    store.mark_running([(1, 2)])
    reader = other_connection(tmp_path / "results.db")
    assert reader.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 0
    statements = []
    store.db.set_trace_callback(statements.append)
    store.commit()
    assert [s for s in statements if s.split()[0] in ("BEGIN", "COMMIT")] == ["BEGIN ", "COMMIT"]
    assert reader.execute("SELECT id, status, result, rank FROM evaluations ORDER BY id"
                          ).fetchall() == [(0, "done", 0.5, 1), (1, "running", None, 2)]
    assert reader.execute("SELECT id, attempt, status FROM attempts").fetchall() == [
        (0, 1, "done")]
    reader.close()
    store.close()


def test_a_failed_commit_stores_nothing_of_its_turn_and_names_the_write(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0)])
    store.commit()
    store.add([(1, '{"x": 2}', "RUN000001", 1, 1)])
    store.set_meta("note", "written in the failed turn")
    store.add([(0, '{"x": 3}', "RUN000000", 1, 2)])  # the same id again: the insert fails
    with pytest.raises(StoreError, match=r"results\.db: cannot record evaluations: UNIQUE"):
        store.commit()
    assert [row["id"] for row in store.rows()] == [0]
    assert store.meta("note") is None
    store.close()


class SignalledOnce:
    """A parameter whose first binding is interrupted as by Ctrl-C (a signal mid-commit)."""

    fired = False

    def adapt(self):
        if not SignalledOnce.fired:
            SignalledOnce.fired = True
            raise KeyboardInterrupt
        return '{"x": 2}'


sqlite3.register_adapter(SignalledOnce, SignalledOnce.adapt)


def test_an_interrupted_commit_stores_nothing_and_stays_buffered_for_the_next(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, SignalledOnce(), "RUN000001", 1, 1)])
    with pytest.raises(KeyboardInterrupt):
        store.commit()
    reader = other_connection(tmp_path / "results.db")
    assert reader.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 0
    store.commit()
    assert reader.execute("SELECT id, params FROM evaluations ORDER BY id").fetchall() == [
        (0, '{"x": 1}'), (1, '{"x": 2}')]
    reader.close()
    store.close()


def test_a_read_sees_the_writes_before_it(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", None, 0)])
    assert store.counts() == {"queued": 1}
    reader = other_connection(tmp_path / "results.db")
    assert reader.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 1
    reader.close()
    store.close()


def test_a_version_3_store_is_rebuilt_with_one_b_tree_per_table_and_keeps_its_rows(tmp_path):
    """Each B-tree a turn touches costs a page write per commit: a store of schema 3 loses its
    index on evaluations (status), its attempts move into their primary key's B-tree, and
    (schema 5) the attempt that made a point done stays in evaluations alone."""
    path = tmp_path / "results.db"
    db = sqlite3.connect(path)
    db.executescript(f"{schema.EVALUATIONS_6}; {schema.ATTEMPTS_6.replace(') WITHOUT ROWID', ')')};"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     f"{schema.CHECKPOINTS}; PRAGMA user_version = 3;"
                     "CREATE INDEX evaluations_status ON evaluations (status);"
                     "INSERT INTO evaluations (id, params, status, result, attempt, run_id) "
                     "VALUES (0, '{\"x\": 1}', 'done', 0.25, 2, 'RUN000000-2'),"
                     "(1, '{\"x\": 2}', 'failed', NULL, 1, 'RUN000001');"
                     "INSERT INTO attempts (id, attempt, status, result, run_id) VALUES "
                     "(0, 1, 'failed', NULL, 'RUN000000'), (0, 2, 'done', 0.25, 'RUN000000-2'),"
                     "(1, 1, 'failed', NULL, 'RUN000001');")
    db.close()
    store = SQLiteStore(path)
    indexes = store.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                               "tbl_name = 'evaluations' AND sql IS NOT NULL").fetchall()
    (log_sql,) = store.db.execute("SELECT sql FROM sqlite_master WHERE name = 'attempt_log'"
                                  ).fetchone()
    assert indexes == [] and log_sql.endswith("WITHOUT ROWID")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION == 9
    assert [(r["id"], r["status"], r["result"]) for r in store.rows("done")] == [(0, "done", 0.25)]
    assert [tuple(r) for r in store.db.execute("SELECT id, attempt, status FROM attempt_log "
                                               "ORDER BY id, attempt")] == [(0, 1, "failed"),
                                                                            (1, 1, "failed")]
    assert [(a["id"], a["attempt"], a["status"], a["result"], a["run_id"])
            for a in store.attempts()] == [(0, 1, "failed", None, "RUN000000"),
                                           (0, 2, "done", 0.25, "RUN000000-2"),
                                           (1, 1, "failed", None, "RUN000001")]
    store.close()


def told(record):
    """What the ME was told, as ``(point key, value)`` pairs: every line the killed process
    finished writing."""
    text = record.read_text() if record.exists() else ""
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    return [(json.dumps(entry["point"], sort_keys=True), entry["value"])
            for entry in map(json.loads, lines)]


@pytest.mark.slow
@pytest.mark.mpi
def test_a_master_killed_between_turns_leaves_every_result_the_me_was_handed_stored(
        study, tmp_path):
    record = tmp_path / "told.jsonl"
    path = study(system={"procs": 4, "progress_interval": 60},
                 study={"algorithm": "recording_algorithm:RecordingRandom", "impl": "echo",
                        "mode": "async", "budget": 1_000_000, "seed": 5},
                 algorithm={"record": str(record)})
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    args = ["run", path]
    killed = None

    def this_master():
        """The pid of the master of the run now under way (None before it has one)."""
        found = [query_store(db, "SELECT value FROM meta WHERE key='master'")
                 for db in (tmp_path / "experiments").glob("*/EXP*/results.db")]
        pid = json.loads(found[0][0][0])["pid"] if found and found[0] else None
        return pid if pid != killed else None

    for kill in range(KILLS):
        job = subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=tmp_path,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
        try:
            wait_until(lambda: this_master() is not None, "the run's master")
            killed, already = this_master(), len(told(record))
            wait_until(lambda: len(told(record)) >= already + 300, "300 more tells")
            (expdir,) = (tmp_path / "experiments").glob("*/EXP*")
            db_path = expdir / "results.db"
            os.kill(killed, signal.SIGKILL)  # wherever it is in its turn
            _, stderr = job.communicate(timeout=120)
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
        assert job.returncode not in (0, 2), stderr
        stored = {}
        for params, result in query_store(db_path, "SELECT params, result FROM evaluations "
                                               "WHERE status = 'done'"):
            stored.setdefault(json.dumps(json.loads(params), sort_keys=True), []).append(result)
        handed = told(record)
        missing = [(point, value) for point, value in handed
                   if value not in stored.get(point, [])]
        assert len(handed) >= 300 * (kill + 1) and not missing, missing[:3]
        args = ["run", "--resume", expdir]
