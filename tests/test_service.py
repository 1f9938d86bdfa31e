"""One study served to several pool jobs (``emews serve`` + ``emews pool``), for real, on both
transports from one set of tests (the ``storage`` fixture: zmq on loopback, or a real PostgreSQL
database): separate ``mpiexec`` jobs, leases that expire when a pool is killed or stalls, late
results recorded once as duplicates, late attach, a pool that drains at its walltime, pause,
unpause, stop and abort, a killed service whose pools serve on; on zmq, CURVE off loopback and
peers that send garbage or hold the wrong key; on PostgreSQL, tasks no pool popped taken back."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (NO_READY, alive, assert_exact_budget_and_lost_leases_rerun,
                      query_store, wait_until)
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

from emews._errors import ConfigError
from emews._experiment import read_store
from emews.store import study_store

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def rows_of(expdir, sql="SELECT id, status, attempt, error FROM evaluations ORDER BY id"):
    return query_store(Path(expdir) / "results.db", sql)


@pytest.fixture(params=["zmq", "postgres"])
def storage(request):
    """The transport of a served study: zmq (``None``: its store is ``results.db``), or its
    PostgreSQL database (the URL of a fresh one), where its pools pop their tasks."""
    if request.param == "zmq":
        return None
    pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def gate(tmp_path, jobs):
    """The directory of the gated models' files (``fault_me:gated`` waits for ``go`` there),
    handed to the service and its pools."""
    path = tmp_path / "gate"
    path.mkdir()
    jobs.env["EMEWS_TEST_GATE"] = str(path)
    return path


def config(study, budget, storage=None, lease=3.0, procs=5, objective="fault_me:slow_square",
           **service):
    system = {"procs": procs, "progress_interval": 60}
    if storage:
        system["storage"] = storage
    return study(system=system, study={"budget": budget, "seed": 4, "objective": objective},
                 service={"lease": lease, **service})


def stored(expdir, storage, *statuses):
    """The study's evaluations (of ``statuses``, if given) as ``(id, status, attempt, error)``,
    read through its store (none before the study has written any)."""
    try:
        store = study_store(expdir, storage, create=False)
    except ConfigError:
        return []
    try:
        return [(r["id"], r["status"], r["attempt"], r["error"]) for r in store.rows(*statuses)]
    finally:
        store.close()


def attempts(expdir, storage, status=None):
    """The study's finished attempts (of ``status``, if given) as ``(id, attempt, status,
    result, error)``."""
    store = study_store(expdir, storage, create=False)
    try:
        return [(a["id"], a["attempt"], a["status"], a["result"], a["error"])
                for a in store.attempts() if status in (None, a["status"])]
    finally:
        store.close()


def held(expdir, storage):
    """The ids of the tasks that a pool holds: over zmq, the running ones (a task goes to a
    pool when it asks); on PostgreSQL, the popped ones that no result answered (the study
    queues a task for its slots as ``running`` before a pool pops it)."""
    if not storage:
        return [row[0] for row in stored(expdir, storage, "running")]
    import psycopg

    with psycopg.connect(storage) as conn:
        return [i for i, in conn.execute(
            "SELECT t.id FROM emews_tasks t JOIN eq_tasks e USING (eq_task_id) WHERE "
            "t.exp_id=%s AND e.eq_status=1 AND e.worker_pool IS NOT NULL",   # 1: RUNNING
            (str(expdir.resolve()),))]


def evaluations(expdir):
    """``(pool pid, line)`` of every evaluation the pools' workers logged."""
    return [(path.name.split("-")[2], line) for path in (Path(expdir) / "out").glob("out-pool-*")
            for line in path.read_text().splitlines() if "evaluated in pid" in line]


def test_two_pools_serve_one_study_and_a_killed_pool_loses_nothing(study, jobs, storage):
    server, expdir = jobs.serve(config(study, 12, storage))
    doomed, survivor = jobs.pool(expdir), jobs.pool(expdir)
    wait_until(lambda: len(stored(expdir, storage, "done")) >= 3, "three results")
    os.killpg(doomed.pid, signal.SIGKILL)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "evaluation budget of 12 reached" in out
    lost = [(i, attempt, error) for i, attempt, _, _, error in
            attempts(expdir, storage, "interrupted")]
    assert_exact_budget_and_lost_leases_rerun(stored(expdir, storage), lost, 12)
    survivor.communicate(timeout=60)
    assert survivor.returncode == 0


