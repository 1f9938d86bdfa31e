"""The PostgreSQL store and queue, on a real server started by the fixture: the Store interface,
a whole study served through the database (``[system] storage``), two pool jobs popping one
queue, a killed pool, a stalled pool's late result, a killed service, pause, unpause, stop and
abort, a password kept out of the experiment directory, and interop with EQ-SQL's own client
(``eqsql``) both ways: it submits to and reads from emews (``emews pool --eqsql``), and its
worker loop serves an emews study."""

import getpass
import importlib.resources
import json
import math
import os
import signal
import socket
import sys
import time
import urllib.parse

import pytest

from conftest import (NO_READY, SUPPORT, alive, assert_exact_budget_and_lost_leases_rerun,
                      wait_until)
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures
from test_service import MPIEXEC, Jobs

psycopg = pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")

from emews.evaluate import Outcome  # noqa: E402
from emews.store import open_store, study_store  # noqa: E402
from emews.store.postgres import COMPLETE, PostgresStore  # noqa: E402


@pytest.fixture
def jobs(tmp_path):
    started = Jobs(tmp_path)
    yield started
    started.close()


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


QUEUED_OUT = "SELECT count(*) FROM emews_queue_OUT JOIN emews_tasks t USING (eq_task_id) " \
    "WHERE t.exp_id=%s"                    # the study's tasks that no pool has popped
POPPED = "SELECT count(*) FROM eq_exp_id_tasks JOIN eq_tasks t USING (eq_task_id) WHERE " \
    "exp_id=%s AND t.time_start IS NOT NULL"   # tasks that a pool popped, ever


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


def database_config(study, url, budget, procs=3):
    return study(system={"procs": procs, "progress_interval": 60, "storage": url},
                 study={"budget": budget, "seed": 4, "objective": "fault_me:slow_square"},
                 service={"lease": 10.0})


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
def test_two_pools_pop_one_queue_and_each_task_is_evaluated_once(study, jobs, postgres_url):
    server, expdir = jobs.serve(database_config(study, postgres_url, 16, procs=5))
    pools = [jobs.pool(expdir, 3), jobs.pool(expdir, 3)]
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    for pool in pools:
        pool.communicate(timeout=60)
        assert pool.returncode == 0
    exp_id = str(expdir.resolve())
    attempts = query(postgres_url, "SELECT id, attempt, status FROM emews_attempts WHERE "
                     "exp_id=%s ORDER BY id", (exp_id,))
    assert attempts == [(i, 1, "done") for i in range(16)]  # once each: no retry, no duplicate
    served = query(postgres_url, "SELECT t.worker_pool, count(*) FROM eq_exp_id_tasks e JOIN "
                   "eq_tasks t USING (eq_task_id) WHERE e.exp_id=%s GROUP BY 1", (exp_id,))
    assert len(served) == 2 and sum(n for _, n in served) == 16  # both pools popped tasks
    evaluated = [line for path in (expdir / "out").glob("out-pool-*")
                 for line in path.read_text().splitlines() if "evaluated in pid" in line]
    assert len(evaluated) == 16  # every evaluation ran exactly once, on one of the pools


@pytest.mark.mpi
@pytest.mark.slow
def test_a_killed_database_pool_loses_its_leases_and_nothing_else(study, jobs, postgres_url):
    config = study(system={"procs": 5, "progress_interval": 60, "storage": postgres_url},
                   study={"budget": 12, "seed": 4, "objective": "fault_me:slow_square"},
                   service={"lease": 3.0})
    server, expdir = jobs.serve(config)
    doomed, survivor = jobs.pool(expdir, 3), jobs.pool(expdir, 3)
    exp_id = str(expdir.resolve())
    wait_until(lambda: query(postgres_url, "SELECT count(*) FROM emews_evaluations WHERE "
                             "exp_id=%s AND status='done'", (exp_id,))[0][0] >= 3,
               "three results")
    os.killpg(doomed.pid, signal.SIGKILL)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "evaluation budget of 12 reached" in out
    rows = query(postgres_url, "SELECT id, status, attempt FROM emews_evaluations WHERE "
                 "exp_id=%s ORDER BY id", (exp_id,))
    lost = query(postgres_url, "SELECT id, attempt, error FROM emews_attempts WHERE exp_id=%s "
                 "AND status='interrupted'", (exp_id,))
    assert_exact_budget_and_lost_leases_rerun(rows, lost, 12)
    survivor.communicate(timeout=60)
    assert survivor.returncode == 0


