"""One study served to several pool jobs over zmq (``emews serve`` + ``emews pool``), for real:
separate ``mpiexec`` jobs, leases that expire when a pool is killed, late attach, a pool that
drains at its walltime, CURVE off loopback, and peers that send garbage or hold the wrong key."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SUPPORT, assert_exact_budget_and_lost_leases_rerun, query_store, wait_until


pytestmark = [pytest.mark.mpi, pytest.mark.slow]
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


def rows_of(expdir, sql="SELECT id, status, attempt, error FROM evaluations ORDER BY id"):
    return query_store(Path(expdir) / "results.db", sql)


class Jobs:
    """Background processes of one test, each in its own session; killed at the end."""

    def __init__(self, cwd):
        self.cwd, self.started = cwd, []
        self.env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_SECONDS="0.4")
        for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK"):
            self.env.pop(name, None)

    def start(self, *command):
        process = subprocess.Popen(list(map(str, command)), cwd=self.cwd, env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        self.started.append(process)
        return process

    def serve(self, config, *options):
        process = self.start(sys.executable, "-m", "emews", "serve", config, *options)
        service = self.cwd / "experiments" / "study" / "EXP001" / "service.json"
        wait_until(service.exists, "service.json")
        return process, service.parent

    def pool(self, expdir, ranks=3, *options):
        return self.start(MPIEXEC, "-n", ranks, sys.executable, "-m", "emews", "pool", expdir,
                          *options)

    def close(self):
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


@pytest.fixture
def jobs(tmp_path):
    started = Jobs(tmp_path)
    yield started
    started.close()


def config(study, budget, lease=3.0, **service):
    return study(system={"procs": 5, "progress_interval": 60},
                 study={"budget": budget, "seed": 4, "objective": "fault_me:slow_square"},
                 service={"lease": lease, **service})


def test_two_pools_serve_one_study_and_a_killed_pool_loses_nothing(study, jobs):
    server, expdir = jobs.serve(config(study, 12))
    doomed, survivor = jobs.pool(expdir), jobs.pool(expdir)
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE "
                                           "status='done'")) >= 3, "three results")
    os.killpg(doomed.pid, signal.SIGKILL)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert "evaluation budget of 12 reached" in out
    lost = rows_of(expdir, "SELECT id, attempt, error FROM attempts WHERE status='interrupted'")
    assert_exact_budget_and_lost_leases_rerun(rows_of(expdir), lost, 12)
    survivor.communicate(timeout=60)
    assert survivor.returncode == 0


def test_a_pools_request_for_work_is_served_at_once_not_at_its_next_heartbeat(study, jobs):
    """A pool asks for work once (a ``want`` is not sent again); with a lease of an hour its
    next message may be a heartbeat 15 minutes later, so a master that let a request go by
    while it held uncommitted rows would stall the study until the communicate times out."""
    path = study(system={"procs": 3, "progress_interval": 60, "slots_per_worker": 4},
                 study={"budget": 200, "seed": 4, "impl": "echo"}, service={"lease": 3600})
    server, expdir = jobs.serve(path)
    pool = jobs.pool(expdir)
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "evaluation budget of 200 reached" in out
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 200
    pool.communicate(timeout=60)
    assert pool.returncode == 0


def test_a_pool_holds_slots_per_worker_tasks_for_each_of_its_workers(study, jobs):
    """With ``slots_per_worker = 3``, a pool of 2 workers holds 6 leased tasks at once: the
    service plans for them and the pool asks for them, rather than one task per worker (a
    round trip to the service for each task)."""
    path = study(system={"procs": 3, "progress_interval": 60, "slots_per_worker": 3},
                 study={"budget": 12, "seed": 4, "objective": "fault_me:slow_square"},
                 service={"lease": 30})
    server, expdir = jobs.serve(path)
    pool = jobs.pool(expdir)
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE "
                                           "status='running'")) == 6, "six tasks held at once")
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 12
    pool.communicate(timeout=60)
    assert pool.returncode == 0


def test_a_pool_attaches_late_and_another_drains_at_its_walltime(study, jobs):
    server, expdir = jobs.serve(config(study, 10))
    early = jobs.pool(expdir, 3, "--walltime", "1.5")
    out, _ = early.communicate(timeout=120)
    assert early.returncode == 0 and "the pool's walltime is about to run out" in out
    stored = rows_of(expdir, "SELECT id FROM evaluations WHERE status='done'")
    assert stored and not rows_of(expdir, "SELECT id FROM evaluations WHERE status='running'")
    late = jobs.pool(expdir)
    out, err = server.communicate(timeout=180)
    assert server.returncode == 0, err
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 10
    late.communicate(timeout=60)
    evaluated = [path for path in (expdir / "out").glob("out-pool-*")
                 if "evaluated in pid" in path.read_text()]
    assert len({path.name.split("-")[2] for path in evaluated}) == 2  # both pools worked


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
                  b'{"op": "results", "results": [[1, 2]]}', b'{"op": "nonsense"}'):
        peer.send(frame)
    peer.send_multipart([b"two", b"frames"])
    # an attached peer (it said hello) whose results are malformed within
    peer.send(json.dumps({"op": "hello", "pool": "broken", "workers": 1, "host": "x",
                          "pid": 1, "received": 0}).encode())
    outcome = {"value": 1.0, "started": 0.0, "finished": 0.0}
    for entry in ([[1], 1, 1, outcome], ["x", 1, 1, outcome], [0, 1, 1, {"value": "abc"}],
                  [0, 1, 1, {"value": 10 ** 400}], [0, 1, 1, [1.0, "done", None]],
                  [0, 1, 1, {**outcome, "status": "duplicate"}], [0, 1, 1, outcome, 5]):
        peer.send(json.dumps({"op": "results", "results": [entry]}).encode())
    pool = jobs.pool(expdir)
    out, err = server.communicate(timeout=180)
    peer.close(0)
    assert server.returncode == 0, err
    assert "dropped" in err and "a result with a field of the wrong type" in err
    assert "a result of task 0: outcome field 'value' must be a number" in err
    assert [status for _, status, _, _ in rows_of(expdir)] == ["done"] * 6
    assert not rows_of(expdir, "SELECT id FROM attempts WHERE status != 'done'")
    pool.communicate(timeout=60)


def test_pause_unpause_and_stop_steer_a_live_study(study, jobs, emews_cli):
    server, expdir = jobs.serve(config(study, 40))
    pool = jobs.pool(expdir)
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE "
                                           "status='done'")) >= 2, "two results")
    status = emews_cli("status", expdir, "--json")
    assert status.returncode == 0, status.stderr
    (attached,) = json.loads(status.stdout)["pools"]  # the one pool, seen by emews status
    assert attached["workers"] == 2 and attached["last_heard_s"] < 30
    assert emews_cli("pause", expdir).returncode == 0
    wait_until(lambda: not rows_of(expdir, "SELECT id FROM evaluations WHERE status='running'"),
               "the running evaluations to finish")
    paused = [row for row in rows_of(expdir) if row[1] == "done"]
    started_since = rows_of(expdir, "SELECT MAX(started) FROM evaluations")[0][0]
    watch_until = time.monotonic() + 1.5  # paused: nothing starts over a window of 1.5 s
    while time.monotonic() < watch_until:
        assert rows_of(expdir, "SELECT MAX(started) FROM evaluations")[0][0] == started_since
        time.sleep(0.05)
    assert emews_cli("unpause", expdir).returncode == 0
    wait_until(lambda: rows_of(expdir, "SELECT MAX(started) FROM evaluations")[0][0] >
               started_since, "new work after unpause")
    assert emews_cli("stop", expdir).returncode == 0
    out, err = server.communicate(timeout=120)
    assert server.returncode == 0, err
    assert "stopped on request (emews stop)" in out
    rows = rows_of(expdir)
    assert len(paused) < len([r for r in rows if r[1] == "done"]) < 40
    assert not [r for r in rows if r[1] in ("running", "queued")]
    pool.communicate(timeout=60)


def test_a_killed_service_resumes_and_its_pools_reconnect(study, jobs, tmp_path):
    server, expdir = jobs.serve(config(study, 14))
    pool = jobs.pool(expdir)
    wait_until(lambda: len(rows_of(expdir, "SELECT id FROM evaluations WHERE "
                                           "status='done'")) >= 3, "three results")
    os.killpg(server.pid, signal.SIGKILL)
    server.communicate()
    before = rows_of(expdir, "SELECT id, params, result FROM evaluations WHERE status='done'")
    resumed = jobs.start(sys.executable, "-m", "emews", "serve", "--resume", expdir)
    try:
        out, err = resumed.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        resumed.kill()
        out, err = resumed.communicate()
        raise AssertionError(f"the resumed service hung: {out[-2000:]} {err[-3000:]}")
    assert resumed.returncode == 0, err
    assert "evaluation budget of 14 reached" in out
    after = rows_of(expdir, "SELECT id, params, result FROM evaluations WHERE status='done'")
    assert len(after) == 14 and set(before) <= set(after)  # nothing finished was lost
    assert not rows_of(expdir, "SELECT id FROM evaluations WHERE status != 'done'")
    pool_out, _ = pool.communicate(timeout=60)
    assert pool.returncode == 0 and "emews: pool left: the study ended" in pool_out


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
