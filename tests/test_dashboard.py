"""``emews dashboard`` and ``emews.load(...).to_optuna()``: Optuna's view of our store, read-only
and live, checked against the store's rows; the served dashboard loaded by a real headless
Chromium while the study runs."""

import concurrent.futures
import hashlib
import json
import math
import os
import re
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import optuna
import pytest

import emews
from emews.evaluate import Outcome
from emews.inspect._optuna_view import STATES, ReadOnlyError, StoreView, frozen_trial, thinned
from emews.inspect._source import read_curves
from emews.evaluate._outcome import Report
from emews.store import SQLiteStore, _schema as schema
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

SUPPORT = Path(__file__).parent / "support"
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "n", "type": "int", "lower": 0, "upper": 3},
         {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]
TOKEN = "test-token"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")


# --- a study written through the store's own API -----------------------------------------------

def write_study(expdir, with_space=True):
    """An experiment directory (as ``emews run`` lays it out: config.json, results.db) whose
    store holds a point in each state; its path."""
    expdir.mkdir(parents=True)
    config = {"study": {"model_return": "val_loss"}}
    if with_space:
        (expdir / "space.json").write_text(json.dumps(SPACE))
        config["study"]["space"] = str(expdir / "space.json")
    (expdir / "config.json").write_text(json.dumps(config))
    store = SQLiteStore(expdir / "results.db")
    points = [{"x": 0.5, "n": 1, "act": "relu"}, {"x": -1.0, "n": 2, "act": "tanh"},
              {"x": 0.25, "n": 0, "act": "tanh"}, {"x": 1.5, "n": 3, "act": "relu"},
              {"x": -0.5, "n": 1, "act": "relu"}, {"x": 1.0, "n": 0, "act": "tanh"}]
    store.add([(i, json.dumps(p), f"RUN{i:06d}", None, i) for i, p in enumerate(points)])
    store.mark_running([(0, 1), (1, 2), (2, 1), (3, 2), (4, 1)])
    store.finish([(0, 1, Outcome(0.25, started=100.0, finished=103.0,
                                 metrics={"loss": 0.5}), 1, "done"),
                  (1, 2, Outcome(math.nan, "failed", "RuntimeError: bad x", started=100.0,
                                 finished=101.0), 1, "failed"),
                  (2, 1, Outcome(0.0625, started=104.0, finished=106.0), 1, "done")])
    store.cancel([3], "the study was stopped")
    store.commit()
    store.close()
    return expdir   # 4 running (rank 1), 5 queued


