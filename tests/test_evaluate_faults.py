"""Faults of a model run, one evaluation at a time (``emews.evaluate`` with real processes).

Each fault of :mod:`faulty` (tests/support) ends that evaluation with its reason and log tail;
the next evaluation on the same :class:`Objective` succeeds (a dead nanny is restarted).
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emews import _config as configuration
from emews._errors import ConfigError
from emews.evaluate import Objective, from_env
from emews.evaluate._model_output import TAIL_BYTES, tail

from conftest import SUPPORT, alive, wait_until

pytestmark = pytest.mark.usefixtures("no_leftovers")



@pytest.fixture
def faulty(tmp_path, monkeypatch):
    """An Objective evaluating ``faulty:run`` (closed at the end of the test)."""
    monkeypatch.syspath_prepend(str(SUPPORT))
    made = []

    def make(**options):
        options.setdefault("grace", 0.5)
        objective = Objective("py", objective="faulty:run", expdir=tmp_path / "EXP001",
                              exp_id="EXP001", **options)
        made.append(objective)
        return objective

    yield make
    for objective in made:
        objective.close()


def nanny_pid(objective):
    (nanny,) = objective.implementation.nannies
    return nanny.pid


@pytest.mark.parametrize("mode, reason, fragment, restarted", [
    ("segfault", "the model was killed by signal 11 (SIGSEGV)", "Segmentation fault", True),
    ("exit3", "the model exited with status 3", "faulty: mode exit3", True),
    ("sysexit", "the model raised SystemExit: 3", "SystemExit: 3", False),
    ("keyboardinterrupt", "the model raised KeyboardInterrupt", "KeyboardInterrupt", False),
    ("garbage", "the model returned a non-numeric result: 'not a number'", "mode garbage",
     False),
    ("nan", "the model returned NaN", "faulty: mode nan", False),
])
@pytest.mark.slow
def test_a_fault_fails_that_evaluation_only(faulty, mode, reason, fragment, restarted):
    objective = faulty()
    assert objective.evaluate('{"x": 1.0}', "RUN1").status == "done"
    first = nanny_pid(objective)
    outcome = objective.evaluate(json.dumps({"mode": mode}), "RUN2")
    assert (outcome.status, outcome.error) == ("failed", reason)
    assert fragment in outcome.log_tail and "faulty: mode ok" not in outcome.log_tail
    again = objective.evaluate('{"x": 2.5}', "RUN3")
    assert (again.status, again.value) == ("done", 2.5)
    assert (nanny_pid(objective) != first) == restarted
    assert alive(nanny_pid(objective))


def test_current_run_travels_to_the_nanny(faulty):
    outcome = faulty().evaluate('{"mode": "context"}', "RUN42")
    assert (outcome.status, outcome.value) == ("done", 42.0)


def test_the_nanny_never_sees_the_mpi_launchers_variables(faulty, monkeypatch, tmp_path):
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    objective = faulty()
    objective.evaluate('{"x": 1.0}', "RUN1")
    environ = Path(f"/proc/{nanny_pid(objective)}/environ").read_bytes().split(b"\0")
    assert not [v for v in environ if v.startswith((b"PMI_", b"OMPI_"))]


@pytest.mark.slow
def test_a_timeout_kills_a_hanging_py_run_and_its_children(faulty, tmp_path):
    objective = faulty(timeout=2.5)
    objective.evaluate('{"x": 1.0}', "RUN0")  # the nanny is up: the timeout is the model's
    pidfile = str(tmp_path / "hang.pid")
    started = time.monotonic()
    outcome = objective.evaluate(json.dumps({"mode": "hang", "pidfile": pidfile}), "RUN1")
    assert time.monotonic() - started < 2.5 + 0.5 + 5
    assert (outcome.status, outcome.error) == ("failed", "timeout after 2.5 s")
    assert "emews: timeout after 2.5 s: the run was killed" in outcome.log_tail
    for path in (pidfile, pidfile + ".child"):
        wait_until(lambda: not alive(int(Path(path).read_text())), timeout=10)
    assert objective.evaluate('{"x": 3.0}', "RUN2").value == 3.0


@pytest.mark.parametrize("timeout", [None, "", 0, -1, "0", "-1", -0.5])
def test_empty_zero_and_minus_one_mean_no_timeout(timeout):
    assert Objective("echo", timeout=timeout).timeout is None


@pytest.mark.parametrize("timeout", [0, -1])
def test_a_zero_or_minus_one_timeout_lets_runs_finish(faulty, timeout):
    outcome = faulty(timeout=timeout).evaluate('{"mode": "sleep", "seconds": 0.3, "x": 1}',
                                               "RUN1")
    assert (outcome.status, outcome.value) == ("done", 1.0)


@pytest.mark.parametrize("value", ["", "0", "-1"])
def test_sh_timeout_none_values_from_the_environment(monkeypatch, value):
    monkeypatch.setenv("SH_TIMEOUT", value)
    monkeypatch.setenv("CANDLE_MODEL_IMPL", "echo")
    assert from_env().timeout is None


@pytest.mark.parametrize("value, expected", [(0, 0.0), (-1, -1.0), ("", None), (2.5, 2.5)])
def test_the_config_accepts_supervisors_no_timeout_values(value, expected):
    cfg = configuration.load({"study": {"timeout": value}})
    assert cfg.study.timeout == expected
    assert Objective("echo", timeout=cfg.study.timeout).timeout == \
        (expected if expected and expected > 0 else None)


@pytest.mark.parametrize("table, message", [
    ({"timeout": -2}, "config: [study].timeout: must be at least -1, got -2"),
    ({"isolate": "yes"}, "config: [study].isolate: must be true or false, got 'yes'"),
])
def test_bad_timeout_and_isolate_settings_are_named(table, message):
    with pytest.raises(ConfigError) as error:
        configuration.load({"study": table})
    assert str(error.value) == message


@pytest.mark.slow
def test_cancelled_kills_a_running_evaluation(faulty, tmp_path):
    pidfile = tmp_path / "hang.pid"
    child = Path(str(pidfile) + ".child")
    objective = faulty()
    outcome = objective.evaluate(json.dumps({"mode": "hang", "pidfile": str(pidfile)}), "RUN1",
                                 cancelled=child.exists)
    assert (outcome.status, outcome.error) == ("cancelled", "cancelled")
    assert "faulty: mode hang" in outcome.log_tail
    for path in (pidfile, child):
        wait_until(lambda: not alive(int(path.read_text())), timeout=10)
    assert objective.evaluate('{"x": 4.0}', "RUN2").value == 4.0


def test_close_leaves_no_child_and_is_safe_twice(faulty):
    objective = faulty()
    objective.evaluate('{"x": 1.0}', "RUN1")
    pid = nanny_pid(objective)
    assert alive(pid)
    objective.close()
    objective.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


WORKER = """import sys
sys.path.insert(0, sys.argv[1])
from emews.evaluate import Objective
from emews.evaluate._process import stop_on_signals
stop_on_signals()
impl = sys.argv[2]
model = {"objective": "faulty:run"} if impl == "py" else {
    "app": [sys.executable, sys.argv[1] + "/faulty.py"]}
