"""Whole runs of workflow.sh and workflow.swift, with swift-t played by tests/support/bin/swift-t.

The stand-in runs the .swift files' own Python code under Turbine's rules and makes exactly the
calls workflow.swift makes (see tests/support/turbine.py). Each run is its own process, as a
Swift/T job is.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from swift_models import AWKWARD, SPACE  # noqa: E402
from swift_source import Program  # noqa: E402

REPO = Path(__file__).parent.parent
SWIFT = REPO / "swift"
# A directory name that breaks any careless quoting: the settings path and TURBINE_OUTPUT hold it.
AWKWARD_DIR = 'data "q" \\ b\nnew line ☃'
# Small enough that a budget of 12 sees the GA breed and the model-based search fit.
ALGORITHM_OPTIONS = {"random": {}, "ga": {"population_size": 4},
                     "mbo": {"design_size": 4, "n_trees": 20, "focus_points": 200,
                             "focus_restarts": 1}}
SLOW_ALGORITHMS = {"mbo"}  # importing scikit-learn's forests, twice (prepare.py and the ME)


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_RANK", "PMI_SIZE")}
    env.update(PATH=f"{SUPPORT / 'bin'}:{Path(sys.executable).parent}:{env['PATH']}",
               PYTHONPATH=str(SUPPORT), PYTHON=sys.executable, **extra)
    return env


def workflow_sh(tmp_path, settings, *, config=None, **env):
    """Run swift/workflow.sh on the local site; ``settings``: a dict, JSON text or a path."""
    settings_file = settings if isinstance(settings, Path) else tmp_path / "settings.json"
    if not isinstance(settings, Path):
        settings_file.write_text(json.dumps(settings) if isinstance(settings, dict) else settings)
    args = ["bash", str(SWIFT / "workflow.sh"), "local", str(settings_file)]
    if config:
        args.append(str(config))
    return subprocess.run(args, env=environment(**env), cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)


def stand_in(tmp_path, settings, me, impl="echo"):
    """swift-t run directly, as a Supervisor user runs a classic ME (--me)."""
    env = environment(TURBINE_OUTPUT=str(tmp_path), MODEL_NAME="m", CANDLE_MODEL_IMPL=impl,
                      RESIDENT_WORK_RANKS="2")
    return subprocess.run(["swift-t", "-n", "4", "-p", "-I", str(SWIFT), "-i", f"model_{impl}",
                           "-e", "TURBINE_RESIDENT_WORK_WORKERS=1", str(SWIFT / "workflow.swift"),
                           f"--settings={settings}", "--exp_id=EXP000", f"--me={me}"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)


def algorithm_param(name):
    return pytest.param(name, marks=[pytest.mark.slow] if name in SLOW_ALGORITHMS else [], id=name)


@pytest.mark.parametrize("algorithm", [algorithm_param(n) for n in ALGORITHM_OPTIONS])
def test_a_search_runs_through_workflow_swift_and_every_string_arrives_intact(tmp_path,
                                                                             algorithm):
    budget = 12
    settings = {"algorithm": algorithm, "options": ALGORITHM_OPTIONS[algorithm],
                "space": SPACE, "seed": 5, "batch_size": 4, "stop": {"budget": budget}}
    data_dir = tmp_path / AWKWARD_DIR
    done = workflow_sh(tmp_path, settings, CANDLE_DATA_DIR=str(data_dir), MODEL_NAME="toy",
                       CANDLE_MODEL_IMPL="py", EMEWS_OBJECTIVE="swift_models:awkward",
                       PROCS="4")
    assert done.returncode == 0, done.stdout + done.stderr
    (expdir,) = (data_dir / "toy").iterdir()
    received = [json.loads(p.read_text()) for p in expdir.glob("run/*/received.json")]
    assert len(received) == budget
    assert all(point["label"] in AWKWARD for point in received)
    final = json.loads((expdir / "final.json").read_text())
    values = [p["x"] ** 2 + AWKWARD.index(p["label"]) for p in received]
    assert final["evaluations"] == budget and math.isclose(final["best_value"], min(values))
    program = Program.compile(SWIFT / "workflow.swift", ["model_py"])
    ran = done.stdout.split("swift-t stand-in: ran the Python at ")[1].split()
    assert sorted(ran) == sorted(call.where() for call in program.calls)
    assert done.stdout.endswith((expdir / "output.txt").read_text())


APP = [sys.executable, "-c", "import json, os; p = json.load(open(os.environ['EMEWS_PARAMS_FILE']))"
       "; open('result.txt', 'w').write(repr(p['x'] ** 2))"]


@pytest.mark.parametrize("impl", ["app", "echo"])
def test_model_app_and_model_echo_evaluate_every_point(tmp_path, impl):
    settings = {"algorithm": "random", "space": SPACE, "seed": 2, "batch_size": 2,
                "stop": {"budget": 4}}
    done = workflow_sh(tmp_path, settings, CANDLE_DATA_DIR=str(tmp_path / "data"),
                       CANDLE_MODEL_IMPL=impl, EMEWS_APP=json.dumps(APP), MODEL_NAME="m")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"-i model_{impl} " in done.stdout
    (expdir,) = (tmp_path / "data" / "m").iterdir()
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == 4 and final["best_value"] >= 0
    runs = sorted((expdir / "run").iterdir()) if impl == "app" else []
    assert len(runs) == (4 if impl == "app" else 0)
    for run in runs:
        x = json.loads((run / "params.json").read_text())["x"]
        assert float((run / "result.txt").read_text()) == x ** 2


def test_an_me_that_raises_fails_the_job_with_its_traceback(tmp_path):
    done = stand_in(tmp_path, "unused.json", me="raising_me")
    assert done.returncode == 1
    assert "(EQPY_ABORT)" in done.stdout
    assert "Traceback" in done.stdout and "ValueError: the ME broke on purpose" in done.stdout
    assert not (tmp_path / "final.json").exists()


def test_an_algorithm_that_raises_inside_emews_me_is_reported_the_same_way(tmp_path):
    settings = {"algorithm": "swift_models:BrokenAlgorithm", "space": SPACE, "seed": 1,
                "batch_size": 2, "stop": {"budget": 6}}
    done = workflow_sh(tmp_path, settings, CANDLE_DATA_DIR=str(tmp_path / "data"),
                       CANDLE_MODEL_IMPL="echo")
    assert done.returncode == 1
    assert "RuntimeError: the algorithm broke on purpose" in done.stdout
    assert "(EQPY_ABORT)" in done.stdout


@pytest.mark.parametrize("env, settings, message", [
    ({"PROCS": "2"}, None, "PROCS: must be an integer of at least 3"),
    ({"CANDLE_MODEL_IMPL": "gpu"}, None, "CANDLE_MODEL_IMPL: must be one of"),
    ({}, {"algorithm": "random", "space": SPACE, "mode": "async"}, "mode: must be 'batch'"),
    ({}, '{"algorithm": "random",', "must be JSON"),
    ({}, {"algorithm": "no_such_algorithm", "space": SPACE},
     "settings.json: algorithm: must be one of"),
    ({"CANDLE_MODEL_IMPL": "app", "EMEWS_APP": "run.sh"}, None,
     "EMEWS_APP: must be a JSON list of strings"),
], ids=["procs", "impl", "mode", "json", "algorithm", "objective"])
def test_bad_input_is_one_line_naming_the_rule_and_makes_no_experiment(tmp_path, env, settings,
                                                                       message):
    settings = settings or {"algorithm": "random", "space": SPACE, "stop": {"budget": 2}}
    env = {"CANDLE_MODEL_IMPL": "echo", "CANDLE_DATA_DIR": str(tmp_path / "data"), **env}
    done = workflow_sh(tmp_path, settings, **env)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("workflow.sh: ") and message in line
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_the_swift_example_runs_the_digits_model(tmp_path):
    done = workflow_sh(tmp_path, REPO / "examples/swift/settings.json",
                       config=REPO / "examples/swift/config.sh",
                       CANDLE_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stdout + done.stderr
    (expdir,) = (tmp_path / "data" / "digits").iterdir()
    final = json.loads((expdir / "final.json").read_text())
    assert final["evaluations"] == 4 and 0 < final["best_value"] < 2.5
    assert "-i model_py" in done.stdout
