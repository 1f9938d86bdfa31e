"""Learning curves and pruning: ``emews.report`` through every path to the master, the store's
reports, the pruners' rules (ASHA replayed from the store), and bad reports."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import emews
from emews import _config as config
from emews.core import _pruners as pruners
from emews._errors import ConfigError
from emews.evaluate import Objective
from emews.inspect._show import as_json
from emews.inspect._summary import render, summary
from emews._status import Status
from emews.store import SQLiteStore, study_store
from support.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

from conftest import Judge, query_store, wait_until

ASHA = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}


def value_at(params, step):
    """The curve of tests/support/fidelity_models.py's models."""
    return params["x"] ** 2 + 1.0 / step


@pytest.fixture
def open_study():
    """``open_study(expdir)``: its store, read-only (closed at the end of the test)."""
    stores = []

    def make(expdir):
        stores.append(SQLiteStore(expdir / "results.db", readonly=True))
        return stores[-1]

    yield make
    for store in stores:
        store.close()


def asha_verdicts(reports, min_resource=1, max_resource=9, eta=3):
    """The ASHA rule, written out for the test: replaying ``reports`` in the order stored,
    ``{(id, attempt): step it must stop at}`` for every run the rule stops."""
    rungs, passed, stops = {}, {}, {}
    for row in reports:
        run = (row["id"], row["attempt"])
        if run in stops:
            continue
        value = math.inf if row["value"] is None else row["value"]
        k = passed.get(run, 0)
        while min_resource * eta ** k <= row["step"] and min_resource * eta ** k < max_resource:
            rungs.setdefault(k, []).append(value)
            passed[run] = k = k + 1
            best = sorted(rungs[k - 1])[max(len(rungs[k - 1]) // eta - 1, 0)]
            if math.isinf(value) or value > best:
                stops[run] = row["step"]
                break
    return stops


def check_asha_study(store, budget):
    """The stored study follows ASHA: rungs, stops, the best never pruned, curves kept."""
    rows, reports = store.rows(), store.reports()
    assert len(rows) == budget and {r["status"] for r in rows} <= {Status.DONE, Status.PRUNED}
    stops = asha_verdicts(reports)
    pruned = {(r["id"], r["attempt"]): r for r in rows if r["status"] == Status.PRUNED}
    assert set(pruned) == set(stops) and pruned      # exactly the runs the rule stops
    for run, row in pruned.items():
        curve = [r for r in reports if (r["id"], r["attempt"]) == run]
        assert curve[-1]["step"] == stops[run] in (1, 3)         # stopped at a rung step
        assert row["result"] == curve[-1]["value"] and row["error"] == f"pruned at step {stops[run]}"
        assert [r["step"] for r in curve] == list(range(1, stops[run] + 1))
    for row in rows:
        if row["status"] == Status.DONE:
            assert [r["step"] for r in reports if r["id"] == row["id"]] == list(range(1, 10))
            assert row["result"] == pytest.approx(value_at(row["params"], 9))
    best = min(rows, key=lambda r: r["params"]["x"] ** 2)
    assert best["status"] == Status.DONE and store.best()["id"] == best["id"]
    assert all(r["metrics"]["accuracy"] == pytest.approx(1 / (1 + r["step"])) for r in reports)


@pytest.mark.parametrize("isolate", [True, False], ids=["nanny", "in-process"])
def test_an_asha_study_in_process_stops_runs_at_rungs_by_the_rule(toy_config, isolate,
                                                                  open_study):
    config = toy_config(objective="fidelity_models:curve", budget=14, isolate=isolate,
                        pruner="asha")
    config["pruner"] = ASHA
    result = emews.run(config)
    store = open_study(result.expdir)
    check_asha_study(store, 14)
    info = summary(emews.load(result.expdir))          # emews status counts them
    pruned = len(store.rows(Status.PRUNED))
    assert info["counts"]["pruned"] == pruned and info["finished"] == 14
    assert f"pruned {pruned}" in "\n".join(render(info))
    for row in store.rows(Status.PRUNED):   # the model trained no step past its stop
        trained = (result.expdir / "run" / row["run_id"] / "trained.txt").read_text()
        assert trained.split() == [str(s) for s in range(1, int(row["error"][-1]) + 1)]


@pytest.mark.slow
@pytest.mark.mpi
def test_an_asha_study_on_a_real_mpiexec_pool_follows_the_rule(emews_cli, study, tmp_path,
                                                               open_study):
    path = study(system={"procs": 4, "progress_interval": 0.0},
                 study={"budget": 14, "objective": "fidelity_models:curve", "seed": 3,
                        "pruner": "asha"},
                 pruner=ASHA)
    done = emews_cli("run", path)
    assert done.returncode == 0, done.stderr
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    store = open_study(expdir)
    check_asha_study(store, 14)
    assert {row["rank"] for row in store.rows()} <= {1, 2, 3}


SUPPORT = Path(__file__).parent / "support"
MODELS = SUPPORT / "candle_models"


@pytest.fixture
def keras_objective(tmp_path, monkeypatch):
    """``make(impl)``: an Objective running the Keras model ``curve`` through the CANDLE
    runner (``py`` in a nanny, or ``app`` through the Model Shell)."""
    monkeypatch.setenv("CANDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CANDLE_OUTPUT_DIR", raising=False)

    def make(impl):
        env = {"MODEL_PYTHON_DIR": str(MODELS), "CANDLE_DATA_DIR": str(tmp_path / "data"),
               "APP_PYTHONPATH": str(MODELS)}
        return Objective(impl, model_name="curve", expdir=tmp_path / "EXP001",
                         exp_id="EXP001", model_env=env, grace=2.0)

    return make


def epochs_begun(tmp_path, run_id):
    path = tmp_path / "data" / "curve" / "Output" / "EXP001" / run_id / "epochs.txt"
    return [int(line) for line in path.read_text().split()]


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["py", "app"])
def test_a_keras_model_reports_every_epoch_and_is_stopped(keras_objective, tmp_path, impl):
    objective = keras_objective(impl)
    try:
        judge = Judge()
        outcome = objective.evaluate(json.dumps({"epochs": 4}), "RUN000001", report=judge)
        assert outcome.status == Status.DONE, outcome.error
        assert [r.step for r in judge.reports] == [1, 2, 3, 4]
        assert all(set(r.metrics) == {"loss", "val_loss"} and r.value == r.metrics["val_loss"]
                   for r in judge.reports)
        assert outcome.value == pytest.approx(judge.reports[-1].value)
        judge = Judge(stop_at=2)
        outcome = objective.evaluate(json.dumps({"epochs": 40}), "RUN000002", report=judge)
    finally:
        objective.close()
    assert outcome.status == Status.PRUNED and outcome.error == "pruned at step 2"
    assert outcome.value == pytest.approx(judge.reports[1].value)
    begun = epochs_begun(tmp_path, "RUN000002")
    if impl == "py":      # stopped at the end of epoch 2, through Keras's stop_training
        assert [r.step for r in judge.reports] == [1, 2] and begun == [1, 2]
    else:                 # an app trains on until its signal: stopped long before epoch 40
        assert [r.step for r in judge.reports][:2] == [1, 2] and len(begun) < 40


def test_an_app_that_ignores_the_stop_is_killed_after_the_grace_and_stored_pruned(tmp_path):
    objective = Objective("app", app=[sys.executable, str(SUPPORT / "stubborn_app.py")],
                          expdir=tmp_path, grace=0.5)
    judge = Judge(stop_at=3)
    started = time.monotonic()
    outcome = objective.evaluate("{}", "RUN000001", report=judge)
    assert outcome.status == Status.PRUNED and outcome.error == "pruned at step 3"
    assert outcome.value == pytest.approx(1 / 3)
    assert [r.step for r in judge.reports] == [1, 2, 3]   # the bad lines were skipped
    log = (tmp_path / "run" / "RUN000001" / "model.log").read_text()
    assert "emews: a report line was skipped" in log and "step must be above" in log
    assert "emews: the pruner stopped the run: it was killed" in log
    assert time.monotonic() - started < 60


def test_nan_reports_are_stored_and_the_pruner_stops_them_first(toy_config, open_study):
    config = toy_config(objective="fidelity_models:nan_curve", budget=10, pruner="asha",
                        isolate=False)
    config["pruner"] = ASHA
    store = open_study(emews.run(config).expdir)
    for row in store.rows():
        curve = store.reports(row["id"])
        if row["params"]["x"] < 0:
            assert row["status"] == Status.PRUNED and row["result"] is None
            assert [(r["step"], r["value"]) for r in curve] == [(1, None)]
        else:
            assert all(r["value"] is not None for r in curve)


def test_steps_that_go_backwards_fail_the_run_with_one_line(toy_config, open_study):
    store = open_study(emews.run(toy_config(objective="fidelity_models:backwards",
                                            budget=2)).expdir)
    for row in store.rows():
        assert row["status"] == Status.FAILED
        assert row["error"] == ("ValueError: emews.report(): step must be above the run's "
                                "last reported step (2), got 1")
        assert [r["step"] for r in store.reports(row["id"])] == [2]


def test_a_report_outside_a_run_is_refused():
    with pytest.raises(RuntimeError, match=r"emews.report\(\) must be called while emews runs"):
        emews.report(0.5, 1)


def test_a_model_that_catches_pruned_is_stored_pruned_where_it_was_stopped(toy_config,
                                                                           open_study):
    config = toy_config(objective="fidelity_models:stubborn", budget=10, pruner="asha")
    config["pruner"] = ASHA
    result = emews.run(config)
    store = open_study(result.expdir)
    pruned = store.rows(Status.PRUNED)
    assert pruned
    for row in pruned:
        step = store.reports(row["id"])[-1]["step"]       # nothing sent after the stop
        assert row["error"] == f"pruned at step {step}" and step in (1, 3)
        assert row["result"] == pytest.approx(value_at(row["params"], step))
        stops = (result.expdir / "run" / row["run_id"] / "stops.txt").read_text()
        assert int(stops) == 9 - step + 1                 # every later report raised again


def test_the_step_budget_ends_the_study(toy_config, open_study):
    result = emews.run(toy_config(objective="fidelity_models:curve", budget=50,
                                  step_budget=20))
    assert result.stop_reason == "step budget of 20 reached"
    store = open_study(result.expdir)
    last = {}
    for report in store.reports():
        last[report["id"]] = report["step"]
    assert 20 <= sum(last.values()) < 20 + 9 * 3        # at most the runs under way go on
    assert len(store.rows(Status.DONE)) == len(last) < 50


@pytest.mark.parametrize("pruner, options, where, message", [
    ("asha", {"min_resource": 10, "max_resource": 3}, "[pruner].min_resource",
     "must not be above max_resource (3)"),
    ("hyperband", {"min_resource": 1}, "[pruner].max_resource", "must be given"),
    ("median", {"reduction_factor": 3}, "[pruner].reduction_factor",
     "does not apply to pruner 'median'"),
    ("percentile", {}, "[pruner].percentile", "must be a number from 0 to 100"),
    ("asha", {"reduction_factor": 1}, "[pruner].reduction_factor", "at least 2"),
    ("sometimes", {}, "[study].pruner", "must be one of"),
    ("auto", {"min_resource": 1}, "[pruner].min_resource",
     "does not apply: pruner 'auto' prunes nothing here ([pruner].max_resource is not set"),
])
def test_pruner_options_that_contradict_each_other_are_refused_in_one_line(
        pruner, options, where, message):
    with pytest.raises(ConfigError) as info:
        config.load({"study": {"pruner": pruner}, "pruner": options})
    text = str(info.value)
    assert where in text and message in text and "\n" not in text


def test_pruner_auto_is_the_default_and_chooses_hyperband_where_a_runs_last_step_is_known():
    unset = config.load({})
    assert unset.study.pruner == "auto" and unset.pruner_choice[0] == "none"
    assert type(unset.make_pruner()) is pruners.Pruner         # prunes nothing, as before
    known = config.load({"pruner": {"max_resource": 27, "pause": True}})
    hyperband = known.make_pruner()
    assert isinstance(hyperband, pruners.Hyperband) and hyperband.max_resource == 27
    assert hyperband.pause and known.algorithm_options["pruner"] == "hyperband"
    named = config.load({"study": {"pruner": "none"}})
    assert named.pruner_choice == ("none", None)
    several = config.load({"study": {"objectives": ["loss", "time"]}})
    assert several.pruner_choice[0] == "none" and "several objectives" in several.pruner_choice[1]
    with pytest.raises(ConfigError) as info:
        config.load({"study": {"objectives": ["loss", "time"]}, "pruner": {"max_resource": 9}})
    assert "[pruner].max_resource" in str(info.value) and "several objectives" in str(info.value)


def test_a_study_that_names_no_pruner_prunes_by_hyperband_once_max_resource_is_set(
        toy_config, open_study, capsys):
    study = toy_config(objective="fidelity_models:curve", budget=30)
    del study["study"]["algorithm"]                    # auto, as a user who names none gets
    result = emews.run(dict(study, pruner={"max_resource": 9}))
    assert "emews: pruner auto chose hyperband: runs end at step 9" in capsys.readouterr().out
    store = open_study(result.expdir)
    rule, stops = pruners.make("hyperband", {"max_resource": 9}), {}
    for row in store.reports():                        # the rule, replayed in the stored order
        run = (row["id"], row["attempt"])
        if run not in stops and rule.report(run, row["step"], row["value"]):
            stops[run] = row["step"]
    pruned = {(r["id"], r["attempt"]): r for r in store.rows(Status.PRUNED)}
    assert set(pruned) == set(stops) and pruned
    assert all(row["error"] == f"pruned at step {stops[run]}" for run, row in pruned.items())
    loaded = emews.load(result.expdir)
    assert loaded.meta["pruner"]["pruner"] == "hyperband"
    assert loaded.meta["search"]["stages"][0]["label"] == "optuna (tpe)"   # auto: a pruner
    assert any(line.startswith("pruner: auto: hyperband (runs end at step 9")
               for line in render(summary(loaded)))


def test_the_median_pruner_follows_optunas_rule():
    median = pruners.make("median", {"n_startup_trials": 2, "n_warmup_steps": 2})
    for run, values in ((0, [5.0, 4.0, 3.0]), (1, [3.0, 2.0, 1.0])):
        assert not any(median.report((run, 1), s, v) for s, v in enumerate(values, 1))
        median.completed((run, 1))
    assert not median.report((2, 1), 1, 9.0)          # a warm-up step is never judged
    assert median.report((2, 1), 2, 3.5)              # best 3.5 > median of (4, 2) = 3
    assert not median.report((3, 1), 1, 9.0) and not median.report((3, 1), 2, 2.5)
    assert median.report((4, 1), 2, math.nan)         # only NaN so far: the worst
    early = pruners.make("median", {"n_startup_trials": 3})
    assert not early.report((5, 1), 2, 99.0)          # fewer completed runs than the startup


def test_hyperband_brackets_are_asha_from_later_rungs():
    hyperband = pruners.make("hyperband", {"min_resource": 1, "max_resource": 9,
                                           "reduction_factor": 3})
    assert [b.min_resource for b in hyperband.brackets] == [1, 3, 9]
    first, second, last = ([p for p in range(60) if hyperband.bracket_of(p) == b][:4]
                           for b in range(3))
    # bracket 1 judges its first run at step 3 only
    assert not hyperband.report((second[0], 1), 1, 5.0)
    assert not hyperband.report((second[0], 1), 3, 5.0)
    assert hyperband.report((second[1], 1), 3, 6.0)   # fewer than 3 at the rung: the best only
    assert not hyperband.report((second[2], 1), 3, 4.0)
    assert not hyperband.report((first[0], 1), 1, 6.0)   # bracket 0 has rungs of its own
    assert hyperband.report((second[3], 1), 3, 7.0)      # not the best of 4 (4 // 3 = 1 go on)
    # the last bracket starts at max_resource: Hyperband's bracket without early stopping
    assert not any(hyperband.report((last[0], 1), s, 100.0 + s) for s in range(1, 10))


@pytest.mark.parametrize("max_resource, shares", [(27, [27, 12, 6, 4]), (9, [9, 5, 3]),
                                                  (10, [9, 5, 3]), (3, [3, 2])])
def test_hyperband_gives_each_bracket_hyperbands_share_of_the_points(max_resource, shares):
    """As Li et al.'s Hyperband and Optuna's HyperbandPruner: floor(log_3(max / min)) + 1
    brackets, bracket b taking ceil(brackets * 3**s / (s + 1)) of every sum(shares) points
    (s = brackets - 1 - b), so each trains about as many steps; spread evenly, not in runs."""
    hyperband = pruners.make("hyperband", {"min_resource": 1, "max_resource": max_resource,
                                           "reduction_factor": 3})
    assert len(hyperband.brackets) == len(shares)
    for start in (0, 1, 17):
        window = [hyperband.bracket_of(p) for p in range(start, start + sum(shares))]
        assert [window.count(b) for b in range(len(shares))] == shares
    first_half = [hyperband.bracket_of(p) for p in range(sum(shares) // 2)]
    assert all(abs(first_half.count(b) - share / 2) <= 1 for b, share in enumerate(shares))


def decisions(expdir):
    """``(params, status, result, error)`` of each point in the order proposed."""
    store = SQLiteStore(Path(expdir) / "results.db", readonly=True)
    try:
        rows = sorted(store.rows(), key=lambda row: row["seq"])
        return [(row["params"], row["status"], row["result"], row["error"]) for row in rows]
    finally:
        store.close()


def gated_runs(tmp_path, stall):
    """``(run, gate)``: ``run(*args)`` starts ``emews run ARGS`` in ``tmp_path``, in a
    session of its own, whose gated models (tests/support/fidelity_models.py) wait in ``gate``
    after ``stall`` reports."""
    gate = tmp_path / "gate"
    gate.mkdir()
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), EMEWS_TEST_GATE=str(gate),
               EMEWS_TEST_STALL_AFTER=str(stall))

    def run(*args):
        return subprocess.Popen([sys.executable, "-m", "emews", "run", *map(str, args)],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    return run, gate


@pytest.mark.slow
def test_a_killed_asha_study_resumes_with_its_rungs_as_they_were(study, tmp_path):
    # the sweep's order: a first batch of 12 reports (the best runs on, the others stop at
    # step 1); the study is killed at the first report of the second batch, whose first point
    # is worse than the best at step 1 but the best of an empty rung: only rungs kept across
    # the resume stop it there
    xs = [0.0, 0.5, 1.0, 1.5, 0.7, 1.9, 0.2, 1.2]
    (tmp_path / "points.jsonl").write_text("".join(
        json.dumps({"x": x, "n": 0, "act": "relu"}) + "\n" for x in xs))
    path = study(system={"procs": 2, "pool": "inprocess", "progress_interval": 60},
                 study={"algorithm": "sweep", "mode": "batch", "batch_size": 4,
                        "objective": "fidelity_models:gated_curve", "pruner": "asha"},
                 algorithm={"file": "points.jsonl"}, pruner=ASHA)
    run, gate = gated_runs(tmp_path, stall=12)
    killed = run(path, "--name", "killed")
    wait_until(lambda: len(list(gate.glob("report-*"))) > 12, "the second batch's first report")
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    (expdir,) = (tmp_path / "experiments" / "killed").iterdir()
    assert [status for _, status, _, _ in decisions(expdir)][:4] == [
        Status.DONE, Status.PRUNED, Status.PRUNED, Status.PRUNED]

    (gate / "go").touch()
    resumed = run("--resume", expdir)
    assert resumed.communicate(timeout=300)[0] is not None and resumed.returncode == 0
    straight = run(path, "--name", "straight")
    assert straight.communicate(timeout=300)[0] is not None and straight.returncode == 0
    (reference,) = (tmp_path / "experiments" / "straight").iterdir()
    after = decisions(expdir)
    assert after == decisions(reference)
    assert [p["x"] for p, _, _, _ in after] == xs
    assert after[4][1:] == (Status.PRUNED, pytest.approx(0.7 ** 2 + 1), "pruned at step 1")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["zmq", "postgres"])
def test_an_asha_study_served_to_a_pool_follows_the_rule(study, jobs, open_study, transport,
                                                         request):
    system = {"procs": 4, "progress_interval": 60}
    if transport == "postgres":
        pytest.importorskip("psycopg", reason="pip install 'emews-hpo[postgres]'")
        system["storage"] = request.getfixturevalue("postgres_url")
    path = study(system=system,
                 study={"budget": 14, "seed": 3, "objective": "fidelity_models:curve",
                        "pruner": "asha"},
                 service={"lease": 30.0}, pruner=ASHA)
    server, expdir = jobs.serve(path)
    pool = jobs.pool(expdir, 4)
    out, err = server.communicate(timeout=300)
    assert server.returncode == 0, err
    store = study_store(expdir, system.get("storage"), create=False)
    try:
        check_asha_study(store, 14)
    finally:
        store.close()
    pool.communicate(timeout=60)
    assert pool.returncode == 0


@pytest.mark.slow
def test_export_to_optuna_carries_pruned_trials_with_their_learning_curves(toy_config,
                                                                          tmp_path):
    optuna = pytest.importorskip("optuna")
    from emews.inspect._export import export

    config = toy_config(objective="fidelity_models:curve", budget=10, pruner="asha",
                        isolate=False)
    config["pruner"] = ASHA
    study = emews.load(emews.run(config).expdir)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    export(study, "optuna", url)
    trials = {t.user_attrs["emews_id"]: t for t in
              optuna.load_study(study_name=study.expdir.name, storage=url).trials}
    assert len(trials) == 10
    for row in study.rows:
        trial = trials[row["id"]]
        steps = range(1, 10) if row["status"] == Status.DONE else \
            range(1, int(row["error"].rsplit(" ", 1)[1]) + 1)
        assert trial.intermediate_values == pytest.approx(
            {s: value_at(row["params"], s) for s in steps})
        assert trial.state == (optuna.trial.TrialState.PRUNED if row["status"] == Status.PRUNED
                               else optuna.trial.TrialState.COMPLETE)
    assert any(t.state == optuna.trial.TrialState.PRUNED for t in trials.values())


def test_the_optuna_plugin_ends_a_pruned_trial_as_pruned_with_its_curve():
    optuna = pytest.importorskip("optuna")
    from emews.core._algorithm import PrunedResult, load
    from emews._space import Space

    space = Space.from_ga_json([{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}])
    search = load("optuna")(space, seed=1)
    first, second = search.ask(2)
    search.tell([first, second], [PrunedResult({1: 3.0, 3: 2.5}), 0.25])
    pruned, complete = search.study.trials
    assert pruned.state == optuna.trial.TrialState.PRUNED
    assert pruned.intermediate_values == {1: 3.0, 3: 2.5} and pruned.value == 2.5
    assert complete.state == optuna.trial.TrialState.COMPLETE and complete.value == 0.25
    assert search.study.best_trial.number == complete.number


def test_the_report_draws_the_learning_curves(toy_config, tmp_path):
    config = toy_config(objective="fidelity_models:curve", budget=8, pruner="asha",
                        isolate=False)
    config["pruner"] = ASHA
    study = emews.load(emews.run(config).expdir)
    page = study.report(tmp_path / "r.html").read_text()
    pruned = len([row for row in study.rows if row["status"] == Status.PRUNED])
    assert "<h2>Learning curves</h2>" in page
    assert "What 8 evaluations reported at each step" in page and f"the {pruned} that" in page
    assert (tmp_path / "r_curves.png").stat().st_size > 0
    shown = json.loads(as_json(study, study.done))      # emews show --json
    assert [step for step, _ in shown[0]["curve"]] == list(range(1, 10))
    assert shown[0]["curve"][-1][1] == pytest.approx(shown[0]["result"])


@pytest.mark.slow
def test_a_run_killed_at_step_k_resumes_from_its_checkpoint_at_step_k(study, tmp_path):
    path = study(system={"procs": 2, "pool": "inprocess", "progress_interval": 60},
                 study={"budget": 2, "seed": 1, "objective": "fidelity_models:checkpointed"})
    run, gate = gated_runs(tmp_path, stall=4)
    killed = run(path)
    wait_until(lambda: len(list(gate.glob("report-*"))) > 4, "the fifth step's start")
    (expdir,) = (tmp_path / "experiments" / "study").iterdir()
    # killed at step 4: once the master committed that report (a report it answered but had
    # not committed yet dies with it, under load too; the checkpoint would then be ahead)
    wait_until(lambda: query_store(expdir / "results.db", "SELECT MAX(step) FROM reports")
               == [(4,)], "the fourth step's report in the store")
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    (gate / "go").touch()
    resumed = run("--resume", expdir)
    assert resumed.communicate(timeout=300)[0] is not None and resumed.returncode == 0
    store = SQLiteStore(expdir / "results.db", readonly=True)
    try:
        first = store.rows()[0]
        steps = [(r["attempt"], r["step"]) for r in store.reports(first["id"])]
    finally:
        store.close()
    assert first["status"] == Status.DONE and first["attempt"] == 2
    assert steps == [(1, s) for s in range(1, 5)] + [(2, s) for s in range(5, 10)]
    assert (expdir / "checkpoints" / first["run_id"].split("-")[0] / "last_step.txt").exists()


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["py", "app"])
def test_a_candle_lib_model_killed_after_epoch_k_resumes_from_its_checkpoint(toy_config,
                                                                             candle_lib,
                                                                             tmp_path,
                                                                             open_study,
                                                                             monkeypatch,
                                                                             impl):
    """The real candle_lib's CandleCkptKeras (ckpt_restart_mode "auto") through the CANDLE
    runner, in the worker (``py``) or run by the Model Shell (``app``, the directory named by
    ``EMEWS_CHECKPOINT_DIR``): killed (SIGKILL) as epoch 4 begins, its retry goes on at epoch
    4 from the checkpoint of epoch 3, in the point's emews.checkpoint_dir()."""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")      # tf.keras is tf_keras, as candle_lib needs
    models = tmp_path / "models"      # the model beside the real candle_lib's package
    models.mkdir()
    for name in ("ckpt_baseline_keras2.py", "ckpt_default_model.txt"):
        (models / name).symlink_to(MODELS / name)
    (models / "candle").symlink_to(candle_lib / "candle")
    config = toy_config(budget=1, model_name="ckpt", impl=impl)
    del config["study"]["objective"]                  # the CANDLE runner
    config["model"] = {"python_dir": str(models)}
    config["failure"] = {"retries": 1}
    result = emews.run(config)
    store = open_study(result.expdir)
    (row,) = store.rows()
    steps = [(r["attempt"], r["step"]) for r in store.reports(row["id"])]
    assert row["status"] == Status.DONE and row["attempt"] == 2, row["error"]
    assert steps == [(1, 1), (1, 2), (1, 3), (2, 4), (2, 5), (2, 6)]
    assert (tmp_path / "ckpt" / "Data" / "epochs.txt").read_text().split() == \
        ["1", "2", "3", "4", "4", "5", "6"]          # epochs 1-3 were not trained again
    checkpoints = result.expdir / "checkpoints" / row["run_id"].split("-")[0]
    assert (checkpoints / "last" / "ckpt-info.json").is_file()
    assert json.loads((checkpoints / "last" / "ckpt-info.json").read_text())["epoch"] == 6
    assert sorted(p.name for p in (checkpoints / "epochs").iterdir()) == \
        ["001", "002", "003", "004", "005", "006"]