def store_rows(expdir):
    store = SQLiteStore(expdir / "results.db", create=False, readonly=True)
    try:
        return store.rows()
    finally:
        store.close()


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_the_view_gives_each_row_as_optuna_would_show_it(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    rows = store_rows(expdir)
    view = StoreView([expdir])
    (study,) = view.get_all_studies()
    assert study.study_name == "EXP001" and study.directions == [
        optuna.study.StudyDirection.MINIMIZE]
    assert study.user_attrs["emews_expdir"] == str(expdir.resolve())
    trials = view.get_all_trials(0)
    assert [t.number for t in trials] == [r["id"] for r in rows]
    states = {t.user_attrs["status"]: t.state for t in trials}
    assert states == {"done": optuna.trial.TrialState.COMPLETE,
                      "failed": optuna.trial.TrialState.FAIL,
                      "cancelled": optuna.trial.TrialState.FAIL,
                      "running": optuna.trial.TrialState.RUNNING,
                      "queued": optuna.trial.TrialState.RUNNING}
    for trial, row in zip(trials, rows):
        assert trial.params == row["params"]
        assert trial.value == (row["result"] if row["status"] == "done" else None)
        assert trial.user_attrs["rank"] == row["rank"]
        assert trial.user_attrs["error"] == row["error"]
        assert trial.user_attrs["metrics"] == row["metrics"]
        start = row["started"] if row["started"] is not None else row["queued"]
        assert trial.datetime_start.timestamp() == pytest.approx(start)
        if trial.state.is_finished():
            assert trial.datetime_complete.timestamp() == pytest.approx(row["finished"])
        else:
            assert trial.datetime_complete is None
    assert trials[3].user_attrs["error"] == "the study was stopped"
    assert trials[0].distributions["n"] == optuna.distributions.IntDistribution(0, 3)
    best = view.get_best_trial(0)
    assert best.number == 2 and best.value == 0.0625
    assert view.get_trial(view.get_trial_id_from_study_id_trial_number(0, 1)).number == 1


def test_the_views_objective_is_named_as_the_study_names_it(tmp_path):
    expdir = write_study(tmp_path / "EXP001")   # its model returns val_loss
    view = StoreView([expdir])
    study = optuna.load_study(study_name="EXP001", storage=view)
    assert study.metric_names == ["val_loss"]   # the dashboard's axis: not "Objective 0"


def test_a_trial_has_a_run_dir_only_where_its_run_directory_exists(tmp_path):
    expdir = write_study(tmp_path / "EXP001")   # a py model's study: no run directories
    assert ["run_dir" in t.user_attrs for t in StoreView([expdir]).get_all_trials(0)] == [
        False] * 6
    (expdir / "run" / "RUN000002").mkdir(parents=True)   # an app model's run of evaluation 2
    trials = StoreView([expdir]).get_all_trials(0)
    assert trials[2].user_attrs["run_dir"] == str(expdir.resolve() / "run" / "RUN000002")
    assert [n for n, t in enumerate(trials) if "run_dir" in t.user_attrs] == [2]


def test_pruned_maps_to_pruned_and_learning_curves_are_the_one_hook_for_fidelity(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    row = dict(store_rows(expdir)[0], status="pruned")   # the status [fidelity] adds
    trial = frozen_trial(row, {}, curve={1: 0.5, 2: 0.25})
    assert trial.state == optuna.trial.TrialState.PRUNED and trial.value is None
    assert trial.intermediate_values == {1: 0.5, 2: 0.25}
    assert set(STATES) >= {"queued", "running", "done", "failed", "cancelled", "pruned"}
    paused = frozen_trial(dict(row, status="paused"), {}, curve={1: 0.5})   # freeze-thaw
    assert paused.state == optuna.trial.TrialState.PRUNED and paused.intermediate_values == {
        1: 0.5}
    assert read_curves(expdir) == {}   # no model reported
    store = SQLiteStore(expdir / "results.db", create=False)
    store.add_reports([(0, 1, Report(1, 0.5)), (4, 1, Report(1, math.nan)),
                       (0, 1, Report(2, 0.25))])
    store.close()
    curves = read_curves(expdir)      # the reports table, by evaluation and step
    assert curves[0] == {1: 0.5, 2: 0.25} and math.isnan(curves[4][1]) and len(curves) == 2


def test_a_curve_is_thinned_to_its_ends_its_best_and_evenly_spaced_steps():
    curve = {step: abs(step - 37) + 1.0 for step in range(1, 101)}   # lowest at step 37
    kept = thinned(curve, 20)
    assert len(kept) <= 20 and all(kept[step] == curve[step] for step in kept)
    assert {1, 37, 100} <= set(kept)                          # first, best and last
    gaps = [b - a for a, b in zip(sorted(set(kept) - {37}), sorted(set(kept) - {37})[1:])]
    assert max(gaps) - min(gaps) <= 1                         # evenly spaced
    other = thinned({step: -step for step in range(1, 101)}, 20)   # same steps, best last
    assert set(other) == set(kept) - {37}                     # comparable across trials
    assert thinned(curve, 200) == curve                       # short enough: whole
    gone = thinned({step: math.nan for step in range(50)}, 10)
    assert len(gone) <= 10 and 0 in gone and 49 in gone


def test_the_served_view_thins_curves_and_the_python_view_keeps_them_whole(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    store = SQLiteStore(expdir / "results.db", create=False)
    store.add_reports([(i, 1, Report(step, 1.0 / (step + i + 1))) for i in (0, 2)
                       for step in range(50)])
    store.close()
    whole = {t.number: t.intermediate_values for t in StoreView([expdir]).get_all_trials(0)}
    assert len(whole[0]) == len(whole[2]) == 50
    served = StoreView([expdir], curve_points=8)
    for trial in served.get_all_trials(0):
        assert trial.intermediate_values == thinned(whole[trial.number], 8)
    best = served.get_best_trial(0)
    assert best.number == 2 and best.intermediate_values == thinned(whole[2], 8)
    assert StoreView([expdir]).get_best_trial(0).intermediate_values == whole[2]


def test_a_kept_trial_shows_its_new_state_and_reports_on_the_next_read(tmp_path):
    """The view keeps trials and reports between reads: what changed in the store since
    shows on the next read of the same view, as a fresh view reads it."""
    expdir = write_study(tmp_path / "EXP001")
    store = SQLiteStore(expdir / "results.db", create=False)
    store.add_reports([(4, 1, Report(step, 1.0 / (step + 1))) for step in range(3)])
    store.commit()
    view = StoreView([expdir], curve_points=8)
    first = {t.number: t for t in view.get_all_trials(0, deepcopy=False)}
    assert first[4].state == optuna.trial.TrialState.RUNNING
    assert first[4].intermediate_values == {0: 1.0, 1: 0.5, 2: 1.0 / 3}
    assert view.get_all_trials(0, deepcopy=False)[0] is first[0]   # the same trial kept
    mine = view.get_all_trials(0)[0]   # a caller's copy (deepcopy): its changes stay its own
    mine.user_attrs["note"] = "mine"
    assert "note" not in view.get_all_trials(0)[0].user_attrs
    store.add_reports([(4, 1, Report(step, 1.0 / (step + 1))) for step in range(3, 30)])
    store.finish([(4, 1, Outcome(0.03, started=107.0, finished=109.0), 1, "done")])
    store.requeue([(1, 2, "RUN000001b")])   # a failed point run again: a new attempt
    store.add_reports([(1, 2, Report(0, 7.0))])
    store.commit()
    store.close()
    again = {t.number: t for t in view.get_all_trials(0, deepcopy=False)}
    assert again[4].state == optuna.trial.TrialState.COMPLETE and again[4].value == 0.03
    assert again[4].intermediate_values == thinned({s: 1.0 / (s + 1) for s in range(30)}, 8)
    assert again[1].state == optuna.trial.TrialState.RUNNING
    assert again[1].intermediate_values == {0: 7.0}   # the new attempt's curve alone
    assert again[0] is first[0]                        # unchanged, not made again
    fresh = StoreView([expdir], curve_points=8).get_all_trials(0)
    assert [(t.number, t.state, t.values, t.intermediate_values, t.user_attrs) for t in fresh] \
        == [(t.number, t.state, t.values, t.intermediate_values, t.user_attrs)
            for t in again.values()]


def test_a_study_whose_space_file_is_gone_gets_distributions_from_its_values(tmp_path):
    expdir = write_study(tmp_path / "EXP001", with_space=False)
    trials = StoreView([expdir]).get_all_trials(0)
    dists = trials[0].distributions
    assert dists["x"] == optuna.distributions.FloatDistribution(-1.0, 1.5)
    assert dists["n"] == optuna.distributions.IntDistribution(0, 3)
    assert set(dists["act"].choices) == {"relu", "tanh"}
    assert [t.params for t in trials] == [r["params"] for r in store_rows(expdir)]


def test_every_write_is_refused_and_nothing_is_written(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    before = digest(expdir / "results.db")
    view = StoreView([expdir])
    trial_id = view.get_trial_id_from_study_id_trial_number(0, 0)
    study = emews.load(expdir).to_optuna()
    writes = [
        lambda: view.create_new_study([optuna.study.StudyDirection.MINIMIZE], "other"),
        lambda: view.delete_study(0),
        lambda: view.set_study_user_attr(0, "note", "x"),
        lambda: view.set_study_system_attr(0, "dashboard:note", "x"),
        lambda: view.create_new_trial(0),
        lambda: view.set_trial_param(trial_id, "x", 0.1,
                                     optuna.distributions.FloatDistribution(-2, 2)),
        lambda: view.set_trial_state_values(trial_id, optuna.trial.TrialState.COMPLETE, [1.0]),
        lambda: view.set_trial_intermediate_value(trial_id, 1, 0.5),
        lambda: view.set_trial_user_attr(trial_id, "k", "v"),
        lambda: view.set_trial_system_attr(trial_id, "k", "v"),
        lambda: study.set_user_attr("k", "v"),
        lambda: study.ask(),
        lambda: study.enqueue_trial({"x": 0.0, "n": 0, "act": "relu"}),
        lambda: optuna.delete_study(study_name="EXP001", storage=view),
    ]
    for write in writes:
        with pytest.raises(ReadOnlyError, match="read-only"):
            write()
    assert digest(expdir / "results.db") == before
    assert not Path(f"{expdir / 'results.db'}-wal").exists() or Path(
        f"{expdir / 'results.db'}-wal").stat().st_size == 0


@pytest.mark.slow
def test_to_optuna_is_a_study_that_optuna_visualization_plots(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    study = emews.load(expdir).to_optuna()
    done = [r for r in store_rows(expdir) if r["status"] == "done"]
    assert study.best_value == min(r["result"] for r in done)
    assert len(study.trials) == len(store_rows(expdir))
    history = optuna.visualization.plot_optimization_history(study)
    objective = next(trace for trace in history.data if trace.name == "Objective Value")
    assert list(objective.y) == [r["result"] for r in done]
    assert list(objective.x) == [r["id"] for r in done]
    sliced = optuna.visualization.plot_slice(study, params=["x"])
    assert sorted(sliced.data[0].x) == sorted(r["params"]["x"] for r in done)


def test_a_workflows_data_dir_name_is_one_study_per_experiment_found_live(tmp_path):
    write_study(tmp_path / "study" / "EXP001")
    write_study(tmp_path / "study" / "EXP002")
    (tmp_path / "study" / "notes").mkdir()           # not an experiment: left out
    view = StoreView([tmp_path / "study"])
    assert [s.study_name for s in view.get_all_studies()] == ["study/EXP001", "study/EXP002"]
    write_study(tmp_path / "study" / "EXP003")
    assert [s.study_name for s in view.get_all_studies()][-1] == "study/EXP003"
    assert len(view.get_all_trials(2)) == len(store_rows(tmp_path / "study" / "EXP003"))
    assert view.get_study_id_from_name("study/EXP002") == 1


def test_a_postgresql_store_is_viewed_the_same(tmp_path, postgres_url):
    from emews.store import study_store

    sqlite_dir = write_study(tmp_path / "sqlite" / "EXP001")
    expdir = tmp_path / "pg" / "EXP001"
    expdir.mkdir(parents=True)
    config = json.loads((sqlite_dir / "config.json").read_text())
    config["system"] = {"storage": postgres_url}
    (expdir / "config.json").write_text(json.dumps(config))
    store = study_store(expdir, postgres_url)
    store.set_meta("model_return", "val_loss")   # a study the database holds (emews_meta)
    rows = store_rows(sqlite_dir)
    store.add([(r["id"], json.dumps(r["params"]), r["run_id"], None, r["seq"]) for r in rows])
    store.mark_running([(0, 1), (1, 2)])
    store.finish([(0, 1, Outcome(0.25, started=100.0, finished=103.0), 1, "done"),
                  (1, 2, Outcome(math.nan, "failed", "boom", started=100.0, finished=101.0),
                   1, "failed")])
    store.commit()
    try:
        trials = StoreView([expdir]).get_all_trials(0)
        assert [(t.number, t.state.name, t.value, t.params) for t in trials] == [
            (r["id"], {"done": "COMPLETE", "failed": "FAIL", "queued": "RUNNING"}[r["status"]],
             r["result"], r["params"]) for r in store.rows()]
        assert [t.state.name for t in trials][:2] == ["COMPLETE", "FAIL"]
    finally:
        store.close()


# --- the command ---------------------------------------------------------------------------------

def environment(**extra):
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_DASHBOARD_TOKEN=TOKEN, **extra)
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    return env


def dashboard_error(*args, prelude="pass"):
    """``emews dashboard ARGS`` that must fail (after the Python statements ``prelude``): its
    one ``emews: error:`` line."""
    code = f"import sys; {prelude}; from emews._cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "dashboard", *map(str, args)],
                          env=environment(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emews: error: "), done.stderr
    return lines[0]


@pytest.mark.slow
def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    line = dashboard_error(tmp_path / "empty")
    assert str(tmp_path / "empty") in line and "experiment directory" in line
    assert "no such directory" in dashboard_error(tmp_path / "missing")

    newer = write_study(tmp_path / "newer" / "EXP001")
    connection = sqlite3.connect(newer / "results.db")
    connection.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    connection.close()
    line = dashboard_error(newer)
    assert "newer emews" in line and str(schema.VERSION + 1) in line

    expdir = write_study(tmp_path / "EXP001")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = dashboard_error(expdir, "--port", port)
        assert "--port" in line and "in use" in line and str(port) in line

    # optuna-dashboard missing: its import fails as it would when it is not installed
    line = dashboard_error(expdir, prelude="sys.modules['optuna_dashboard'] = None")
    assert "pip install 'emews-hpo[dashboard]'" in line


class Dashboard:
    """``emews dashboard`` running: its URL, and GET / any-method requests with the token."""

    def __init__(self, *paths, program=("-m", "emews")):
        self.process = subprocess.Popen(
            [sys.executable, *map(str, program), "dashboard", *map(str, paths), "--port", "0"],
            env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not select.select([self.process.stdout], [], [], 120)[0]:
            self.process.kill()
            self.process.communicate()
            pytest.fail("emews dashboard printed no URL within 120 s")
        first = self.process.stdout.readline()   # printed once it listens
        match = re.search(r"(http://127\.0\.0\.1:\d+)/dashboard\?token=(\S+)", first)
        assert match, (first, self.process.stderr.read() if not first else "")
        self.base, self.url = match.group(1), match.group(0)
        assert match.group(2) == TOKEN

    def request(self, path, method="GET", body=None, token=TOKEN):
        """``(status, JSON body)`` of ``method path``."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        request = urllib.request.Request(self.base + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def stop(self):
        """Ctrl-C: its exit status and output."""
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


HELD_IMPORT = """
import importlib.abc
import sys

from emews._cli import main


class Held(importlib.abc.MetaPathFinder):
    \"\"\"optuna-dashboard's import, held until the test writes to the FIFO.\"\"\"

    def find_spec(self, name, path, target=None):
        if name == "optuna_dashboard._app":
            with open({fifo!r}) as fifo:
                fifo.read()


sys.meta_path.insert(0, Held())
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_the_url_comes_at_once_and_serves_once_optuna_dashboard_is_imported(tmp_path):
    expdir = write_study(tmp_path / "EXP001")
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    script = tmp_path / "held.py"
    script.write_text(HELD_IMPORT.format(fifo=str(fifo)))
    dashboard = Dashboard(expdir, program=[script])   # its URL, while the import is held
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(dashboard.request, "/api/studies")   # waits for the import
            with open(fifo, "w") as hold:
                hold.write("go")
            status, listed = first.result(timeout=120)
        assert status == 200 and [s["study_name"] for s in listed["study_summaries"]] == [
            "EXP001"]
    finally:
        code, out, err = dashboard.stop()
    assert code == 0 and "dashboard stopped" in out, (code, out, err)


def chromium_text(url, profile):
    """The text of the page at ``url`` once Chromium has run its scripts (``--dump-dom``)."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (bash scripts/apt-deps.sh)")
    done = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                           "--virtual-time-budget=20000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", done.stdout, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def wait_for(condition, what, process, seconds=180):
    """Poll ``condition()`` (a store read) until it holds; fail if ``process`` ends first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        assert process.poll() is None, process.communicate()
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen within {seconds} s")


def api_trials(dashboard, study_id=0):
    status, detail = dashboard.request(f"/api/studies/{study_id}")
    assert status == 200, detail
    return [(t["number"], t["state"], t["values"][0] if t.get("values") else None,
             {p["name"]: p["param_external_value"] for p in t["params"]})
            for t in detail["trials"]]


def expected_trials(rows):
    names = {"done": "Complete", "failed": "Fail", "cancelled": "Fail", "interrupted": "Fail",
             "queued": "Running", "running": "Running"}
    return [(r["id"], names[r["status"]], r["result"] if r["status"] == "done" else None,
             {k: str(v) for k, v in r["params"].items()}) for r in rows]


@pytest.mark.slow
def test_a_running_study_in_chromium_then_the_api_agrees_with_the_store(tmp_path, study):
    study(space=SPACE, system={"pool": "inprocess", "procs": 2},
          study={"budget": 10, "objective": "dashboard_models:gated", "seed": 3})
    gate = tmp_path / "gate"
    run = subprocess.Popen([sys.executable, "-m", "emews", "run", "study.toml"], cwd=tmp_path,
                           env=environment(DASHBOARD_GATE=str(gate)), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    dashboard = None
    try:
        def some_done():
            found = list((tmp_path / "experiments" / "study").glob("EXP*/results.db"))
            if not found:
                return None
            try:
                rows = store_rows(found[0].parent)
            except Exception:  # noqa: BLE001 - the store is still being made
                return None
            statuses = [r["status"] for r in rows]
            return found[0].parent if "done" in statuses and "running" in statuses else None

        expdir = wait_for(some_done, "a finished and a running evaluation", run)
        dashboard = Dashboard(tmp_path / "experiments" / "study")   # DATA_DIR/NAME
        before = store_rows(expdir)
        text = chromium_text(dashboard.base + "/dashboard/studies/0/trials?token=" + TOKEN,
                             tmp_path / "profile")
        after = store_rows(expdir)
        assert run.poll() is None, "the study ended before the page was read"
        shown = int(re.search(r"(\d+) Trials", text).group(1))
        assert len(before) <= shown <= len(after)
        assert "study/EXP001" in text
        for row in before:
            assert re.search(rf"Trial {row['id']}\b", text), row
        assert "Complete" in text and "Running" in text
        assert any(r["status"] == "running" for r in after)

        gate.touch()   # let the held evaluations finish: the study runs to its end
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        rows = store_rows(expdir)
        assert len(rows) == 10 and {r["status"] for r in rows} == {"done"}
        wait_for(lambda: api_trials(dashboard) == expected_trials(rows),
                 "the dashboard showing the finished study", dashboard.process, seconds=30)
        status, listed = dashboard.request("/api/studies")
        assert status == 200 and [(s["study_id"], s["study_name"], s["directions"])
                                  for s in listed["study_summaries"]] == [
            (0, "study/EXP001", ["minimize"])]
        status, detail = dashboard.request("/api/studies/0")
        best = min((r for r in rows if r["result"] is not None), key=lambda r: r["result"])
        assert [t["number"] for t in detail["best_trials"]] == [best["id"]]

        stored = digest(expdir / "results.db")
        writes = [("/api/studies", "POST", {"study_name": "new", "directions": ["minimize"]}),
                  ("/api/studies/0/rename", "POST", {"study_name": "renamed"}),
                  ("/api/studies/0", "DELETE", {}),
                  ("/api/studies/0/note", "PUT", {"version": 1, "body": "a note"}),
                  ("/api/trials/0/tell", "POST", {"state": "Fail"}),
                  ("/api/trials/0/user-attrs", "POST", {"user_attrs": {"k": "v"}}),
                  ("/api/studies/0/0/note", "PUT", {"version": 1, "body": "a note"})]
        for path, method, body in writes:
            status, answer = dashboard.request(path, method, body)
            assert status == 405 and "read-only" in answer["reason"], (path, status, answer)
        assert dashboard.request("/api/studies", token=None)[0] == 403
        assert dashboard.request("/api/studies", token="wrong")[0] == 403
        assert digest(expdir / "results.db") == stored
        assert api_trials(dashboard) == expected_trials(store_rows(expdir))
    finally:
        gate.touch()
        if run.poll() is None:
            run.communicate(timeout=300)
        if dashboard is not None and dashboard.process.poll() is None:
            code, out, err = dashboard.stop()
            assert code == 0 and "dashboard stopped" in out, (code, out, err)