@pytest.mark.mpi
@pytest.mark.slow
def test_a_killed_service_resumes_and_its_database_pool_serves_on(study, jobs, postgres_url):
    server, expdir = jobs.serve(database_config(study, postgres_url, 12))
    pool = jobs.pool(expdir, 3)
    exp_id = str(expdir.resolve())
    done = "SELECT count(*) FROM emews_evaluations WHERE exp_id=%s AND status='done'"
    wait_until(lambda: query(postgres_url, done, (exp_id,))[0][0] >= 3, "three results")
    os.killpg(server.pid, signal.SIGKILL)
    server.communicate()
    finished = "SELECT id, params, result FROM emews_evaluations WHERE exp_id=%s AND " \
        "status='done'"
    before = query(postgres_url, finished, (exp_id,))
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert "evaluation budget of 12 reached" in out
    after = query(postgres_url, finished, (exp_id,))
    assert len(after) == 12 and set(before) <= set(after)  # nothing finished was lost
    assert query(postgres_url, "SELECT count(*) FROM emews_evaluations WHERE exp_id=%s",
                 (exp_id,)) == [(12,)]  # exactly the budget
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")
    assert pool.returncode == 0  # the same pool served both services


@pytest.mark.mpi
@pytest.mark.slow
def test_a_task_the_pool_still_runs_is_not_run_again_when_the_resumed_service_requeues_it(
        study, jobs, gate, postgres_url):
    config = study(system={"procs": 3, "progress_interval": 60, "storage": postgres_url},
                   study={"budget": 1, "seed": 4, "objective": "fault_me:gated"},
                   service={"lease": 10.0})
    server, expdir = jobs.serve(config)
    pool = jobs.pool(expdir, 3)                  # 2 workers: one runs the task, one is free
    exp_id = str(expdir.resolve())
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 1, "the task running")
    os.killpg(server.pid, signal.SIGKILL)
    server.communicate()
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir)
    attempt = "SELECT attempt FROM emews_tasks WHERE exp_id=%s AND id=0"
    wait_until(lambda: query(postgres_url, attempt, (exp_id,)) == [(2,)] and
               one(postgres_url, QUEUED_OUT, (exp_id,)) == 0,
               "the requeued task popped by the pool")
    (gate / "go").touch()
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert statuses(postgres_url, exp_id) == {"done": 1}
    assert len(list(gate.glob("pid-*"))) == 1   # the model ran once: its first run answered
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")
    assert pool.returncode == 0


def gated_config(write, url, procs, lease=10.0, **study):
    """A study (written by the ``study`` fixture, ``write``) whose evaluations wait for the
    file ``go`` (``fault_me:gated``); it runs until stopped unless ``study`` sets a limit. Its
    random search keeps no points ready, so that the queue holds one task per slot."""
    return write(system={"procs": procs, "progress_interval": 60, "storage": url},
                 study={"no_limit": True, "seed": 4, "objective": "fault_me:gated",
                        "algorithm": NO_READY, **study},
                 service={"lease": lease})


@pytest.fixture
def gate(tmp_path, jobs):
    """The directory of the gated models' files, handed to the service and its pools."""
    path = tmp_path / "gate"
    path.mkdir()
    jobs.env["EMEWS_TEST_GATE"] = str(path)
    return path


