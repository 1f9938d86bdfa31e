"""One study served to pool jobs, on zmq and through PostgreSQL: ``python -m benchmarks service``.

Every contender runs the same no-op tasks (``impl = "echo"``, random search, async mode) in one
run, side by side:

* ``zmq, N pools``: ``emews serve`` (SQLite ``results.db``) with N ``mpiexec -n 3 emews pool``
  jobs attached over zmq on loopback;
* ``PostgreSQL, N pools``: the same study with ``[system] storage = "postgresql://..."``: the
  store and EQ-SQL's queues in a real PostgreSQL server (started here on a temp directory), the
  pools popping batches of tasks with ``FOR UPDATE SKIP LOCKED``;
* ``EQ-SQL per-task path``: the anchor, on the same server and tables: EQ-SQL's client
  statements (python/eqsql/task_queues/local_queue.py of github.com/emews/EQ-SQL: submit_task,
  query_task with n=1, report_task, query_result per task), one task per transaction, with
  the same number of worker processes. ``eqsql`` itself is not installed (its requirements
  bring globus-compute-sdk and proxystore); its statements are issued as it issues them.

Throughput is measured inside the study, from the store: tasks over the span from the first
evaluation's start to the last one's end (start-up of the processes is left out), and per-task
overhead is its inverse. The anchor is timed from its first submit to its last result, once its
workers are connected.
"""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import MPI_ENVIRONMENT, REPO, mpiexec

WORKERS_PER_POOL = 2
SLOTS_PER_WORKER = 32               # as the dispatch part's prefetch
SPACE = [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0}]


def run(sizes):
    """Every contender on ``sizes.service_tasks`` no-op tasks."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from postgres import Server, missing_reason  # the test suite's throwaway server

    reason = missing_reason()
    if reason:
        raise RuntimeError(f"the service benchmark needs PostgreSQL: {reason}")
    n = sizes.service_tasks
    runs = []
    with tempfile.TemporaryDirectory(prefix="emews-bench-service-") as directory:
        directory = Path(directory)
        os.chmod(directory, 0o755)
        (directory / "pg").mkdir()
        os.chmod(directory / "pg", 0o755)
        server = Server(directory / "pg").start()
        try:
            for pools in (1, 2):
                runs.append(_study(directory, f"zmq, {pools} pool{'s' * (pools > 1)}", n,
                                   pools, None))
                runs.append(_study(directory, f"PostgreSQL, {pools} pool{'s' * (pools > 1)}",
                                   n, pools, server.create_database()))
            runs.append(eqsql_path(server.create_database(), n, WORKERS_PER_POOL))
        finally:
            server.stop()
    anchor = runs[-1]["tasks_per_s"]
    for row in runs:
        row["ratio_to_eqsql"] = row["tasks_per_s"] / anchor
    return {"tasks": n, "workers_per_pool": WORKERS_PER_POOL,
            "slots_per_worker": SLOTS_PER_WORKER, "runs": runs}


def _study(directory, name, n, pools, storage):
    """One served study of ``n`` echo tasks with ``pools`` pool jobs; its figures."""
    from emews.store import study_store

    home = directory / name.replace(" ", "").replace(",", "-")
    home.mkdir()
    (home / "space.json").write_text(json.dumps(SPACE))
    system = {"procs": pools * WORKERS_PER_POOL + 1, "slots_per_worker": SLOTS_PER_WORKER,
              "progress_interval": 3600.0}
    if storage:
        system["storage"] = storage
    tables = {"system": system,
              "study": {"space": "space.json", "budget": n, "impl": "echo", "seed": 0,
                        "mode": "async", "name": "service", "data_dir": str(home)}}
    (home / "study.toml").write_text("".join(
        f"[{table}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in
                                  values.items()) for table, values in tables.items()))
    env = {k: v for k, v in os.environ.items() if k not in MPI_ENVIRONMENT}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    started = []

    def start(*command):
        started.append(subprocess.Popen(list(map(str, command)), cwd=home, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True))
        return started[-1]

    expdir = home / "service" / "EXP001"
    try:
        service = start(sys.executable, "-m", "emews", "serve", home / "study.toml")
        deadline = time.monotonic() + 120
        while not (expdir / "service.json").exists():
            if service.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"emews serve did not start: {service.communicate()[1]}")
            time.sleep(0.05)
        for _ in range(pools):
            start(mpiexec(), "-n", WORKERS_PER_POOL + 1, sys.executable, "-m", "emews", "pool",
                  expdir)
        out, err = service.communicate(timeout=1800)
        if service.returncode != 0:
            raise RuntimeError(f"{name}: emews serve exited with {service.returncode}:\n{err}")
        for process in started[1:]:
            process.communicate(timeout=120)
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
    store = study_store(expdir, storage, create=False)
    try:
        rows = store.rows("done")
    finally:
        store.close()
    span = max(r["finished"] for r in rows) - min(r["started"] for r in rows)
    return _figures(name, len(rows), span, pools=pools)


def _figures(name, tasks, span, **extra):
    return {"contender": name, "tasks": tasks, "seconds": span, "tasks_per_s": tasks / span,
            "us_per_task": span / tasks * 1e6, **extra}


# --- the anchor: EQ-SQL's per-task client path ---------------------------------------------------

POP_OUT = ("DELETE FROM emews_queue_OUT WHERE eq_task_id = any(array(SELECT eq_task_id FROM "
           "emews_queue_OUT WHERE eq_task_type = %s ORDER BY eq_priority DESC, eq_task_id ASC "
           "FOR UPDATE SKIP LOCKED LIMIT 1)) RETURNING *")
POP_IN = ("DELETE FROM emews_queue_IN WHERE eq_task_id = (SELECT eq_task_id FROM emews_queue_IN "
          "WHERE eq_task_id = %s ORDER BY eq_task_id FOR UPDATE SKIP LOCKED LIMIT 1) "
          "RETURNING *")


def eqsql_path(url, n, workers):
    """``n`` echo tasks through EQ-SQL's statements: submit, ``workers`` worker processes
    (query_task n=1, report_task), and query_result task by task; its figures."""
    import psycopg

    from emews.store.postgres import EQ_STOP, PostgresStore

    PostgresStore(url, "schema").close()   # the tables (EQ-SQL's workflow.sql, as emews makes it)
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(workers + 1)
    processes = [context.Process(target=_eqsql_worker, args=(url, ready))
                 for _ in range(workers)]
    for process in processes:
        process.start()
    ready.wait(120)
    with psycopg.connect(url) as conn:
        began = time.perf_counter()
        ids = [_submit(conn, json.dumps({"x": i / n})) for i in range(n)]
        for task_id in ids:
            _query_result(conn, task_id)
        span = time.perf_counter() - began
        for _ in processes:
            _submit(conn, EQ_STOP, priority=-1)
    for process in processes:
        process.join(60)
    return _figures("EQ-SQL per-task path", n, span, pools=1)


def _submit(conn, payload, priority=0):
    """EQ-SQL's submit_task: a task id from its sequence, the task, its experiment, the push."""
    with conn.transaction():
        task_id = conn.execute("select nextval('emews_id_generator')").fetchone()[0]
        conn.execute("INSERT INTO eq_tasks (eq_task_id, eq_task_type, json_out, time_created, "
                     "eq_priority) VALUES (%s, 0, %s, now(), %s)", (task_id, payload, priority))
        conn.execute("INSERT INTO eq_exp_id_tasks (exp_id, eq_task_id) VALUES ('bench', %s)",
                     (task_id,))
        conn.execute("INSERT INTO emews_queue_out (eq_task_type, eq_task_id, eq_priority) "
                     "VALUES (0, %s, %s)", (task_id, priority))
        conn.execute("UPDATE eq_tasks SET eq_status=0 WHERE eq_task_id=%s", (task_id,))
    return task_id


