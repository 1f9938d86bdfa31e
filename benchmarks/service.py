"""One study served to pool jobs, on zmq and through PostgreSQL: ``python -m benchmarks service``.

Every contender runs the same no-op tasks (``impl = "echo"``, random search, async mode) in one
run, side by side:

* ``zmq, N pools``: ``emews serve`` (SQLite ``results.db``) with N ``mpiexec -n 3 emews pool``
  jobs attached over zmq on loopback;
* ``PostgreSQL, N pools``: the same study with ``[system] storage = "postgresql://..."``: the
  store and EQ-SQL's queues in a real PostgreSQL server (started here on a temp directory), the
  pools popping batches of tasks with ``FOR UPDATE SKIP LOCKED``, each exchange (report the
  finished, pop, renew) one round trip, and the study pushing each batch in one;
* ``EQ-SQL per-task path (eqsql)``: the anchor, on the same server and tables: EQ-SQL's own
  client (``eqsql``, extra ``eqsql``): ``submit_task`` per task, ``as_completed``, and the same
  number of worker processes running its worker loop (``query_task`` with n=1,
  ``report_task``), one task per transaction.

Throughput is measured inside the study, from the store: tasks over the span from the first
evaluation's start to the last one's end (start-up of the processes is left out), and per-task
overhead is its inverse. Each contender runs ``sizes.service_repeats`` times, all of them in
turn (a drift of the machine's speed falls on every contender alike), and its median run
counts; ``us_per_task_runs`` lists every run's figure (EQ-SQL's path alone moves by 15 to 40 %
from run to run on a machine of two cores). A served study is held paused (``emews pause``)
until all its pools have attached, and only the tasks started after that count: a pool that
starts later than another must neither miss the study nor leave the first one alone on it.
The anchor is timed from its first submit to its last result, once its workers are connected.
"""

import getpass
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from emews.evaluate._launcher import default_mpiexec

from .common import MPI_ENVIRONMENT, REPO

WORKERS_PER_POOL = 2
SPACE = [{"name": "x", "type": "float", "lower": -1.0, "upper": 1.0}]


def run(sizes):
    """Every contender on ``sizes.service_tasks`` no-op tasks, ``sizes.service_slots`` slots per
    worker (tasks in flight must stay far fewer than tasks, or the span measures no dispatch)."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from postgres import Server, missing_reason  # the test suite's throwaway server

    reason = missing_reason()
    if reason:
        raise RuntimeError(f"the service benchmark needs PostgreSQL: {reason}")
    n = sizes.service_tasks
    runs = {}
    with tempfile.TemporaryDirectory(prefix="emews-bench-service-") as directory:
        directory = Path(directory)
        os.chmod(directory, 0o755)
        (directory / "pg").mkdir()
        os.chmod(directory / "pg", 0o755)
        server = Server(directory / "pg").start()
        try:
            for repeat in range(sizes.service_repeats):
                for pools in (1, 2):
                    plural = "s" * (pools > 1)
                    for name, storage in ((f"zmq, {pools} pool{plural}", None),
                                          (f"PostgreSQL, {pools} pool{plural}",
                                           server.create_database())):
                        runs.setdefault(name, []).append(_study(
                            directory / str(repeat), name, n, pools, sizes.service_slots,
                            storage))
                        if storage:   # no autovacuum of its tables during the next runs
                            server.drop_database(storage)
                url = server.create_database()
                anchor = eqsql_path(url, n, WORKERS_PER_POOL)
                server.drop_database(url)
                runs.setdefault(anchor["contender"], []).append(anchor)
        finally:
            server.stop()
    rows = [_median(repeats) for repeats in runs.values()]
    for row in rows:
        row["ratio_to_eqsql"] = row["tasks_per_s"] / rows[-1]["tasks_per_s"]
    return {"tasks": n, "workers_per_pool": WORKERS_PER_POOL,
            "slots_per_worker": sizes.service_slots, "repeats": sizes.service_repeats,
            "runs": rows}


def _median(repeats):
    """The median run of a contender's ``repeats``, with every run's µs per task."""
    ranked = sorted(repeats, key=lambda run: run["us_per_task"])
    return {**ranked[(len(ranked) - 1) // 2],
            "us_per_task_runs": [round(run["us_per_task"], 1) for run in repeats]}


def _study(directory, name, n, pools, slots, storage):
    """One served study of ``n`` echo tasks with ``pools`` pool jobs; its figures."""
    from emews.core import _control as control
    from emews.store import study_store

    home = directory / name.replace(" ", "").replace(",", "-")
    home.mkdir(parents=True)
    (home / "space.json").write_text(json.dumps(SPACE))
    system = {"procs": pools * WORKERS_PER_POOL + 1, "slots_per_worker": slots,
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
        _wait_for(lambda: (expdir / "service.json").exists(), service, "emews serve to start")
        store = study_store(expdir, storage, create=False)
        try:
            _wait_for(lambda: store.meta("master"), service, "the study's master")
            control.request(expdir, "paused")   # until every pool has attached
            for _ in range(pools):
                start(default_mpiexec(), "-n", WORKERS_PER_POOL + 1, sys.executable, "-m", "emews",
                      "pool", expdir)
            _wait_for(lambda: len(_attached(expdir)) >= pools, service, "the pools to attach")
            began = time.time()
            control.request(expdir, "running")
        finally:
            store.close()
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
        rows = [row for row in store.rows("done") if row["started"] >= began]
    finally:
        store.close()
    span = max(r["finished"] for r in rows) - min(r["started"] for r in rows)
    return _figures(name, len(rows), span, pools=pools)


def _wait_for(condition, service, what, timeout=120):
    """Poll ``condition`` until it holds; raise if ``service`` exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not condition():
        if service.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"waited in vain for {what}: {service.communicate()[1]}")
        time.sleep(0.01)