def test_two_pools_share_the_tasks_and_each_is_evaluated_once(study, jobs, storage):
    server, expdir = jobs.serve(config(study, 16, storage, lease=10.0))
    pools = [jobs.pool(expdir), jobs.pool(expdir)]
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    for pool in pools:
        pool.communicate(timeout=60)
        assert pool.returncode == 0
    assert [a[:3] for a in attempts(expdir, storage)] == [(i, 1, "done") for i in range(16)]
    evaluated = evaluations(expdir)
    assert len(evaluated) == 16   # every evaluation ran exactly once, on one of the pools
    assert len({pid for pid, _ in evaluated}) == 2   # both pools worked


def test_a_failed_evaluation_is_run_again_on_the_pools_up_to_its_retries(study, jobs, storage):
    """A point's next attempt after a failure goes out again and runs under its own run id (on
    PostgreSQL, the EQ-SQL task that the failure completed is queued again)."""
    expdir, _ = jobs.run_served(study(
        system={"procs": 3, "progress_interval": 60, **({"storage": storage} if storage else {})},
        study={"budget": 2, "seed": 4, "objective": "fault_me:always_fails"},
        failure={"retries": 2}, service={"lease": 3.0}), returncode=1)   # every one failed
    store = study_store(expdir, storage, create=False)
    try:
        assert sorted((a["id"], a["attempt"], a["status"], a["run_id"]) for a in store.attempts()) \
            == [(i, k, "failed", f"RUN{i:06d}" + (f"-{k}" if k > 1 else ""))
                for i in range(2) for k in (1, 2, 3)]
        assert [(r["status"], r["attempt"]) for r in store.rows()] == [("failed", 3)] * 2
    finally:
        store.close()


def test_a_pools_request_for_work_is_served_at_once_not_at_its_next_heartbeat(study, jobs,
                                                                               storage):
    """A pool asks for work once (a ``want`` is not sent again); with a lease of an hour its
    next message may be a heartbeat 15 minutes later, so a master that let a request go by
    while it held uncommitted rows would stall the study until the communicate times out."""
    system = {"procs": 3, "progress_interval": 60, "slots_per_worker": 4}
    path = study(system=dict(system, storage=storage) if storage else system,
                 study={"budget": 200, "seed": 4, "impl": "echo"}, service={"lease": 3600})
    expdir, out = jobs.run_served(path)
    assert "evaluation budget of 200 reached" in out
    assert [status for _, status, _, _ in stored(expdir, storage)] == ["done"] * 200


def test_a_pool_holds_slots_per_worker_tasks_for_each_of_its_workers(study, jobs, storage):
    """With ``slots_per_worker = 3``, a pool of 2 workers holds 6 leased tasks at once: the
    service plans for them and the pool asks for them, rather than one task per worker (a
    round trip to the service for each task)."""
    system = {"procs": 3, "progress_interval": 60, "slots_per_worker": 3}
    path = study(system=dict(system, storage=storage) if storage else system,
                 study={"budget": 12, "seed": 4, "objective": "fault_me:slow_square"},
                 service={"lease": 30})
    server, expdir = jobs.serve(path)
    pool = jobs.pool(expdir)
    wait_until(lambda: len(stored(expdir, storage, "running")) == 6, "six tasks held at once")
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert [status for _, status, _, _ in stored(expdir, storage)] == ["done"] * 12
    pool.communicate(timeout=60)
    assert pool.returncode == 0


def test_a_pool_attaches_late_and_another_drains_at_its_walltime(study, jobs, storage):
    server, expdir = jobs.serve(config(study, 10, storage))
    early = jobs.pool(expdir, 3, "--walltime", "1.5")
    out, _ = early.communicate(timeout=120)
    assert early.returncode == 0 and "the pool's walltime is about to run out" in out
    assert stored(expdir, storage, "done") and not held(expdir, storage)  # it left none behind
    late = jobs.pool(expdir)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert [status for _, status, _, _ in stored(expdir, storage)] == ["done"] * 10
    late.communicate(timeout=60)
    assert len({pid for pid, _ in evaluations(expdir)}) == 2  # both pools worked


