"""The PostgreSQL store and queue, on a real server started by the fixture: the Store interface,
a whole study served through the database (``[system] storage``), a password kept out of the
experiment directory, and interop with EQ-SQL's own client (``eqsql``) both ways: it submits to
and reads from emews (``emews pool --eqsql``), and its worker loop serves an emews study. The
database pools' leases, requeues, duplicates and drains are tested with zmq's, in
tests/test_service.py."""

import getpass
import importlib.resources
import json
import math
import os
import socket
import sys
import urllib.parse

import pytest

from conftest import MPIEXEC, SUPPORT
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

psycopg = pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")

from emews.evaluate import Outcome  # noqa: E402
from emews.store import open_store, _schema as schema, study_store  # noqa: E402
from emews.store._postgres import COMPLETE, PostgresStore  # noqa: E402


def query(url, sql, args=()):
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def one(url, sql, args=()):
    """The single value that ``sql`` selects."""
    return query(url, sql, args)[0][0]


def statuses(url, exp_id):
    """``{status: count}`` of the study's evaluations."""
    return dict(query(url, "SELECT status, count(*) FROM emews_evaluations WHERE exp_id=%s "
                      "GROUP BY 1", (exp_id,)))


def test_the_store_interface_on_postgresql_keeps_studies_apart(postgres_url):
    store = PostgresStore(postgres_url, "exp-a")
    other = open_store(f"{postgres_url}#exp-b")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", None, 1),
               (2, '{"x": 3}', "RUN000002", None, 2)])
    other.add([(0, '{"x": 9}', "RUN000000", None, 0)])
    store.mark_running([(1, 2)])
    store.finish([(0, 1, Outcome(0.5, metrics={"acc": 0.9}), 1, "done"),
                  (1, 2, Outcome(math.nan, "failed", "boom"), 1, "failed")])
    store.record_duplicates([(0, 3, Outcome(0.7), 2)])
    store.cancel([2], "cancelled: test")
    store.set_meta("final", {"stop_reason": "test"})
    store.save_checkpoint("me", b"\x00state", {"put": 3})
    store.commit()
    other.commit()

    reopened = open_store(store.path, create=False)
    assert [(r["id"], r["status"], r["result"]) for r in reopened.rows()] == [
        (0, "done", 0.5), (1, "failed", None), (2, "cancelled", None)]
    assert reopened.rows("done")[0]["metrics"] == {"acc": 0.9}
    assert reopened.best()["params"] == {"x": 1}
    assert reopened.counts() == {"done": 1, "failed": 1, "cancelled": 1}
    assert reopened.finished_count() == 2
    assert reopened.failure_reasons() == [("boom", 1)]
    assert [(a["id"], a["attempt"], a["status"]) for a in reopened.attempts()] == [
        (0, 1, "done"), (0, 2, "duplicate"), (1, 1, "failed"), (2, 1, "cancelled")]
    assert reopened.meta("final") == {"stop_reason": "test"}
    assert reopened.checkpoint("me") == (b"\x00state", {"put": 3})
    assert reopened.next_id() == 3 and reopened.next_seq() == 3
    assert [r["params"] for r in other.rows()] == [{"x": 9}]
    assert [r["id"] for r in other.interrupt_unfinished()] == [0]
    assert reopened.counts() == {"done": 1, "failed": 1, "cancelled": 1}  # untouched
    for each in (store, other, reopened):
        each.close()
    with pytest.raises(Exception, match="no such study"):
        open_store(f"{postgres_url}#exp-never", create=False)


def test_a_database_from_before_objective_vectors_gains_their_columns_and_keeps_its_rows(
        postgres_url):
    """The layout of results.db's schema 6 (no objectives, no feasible) is brought up to
    date when a store opens the database."""
    store = PostgresStore(postgres_url, "exp-6")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0)])
    store.finish([(0, 1, Outcome(0.5, metrics={"acc": 0.9}), 1, "done")])
    store.set_meta("space_digest", "d")
    store.close()
    with psycopg.connect(postgres_url) as conn:
        for table in ("emews_evaluations", "emews_attempts"):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN objectives, DROP COLUMN feasible")
    store = PostgresStore(postgres_url, "exp-6", create=False)
    assert [(r["result"], r["metrics"], r["objectives"], r["feasible"]) for r in store.rows()] \
        == [(0.5, {"acc": 0.9}, None, None)]
    store.add([(1, '{"x": 2}', "RUN000001", 1, 1)])
    store.finish([(1, 1, Outcome(0.25, objectives=[0.25, 4.0], feasible=False), 1, "done")])
    assert [(a["id"], a["objectives"], a["feasible"]) for a in store.attempts()] == [
        (0, None, None), (1, [0.25, 4.0], False)]
    store.close()