def _attached(expdir):
    """The pools whose workers have started (each writes ``out/out-pool-PID-RANK.txt``)."""
    return {path.name.split("-")[2] for path in (Path(expdir) / "out").glob("out-pool-*")}


def _figures(name, tasks, span, **extra):
    return {"contender": name, "tasks": tasks, "seconds": span, "tasks_per_s": tasks / span,
            "us_per_task": span / tasks * 1e6, **extra}


# --- the anchor: EQ-SQL's per-task client path ---------------------------------------------------

def eqsql_path(url, n, workers):
    """``n`` echo tasks through EQ-SQL's own client (``eqsql``): ``submit_task`` each, then
    ``as_completed``, with ``workers`` worker processes (``query_task`` n=1, ``report_task``)
    that start popping once every task is submitted (an empty poll would cost them a growing
    sleep of 0.25 s and more); its figures."""
    from emews.store._postgres import connect

    local_queue = _eqsql()
    connect(url).close()   # the same tables (and indexes) as the emews contenders
    context = multiprocessing.get_context("spawn")
    ready, go = context.Barrier(workers + 1), context.Event()
    processes = [context.Process(target=_eqsql_worker, args=(url, i, ready, go))
                 for i in range(workers)]
    for process in processes:
        process.start()
    ready.wait(120)
    queue = _eqsql_queue(local_queue, url)
    try:
        began = time.perf_counter()
        futures = [queue.submit_task("bench", 0, json.dumps({"x": i / n}))[1]
                   for i in range(n)]
        go.set()
        for _ in queue.as_completed(futures, timeout=600):
            pass
        span = time.perf_counter() - began
        for _ in processes:
            queue.stop_worker_pool(0)
    finally:
        go.set()
        queue.close()
    for process in processes:  # an idle eqsql worker polls ever more slowly: do not wait
        process.join(5)
        if process.is_alive():
            process.kill()
    return _figures("EQ-SQL per-task path (eqsql)", n, span, pools=1)


def _eqsql():
    os.environ.setdefault("USER", getpass.getuser())  # eqsql.db_tools reads it on import
    try:
        from eqsql.task_queues import local_queue
    except ImportError:
        raise RuntimeError("the service benchmark's anchor needs EQ-SQL's client: pip install "
                           "'emews-hpo[eqsql]'") from None
    return local_queue


def _eqsql_queue(local_queue, url):
    parts = urllib.parse.urlsplit(url)
    return local_queue.init_task_queue(parts.hostname, parts.username, parts.port,
                                       parts.path.lstrip("/"))


def _eqsql_worker(url, index, ready, go):
    """EQ-SQL's worker loop: ``query_task`` (n=1), evaluate, ``report_task``; until EQ_STOP."""
    from .objectives import echo

    queue = _eqsql_queue(_eqsql(), url)
    ready.wait(120)
    go.wait(600)
    try:
        while True:
            task = queue.query_task(0, n=1, worker_pool=f"worker-{index}", delay=0.001,
                                    timeout=None)
            if task["type"] != "work":
                return
            queue.report_task(task["eq_task_id"], 0, json.dumps(echo(task["payload"])))
    finally:
        queue.close()
