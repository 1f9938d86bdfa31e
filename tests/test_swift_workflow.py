"""Whole runs of swift/workflow.sh under a real Swift/T (STC + Turbine, built by the swift_t
fixture), each checked against the experiment it leaves: results.db's rows, final.json, out/,
the run directories and `emews show`. Bad input is refused before Swift/T starts."""

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from swift_models import AWKWARD, SPACE  # noqa: E402
from swift_t import launcher_env, swift_t  # noqa: E402,F401 - swift_t: the session fixture

from conftest import wait_until  # noqa: E402

from emews.store import SQLiteStore  # noqa: E402

REPO = Path(__file__).parent.parent
SWIFT = REPO / "swift"
# The experiment directory, TURBINE_OUTPUT and the settings path all hold it.
AWKWARD_DIR = "data dir \"q\" 'single' $HOME"
# Small enough that a budget of 8 sees the GA breed and the model-based search fit.
ALGORITHM_OPTIONS = {"ga": {"population_size": 4},
                     "mbo": {"design_size": 4, "n_trees": 20, "focus_points": 200,
                             "focus_restarts": 1},
                     "gp": {"n_initial_points": 4, "acq_optimizer": "sampling"}}
# A seed per algorithm under which its 8 points include the emoji label (what the test checks
# arrives intact); gp's seed 5 proposes only two of the labels.
SEEDS = {"ga": 5, "mbo": 5, "gp": 6}


def environment(path_entries=(), **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "TURBINE_"))}
    env.update(PATH=":".join([*path_entries, str(Path(sys.executable).parent), env["PATH"]]),
               PYTHONPATH=str(SUPPORT), PYTHON=sys.executable, **launcher_env(), **extra)
    return env