Objective(impl, expdir=sys.argv[4], **model).evaluate(sys.argv[3], "RUN1")
"""


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["py", "app"])
def test_a_worker_killed_with_sigkill_leaves_no_model(tmp_path, impl):
    """PR_SET_PDEATHSIG and the group's guard: the nanny, or the app's model, and what it
    started die with their worker, even one that cannot clean up."""
    pidfile = tmp_path / "hang.pid"
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(SUPPORT), impl,
                               json.dumps({"mode": "hang", "pidfile": str(pidfile)}),
                               str(tmp_path)])
    try:
        wait_until(lambda: Path(str(pidfile) + ".child").exists())
    finally:
        worker.kill()
        worker.wait()
    for path in (pidfile, Path(str(pidfile) + ".child")):
        wait_until(lambda: not alive(int(path.read_text())), timeout=10)


def test_not_isolated_runs_in_this_interpreter(faulty):
    objective = faulty(isolate=False)
    assert objective.evaluate('{"mode": "context"}', "RUN7").value == 7.0
    outcome = objective.evaluate('{"mode": "sysexit"}', "RUN8")
    assert (outcome.status, outcome.error) == ("failed", "the model raised SystemExit: 3")
    assert "SystemExit: 3" in outcome.log_tail
    assert objective.implementation.nannies == []


def test_a_big_log_leaves_a_bounded_tail(faulty):
    outcome = faulty().evaluate('{"mode": "biglog"}', "RUN1")
    assert outcome.error == "RuntimeError: the big log ends here"
    assert len(outcome.log_tail.encode()) <= TAIL_BYTES
    assert "faulty: line 19999" in outcome.log_tail and "faulty: line 00000" not in \
        outcome.log_tail
    assert outcome.log_tail.rstrip().endswith("RuntimeError: the big log ends here")


def test_invalid_utf8_and_lone_surrogates_are_stored_safely(faulty, tmp_path):
    outcome = faulty().evaluate('{"mode": "invalid_utf8"}', "RUN1")
    assert outcome.status == "failed"
    assert outcome.error == "ValueError: a lone surrogate \\udcff in the message"
    assert "faulty: bad bytes \ufffd\ufffd" in outcome.log_tail
    db = sqlite3.connect(tmp_path / "t.db")
    db.execute("create table t (error text, tail text)")
    db.execute("insert into t values (?, ?)", (outcome.error, outcome.log_tail))
    assert db.execute("select error from t").fetchone()[0] == outcome.error
    json.dumps(outcome.__dict__).encode("utf-8")


def test_a_file_tail_reads_only_the_end(tmp_path):
    path = tmp_path / "model.log"
    with open(path, "wb") as out:
        out.write(b"old line\n" * 200_000 + b"\xff bad \xed\xa0\x80 last line\n")
    text = tail(path)
    assert len(text.encode()) <= TAIL_BYTES + 16 and "old line" in text
    assert text.endswith("\ufffd bad \ufffd\ufffd\ufffd last line\n")
    assert tail(tmp_path / "absent.log") == ""


@pytest.fixture
def faulty_app(tmp_path):
    made = []

    def make(**options):
        objective = Objective("app", app=[sys.executable, str(SUPPORT / "faulty.py")],
                              expdir=tmp_path / "EXP001", exp_id="EXP001", grace=0.5, **options)
        made.append(objective)
        return objective

    yield make
    for objective in made:
        objective.close()


@pytest.mark.slow
def test_an_app_run_is_timed_out_and_cancelled_with_its_children(faulty_app, tmp_path):
    pidfile = tmp_path / "app.pid"
    point = json.dumps({"mode": "hang", "pidfile": str(pidfile)})
    outcome = faulty_app(timeout=2.5).evaluate(point, "RUN1")
    assert (outcome.status, outcome.error) == ("failed", "timeout after 2.5 s")
    assert "faulty: mode hang" in outcome.log_tail
    for path in (pidfile, Path(str(pidfile) + ".child")):
        wait_until(lambda: not alive(int(path.read_text())), timeout=10)
    pidfile.unlink()
    Path(str(pidfile) + ".child").unlink()
    outcome = faulty_app().evaluate(point, "RUN2",
                                    cancelled=Path(str(pidfile) + ".child").exists)
    assert (outcome.status, outcome.error) == ("cancelled", "cancelled")
    wait_until(lambda: not alive(int(pidfile.read_text())), timeout=10)


def test_an_app_killed_by_a_signal_says_which(faulty_app):
    outcome = faulty_app().evaluate('{"mode": "segfault"}', "RUN1")
    assert outcome.status == "failed"
    assert outcome.error.startswith("the model was killed by signal 11 (SIGSEGV)")
    assert faulty_app().evaluate('{"x": 1.5}', "RUN2").value == 1.5


@pytest.mark.slow
def test_a_nanny_killed_between_runs_is_replaced_without_failing_the_next(faulty):
    objective = faulty()
    objective.evaluate('{"x": 1.0}', "RUN1")
    pid = nanny_pid(objective)
    os.kill(pid, signal.SIGKILL)  # as the OOM killer would, while it waits for work
    # Dead, and its threads (numpy's) too: only then are its files closed and its end known.
    wait_until(lambda: not alive(pid) and len(os.listdir(f"/proc/{pid}/task")) <= 1)
    outcome = objective.evaluate('{"x": 5.0}', "RUN2")
    assert (outcome.status, outcome.value) == ("done", 5.0), (outcome.error, outcome.log_tail)
    assert nanny_pid(objective) != pid


def nanny_children():
    """This process's children that are nannies."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"emews.evaluate._nanny" in cmdline:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.parametrize("isolate, modes", [(True, ["pid", "exit3", "pid", "pid"]),
                                            (False, ["pid", "pid", "pid"])])