def test_off_loopback_the_service_demands_curve_and_survives_garbage_and_wrong_keys(study,
                                                                                   jobs):
    import zmq
    import zmq.auth

    server, expdir = jobs.serve(config(study, 8, bind="0.0.0.0"))
    keys = expdir / "keys"
    assert {p.name for p in keys.iterdir()} >= {"service.key", "service.key_secret",
                                                 "pool.key", "pool.key_secret"}
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in keys.glob("*.key_secret"))
    address = json.loads((expdir / "service.json").read_text())["address"]
    port = int(address.rsplit(":", 1)[1])

    with socket.create_connection(("127.0.0.1", port)) as raw:  # garbage bytes on the port
        raw.sendall(os.urandom(4096))
    context = zmq.Context.instance()
    plain = context.socket(zmq.DEALER)  # no key at all
    wrong = context.socket(zmq.DEALER)  # a key pair the service never issued
    public, secret = zmq.curve_keypair()
    wrong.curve_publickey, wrong.curve_secretkey = public, secret
    wrong.curve_serverkey = zmq.auth.load_certificate(str(keys / "service.key"))[0]
    hello = json.dumps({"op": "hello", "pool": "intruder", "workers": 64, "host": "x",
                        "pid": 1, "received": 0}).encode()
    for intruder in (plain, wrong):
        intruder.setsockopt(zmq.LINGER, 0)
        intruder.connect(f"tcp://127.0.0.1:{port}")
        intruder.send(hello)
        intruder.send(json.dumps({"op": "want", "free": 64, "received": 0}).encode())
    handed = expdir.parent / "pool-keys"  # what a pool on another machine would be given
    handed.mkdir()
    for name in ("pool.key", "pool.key_secret", "service.key"):
        (handed / name).write_bytes((keys / name).read_bytes())
    pool = jobs.pool(f"tcp://127.0.0.1:{port}", 3, "--key", handed)
    out, err = server.communicate(timeout=180)
    for intruder in (plain, wrong):
        assert not intruder.poll(100)  # never handed a task
        intruder.close(0)
    assert server.returncode == 0, err
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 8
    pool.communicate(timeout=60)


def test_malformed_messages_are_dropped_without_harming_the_study(study, jobs):
    import zmq

    server, expdir = jobs.serve(config(study, 6))
    address = json.loads((expdir / "service.json").read_text())["address"]
    peer = zmq.Context.instance().socket(zmq.DEALER)
    peer.setsockopt(zmq.LINGER, 0)
    peer.connect(address)
    for frame in (b"\xff\xfe not json", b"[1, 2]", b'{"op": "want", "free": "many"}',
                  b'{"op": "results", "results": [[1, 2]], "free": 0, "received": 0}',
                  b'{"op": "nonsense"}'):
        peer.send(frame)
    peer.send_multipart([b"two", b"frames"])
    # an attached peer (it said hello) whose results are malformed within
    peer.send(json.dumps({"op": "hello", "pool": "broken", "workers": 1, "host": "x",
                          "pid": 1, "received": 0}).encode())
    outcome = [1.0, 0.0, 0.0]   # value, started, finished (Outcome.ORDER)
    for entry in ([[1], 1, 1, outcome], ["x", 1, 1, outcome], [0, 1, 1, ["abc"]],
                  [0, 1, 1, [10 ** 400]], [0, 1, 1, {"value": 1.0}],
                  [0, 1, 1, outcome + ["duplicate"]], [0, 1, 1, outcome, 5]):
        peer.send(json.dumps({"op": "results", "results": [entry], "free": 0,
                              "received": 0}).encode())
    pool = jobs.pool(expdir)
    out, err = server.communicate(timeout=180)
    peer.close(0)
    assert server.returncode == 0, err
    assert "dropped a malformed message: want.free: must be an integer, got 'many'" in err
    assert "dropped a malformed result[0]: must be an integer, got [1]" in err
    assert "dropped a malformed result: must be [id, attempt, rank, outcome]" in err
    assert "dropped a result of task 0: outcome field 'value' must be a number" in err
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 6
    assert not rows_of(expdir, "SELECT id FROM attempts WHERE status != 'done'")
    pool.communicate(timeout=60)


