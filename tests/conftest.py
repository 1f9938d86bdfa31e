"""Shared fixtures: running the ``emews`` command for real, and writing study files."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emews.store import SQLiteStore

SUPPORT = Path(__file__).parent / "support"
REPO = Path(__file__).parent.parent


@pytest.fixture
def emews_cli(tmp_path):
    """Run ``python -m emews ARGS`` in ``tmp_path``; return the CompletedProcess."""

    def run(*args, env=None, cwd=None, timeout=240):
        environment = dict(os.environ, PYTHONPATH=str(SUPPORT), **(env or {}))
        for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
            environment.pop(name, None)
        return subprocess.run([sys.executable, "-m", "emews", *map(str, args)],
                              cwd=cwd or tmp_path, env=environment, capture_output=True,
                              text=True, timeout=timeout)

    return run


@pytest.fixture
def study(tmp_path):
    """Write a study TOML (and a small search space) into ``tmp_path``; return its path."""

    def write(name="study.toml", space=None, **tables):
        space_file = tmp_path / "space.json"
        space_file.write_text(json.dumps(space or [
            {"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
            {"name": "n", "type": "int", "lower": 0, "upper": 3},
            {"name": "act", "type": "categorical", "values": ["relu", "tanh"]},
        ]))
        tables.setdefault("study", {}).setdefault("space", "space.json")
        tables["study"].setdefault("algorithm", "random")   # see toy_config
        path = tmp_path / name
        path.write_text("".join(f"[{table}]\n" + "".join(f"{key} = {toml(value)}\n"
                                                         for key, value in values.items())
                                for table, values in tables.items()))
        return path

    return write


def toml(value):
    """A Python value as a TOML literal (strings, numbers, booleans, lists)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return json.dumps(value)


def alive(pid):
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


TOY_SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
             {"name": "n", "type": "int", "lower": 0, "upper": 3},
             {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]


@pytest.fixture
def toy_config(tmp_path, monkeypatch):
    """``make(**study)``: the config dict of an in-process study of a ``toy_models`` objective
    (tests/support) on :data:`TOY_SPACE`, stored under ``tmp_path``; ``study`` overrides the
    [study] table's entries (quadratic, budget 12, seed 4, random search: these studies test
    the machinery, with a search whose points no result changes; the default search, ``auto``,
    is tested in tests/algos/test_auto.py)."""
    monkeypatch.syspath_prepend(str(SUPPORT))
    (tmp_path / "space.json").write_text(json.dumps(TOY_SPACE))

    def make(**study):
        base = {"name": "t", "algorithm": "random", "space": str(tmp_path / "space.json"),
                "budget": 12, "seed": 4, "impl": "py", "objective": "toy_models:quadratic", "data_dir": str(tmp_path)}
        return {"system": {"pool": "inprocess", "procs": 3, "progress_interval": 0.0},
                "study": {**base, **study}}

    return make


# Random search that keeps no points ready (tests/support/recording_algorithm.py): for tests
# that count the rows of points that started (a ready point that never started is cancelled on
# an interrupt, a drain or a stop, and runs again on resume).
NO_READY = "recording_algorithm:RandomNoReady"


def stored_rows(expdir):
    """The evaluations in the store (``results.db``) of ``expdir``, by id."""
    store = SQLiteStore(Path(expdir) / "results.db", create=False)
    try:
        return store.rows()
    finally:
        store.close()


def peak_slots(rows, slots=lambda row: row["metrics"]["slots"]):
    """The most slots held at once by the stored evaluations ``rows``, from their start and
    finish times and the ``slots`` each held (its metrics; ``slots=lambda row: 1`` counts
    evaluations); ends come before starts at the same instant."""
    events = sorted([(row["started"], 1, slots(row)) for row in rows] +
                    [(row["finished"], 0, -slots(row)) for row in rows])
    held = peak = 0
    for _, _, change in events:
        held += change
        peak = max(peak, held)
    return peak


def query_store(db_path, sql):
    """The rows of ``sql`` on the SQLite file ``db_path`` of a live study ([] before the file
    or its tables exist), read on a read-only connection of its own."""
    if not Path(db_path).exists():
        return []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute(sql).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        db.close()


def assert_exact_budget_and_lost_leases_rerun(rows, lost, budget):
    """A served study whose pool was killed: ``rows`` (``(id, status, attempt, ...)`` by id)
    are exactly ``budget`` done points, and every lease it lost (``(id, attempt, error)``
    attempts) expired and ran again to a finish."""
    assert [row[1] for row in rows] == ["done"] * budget  # exactly the budget
    assert lost  # the killed pool held tasks
    assert all(error.startswith("lease expired: ") for _, _, error in lost)
    for i, attempt, _ in lost:  # every task the killed pool held ran again and finished
        assert rows[i][1] == "done" and rows[i][2] > attempt


def wait_until(condition, what="the condition", timeout=120):
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


class Jobs:
    """Background processes of one test, each in its own session; killed at the end: a served
    study (``emews serve``) and the pool jobs (``mpiexec -n N emews pool``) attached to it."""

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

    def run_served(self, config, ranks=3, returncode=0):
        """Serve ``config`` with one pool job of ``ranks`` ranks attached, until both end (the
        service with ``returncode``, the pool with 0); return the experiment directory and
        what the service printed."""
        server, expdir = self.serve(config)
        pool = self.pool(expdir, ranks)
        out, err = server.communicate(timeout=300)
        assert server.returncode == returncode, err
        pool.communicate(timeout=60)
        assert pool.returncode == 0
        return expdir, out

    def close(self):
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


@pytest.fixture
def jobs(tmp_path):
    """The test's :class:`Jobs`, run in ``tmp_path``."""
    started = Jobs(tmp_path)
    yield started
    started.close()


@pytest.fixture
def no_leftovers(tmp_path):
    """After the test, kill whatever model process a pid file names and is still alive
    (after a SIGKILLed worker, what its model started itself: see docs/src/faults.md)."""
    yield
    for path in tmp_path.glob("*.pid*"):
        try:
            pid = int(path.read_text())
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        except (ValueError, OSError):
            pass


class Judge:
    """A pool's side of the reports: keeps each, and stops the run at ``stop_at``."""

    def __init__(self, stop_at=None):
        self.reports, self.stop_at = [], stop_at

    def __call__(self, report):
        self.reports.append(report)
        return report.step == self.stop_at


CANDLE_LIB = Path(__file__).resolve().parents[2] / "shared" / "vendor" / "candle_lib-0d215ec.tar.gz"


@pytest.fixture(scope="module")
def candle_lib(tmp_path_factory):
    """The real candle_lib (``import candle``), unpacked from ../shared/vendor/."""
    assert CANDLE_LIB.is_file(), f"the tests need {CANDLE_LIB} (shared/vendor/README.md)"
    where = tmp_path_factory.mktemp("candle_lib")
    shutil.unpack_archive(CANDLE_LIB, where)
    (source,) = where.glob("candle_lib-*")
    return source