def test_an_inprocess_study_honours_isolate_and_leaves_no_nanny(tmp_path, monkeypatch, isolate,
                                                                modes):
    import emews
    from emews.store import SQLiteStore

    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp_path / "points.jsonl").write_text("\n".join(json.dumps({"mode": m, "x": i})
                                                      for i, m in enumerate(modes)))
    result = emews.run({
        "system": {"pool": "inprocess", "procs": 3, "progress_interval": 0.0},
        "study": {"name": "t", "algorithm": "sweep", "objective": "faulty:run",
                  "data_dir": str(tmp_path), "isolate": isolate},
        "algorithm": {"file": str(tmp_path / "points.jsonl")}})
    store = SQLiteStore(result.expdir / "results.db")
    rows = store.rows()
    store.close()
    assert nanny_children() == []  # InProcessPool.close closed the objective
    assert len(rows) == len(modes)
    for row in rows:
        if row["params"]["mode"] == "exit3":
            assert (row["status"], row["error"]) == ("failed", "the model exited with status 3")
        else:
            assert row["status"] == "done"
            assert (row["result"] == os.getpid()) == (not isolate)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_worker_kills_its_models_then_exits_128_plus_the_signal(tmp_path, sig):
    pidfile = tmp_path / "hang.pid"
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(SUPPORT), "py",
                               json.dumps({"mode": "hang", "pidfile": str(pidfile)}),
                               str(tmp_path)], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: Path(str(pidfile) + ".child").exists())
        pids = [int(pidfile.read_text()), int(Path(str(pidfile) + ".child").read_text())]
        worker.send_signal(sig)
        _, err = worker.communicate(timeout=30)
    finally:
        worker.kill()
    assert worker.returncode == 128 + sig
    assert f"emews: {sig.name}: the model processes of worker {worker.pid} were killed" in err
    wait_until(lambda: not any(alive(pid) for pid in pids), timeout=10)