def test_pause_unpause_and_stop_steer_a_live_study(study, jobs, storage, emews_cli):
    server, expdir = jobs.serve(config(study, 40, storage))
    pool = jobs.pool(expdir)
    wait_until(lambda: len(stored(expdir, storage, "done")) >= 2, "two results")
    if storage is None:   # a pool attached over zmq says hello: emews status lists it
        status = emews_cli("status", expdir, "--json")
        assert status.returncode == 0, status.stderr
        (attached,) = json.loads(status.stdout)["pools"]
        assert attached["workers"] == 2 and attached["last_heard_s"] < 30
    assert emews_cli("pause", expdir).returncode == 0
    wait_until(lambda: not stored(expdir, storage, "running"),
               "the running evaluations to finish")
    paused = stored(expdir, storage, "done")

    def last_start():
        store = study_store(expdir, storage, create=False)
        try:
            return max(r["started"] or 0 for r in store.rows())
        finally:
            store.close()

    started_since = last_start()
    watch_until = time.monotonic() + 1.5  # paused: nothing starts over a window of 1.5 s
    while time.monotonic() < watch_until:
        assert last_start() == started_since
        time.sleep(0.05)
    assert emews_cli("unpause", expdir).returncode == 0
    wait_until(lambda: last_start() > started_since, "new work after unpause")
    assert emews_cli("stop", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "stopped on request (emews stop)" in out
    rows = stored(expdir, storage)
    assert len(paused) < len([r for r in rows if r[1] == "done"]) < 40
    assert not [r for r in rows if r[1] in ("running", "queued")]
    pool.communicate(timeout=60)


def test_a_killed_service_resumes_and_its_pools_reconnect(study, jobs, storage):
    server, expdir = jobs.serve(config(study, 14, storage))
    pool = jobs.pool(expdir)
    wait_until(lambda: len(stored(expdir, storage, "done")) >= 3, "three results")
    os.killpg(server.pid, signal.SIGKILL)
    server.communicate()
    before = stored(expdir, storage, "done")
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir)
    try:
        out, err = resumed.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        resumed.kill()
        out, err = resumed.communicate()
        raise AssertionError(f"the resumed service hung: {out[-2000:]} {err[-3000:]}")
    assert resumed.returncode == 0, err
    assert "evaluation budget of 14 reached" in out
    after = stored(expdir, storage)
    assert [row[1] for row in after] == ["done"] * 14   # exactly the budget, all done
    done = {row[0] for row in after}
    assert {row[0] for row in before} <= done          # nothing finished was lost
    pool_out, _ = pool.communicate(timeout=60)
    assert pool.returncode == 0 and "emews: pool left: the study ended" in pool_out


def test_a_task_the_pool_still_runs_is_not_run_again_when_the_resumed_service_requeues_it(
        study, jobs, gate, storage):
    server, expdir = jobs.serve(config(study, 1, storage, lease=10.0, procs=3,
                                       objective="fault_me:gated"))
    pool = jobs.pool(expdir, 3)                  # 2 workers: one runs the task, one is free
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 1, "the task running")
    os.killpg(server.pid, signal.SIGKILL)
    server.communicate()
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir)
    wait_until(lambda: stored(expdir, storage) == [(0, "running", 2, None)],
               "the task's second attempt handed to the pool")
    (gate / "go").touch()
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert [row[1] for row in stored(expdir, storage)] == ["done"]
    assert len(list(gate.glob("pid-*"))) == 1   # the model ran once: its first run answered
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")
    assert pool.returncode == 0


def test_an_abort_cancels_what_the_pools_run(study, jobs, gate, storage):
    system = {"procs": 3, "progress_interval": 60}
    server, expdir = jobs.serve(study(
        system=dict(system, storage=storage) if storage else system,
        study={"budget": 10, "objective": "cancel_models:fails_while_another_runs"},
        failure={"on_failure": "abort"}, service={"lease": 10.0}))
    pool = jobs.pool(expdir, 3)
    out, err = server.communicate(timeout=120)
    assert server.returncode == 1
    assert "the failure policy aborted the study" in err and "failed on purpose" in err
    pids = [int(path.name[4:]) for path in gate.glob("pid-*")]
    assert pids and not any(alive(pid) for pid in pids)  # what would have run forever was killed
    statuses = [status for _, _, status, _, _ in attempts(expdir, storage)]
    assert statuses.count("failed") == 1 and set(statuses) == {"cancelled", "failed"}
    assert pool.communicate(timeout=60)[0].endswith(
        "emews: pool left: the study was cancelled\n")


def described_pools(expdir):
    """The pools that a study served on zmq describes in its store ([] before it has)."""
    return (read_store(expdir, lambda store: store.meta("pools")) or {"pools": []})["pools"]


