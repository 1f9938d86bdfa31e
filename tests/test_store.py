"""The SQLite store of evaluations: rows, attempts, schema versions, faults and the lock."""

import json
import math
import os
import sqlite3
import subprocess
import sys

import pytest

from emews._errors import ConfigError, StoreError
from emews.evaluate import Outcome
from emews.store import SQLiteStore, StudyLock, bounded, read_once
from emews.store import _schema as schema
from emews.store._filesystem import NETWORK_FILESYSTEMS, journal_mode


def test_add_records_handed_out_points_as_running_and_the_rest_as_queued(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 2, 0), (1, '{"x": 2}', "RUN000001", None, 1)])
    store.commit()
    rows = store.rows()
    assert [(r["status"], r["rank"], r["run_id"]) for r in rows] == [
        ("running", 2, "RUN000000"), ("queued", None, "RUN000001")]
    assert rows[0]["started"] >= rows[0]["queued"] and rows[1]["started"] is None
    store.close()


def test_every_attempt_is_kept_with_its_error_and_resume_marks_unfinished_interrupted(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", 2, 1),
               (2, '{"x": 3}', "RUN000002", None, 2)])
    store.finish([(0, 1, Outcome(math.nan, "failed", "boom", "tail 1"), 1, "queued")])
    store.requeue([(0, 2, "RUN000000-2")])
    store.mark_running([(0, 1)])
    store.finish([(0, 1, Outcome(0.5), 2, "done")])
    store.commit()
    assert [(a["attempt"], a["status"], a["error"], a["run_id"]) for a in store.attempts(0)] == [
        (1, "failed", "boom", "RUN000000"), (2, "done", None, "RUN000000-2")]
    rows = store.interrupt_unfinished()
    assert [(r["id"], r["status"], r["interruptions"]) for r in rows] == [
        (1, "interrupted", 1), (2, "interrupted", 0)]
    assert [r["status"] for r in store.rows()] == ["done", "interrupted", "interrupted"]
    assert store.attempts(1)[0]["status"] == "interrupted"
    store.close()


def test_cancel_marks_queued_and_running_points_and_leaves_finished_ones(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, "{}", "RUN000000", 1, 0), (1, "{}", "RUN000001", None, 1)])
    store.finish([(0, 1, Outcome(1.0), 1, "done")])
    store.cancel([0, 1], "cancelled: test")
    store.commit()
    assert [(r["status"], r["error"]) for r in store.rows()] == [
        ("done", None), ("cancelled", "cancelled: test")]
    store.close()


def test_log_tails_are_bounded_and_lone_surrogates_are_stored(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, "{}", "RUN000000", 1, 0)])
    huge = "x" * 200_000 + "\udcff end"
    store.finish([(0, 1, Outcome(math.nan, "failed", "bad \udc80 byte", huge), 1, "failed")])
    store.commit()
    (row,) = store.rows()
    assert len(row["log_tail"].encode()) <= 64 * 1024 and row["log_tail"].endswith("? end")
    assert row["error"] == "bad ? byte"
    assert bounded(None) is None
    store.close()


def test_a_version_1_store_is_migrated_and_a_newer_one_is_refused(tmp_path):
    old = tmp_path / "old.db"
    db = sqlite3.connect(old)
    db.executescript("""
        CREATE TABLE evaluations (id INTEGER PRIMARY KEY, params TEXT NOT NULL, result REAL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
            error TEXT, log_tail TEXT, rank INTEGER, attempt INTEGER NOT NULL DEFAULT 1,
            run_id TEXT, queued REAL, started REAL, finished REAL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO evaluations VALUES (0, '{"x": 1}', 0.5, 'done', NULL, NULL, 1, 1,
            'RUN000000', 1.0, 2.0, 3.0);
        INSERT INTO evaluations VALUES (1, '{"x": 2}', NULL, 'running', NULL, NULL, 2, 1,
            'RUN000001', 1.0, 2.0, NULL);""")
    db.commit()
    db.close()
    store = SQLiteStore(old)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
    assert [r["status"] for r in store.interrupt_unfinished()] == ["interrupted"]
    assert store.attempts(0)[0]["result"] == 0.5
    store.db.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    store.close()
    with pytest.raises(StoreError, match=r"old.db: was written by a newer emews"):
        SQLiteStore(old)


