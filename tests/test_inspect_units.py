"""The parts of inspecting a study that need no study run: metrics extraction, the metrics
column (and the migration that adds it), ``--where`` parsing, a read-only load, log axes."""

import json
import math
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
import pytest

import emews
from emews._errors import ConfigError
from emews.evaluate import Objective, Outcome
from emews.evaluate._model_output import final_metrics
from emews.inspect import load
from emews.inspect._plot import spans_decades
from emews.inspect._query import parse, select
from emews.inspect._progress import duration
from emews.inspect._summary import render, summary
from emews.store import SQLiteStore, _schema as schema

SUPPORT = Path(__file__).parent / "support"


class History:
    """What Keras's ``model.fit`` returns: a ``history`` dict of per-epoch lists."""

    def __init__(self, history):
        self.history = history


def test_final_metrics_are_the_last_epoch_of_every_numeric_key():
    result = {"val_loss": [3.0, 1.5], "acc": [numpy.float32(0.5), numpy.float32(0.75)],
              "lr": 0.01, "name": "mlp", "flag": True, "empty": [], "weights": numpy.ones(3)}
    assert final_metrics(result) == {"val_loss": 1.5, "acc": 0.75, "lr": 0.01}
    assert final_metrics(History({"loss": [2.0, 1.0]})) == {"loss": 1.0}
    assert final_metrics(0.5) == {}


@pytest.mark.parametrize("isolate", [False, True])
def test_an_objective_returning_a_history_puts_its_metrics_in_the_outcome(isolate, monkeypatch):
    monkeypatch.syspath_prepend(str(SUPPORT))
    objective = Objective("py", "toy_models:history_dict", isolate=isolate)
    try:
        outcome = objective.evaluate('{"x": 3}', "RUN000000")
    finally:
        objective.close()
    assert outcome.value == 9.0 and type(outcome.value) is float
    assert outcome.metrics == {"val_loss": 9.0, "loss": 2.0}
    plain = Objective("py", "toy_models:quadratic", isolate=False).evaluate(
        '{"x": 1, "n": 1}', "RUN000001")
    assert plain.value == 2.0 and plain.metrics == {}