def test_a_database_from_before_paused_points_gains_the_status_and_keeps_its_rows(
        postgres_url):
    """A database whose statuses' check predates ``paused`` (results.db's schema 7) takes
    paused points once a store opens it."""
    store = PostgresStore(postgres_url, "exp-7")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", 1, 1)])
    store.finish([(0, 1, Outcome(0.5, "pruned", "pruned at step 3"), 1, "pruned")])
    store.set_meta("space_digest", "d")
    store.close()
    before = ", ".join(f"'{s}'" for s in schema.POINT_STATUSES if s != "paused")
    with psycopg.connect(postgres_url) as conn:
        conn.execute("ALTER TABLE emews_evaluations DROP CONSTRAINT "
                     "emews_evaluations_status_check")
        conn.execute("ALTER TABLE emews_evaluations ADD CONSTRAINT "
                     f"emews_evaluations_status_check CHECK (status IN ({before}))")
    store = PostgresStore(postgres_url, "exp-7", create=False)
    store.finish([(1, 1, Outcome(0.75, "paused", "paused at step 3"), 1, "paused")])
    store.commit()
    assert [(r["id"], r["status"], r["result"]) for r in store.rows()] == [
        (0, "pruned", 0.5), (1, "paused", 0.75)]
    store.close()


def database_config(study, url, budget, procs=3):
    return study(system={"procs": procs, "progress_interval": 60, "storage": url},
                 study={"budget": budget, "seed": 4, "objective": "fault_me:slow_square"},
                 service={"lease": 10.0})