def holder(expdir, storage):
    """The pid of the rank 0 of the pool that holds the study's one running task."""
    if storage:
        import psycopg

        with psycopg.connect(storage) as conn:
            (name,) = conn.execute("SELECT worker_pool FROM eq_tasks WHERE eq_status=1"
                                   ).fetchone()
    else:
        (name,) = [p["pool"] for p in described_pools(expdir) if p["tasks"]]
    return int(name.rpartition(":")[2])   # HOST:PID


def test_a_late_result_of_a_requeued_task_is_recorded_once_as_a_duplicate(
        study, jobs, gate, storage, emews_cli):
    server, expdir = jobs.serve(config(study, 4, storage, lease=2.0, procs=2,
                                       objective="fault_me:gated"))   # one task at a time
    stalled = jobs.pool(expdir, 2)
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 1, "the first pool's evaluation")
    wait_until(lambda: storage or any(p["tasks"] for p in described_pools(expdir)),
               "the task held, as the service describes its pools")
    master = holder(expdir, storage)
    os.kill(master, signal.SIGSTOP)   # it stalls (its worker runs on): its lease expires
    try:
        wait_until(lambda: [a[2] for a in attempts(expdir, storage)] == ["interrupted"],
                   "the lease to expire")
        other = jobs.pool(expdir, 2)
        wait_until(lambda: len(list(gate.glob("pid-*"))) == 2, "the task's second attempt")
        assert emews_cli("pause", expdir).returncode == 0  # the study waits for the late one
        (gate / "go").touch()
        wait_until(lambda: len(stored(expdir, storage, "done")) == 1, "the second attempt")
    finally:
        os.kill(master, signal.SIGCONT)   # its first attempt's result is reported, late
    of_0 = lambda: sorted(a[1:4] for a in attempts(expdir, storage) if a[0] == 0)  # noqa: E731
    wait_until(lambda: [a[1] for a in of_0()] == ["interrupted", "duplicate", "done"] or
               [a[1] for a in of_0()] == ["duplicate", "done"],
               "the late result recorded as a duplicate")
    assert emews_cli("unpause", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "evaluation budget of 4 reached" in out
    assert [row[:2] for row in stored(expdir, storage)] == [(i, "done") for i in range(4)]
    assert stored(expdir, storage)[0][2] == 2   # the point keeps its first result: attempt 2
    late, first = [a for a in of_0() if a[1] in ("duplicate", "done")]
    assert late[2] == first[2]                 # both ran the same point to the same value
    for each in (stalled, other):
        each.communicate(timeout=60)
        assert each.returncode == 0


QUEUED_OUT = "SELECT count(*) FROM emews_queue_OUT JOIN emews_tasks t USING (eq_task_id) " \
    "WHERE t.exp_id=%s"                    # the study's tasks that no pool has popped
POPPED = "SELECT count(*) FROM eq_exp_id_tasks JOIN eq_tasks t USING (eq_task_id) WHERE " \
    "exp_id=%s AND t.time_start IS NOT NULL"   # tasks that a pool popped, ever


def test_pause_takes_unpopped_tasks_back_unpause_hands_them_out_stop_ends_the_study(
        study, jobs, gate, postgres_url, emews_cli):
    """On PostgreSQL the study queues tasks for its slots before a pool pops them: a pause
    takes back those no pool popped (over zmq a pool asks only for what it runs)."""
    import psycopg

    def one(sql):
        with psycopg.connect(postgres_url) as conn:
            return conn.execute(sql, (exp_id,)).fetchone()[0]

    def statuses():
        counts = {}
        for _, status, _, _ in stored(expdir, postgres_url):
            counts[status] = counts.get(status, 0) + 1
        return counts

    server, expdir = jobs.serve(study(   # 4 tasks queued at once for 2 workers
        system={"procs": 5, "progress_interval": 60, "storage": postgres_url},
        study={"no_limit": True, "seed": 4, "objective": "fault_me:gated",
               "algorithm": NO_READY}, service={"lease": 10.0}))
    pool = jobs.pool(expdir, 3)
    exp_id = str(expdir.resolve())
    wait_until(lambda: len(list(gate.glob("pid-*"))) == 2 and one(QUEUED_OUT) == 2,
               "two running, two queued")
    assert emews_cli("pause", expdir).returncode == 0
    wait_until(lambda: one(QUEUED_OUT) == 0 and statuses() == {"running": 2, "queued": 2},
               "the unpopped tasks taken off the queue, queued again")
    (gate / "go").touch()
    wait_until(lambda: statuses().get("done") == 2, "the running evaluations to finish")
    watch_until = time.monotonic() + 1.5  # paused: no pool pops anything over 1.5 s
    while time.monotonic() < watch_until:
        assert one(POPPED) == 2 and "running" not in statuses()
        time.sleep(0.05)
    assert emews_cli("unpause", expdir).returncode == 0
    wait_until(lambda: statuses().get("done", 0) > 4, "new work after unpause")
    assert emews_cli("stop", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "stopped on request (emews stop)" in out
    counts = statuses()
    assert set(counts) <= {"done", "cancelled"}   # what ran finished; nothing else started
    assert one(QUEUED_OUT) == 0 and one(POPPED) == counts["done"]
    assert pool.communicate(timeout=60)[0].endswith("emews: pool left: the study ended\n")


def test_on_postgresql_a_pool_and_a_stop_reach_the_study_by_its_store_alone(study, jobs,
                                                                            postgres_url,
                                                                            emews_cli):
    """The study's state is in its database: ``emews pool URL#EXP_ID`` attaches and ``emews
    stop URL#EXP_ID`` ends the study, neither naming its experiment directory."""
    server, expdir = jobs.serve(config(study, 60, postgres_url))
    target = f"{postgres_url}#{expdir.resolve()}"
    pool = jobs.pool(target)
    wait_until(lambda: len(stored(expdir, postgres_url, "done")) >= 3, "three results")
    assert emews_cli("stop", target).returncode == 0
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "stopped on request (emews stop)" in out
    assert 3 <= len(stored(expdir, postgres_url, "done")) < 60
    pool.communicate(timeout=60)
    assert pool.returncode == 0


def test_a_pool_of_one_rank_is_refused_with_one_line(tmp_path):
    """Rank 0 only attaches: a pool job without a worker rank says so before connecting."""
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK")}
    done = subprocess.run([sys.executable, "-m", "emews", "pool", "tcp://127.0.0.1:9"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("emews: error: emews pool needs at least 2 MPI ranks (rank 0 "
                                   "attaches, the others evaluate): mpiexec -n N with N >= 2")


def test_a_task_type_without_eqsql_is_refused_with_one_line(emews_cli):
    """``--task-type`` picks EQ-SQL tasks: without ``--eqsql`` it would be silently ignored."""
    done = emews_cli("pool", "tcp://127.0.0.1:9", "--task-type", "3")
    assert done.returncode == 2
    assert done.stderr.strip() == ("emews: error: emews pool --task-type: selects EQ-SQL tasks: "
                                   "it needs --eqsql URL, got 3")


def test_a_pool_that_takes_a_dead_pools_name_does_not_keep_its_tasks_alive(postgres_url,
                                                                           tmp_path):
    """On PostgreSQL a lease is a pool's, under its name (``HOST:PID``): a pool that comes
    back with a dead one's name (the same pid again, on a host of the same name) takes another
    name, and the dead one's task comes back interrupted when its lease runs out, while the new
    pool renews its own."""
    from emews.pools._base import Task
    from emews.service._postgres_transport import PostgresPool, PostgresService

    service = PostgresService(postgres_url, "exp", 4, 0.5, {}, tmp_path)
    dead, again = PostgresPool(postgres_url, "exp", name="node:7"), None
    try:
        dead.learn_study()
        service.send([Task(0, json.dumps({"x": 0.5}), "r0")])
        assert service.receive() == ([], False)     # it goes out with the look for results
        assert [task.params for task in dead.report_and_take([], 1, True, False)] == ['{"x": 0.5}']
        dead.close()
        again = PostgresPool(postgres_url, "exp", name="node:7")
        again.learn_study()
        assert again.name == "node.2:7"
        expired = []

        def released():
            again.report_and_take([], 0, False, True)    # the live pool renews its lease
            expired.extend(service.expired())
            return expired

        wait_until(released, "the dead pool's lease to run out")
        assert expired == [(0, "node:7")]
        assert service.expired() == []         # released once
    finally:
        for link in (dead, again, service):
            if link is not None:
                link.close()


def test_a_task_taken_back_before_it_went_out_never_reaches_the_queue(postgres_url, tmp_path):
    """On PostgreSQL the tasks a study sends go out with its next look for results (one round
    trip for both): one taken back before that is never queued, and is not started."""
    from emews.pools._base import Task
    from emews.service._postgres_transport import PostgresPool, PostgresService

    service = PostgresService(postgres_url, "exp", 4, 60.0, {}, tmp_path)
    pool = PostgresPool(postgres_url, "exp")
    try:
        pool.learn_study()
        service.send([Task(i, json.dumps({"x": i}), f"r{i}") for i in range(2)])
        assert service.withdraw([1]) == [1]
        service.receive()
        assert [task.params for task in pool.report_and_take([], 4, True, False)] == ['{"x": 0}']
        assert service.withdraw([0]) == []     # popped: no longer the study's to take back
    finally:
        pool.close()
        service.close()


def test_a_store_in_the_studys_database_carries_its_exchange_in_its_commit(postgres_url,
                                                                            tmp_path,
                                                                            shared_links):
    """On PostgreSQL, where the study's store shares the queue's database, a commit of the
    store carries the link's exchange in its transaction: the tasks sent before it go out
    with it (no look of the link's own), and the results waiting are taken off the IN queue
    by it, for the next receive. Results taken but never received go back on the queue when
    the link closes, and a later service of the study receives them (to adopt)."""
    import psycopg

    from emews.evaluate import Outcome
    from emews.pools._base import Task

    def waiting_results():
        with psycopg.connect(postgres_url) as conn:
            return conn.execute("SELECT count(*) FROM emews_queue_IN").fetchone()[0]

    store, service, pool = shared_links
    tasks = [Task(i, json.dumps({"x": i}), f"r{i}") for i in range(2)]
    store.add([(t.id, t.params, t.run_id, None, t.id) for t in tasks])
    service.send(tasks)
    store.commit()
    popped = pool.report_and_take([], 4, True, False)
    assert sorted(task.params for task in popped) == ['{"x": 0}', '{"x": 1}']
    pool.report_and_take([(task, 1, Outcome(0.25 * json.loads(task.params)["x"]))
                          for task in popped], 0, False, False)
    assert waiting_results() == 2
    store.set_meta("turn", 1)
    store.commit()
    assert waiting_results() == 0          # taken by the commit
    results, heard = service.receive()
    assert heard and sorted((r.task_id, r.attempt, r.rank, r.outcome.value)
                            for r in results) == [(0, 1, 1, 0.0), (1, 1, 1, 0.25)]
    assert store.meta("turn") == 1
    store.finish([(r.task_id, r.rank, r.outcome, r.attempt, "done") for r in results])
    # a result taken with a commit but never received goes back on the queue
    third = Task(2, json.dumps({"x": 2}), "r2")
    store.add([(2, third.params, "r2", None, 2)])
    service.send([third])
    store.commit()
    assert pool.wait(30)                   # the commit's NOTIFY
    [task] = pool.report_and_take([], 4, True, False)
    pool.report_and_take([(task, 2, Outcome(0.5))], 0, False, False)
    store.set_meta("turn", 2)
    store.commit()
    assert waiting_results() == 0
    service.close()
    assert waiting_results() == 1
    assert next_service_receives(postgres_url, tmp_path) == [(2, 2, 0.5)]


@pytest.fixture
def shared_links(postgres_url, tmp_path):
    """Study ``exp``'s store, its service's link sharing the store's commits, and a pool
    that has introduced itself, on PostgreSQL; closed at the end."""
    from emews.service._postgres_transport import PostgresPool, PostgresService
    from emews.store._postgres import PostgresStore

    store = PostgresStore(postgres_url, "exp")
    service = PostgresService(postgres_url, "exp", 4, 60.0, {}, tmp_path)
    pool = PostgresPool(postgres_url, "exp")
    try:
        service.share(store)
        pool.learn_study()
        yield store, service, pool
    finally:
        for link in (pool, service):
            link.close()
        store.close()


def next_service_receives(postgres_url, tmp_path):
    """What a next service of study ``exp`` receives first: ``(task id, rank, value)``."""
    from emews.service._postgres_transport import PostgresService

    later = PostgresService(postgres_url, "exp", 4, 60.0, {}, tmp_path)
    try:
        return [(r.task_id, r.rank, r.outcome.value) for r in later.receive()[0]]
    finally:
        later.close()


def test_a_result_a_killed_service_took_but_never_stored_reaches_the_next_one(postgres_url,
                                                                             tmp_path,
                                                                             shared_links):
    """On PostgreSQL the results a commit takes off the IN queue are stored by the next
    commit. A service killed between the two leaves them taken (its task completed, its point
    not finished in the store): the next service of the study puts them back on the IN queue
    as it starts, and receives them (to adopt). One the store holds as done stays taken."""
    from emews.evaluate import Outcome
    from emews.pools._base import Task

    store, service, pool = shared_links
    tasks = [Task(i, json.dumps({"x": i}), f"r{i}") for i in range(2)]
    store.add([(t.id, t.params, t.run_id, 1, t.id) for t in tasks])
    service.send(tasks)
    store.commit()
    popped = {json.loads(task.params)["x"]: task
              for task in pool.report_and_take([], 4, True, False)}
    pool.report_and_take([(popped[0], 1, Outcome(0.5))], 0, False, False)
    store.set_meta("turn", 0)
    store.commit()                             # takes task 0's result
    [result] = service.receive()[0]
    store.finish([(0, 1, result.outcome, 1, "done")])
    pool.report_and_take([(popped[1], 1, Outcome(0.25))], 0, False, False)
    store.commit()                             # stores it, takes task 1's result ...
    service.queue.close()                      # ... and the service dies (SIGKILL)
    assert next_service_receives(postgres_url, tmp_path) == [(1, 1, 0.25)]


def test_a_wait_for_news_sleeps_on_the_socket_and_wakes_at_a_notify(postgres_url, tmp_path):
    """On PostgreSQL a link waits for news on its listening connection's socket: a wait in
    vain costs next to no CPU (psycopg's own ``notifies`` spins through the last millisecond
    of every timeout: on a machine of two cores, the pools' short waits took CPU from the
    study and the server), and a NOTIFY that came before or during a wait ends it."""
    import psycopg

    from emews.service._postgres_transport import TaskQueue
    from emews.store._postgres import TASKS_CHANNEL

    queue = TaskQueue(postgres_url, "exp")
    try:
        queue.wait(TASKS_CHANNEL, 0)           # listens from now on
        cpu, wall = time.process_time(), time.monotonic()
        woke = [queue.wait(TASKS_CHANNEL, 0.002) for _ in range(100)]
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        assert not any(woke), woke
        assert cpu < 0.25 * wall, f"{cpu:.3f} s of CPU over {wall:.3f} s of waits"
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("NOTIFY emews_queue_out")
        assert queue.wait(TASKS_CHANNEL, 30)
        assert not queue.wait(TASKS_CHANNEL, 0)   # taken once
    finally:
        queue.close()


def test_a_wait_for_news_works_on_a_socket_numbered_past_1024(postgres_url):
    """A pool job's process may hold more than 1024 files (HPC nodes raise the limit): a wait
    on a socket numbered past 1024 works (``select.select`` refuses one)."""
    import resource

    from emews.service._postgres_transport import TaskQueue
    from emews.store._postgres import TASKS_CHANNEL

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"this process may open {hard} files at most")
    if soft != resource.RLIM_INFINITY and soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        queue = TaskQueue(postgres_url, "exp")
        try:
            queue.wait(TASKS_CHANNEL, 0)       # listens from now on
            assert queue.listener.pgconn.socket > 1024
            assert not queue.wait(TASKS_CHANNEL, 0.01)
        finally:
            queue.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_study_vacuums_its_queues_dead_rows_as_it_runs(postgres_url, tmp_path,
                                                           monkeypatch):
    """Each task leaves a dead row in the OUT and IN queues, which every pop reads until a
    vacuum, and autovacuum comes a minute later at best: the study's side vacuums the queues
    itself, every :data:`VACUUM_EVERY` seconds as it receives."""
    import psycopg

    from emews.service import _postgres_transport as postgres_transport
    from emews.service._postgres_transport import PostgresService

    def vacuums():
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            return dict(conn.execute(
                "SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE relname IN "
                "('emews_queue_out', 'emews_queue_in')").fetchall())

    service = PostgresService(postgres_url, "exp", 4, 60.0, {}, tmp_path)
    try:
        service.receive()
        assert vacuums() == {"emews_queue_out": 0, "emews_queue_in": 0}   # not due yet
        monkeypatch.setattr(postgres_transport, "VACUUM_EVERY", 0.0)
        service.receive()
        assert vacuums() == {"emews_queue_out": 1, "emews_queue_in": 1}
    finally:
        service.close()