def test_the_store_keeps_metrics_on_points_and_attempts(tmp_path):
    store = SQLiteStore(tmp_path / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", 1, 1)])
    metrics = {"val_loss": 0.5, "acc": math.nan}
    store.finish([(0, 1, Outcome(0.5, metrics=metrics), 1, "done"),
                  (1, 1, Outcome(math.nan, "failed", "boom"), 1, "failed")])
    store.commit()
    rows = store.rows()
    assert [r["metrics"] for r in rows] == [{"val_loss": 0.5, "acc": None}, {}]
    assert [a["metrics"] for a in store.attempts()] == [{"val_loss": 0.5, "acc": None}, {}]
    assert store.best()["metrics"] == {"val_loss": 0.5, "acc": None}
    store.close()


def version_2_store(path):
    """A store as emews wrote it at schema version 2 (no metrics columns)."""
    db = sqlite3.connect(path)
    layout = (f"{schema.EVALUATIONS_6}; {schema.ATTEMPTS_6}; {schema.CHECKPOINTS};"
              "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
    db.executescript(layout.replace(",\n    metrics   TEXT", "") + "PRAGMA user_version = 2;")
    db.execute("INSERT INTO evaluations (id, params, result, status, rank, run_id, started, "
               "finished) VALUES (0, '{\"x\": 1}', 0.25, 'done', 1, 'RUN000000', 1.0, 2.0)")
    db.execute("INSERT INTO attempts (id, attempt, status, result) VALUES (0, 1, 'done', 0.25)")
    db.commit()
    db.close()


def test_a_version_2_store_is_read_as_is_and_migrated_when_opened_to_write(tmp_path):
    path = tmp_path / "results.db"
    version_2_store(path)
    study = load(tmp_path)  # read-only: no migration
    assert study.best["result"] == 0.25 and study.best["metrics"] == {}
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 2
    store = SQLiteStore(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION == 9
    assert store.rows()[0]["metrics"] == {} and store.attempts()[0]["metrics"] == {}
    store.add([(1, '{"x": 2}', "RUN000001", 1, 1)])
    store.finish([(1, 1, Outcome(0.1, metrics={"loss": 0.1}), 1, "done")])
    store.commit()
    assert store.best()["metrics"] == {"loss": 0.1}
    store.close()


def test_a_newer_store_is_refused_by_a_reader(tmp_path):
    path = tmp_path / "results.db"
    version_2_store(path)
    sqlite3.connect(path).execute(f"PRAGMA user_version = {schema.VERSION + 1}").connection.commit()
    with pytest.raises(ConfigError, match=r"results.db: was written by a newer emews"):
        load(tmp_path)


def test_where_parses_plain_comparisons_only():
    names = ["lr", "act", "val_loss", "result"]
    assert parse("lr < 0.01 and act == 'tanh h' AND val_loss>=1e-3", names) == [
        ("lr", "<", 0.01), ("act", "==", "tanh h"), ("val_loss", ">=", 0.001)]
    assert parse("act != relu", names) == [("act", "!=", "relu")]
    for bad in ("lr < 0.01 or lr > 1", "lr", "lr < ", "lr << 1", "(lr < 1)",
                "lr < 1 and", "lr < 1; select 1"):
        with pytest.raises(ConfigError, match="NAME OP VALUE"):
            parse(bad, names)
    with pytest.raises(ConfigError, match=r"parameter or metric.*got 'os'"):
        parse("os == 1", names)


def test_where_selects_by_parameters_and_metrics():
    rows = [{"params": {"lr": 0.001, "act": "relu"}, "metrics": {"acc": 0.9}, "result": 1.0},
            {"params": {"lr": 0.1, "act": "tanh"}, "metrics": {}, "result": 2.0},
            {"params": {"lr": 0.01, "act": "relu"}, "metrics": {"acc": 0.5}, "result": 3.0}]
    names = ["lr", "act", "acc", "result"]
    assert select(rows, "act == relu and acc > 0.6", names) == rows[:1]
    assert select(rows, "acc < 1", names) == [rows[0], rows[2]]  # a missing metric never matches
    assert select(rows, "act < 1", names) == []  # a word against a number never matches
    assert select(rows, "result >= 2", names) == rows[1:]
    assert select(rows, None, names) == rows


def test_a_log_axis_is_for_positive_values_over_more_than_two_decades():
    assert spans_decades([0.001, 0.5, 2.0])
    assert not spans_decades([0.01, 0.5, 0.99])
    assert not spans_decades([-1.0, 100.0, 1e6])
    assert not spans_decades([])


def test_the_report_draws_each_parameter_on_its_declared_scale(tmp_path):
    from emews.inspect._report import Coordinates

    space = [{"name": "dropout", "type": "float", "lower": 0.0, "upper": 1.0},
             {"name": "lr", "type": "float", "lower": 1e-5, "upper": 1e-1, "log": True},
             {"name": "width", "type": "int", "lower": 1, "upper": 4096}]
    (tmp_path / "space.json").write_text(json.dumps(space))
    (tmp_path / "config.json").write_text(json.dumps(
        {"study": {"space": str(tmp_path / "space.json")}}))
    store = SQLiteStore(tmp_path / "results.db")
    points = [{"dropout": 0.0005, "lr": 0.05, "width": 2},
              {"dropout": 0.99, "lr": 0.02, "width": 4000}]
    store.add([(i, json.dumps(p), f"RUN{i:06d}", 1, i) for i, p in enumerate(points)])
    store.finish([(i, 1, Outcome(0.5), 1, "done") for i in range(len(points))])
    store.close()
    coordinates = Coordinates(load(tmp_path))
    assert spans_decades([p["dropout"] for p in points])   # over decades, and declared linear
    assert not coordinates.is_log("dropout") and not coordinates.is_log("width")
    assert coordinates.is_log("lr")                        # declared log, within one decade


def one_done_one_running(expdir, budget, pid):
    """A study in ``expdir`` of ``budget`` evaluations, one done in the minute from time 10 to
    70 and one running, whose lock names process ``pid``."""
    store = SQLiteStore(expdir / "results.db")
    store.add([(0, '{"x": 1}', "RUN000000", 1, 0), (1, '{"x": 2}', "RUN000001", 2, 1)])
    store.finish([(0, 1, Outcome(0.5, started=10.0, finished=70.0), 1, "done")])
    store.commit()
    store.close()
    (expdir / "config.json").write_text(json.dumps({"study": {"budget": budget}}))
    (expdir / "lock").write_text(json.dumps({"host": socket.gethostname(), "pid": pid}))


def test_a_killed_study_is_stopped_with_a_way_to_resume(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    one_done_one_running(tmp_path, 5, gone.pid)
    info = summary(load(tmp_path))
    assert info["state"] == "stopped" and info["stop_reason"] is None
    assert info["counts"]["done"] == 1 and info["counts"]["running"] == 1
    assert info["rate_per_minute"] == 1.0 and info["remaining"] == 4
    assert info["eta_seconds"] is None  # nothing is running to get there
    assert f"resume with: emews run --resume {tmp_path}" in "\n".join(render(info))


def test_a_running_studys_eta_reads_as_the_progress_line_writes_it(tmp_path):
    one_done_one_running(tmp_path, 65, os.getpid())   # a live study
    info = summary(load(tmp_path), now=70.0)
    assert info["state"] == "running" and info["remaining"] == 64
    assert info["eta_seconds"] == pytest.approx(3840)   # 64 at 1 a minute
    assert "eta: 64 to go, about 1h04m00s" in "\n".join(render(info))
    assert duration(info["eta_seconds"]) == "1h04m00s" and duration(61.4) == "1m01s"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run a reader as another user (setpriv)")
def test_a_finished_study_in_a_directory_the_reader_cannot_write_is_read(tmp_path):
    shared = Path(tempfile.mkdtemp(prefix="emews-ro-"))  # /tmp/pytest-of-root is private
    try:
        expdir = shared / "EXP001"
        expdir.mkdir()
        store = SQLiteStore(expdir / "results.db")
        store.add([(0, '{"x": 1}', "RUN000000", 1, 0)])
        store.finish([(0, 1, Outcome(0.25, metrics={"loss": 1.0}), 1, "done")])
        store.close()
        assert not list(expdir.glob("results.db-*"))  # a clean close leaves no WAL
        for path in (shared, expdir, expdir / "results.db"):
            path.chmod(0o555 if path.is_dir() else 0o444)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               sys.executable, "-m", "emews", "show", str(expdir), "--json"],
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(Path(emews.__file__)
                                                                  .parent.parent)))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["loss"] == 1.0
        assert not list(expdir.glob("results.db-*"))
    finally:
        shared.chmod(0o755)
        (shared / "EXP001").chmod(0o755)
        shutil.rmtree(shared)