def test_a_batch_of_statements_is_one_transaction_and_one_round_trip(postgres_url, tmp_path):
    """``run_batch`` (every commit of the store, every trade of a pool) sends its statements
    with one Sync and waits for the server once; a statement that fails, or anything that
    interrupts the batch, keeps nothing of it; a lost connection raises its own error."""
    from emews.store._postgres import run_batch

    conn = psycopg.connect(postgres_url, autocommit=True)
    try:
        conn.execute("CREATE TABLE t (x integer)")
        insert = "INSERT INTO t VALUES (%s)"
        trace = tmp_path / "trace"
        with open(trace, "w") as out:
            conn.pgconn.trace(out.fileno())
            cursors = run_batch(conn, [(insert, (1,)), (insert, (2,)),
                                       ("SELECT sum(x) FROM t WHERE x > %s", (0,))])
            conn.pgconn.untrace()
        assert cursors[-1].fetchall() == [(3,)]
        messages = [line.split("\t")[1:4:2] for line in trace.read_text().splitlines()]
        sent = [name.split()[0] for side, name in messages if side == "F"]
        # one wait: every statement, then the one Sync, with no Flush between them (the client
        # asks for no answer before the end; it may read one that came early, under load)
        assert sent.count("Sync") == 1, sent
        assert "Flush" not in sent[:sent.index("Sync")], sent

        with pytest.raises(psycopg.errors.DivisionByZero):
            run_batch(conn, [(insert, (4,)), ("SELECT 1 / %s", (0,)), (insert, (5,))])

        class Interrupted(Exception):
            pass

        def statements():
            yield insert, (6,)
            raise Interrupted

        with pytest.raises(Interrupted):
            run_batch(conn, statements())
        assert query(postgres_url, "SELECT x FROM t ORDER BY x") == [(1,), (2,)]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

        query(postgres_url, "SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        # the loss's own error, whichever of its two forms libpq reads first (the server's
        # FATAL notice, or the closed socket), not the failed rollback's "the connection is lost"
        with pytest.raises(psycopg.OperationalError, match="server closed the connection|"
                           "terminating connection due to administrator command"):
            run_batch(conn, [(insert, (7,)), (insert, (8,))])
    finally:
        conn.close()


@pytest.mark.mpi
@pytest.mark.slow
def test_a_study_runs_on_postgresql_and_eqsql_reads_its_tasks(study, jobs, postgres_url,
                                                               emews_cli):
    server, expdir = jobs.serve(database_config(study, postgres_url, 8))
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "evaluation budget of 8 reached" in out
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")
    assert pool.returncode == 0
    assert not (expdir / "results.db").exists()
    exp_id = str(expdir.resolve())
    rows = query(postgres_url, "SELECT id, status, result, params FROM emews_evaluations "
                 "WHERE exp_id=%s ORDER BY id", (exp_id,))
    assert [(i, status) for i, status, _, _ in rows] == [(i, "done") for i in range(8)]
    for _, _, result, params in rows:
        assert result == pytest.approx(json.loads(params)["x"] ** 2)
    # EQ-SQL's view of the same study: its experiment's tasks, complete, point and result
    tasks = query(postgres_url, "SELECT t.eq_status, t.json_out, t.json_in, t.worker_pool "
                  "FROM eq_exp_id_tasks e JOIN eq_tasks t USING (eq_task_id) "
                  "WHERE e.exp_id=%s ORDER BY t.eq_task_id", (exp_id,))
    assert [status for status, _, _, _ in tasks] == [COMPLETE] * 8
    assert sorted(json.loads(out)["value"] for _, _, out, _ in tasks) == \
        sorted(result for _, _, result, _ in rows)
    assert {json_out for _, json_out, _, _ in tasks} == {params for _, _, _, params in rows}
    assert query(postgres_url, "SELECT count(*) FROM emews_queue_OUT")[0][0] == 0
    assert query(postgres_url, "SELECT count(*) FROM emews_queue_IN")[0][0] == 0
    assert query(postgres_url, "SELECT state FROM emews_studies WHERE exp_id=%s",
                 (exp_id,)) == [("ended",)]
    store = study_store(expdir, postgres_url, create=False)
    try:
        assert store.meta("final")["stop_reason"] == "evaluation budget of 8 reached"
    finally:
        store.close()
    status = emews_cli("status", expdir)  # read from the database, as results.db would be
    assert status.returncode == 0, status.stderr
    assert "evaluation budget of 8 reached" in status.stdout
    assert f"{min(r for _, _, r, _ in rows):.6g}" in status.stdout  # the best value


@pytest.mark.mpi
@pytest.mark.slow
def test_the_database_password_never_reaches_the_experiment_directory(study, jobs,
                                                                       postgres_server):
    url, password = postgres_server.create_password_database()
    public = url.replace(f":{password}@", "@")
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(public).close()   # the server demands the password
    server, expdir = jobs.serve(database_config(study, url, 4))   # the URL with the password
    jobs.env["PGPASSWORD"] = password     # how a pool in another job gives it
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    pool.communicate(timeout=60)
    assert pool.returncode == 0
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir,
                         "--budget", "6")
    pool = jobs.pool(expdir, 3)
    out, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, err
    assert "evaluation budget of 6 reached" in out
    pool.communicate(timeout=60)
    exp_id = str(expdir.resolve())
    assert statuses(f"{public}?password={password}", exp_id) == {"done": 6}
    files = [path for path in expdir.rglob("*") if path.is_file()]
    assert {"config.json", "settings.json", "service.json"} <= {path.name for path in files}
    assert public in (expdir / "service.json").read_text()
    for path in files:
        assert password.encode() not in path.read_bytes(), path
    assert password not in one(f"{public}?password={password}", "SELECT config FROM "
                               "emews_studies WHERE exp_id=%s", (exp_id,))


def eqsql_queue(url):
    """EQ-SQL's own client (``eqsql``) on the database at ``url``: its LocalTaskQueue."""
    os.environ.setdefault("USER", getpass.getuser())  # eqsql.db_tools reads it on import
    local_queue = pytest.importorskip("eqsql.task_queues.local_queue",
                                      reason="pip install 'emews-hpo[eqsql]'")
    parts = urllib.parse.urlsplit(url)
    return local_queue.init_task_queue(parts.hostname, parts.username, parts.port,
                                       parts.path.lstrip("/"))


def eqsql_schema(url):
    """Make EQ-SQL's tables with EQ-SQL's own workflow.sql, as its users do."""
    pytest.importorskip("eqsql", reason="pip install 'emews-hpo[eqsql]'")
    sql = importlib.resources.files("eqsql").joinpath("workflow.sql").read_text()
    with psycopg.connect(url) as conn:
        conn.execute(sql)