def workflow_sh(tmp_path, settings, *, config=None, path_entries=(), **env):
    """Run swift/workflow.sh on the local site; ``settings``: a dict, JSON text or a path."""
    settings_file = settings if isinstance(settings, Path) else tmp_path / "settings.json"
    if not isinstance(settings, Path):
        settings_file.write_text(json.dumps(settings) if isinstance(settings, dict) else settings)
    args = ["bash", str(SWIFT / "workflow.sh"), "local", str(settings_file)]
    if config:
        args.append(str(config))
    return subprocess.run(args, env=environment(path_entries, **env), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def only_experiment(parent):
    (expdir,) = parent.iterdir()
    assert expdir.name == "EXP001"
    return expdir


def stored(expdir):
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        return store.rows(), store.attempts(), store.meta("final")
    finally:
        store.close()


def swift_study(tmp_path, swift_t, settings, procs, objective=None, name="e", **env):
    """Run workflow.sh on a study with ``procs`` ranks, of the echo model or, given its
    ``objective``, of a ``py`` model (model ``name``, ``env`` more variables); its experiment
    directory (it must succeed)."""
    model = {"CANDLE_MODEL_IMPL": "py", "EMEWS_OBJECTIVE": objective} if objective else \
        {"CANDLE_MODEL_IMPL": "echo"}
    done = workflow_sh(tmp_path, settings, path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"), MODEL_NAME=name,
                       PROCS=str(procs), **model, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return only_experiment(tmp_path / "data" / name)


def assert_shown(expdir):
    shown = subprocess.run([sys.executable, "-m", "emews", "show", str(expdir)],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "evaluations:" in shown.stdout


def assert_finished_rows(rows, workers, budget):
    """Every row finished, numbered from 0 with emews run's run ids, on a worker rank, timed."""
    assert [row["id"] for row in rows] == list(range(budget))
    assert [row["run_id"] for row in rows] == [f"RUN{i:06d}" for i in range(budget)]
    assert [row["seq"] for row in rows] == list(range(budget))
    for row in rows:
        assert row["status"] in ("done", "failed") and row["attempt"] == 1
        assert row["rank"] in workers
        assert row["queued"] <= row["started"] <= row["finished"]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", list(ALGORITHM_OPTIONS))
def test_a_search_under_swift_t_stores_every_evaluation_and_every_string_arrives_intact(
        tmp_path, swift_t, algorithm):
    budget = 8
    settings = {"algorithm": algorithm, "options": ALGORITHM_OPTIONS[algorithm],
                "space": SPACE, "seed": SEEDS[algorithm], "batch_size": 2,
                "stop": {"budget": budget}}
    data_dir = tmp_path / AWKWARD_DIR
    done = workflow_sh(tmp_path, settings, path_entries=swift_t, CANDLE_DATA_DIR=str(data_dir),
                       MODEL_NAME="toy", CANDLE_MODEL_IMPL="py",
                       EMEWS_OBJECTIVE="swift_models:awkward", PROCS="4")
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = only_experiment(data_dir / "toy")
    rows, attempts, final_meta = stored(expdir)
    assert_finished_rows(rows, {0, 1}, budget)
    assert {row["status"] for row in rows} == {"done"}
    labels = {row["params"]["label"] for row in rows}
    assert "emoji \U0001F600 beyond U+FFFF" in labels and len(labels) >= 4, labels
    for row in rows:
        # what the model received is what the store holds, emoji and quotes included
        received = json.loads((expdir / "run" / row["run_id"] / "received.json").read_text())
        assert received == row["params"] and row["params"]["label"] in AWKWARD
        assert math.isclose(row["result"],
                            row["params"]["x"] ** 2 + AWKWARD.index(row["params"]["label"]))
    assert [(a["id"], a["status"], a["result"]) for a in attempts] == \
        [(r["id"], "done", r["result"]) for r in rows]
    final = json.loads((expdir / "final.json").read_text())
    best = min(rows, key=lambda row: row["result"])
    assert final["evaluations"] == budget and final["best_value"] == best["result"]
    assert final["best_point"] == best["params"] and final_meta == final
    assert {f"out-{row['rank']}.txt" for row in rows} == \
        {p.name for p in (expdir / "out").iterdir()}
    assert (expdir / "workflow.tic").is_file() and not (SWIFT / "workflow.tic").exists()
    assert done.stdout.endswith((expdir / "output.txt").read_text())
    assert_shown(expdir)


# The app study: params.json in the run directory; a negative x fails with output on stderr.
APP = [sys.executable, "-c", "import json, os, sys; p = json.load(open(os.environ["
       "'EMEWS_PARAMS_FILE'])); print('label', p['label'], file=sys.stderr); "
       "sys.exit('x is negative') if p['x'] < 0 else "
       "open('result.txt', 'w').write(repr(p['x'] ** 2))"]


def app_study(tmp_path, swift_t, app, budget, batch_size, **env):
    """Run an app study of random search (seed 3) under Swift/T; its experiment directory."""
    settings = {"algorithm": "random", "space": SPACE, "seed": 3, "batch_size": batch_size,
                "stop": {"budget": budget}}
    done = workflow_sh(tmp_path, settings, path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"), CANDLE_MODEL_IMPL="app",
                       EMEWS_APP=json.dumps(app), MODEL_NAME="m", **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return only_experiment(tmp_path / "data" / "m")


@pytest.mark.slow
def test_an_app_study_under_swift_t_stores_done_and_failed_runs_with_their_logs(tmp_path,
                                                                                 swift_t):
    budget = 8
    expdir = app_study(tmp_path, swift_t, APP, budget, batch_size=4, PROCS="5")
    rows, attempts, _ = stored(expdir)
    assert_finished_rows(rows, {0, 1, 2}, budget)
    assert {row["status"] for row in rows} == {"done", "failed"}, "seed 3 gives both signs"
    for row in rows:
        run = expdir / "run" / row["run_id"]
        assert json.loads((run / "params.json").read_text()) == row["params"]
        label_line = f"label {row['params']['label'].splitlines()[0]}"
        assert label_line in (run / "model.log").read_text()
        if row["params"]["x"] < 0:
            assert row["status"] == "failed" and row["result"] is None and row["error"]
            assert label_line in row["log_tail"] and "x is negative" in row["log_tail"]
        else:
            assert row["status"] == "done" and row["error"] is None
            assert row["result"] == float((run / "result.txt").read_text())
    assert [a["status"] for a in attempts] == [r["status"] for r in rows]
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == budget
    assert final["best_value"] == min(r["result"] for r in rows if r["status"] == "done")
    assert_shown(expdir)
    failed = subprocess.run([sys.executable, "-m", "emews", "show", str(expdir), "--failed"],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 0 and "x is negative" in failed.stdout


@pytest.mark.slow
def test_the_swift_example_runs_the_scikit_learn_digits_model_and_exits_cleanly(tmp_path,
                                                                                 swift_t):
    done = workflow_sh(tmp_path, REPO / "examples/swift/settings.json",
                       config=REPO / "examples/swift/config.sh", path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = only_experiment(tmp_path / "data" / "digits")
    rows, _, _ = stored(expdir)
    assert_finished_rows(rows, {0, 1}, 4)
    assert {row["status"] for row in rows} == {"done"}
    assert all(0 < row["result"] < 2.5 and 0 < row["metrics"]["val_accuracy"] <= 1
               for row in rows)
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == 4 and final["best_value"] == min(r["result"] for r in rows)


@pytest.mark.slow
def test_an_me_that_raises_fails_the_job_with_its_traceback(tmp_path, swift_t):
    settings = {"algorithm": "random", "space": SPACE, "stop": {"budget": 2}}
    done = workflow_sh(tmp_path, settings, path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"), CANDLE_MODEL_IMPL="echo",
                       EMEWS_ME="raising_me", MODEL_NAME="m")
    assert done.returncode != 0
    assert "(EQPY_ABORT)" in done.stdout
    assert "Traceback" in done.stdout and "ValueError: the ME broke on purpose" in done.stdout
    expdir = only_experiment(tmp_path / "data" / "m")
    assert not (expdir / "final.json").exists()
    rows, _, final_meta = stored(expdir)
    assert [(row["status"], row["params"], row["result"]) for row in rows] == \
        [("done", {"x": 1.0, "n": 0, "act": "relu"}, 1.0)]
    assert final_meta == {"stop_reason": "the ME failed (EQPY_ABORT)"}


@pytest.mark.slow
def test_an_me_package_that_does_not_import_is_an_eqpy_abort_with_its_traceback(tmp_path,
                                                                                 swift_t):
    settings = {"algorithm": "random", "space": SPACE, "stop": {"budget": 2}}
    done = workflow_sh(tmp_path, settings, path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"), CANDLE_MODEL_IMPL="echo",
                       EMEWS_ME='no_such "module"', MODEL_NAME="m")
    assert done.returncode != 0
    assert "(EQPY_ABORT)" in done.stdout
    assert "ModuleNotFoundError" in done.stdout and 'no_such "module"' in done.stdout
    rows, _, _ = stored(only_experiment(tmp_path / "data" / "m"))
    assert rows == []


@pytest.mark.slow
def test_an_algorithm_that_raises_inside_emews_me_is_reported_the_same_way(tmp_path, swift_t):
    settings = {"algorithm": "swift_models:BrokenAlgorithm", "space": SPACE, "seed": 1,
                "batch_size": 2, "stop": {"budget": 6}}
    done = workflow_sh(tmp_path, settings, path_entries=swift_t,
                       CANDLE_DATA_DIR=str(tmp_path / "data"), CANDLE_MODEL_IMPL="echo")
    assert done.returncode != 0
    assert "RuntimeError: the algorithm broke on purpose" in done.stdout
    assert "(EQPY_ABORT)" in done.stdout
    rows, _, _ = stored(only_experiment(tmp_path / "data" / "model"))
    assert [row["status"] for row in rows] == ["done", "done"]


@pytest.mark.parametrize("env, settings, message", [
    ({"PROCS": "2"}, None, "PROCS: must be an integer of at least 3"),
    ({"CANDLE_MODEL_IMPL": "gpu"}, None, "CANDLE_MODEL_IMPL: must be one of"),
    ({}, {"algorithm": "random", "space": SPACE, "mode": "async"}, "mode: must be 'batch'"),
    ({}, '{"algorithm": "random",', "must be JSON"),
    ({}, {"algorithm": "no_such_algorithm", "space": SPACE},
     "settings.json: algorithm: must be one of"),
    ({"CANDLE_MODEL_IMPL": "app", "EMEWS_APP": "run.sh"}, None,
     "EMEWS_APP: must be a JSON list of strings"),
    ({"PROCS": "4", "EMEWS_RANKS_PER_EVAL": "3"}, None,
     "EMEWS_RANKS_PER_EVAL: must be an integer from 1 to the 2 workers of PROCS = 4, got '3'"),
], ids=["procs", "impl", "mode", "json", "algorithm", "objective", "ranks_per_eval"])
def test_bad_input_is_one_line_naming_the_rule_and_makes_no_experiment(tmp_path, env, settings,
                                                                       message):
    settings = settings or {"algorithm": "random", "space": SPACE, "stop": {"budget": 2}}
    env = {"CANDLE_MODEL_IMPL": "echo", "CANDLE_DATA_DIR": str(tmp_path / "data"), **env}
    done = workflow_sh(tmp_path, settings, **env)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("workflow.sh: ") and message in line
    assert not (tmp_path / "data").exists()


def job_processes(expdir):
    """The live processes working in ``expdir``: workflow.sh, swift-t, turbine, mpiexec and
    every rank (MPICH's launcher puts each rank in a process group of its own)."""
    pids, expdir = [], str(Path(expdir).resolve())
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z" and os.readlink(proc / "cwd") == expdir:
                pids.append(int(proc.name))
        except (OSError, IndexError):
            continue
    return pids


def kill_job(job, expdir):
    """kill -9 the whole Swift/T job; return once none of its processes is left."""
    os.killpg(job.pid, signal.SIGKILL)
    for pid in job_processes(expdir):
        with contextlib.suppress(ProcessLookupError):    # it died of the first kill meanwhile
            os.kill(pid, signal.SIGKILL)
    job.wait(timeout=60)
    wait_until(lambda: not job_processes(expdir), "every process of the killed job gone")


@pytest.mark.slow
def test_a_killed_swift_t_study_resumes_with_each_evaluation_once_and_the_budget_exact(
        tmp_path, swift_t):
    budget = 8
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"algorithm": "random", "space": SPACE, "seed": 4,
                                    "batch_size": 2, "stop": {"budget": budget}}))
    env = environment(swift_t, CANDLE_DATA_DIR=str(tmp_path / "data"), MODEL_NAME="m",
                      CANDLE_MODEL_IMPL="py", EMEWS_OBJECTIVE="swift_models:gated", PROCS="4")
    expdir = tmp_path / "data" / "m" / "EXP001"
    with open(tmp_path / "killed.txt", "w") as output:
        job = subprocess.Popen(["bash", str(SWIFT / "workflow.sh"), "local", str(settings)],
                               env=env, cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:   # the 5th and 6th points (the third batch) block both workers
        wait_until(lambda: len(list(expdir.glob("run/*/blocked"))) == 2,
                   "both workers blocked in the third batch", timeout=240)
    finally:
        kill_job(job, expdir)
    before, _, _ = stored(expdir)
    assert [row["status"] for row in before] == ["done"] * 4 + ["queued"] * 2
    assert not (expdir / "final.json").exists()

    # emews run --resume runs workflow.sh --resume EXPDIR, the workflow.sh of config.json
    done = subprocess.run([sys.executable, "-m", "emews", "run", "--resume", str(expdir)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows, attempts, final_meta = stored(expdir)
    assert [row["id"] for row in rows] == list(range(budget))
    assert {row["status"] for row in rows} == {"done"}
    assert [(row["attempt"], row["run_id"]) for row in rows] == \
        [(1, f"RUN{i:06d}") for i in range(4)] + [(2, f"RUN{i:06d}-2") for i in (4, 5)] + \
        [(1, f"RUN{i:06d}") for i in (6, 7)]
    assert [row["params"] for row in rows[:6]] == [row["params"] for row in before]
    assert all(math.isclose(row["result"], row["params"]["x"] ** 2) for row in rows)
    assert [(a["id"], a["attempt"], a["status"]) for a in attempts] == \
        [(row["id"], row["attempt"], "done") for row in rows]
    resumed = json.loads((expdir / "settings.json").read_text())  # as emews run --resume:
    assert resumed["checkpoint"]["restore"] and resumed["put_base"] == 4   # from its checkpoint
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == budget and final_meta == final
    assert final["best_value"] == min(row["result"] for row in rows)
    assert_shown(expdir)
    refused = subprocess.run([sys.executable, "-m", "emews", "run", "--resume", str(expdir),
                              "--budget", "9"], env=env, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and refused.stderr.startswith(
        f"emews: error: emews run --resume {expdir}: resumes a Swift/T study with the settings "
        "it ran with (no CONFIG file and no options), got '--budget'")


@pytest.mark.slow
def test_an_echo_study_under_swift_t_stores_the_sum_of_squares(tmp_path, swift_t):
    budget = 6
    settings = {"algorithm": "random", "space": SPACE, "seed": 2, "batch_size": 3,
                "stop": {"budget": budget}}
    expdir = swift_study(tmp_path, swift_t, settings, procs=5)
    rows, _, _ = stored(expdir)
    assert_finished_rows(rows, {0, 1, 2}, budget)
    assert {row["status"] for row in rows} == {"done"}
    assert all(math.isclose(row["result"], row["params"]["x"] ** 2) for row in rows)
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == budget and final["best_value"] == min(r["result"] for r in rows)


@pytest.mark.slow
def test_the_me_rank_builds_the_algorithm_once_with_the_studys_seed(tmp_path, swift_t):
    record = tmp_path / "builds.jsonl"
    settings = {"algorithm": "recording_algorithm:CountingRandom", "space": SPACE, "seed": 3,
                "batch_size": 2, "options": {"builds": str(record)}, "stop": {"budget": 4}}
    expdir = swift_study(tmp_path, swift_t, settings, procs=4)
    rows, _, _ = stored(expdir)
    assert [row["status"] for row in rows] == ["done"] * 4
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        master = store.meta("master")["pid"]
    finally:
        store.close()
    # prepare_study.py checks the options by building it once; the ME's rank builds it once
    built = [json.loads(line) for line in record.read_text().splitlines()]
    assert [entry["seed"] for entry in built] == [3, 3]
    assert built[0]["pid"] != master and built[1]["pid"] == master


@pytest.mark.slow
def test_a_study_of_two_objectives_under_swift_t_stores_them_and_its_front(tmp_path, swift_t):
    """MODEL_RETURN as a list: each worker's outcome carries both objectives through
    workflow.swift; the ME's rank judges the constraint, stores them, and final.json holds the
    front (docs/src/multiobjective.md)."""
    space = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
             {"name": "n", "type": "int", "lower": 0, "upper": 3}]
    settings = {"algorithm": "random", "space": space, "seed": 3, "batch_size": 4,
                "directions": ["minimize", "maximize"], "constraints": ["size <= 12000"],
                "stop": {"budget": 8}}
    rows, _, _ = stored(swift_study(tmp_path, swift_t, settings, 4, "mo_models:loss_and_size",
                                    "mo", MODEL_RETURN="loss,size"))
    assert len(rows) == 8 and {row["status"] for row in rows} == {"done"}
    for row in rows:
        x, n = row["params"]["x"], row["params"]["n"]
        assert row["objectives"] == [pytest.approx((x - 2.0) ** 2 + n),
                                     pytest.approx((x + 2.0) ** 2 * 1000.0)]
        assert row["feasible"] is (row["objectives"][1] <= 12000)
    feasible = [r for r in rows if r["feasible"]]
    front = [r["objectives"] for r in feasible if not any(
        o["objectives"][0] <= r["objectives"][0] and o["objectives"][1] >= r["objectives"][1]
        and o["objectives"] != r["objectives"] for o in feasible)]
    final = json.loads((only_experiment(tmp_path / "data" / "mo") / "final.json").read_text())
    assert sorted(p["values"] for p in final["pareto"]) == sorted(front)


# The app of two processes: each records its MPI rank; rank 0 writes the allreduce of x.
PAR_APP = [sys.executable, "-c", "import json, os; from mpi4py import MPI; c = MPI.COMM_WORLD; "
           "p = json.load(open(os.environ['EMEWS_PARAMS_FILE'])); "
           "open(f'rank-{c.Get_rank()}.txt', 'w').write(os.environ['RANK'] + ' ' + "
           "os.environ['WORLD_SIZE']); t = c.allreduce(p['x']); "
           "c.Get_rank() or open('result.txt', 'w').write(repr(t))"]


@pytest.mark.slow
@pytest.mark.mpi
def test_an_app_study_of_two_ranks_per_evaluation_runs_as_swift_t_parallel_tasks(tmp_path,
                                                                                  swift_t):
    budget = 4
    expdir = app_study(tmp_path, swift_t, PAR_APP, budget, batch_size=2, PROCS="6",
                       EMEWS_RANKS_PER_EVAL="2")
    rows, _, _ = stored(expdir)
    assert_finished_rows(rows, {0, 1, 2, 3}, budget)
    for row in rows:   # each evaluation: two processes, rank 0's allreduce of both
        assert row["status"] == "done", row["error"]
        assert row["result"] == pytest.approx(2 * row["params"]["x"])
        run = expdir / "run" / row["run_id"]
        assert [(run / f"rank-{r}.txt").read_text() for r in range(2)] == ["0 2", "1 2"]
        assert "mpiexec -n 2" in (run / "run_command.txt").read_text()


@pytest.mark.slow
def test_reports_under_swift_t_are_stored_with_their_runs_and_nothing_is_pruned(tmp_path,
                                                                               swift_t):
    from fidelity_models import STEPS, value_at

    budget = 4
    settings = {"algorithm": "random", "space": SPACE, "seed": 2, "batch_size": 2,
                "stop": {"budget": budget}}
    expdir = swift_study(tmp_path, swift_t, settings, 4, "fidelity_models:curve", "toy")
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        rows, reports = store.rows(), store.reports()
    finally:
        store.close()
    assert_finished_rows(rows, {0, 1}, budget)
    assert {row["status"] for row in rows} == {"done"}     # reported every step, never stopped
    for row in rows:
        curve = [r for r in reports if r["id"] == row["id"]]
        assert [(r["step"], r["attempt"]) for r in curve] == [(s, 1) for s in
                                                             range(1, STEPS + 1)]
        assert [r["value"] for r in curve] == pytest.approx(
            [value_at(row["params"], s) for s in range(1, STEPS + 1)])
        assert [r["metrics"]["accuracy"] for r in curve] == pytest.approx(
            [1 / (1 + s) for s in range(1, STEPS + 1)])
        assert row["result"] == pytest.approx(value_at(row["params"], STEPS))