def _query_result(conn, task_id, delay=0.0005):
    """EQ-SQL's query_result: poll the IN queue for the task, then read its json_in."""
    while True:
        with conn.transaction():
            if conn.execute(POP_IN, (task_id,)).fetchall():
                return conn.execute("SELECT json_in FROM eq_tasks WHERE eq_task_id=%s",
                                    (task_id,)).fetchone()[0]
        time.sleep(delay)


def _eqsql_worker(url, ready, delay=0.0005):
    """EQ-SQL's worker loop: query_task (n=1), evaluate, report_task; until EQ_STOP."""
    import psycopg

    from .objectives import echo

    with psycopg.connect(url) as conn:
        ready.wait(120)
        while True:
            with conn.transaction():
                popped = conn.execute(POP_OUT, (0,)).fetchall()
                if popped:
                    task_id = popped[0][1]
                    payload = conn.execute("SELECT json_out FROM eq_tasks WHERE eq_task_id=%s",
                                           (task_id,)).fetchone()[0]
                    conn.execute("UPDATE eq_tasks SET eq_status=1, worker_pool='default', "
                                 "time_start=now() WHERE eq_task_id=%s", (task_id,))
            if not popped:
                time.sleep(delay)
                continue
            if payload == "EQ_STOP":
                return
            result = json.dumps(echo(payload))
            with conn.transaction():
                conn.execute("UPDATE eq_tasks SET json_in=%s, eq_status=2, time_stop=now() "
                             "WHERE eq_task_id=%s", (result, task_id))
                conn.execute("INSERT INTO emews_queue_IN (eq_task_type, eq_task_id) "
                             "VALUES (0, %s)", (task_id,))