@pytest.mark.mpi
@pytest.mark.slow
def test_an_emews_pool_answers_tasks_that_eqsql_submitted(tmp_path, study, jobs, postgres_url):
    from eqsql.task_queues.core import ResultStatus, TaskStatus

    eqsql_schema(postgres_url)          # a database that EQ-SQL made; emews adds its tables
    queue = eqsql_queue(postgres_url)
    points = [{"x": x / 4} for x in range(-4, 6)]
    futures = [queue.submit_task("eqsql-exp", 7, json.dumps(p))[1] for p in points]
    model = study("model.toml", study={"objective": "fault_me:slow_square"},
                  system={"python_path": [str(SUPPORT)]})
    pool = jobs.start(MPIEXEC, "-n", 3, sys.executable, "-m", "emews", "pool", "--eqsql",
                      postgres_url, "--task-type", 7, "--workdir", tmp_path / "pool", model)
    for future, point in zip(futures, points):
        status, result = future.result(delay=0.05, timeout=120)
        assert status == ResultStatus.SUCCESS, result
        assert json.loads(result)["value"] == pytest.approx(point["x"] ** 2)
        assert future.status == TaskStatus.COMPLETE
        assert future.worker_pool.startswith(socket.gethostname())
    assert queue.stop_worker_pool(7) == ResultStatus.SUCCESS
    out, err = pool.communicate(timeout=120)
    assert pool.returncode == 0, err
    assert "emews: pool left: EQ_STOP popped from the queue" in out
    evaluated = [line for path in (tmp_path / "pool" / "out").glob("out-pool-*")
                 for line in path.read_text().splitlines() if "evaluated in pid" in line]
    assert len(evaluated) == len(points)
    queue.close()


@pytest.mark.mpi
@pytest.mark.slow
def test_eqsql_reads_the_tasks_of_an_emews_study(study, jobs, postgres_url):
    from eqsql.task_queues.core import Future, TaskStatus

    eqsql_schema(postgres_url)
    server, expdir = jobs.serve(database_config(study, postgres_url, 6))
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    pool.communicate(timeout=60)
    queue = eqsql_queue(postgres_url)
    exp_id = str(expdir.resolve())
    ids = [i for i, in query(postgres_url, "SELECT eq_task_id FROM eq_exp_id_tasks WHERE "
                             "exp_id=%s ORDER BY eq_task_id", (exp_id,))]
    rows = query(postgres_url, "SELECT params, result FROM emews_evaluations WHERE exp_id=%s",
                 (exp_id,))
    assert len(ids) == 6
    futures = [Future(queue, i) for i in ids]
    assert [f.status for f in futures] == [TaskStatus.COMPLETE] * 6
    assert all(f.worker_pool.startswith(socket.gethostname()) for f in futures)
    with queue.db.conn.cursor() as cur:   # eqsql's own reads of a task's result
        results = {json.loads(queue.select_task_result(cur, i))["value"] for i in ids}
    assert results == {result for _, result in rows}
    assert queue.are_queues_empty()
    queue.close()


@pytest.mark.slow
def test_an_eqsql_worker_pool_serves_an_emews_study(study, jobs, postgres_url):
    from eqsql.task_queues.core import ResultStatus

    server, expdir = jobs.serve(database_config(study, postgres_url, 6))
    queue = eqsql_queue(postgres_url)
    answered = 0
    while server.poll() is None:   # EQ-SQL's worker loop: query_task, run, report_task
        task = queue.query_task(0, n=1, worker_pool="eqsql-worker", delay=0.01, timeout=0.5)
        if task["type"] == "work":
            value = json.loads(task["payload"])["x"] ** 2
            assert queue.report_task(task["eq_task_id"], 0, json.dumps(value)) == \
                ResultStatus.SUCCESS
            answered += 1
    out, err = server.communicate()
    assert server.returncode == 0, err
    assert "evaluation budget of 6 reached" in out
    exp_id = str(expdir.resolve())
    rows = query(postgres_url, "SELECT e.status, e.result, e.params, t.worker_pool FROM "
                 "emews_evaluations e JOIN emews_tasks m ON m.exp_id=e.exp_id AND m.id=e.id "
                 "JOIN eq_tasks t ON t.eq_task_id=m.eq_task_id WHERE e.exp_id=%s", (exp_id,))
    assert answered == len(rows) == 6
    for status, result, params, worker_pool in rows:
        assert (status, worker_pool) == ("done", "eqsql-worker")
        assert result == pytest.approx(json.loads(params)["x"] ** 2)
    queue.close()