def test_a_version_6_store_is_migrated_keeping_its_rows_without_objective_vectors(tmp_path):
    path = tmp_path / "results.db"
    db = sqlite3.connect(path)   # results.db as emews wrote it at schema version 6
    log = schema.ATTEMPTS_6.replace("CREATE TABLE attempts", "CREATE TABLE attempt_log")
    db.executescript(f"{schema.EVALUATIONS_6}; {log}; {schema.ATTEMPTS_VIEW_6};"
                     f" {schema.CHECKPOINTS}; {schema.REPORTS};"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "INSERT INTO evaluations (id, params, status, result, attempt, run_id, "
                     "metrics) VALUES (0, '{\"x\": 1}', 'done', 0.25, 2, 'RUN000000-2', "
                     "'{\"acc\": 0.5}'); INSERT INTO attempt_log (id, attempt, status, run_id) "
                     "VALUES (0, 1, 'failed', 'RUN000000'); PRAGMA user_version = 6;")
    db.close()
    store = SQLiteStore(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION == 9
    assert [(r["id"], r["result"], r["metrics"], r["objectives"], r["feasible"])
            for r in store.rows()] == [(0, 0.25, {"acc": 0.5}, None, None)]
    assert [(a["attempt"], a["status"], a["objectives"]) for a in store.attempts()] == [
        (1, "failed", None), (2, "done", None)]
    store.add([(1, '{"x": 2}', "RUN000001", 1, 1)])
    store.finish([(1, 1, Outcome(0.5, objectives=[0.5, 3.0], feasible=True), 1, "done")])
    assert store.rows()[1]["objectives"] == [0.5, 3.0] and store.rows()[1]["feasible"] is True
    store.close()


def test_a_version_7_store_is_migrated_to_take_paused_points(tmp_path):
    path = tmp_path / "results.db"
    db = sqlite3.connect(path)   # results.db as emews wrote it at schema version 7
    db.executescript(schema.CURRENT.replace(" OR status = 'paused'", "").replace(
        f"user_version = {schema.VERSION}", "user_version = 7") +
        "INSERT INTO evaluations (id, params, status, result, attempt, run_id) VALUES "
        "(0, '{\"x\": 1}', 'pruned', 0.5, 1, 'RUN000000');")
    assert "'paused'" not in db.execute("SELECT sql FROM sqlite_master WHERE name = "
                                        "'evaluations'").fetchone()[0]
    db.close()
    store = SQLiteStore(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION == 9
    assert [(r["id"], r["status"], r["result"]) for r in store.rows()] == [(0, "pruned", 0.5)]
    store.add([(1, '{"x": 2}', "RUN000001", 1, 1)])
    store.finish([(1, 1, Outcome(0.75, "pruned", "paused at step 3"), 1, "paused")])
    store.commit()
    assert [(r["id"], r["status"], r["result"]) for r in store.rows("paused")] == [
        (1, "paused", 0.75)]
    assert [(a["id"], a["attempt"], a["status"]) for a in store.attempts(1)] == [
        (1, 1, "pruned")]
    store.close()


def test_a_version_8_store_is_migrated_to_check_statuses_without_in(tmp_path):
    path = tmp_path / "results.db"
    db = sqlite3.connect(path)   # results.db as emews wrote it at schema version 8
    chain = " OR ".join(f"status = '{s}'" for s in schema.POINT_STATUSES)
    listed = "status IN (" + ", ".join(f"'{s}'" for s in schema.POINT_STATUSES) + ")"
    db.executescript(schema.CURRENT.replace(chain, listed).replace(
        f"user_version = {schema.VERSION}", "user_version = 8") +
        "INSERT INTO evaluations (id, params, status, result, attempt, run_id) VALUES "
        "(0, '{\"x\": 1}', 'paused', 0.5, 1, 'RUN000000');")
    db.close()
    store = SQLiteStore(path)
    layout = store.db.execute("SELECT sql FROM sqlite_master WHERE name = 'evaluations'"
                              ).fetchone()[0]
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION == 9
    assert chain in layout and " IN (" not in layout
    assert [(r["id"], r["status"], r["result"]) for r in store.rows()] == [(0, "paused", 0.5)]
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        store.db.execute("UPDATE evaluations SET status = 'lost' WHERE id = 0")
    store.close()


def test_a_corrupt_or_missing_store_gives_one_line(tmp_path):
    bad = tmp_path / "results.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"results.db: cannot open the store: file is not a "
                                         r"database"):
        SQLiteStore(bad)
    with pytest.raises(ConfigError, match="no store to resume from"):
        SQLiteStore(tmp_path / "missing.db", create=False)


def test_a_full_disk_gives_one_line_and_keeps_what_was_committed(tmp_path):
    path = tmp_path / "results.db"
    store = SQLiteStore(path)
    store.add([(0, "{}", "RUN000000", 1, 0)])
    store.close()
    script = ("import resource, sys; from emews.store import SQLiteStore\n"
              "from emews._errors import StoreError\n"
              "s = SQLiteStore(sys.argv[1])\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))\n"
              "try:\n"
              "    s.add([(i, '{\"pad\": \"' + 'x' * 1000 + '\"}', 'RUN', 1, i) "
              "for i in range(1, 1000)]); s.commit()\n"
              "except StoreError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True)
    assert done.stdout.startswith(f"{path}: cannot ") and "full" in done.stdout, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1
    assert [r["id"] for r in SQLiteStore(path).rows()] == [0]


def test_wal_is_used_on_local_filesystems_only(tmp_path):
    assert journal_mode(tmp_path) == "WAL"
    store = SQLiteStore(tmp_path / "results.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    assert {"nfs", "lustre", "gpfs"} <= set(NETWORK_FILESYSTEMS.values())


def test_a_checkpoint_is_replaced_and_read_back(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.save_checkpoint("me", b"\x00state", {"told": 3})
    store.save_checkpoint("me", b"\x01state", {"told": 5})
    assert store.checkpoint("me") == (b"\x01state", {"told": 5})
    assert store.checkpoint("other") is None
    store.close()


def test_a_second_holder_of_a_live_study_is_refused_with_its_host_and_pid(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from emews.store import StudyLock\n"
        f"lock = StudyLock({str(tmp_path)!r}).acquire(); print('held', flush=True)\n"
        "sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(ConfigError, match=rf"is in use by a live run \(pid {holder.pid} on "
                                              "host "):
            StudyLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()
    lock = StudyLock(tmp_path).acquire()  # the dead holder's lock is stale: taken over
    assert json.loads((tmp_path / "lock").read_text())["pid"] == os.getpid()
    lock.release()


@pytest.mark.parametrize("update_from", [True, False], ids=["update-from", "one-per-row"])
def test_a_turn_of_many_rows_writes_each_row_as_its_own_statement_would(tmp_path, monkeypatch,
                                                                        update_from):
    """Big turns go in multi-row statements (chunks of 128, 64, ..., 1 rows; UPDATE ... FROM
    where SQLite has it): every row lands on its own id, whatever chunk it fell in."""
    import emews.store._sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "MULTI_ROW_UPDATE", update_from)
    n = 300                                   # 128 + 128 + 32 + 8 + 4 rows
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(i, json.dumps({"x": i}), f"RUN{i:06d}", None, 1000 + i) for i in range(n)])
    store.commit()
    store.mark_running([(i, 1 + i % 7) for i in range(n)])
    store.commit()
    assert {r["status"] for r in store.rows()} == {"running"}
    assert [r["rank"] for r in store.rows()] == [1 + i % 7 for i in range(n)]
    store.finish([(i, 1 + i % 7, Outcome(i / 10, "done", None, f"log {i}", 5.0, 6.0 + i,
                                         {"acc": i / n}), 1, "done")
                  for i in range(n - 1)]
                 + [(n - 1, 3, Outcome(math.nan, "failed", "boom", "", 5.0, 7.0, {}), 1,
                     "failed")])
    store.commit()
    rows, attempts = store.rows(), store.attempts()
    store.close()
    assert [(r["id"], r["params"], r["seq"], r["status"], r["result"], r["log_tail"],
             r["finished"], r["metrics"]) for r in rows[:-1]] == [
        (i, {"x": i}, 1000 + i, "done", i / 10, f"log {i}", 6.0 + i, {"acc": i / n})
        for i in range(n - 1)]
    assert (rows[-1]["status"], rows[-1]["result"], rows[-1]["error"]) == ("failed", None, "boom")
    assert [(a["id"], a["attempt"], a["run_id"], a["result"]) for a in attempts] == [
        (i, 1, f"RUN{i:06d}", None if i == n - 1 else i / 10) for i in range(n)]


def test_read_once_reads_a_study_s_store_read_only_and_closes_it(tmp_path):
    """The one read-once reader (``emews._result``, ``emews.inspect``, ``emews.testing``): a
    missing store is refused, never made; a reading sees the store, which is closed after."""
    with pytest.raises(ConfigError, match="there is no such file"):
        read_once(tmp_path, None, lambda store: store.rows())
    assert not (tmp_path / "results.db").exists()
    writer = SQLiteStore(tmp_path / "results.db")
    writer.add([(0, json.dumps({"x": 1.0}), "RUN000000", 1, 0)])
    writer.commit()
    seen = []

    def reading(store):
        seen.append(store)
        with pytest.raises(StoreError):   # read-only
            store.set_meta("written", True)
            store.commit()
        return store.next_id()

    assert read_once(tmp_path, None, reading) == 1
    assert seen[0].db is None             # closed
    assert writer.meta("written") is None
    writer.close()