@pytest.mark.mpi
@pytest.mark.slow
def test_pause_takes_unpopped_tasks_back_unpause_hands_them_out_stop_ends_the_study(
        study, jobs, gate, postgres_url, emews_cli):
    server, expdir = jobs.serve(gated_config(study, postgres_url, 5))  # 4 tasks queued at once
    pool = jobs.pool(expdir, 3)                                         # for 2 workers
    exp_id = str(expdir.resolve())
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 2 and
               one(postgres_url, QUEUED_OUT, (exp_id,)) == 2, "two running, two queued")
    assert emews_cli("pause", expdir).returncode == 0
    wait_until(lambda: one(postgres_url, QUEUED_OUT, (exp_id,)) == 0 and
               statuses(postgres_url, exp_id) == {"running": 2, "queued": 2},
               "the unpopped tasks taken off the queue, queued again")
    (gate / "go").touch()
    wait_until(lambda: statuses(postgres_url, exp_id).get("done") == 2,
               "the running evaluations to finish")
    watch_until = time.monotonic() + 1.5  # paused: no pool pops anything over 1.5 s
    while time.monotonic() < watch_until:
        assert one(postgres_url, POPPED, (exp_id,)) == 2
        assert "running" not in statuses(postgres_url, exp_id)
        time.sleep(0.05)
    assert emews_cli("unpause", expdir).returncode == 0
    wait_until(lambda: statuses(postgres_url, exp_id).get("done", 0) > 4,
               "new work after unpause")
    assert emews_cli("stop", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "stopped on request (emews stop)" in out
    counts = statuses(postgres_url, exp_id)
    assert set(counts) <= {"done", "cancelled"}   # what ran finished; nothing else started
    assert one(postgres_url, QUEUED_OUT, (exp_id,)) == 0
    assert one(postgres_url, POPPED, (exp_id,)) == counts["done"]
    cancelled = query(postgres_url, "SELECT DISTINCT error FROM emews_attempts WHERE "
                      "exp_id=%s AND status='cancelled'", (exp_id,))
    assert cancelled in ([], [("cancelled: stopped on request (emews stop)",)])
    store = study_store(expdir, postgres_url, create=False)
    try:
        assert store.meta("final")["stop_reason"] == "stopped on request (emews stop)"
    finally:
        store.close()
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")


@pytest.mark.mpi
@pytest.mark.slow
def test_an_abort_cancels_what_the_database_pools_run(study, jobs, gate, postgres_url):
    config = study(system={"procs": 3, "progress_interval": 60, "storage": postgres_url},
                   study={"budget": 10, "objective": "cancel_models:fails_while_another_runs"},
                   failure={"on_failure": "abort"}, service={"lease": 10.0})
    server, expdir = jobs.serve(config)
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=120)
    assert server.returncode == 1
    assert "the failure policy aborted the study" in err and "failed on purpose" in err
    pids = [int(path.name[4:]) for path in gate.glob("pid-*")]
    assert pids and not any(alive(pid) for pid in pids)  # what would have run forever was killed
    exp_id = str(expdir.resolve())
    attempts = query(postgres_url, "SELECT status, error FROM emews_attempts WHERE exp_id=%s "
                     "ORDER BY id", (exp_id,))
    statuses = [status for status, _ in attempts]
    assert statuses.count("failed") == 1 and set(statuses) == {"cancelled", "failed"}
    # each run that was killed is stored as its pool reported it: cancelled
    assert sum(attempt == ("cancelled", "cancelled") for attempt in attempts) >= len(pids)
    assert pool.communicate(timeout=60)[0].endswith(
        "emews: pool left: the study was cancelled\n")


@pytest.mark.mpi
@pytest.mark.slow
def test_a_late_result_of_a_requeued_task_is_recorded_once_as_a_duplicate(
        study, jobs, gate, postgres_url, emews_cli):
    config = gated_config(study, postgres_url, 2, lease=2.0, no_limit=False,
                          budget=4)  # one task at a time
    server, expdir = jobs.serve(config)
    exp_id = str(expdir.resolve())
    stalled = jobs.pool(expdir, 2)
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 1, "the first pool's evaluation")
    (holder,) = query(postgres_url, "SELECT worker_pool FROM eq_tasks WHERE eq_status=1")
    master = int(holder[0].rpartition(":")[2])   # the pool's rank 0 (HOST:PID)
    os.kill(master, signal.SIGSTOP)   # it stalls (its worker runs on): its lease expires
    try:
        wait_until(lambda: query(postgres_url, "SELECT status FROM emews_attempts WHERE "
                                 "exp_id=%s", (exp_id,)) == [("interrupted",)],
                   "the lease to expire")
        other = jobs.pool(expdir, 2)
        wait_until(lambda: len(list(gate.glob("pid-*"))) == 2, "the task's second attempt")
        assert emews_cli("pause", expdir).returncode == 0  # the study waits for the late one
        (gate / "go").touch()
        wait_until(lambda: statuses(postgres_url, exp_id).get("done") == 1,
                   "the second attempt")
    finally:
        os.kill(master, signal.SIGCONT)   # its first attempt's result is reported, late
    attempts = "SELECT attempt, status, result FROM emews_attempts WHERE exp_id=%s AND id=0 " \
        "ORDER BY attempt"
    wait_until(lambda: [a[1] for a in query(postgres_url, attempts, (exp_id,))] ==
               ["duplicate", "done"], "the late result recorded as a duplicate")
    assert emews_cli("unpause", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "evaluation budget of 4 reached" in out
    rows = query(postgres_url, "SELECT id, status, attempt, result, params FROM "
                 "emews_evaluations WHERE exp_id=%s ORDER BY id", (exp_id,))
    assert [(i, status) for i, status, _, _, _ in rows] == [(i, "done") for i in range(4)]
    assert rows[0][2] == 2   # the point keeps its first result: the second attempt's
    (late, first) = query(postgres_url, attempts, (exp_id,))
    assert late[2] == first[2] == rows[0][3] == pytest.approx(json.loads(rows[0][4])["x"] ** 2)
    for each in (stalled, other):
        each.communicate(timeout=60)
        assert each.returncode == 0


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
