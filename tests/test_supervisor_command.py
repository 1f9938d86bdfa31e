"""``emews supervisor``: CANDLE/Supervisor's test scripts, cfg files and site files, run as they
are once a workflow's ``swift/workflow.sh`` is the one line ``exec emews supervisor "$@"``.

tests/support/supervisor_cfg/ is a small copy of Supervisor's ``workflows/`` tree: test scripts
mirroring ``GA/test/test-1.sh`` and ``random/test/test.sh``, their
cfg files, ``common/sh/utils.sh`` and the ``local`` site files (each names the Supervisor file it
mirrors). Each test copies it to its own directory and runs there, on a real mpiexec pool.
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from emews._experiment import load_experiment

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from conftest import stored_rows  # noqa: E402
from slurm import slurm_fixture  # noqa: E402,F401  (the session fixture "slurm")

TREE = Path(__file__).parent / "support" / "supervisor_cfg"
MODELS = Path(__file__).parent / "support" / "supervisor_models"
CLEARED = ("PROCS", "PPN", "MODEL_NAME", "CANDLE_DATA_DIR", "PMI_RANK", "PMI_SIZE",
           "SUPERVISOR_PATH", "SUPERVISOR_HOME", "EMEWS_PROJECT_ROOT", "WORKFLOWS_ROOT", "EXPID",
           "CANDLE_MODEL_IMPL", "CANDLE_MODEL_TYPE", "CANDLE_IMAGE", "EMEWS_LANGS_APP")


@pytest.fixture
def home(tmp_path):
    """A copy of the tree as ``tmp_path/workflows`` and a ``tmp_path/run`` to run in."""
    shutil.copytree(TREE, tmp_path / "workflows")
    (tmp_path / "run").mkdir()
    return tmp_path


def environment(home, **env):
    environ = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    environ["CANDLE_DATA_DIR"] = str(home / "data")
    environ.update(env)
    return environ


def bash(home, script, *args, **env):
    """Run one of the tree's test scripts in ``home/run``, as a Supervisor user does."""
    return subprocess.run(["bash", str(home / "workflows" / script), *args], cwd=home / "run",
                          env=environment(home, **env), capture_output=True, text=True,
                          timeout=300)


def supervisor(home, *args, **env):
    """``emews supervisor ARGS`` in ``home/run``."""
    return subprocess.run([sys.executable, "-m", "emews", "supervisor", *args],
                          cwd=home / "run", env=environment(home, **env), capture_output=True,
                          text=True, timeout=300)


def linked(home):
    """The experiment directory that ``run/turbine-output`` links to."""
    link = home / "run" / "turbine-output"
    assert link.is_symlink()
    return Path(os.readlink(link))


# --- test scripts as they are ------------------------------------------------------------------

@pytest.mark.slow
def test_the_ga_test_script_with_the_one_line_workflow_sh_succeeds_and_leaves_the_study(home):
    done = bash(home, "GA/test/test-1.sh", "sup", "local", PROCS="3", POPULATION_SIZE="4",
                NUM_ITERATIONS="2", MODEL_PYTHON_DIR=str(MODELS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "test-1: SUCCESS"
    expdir = linked(home)
    assert expdir == home / "data" / "sup" / "EXP000"       # -a: Supervisor's first EXPID
    output = (expdir / "output.txt").read_text()
    assert output.endswith("EXIT CODE: 0\n")      # the run's own output, then its status
    assert f"emews: experiment directory {expdir}" in output
    rows = stored_rows(expdir)
    assert 4 <= len(rows) <= 4 + 2 and len(rows) == len({r["id"] for r in rows})
    for row in rows:     # the space named without a directory, found on SUPERVISOR_PATH
        assert row["status"] == "done" and 0 <= row["params"]["x"] <= 4
        assert row["params"]["epochs"] == 3 and row["result"] == pytest.approx(row["params"]["x"])
    config = json.loads((expdir / "config.json").read_text())
    assert load_experiment(expdir).study.space == str(home / "workflows" / "GA" / "data"
                                                      / "sup_param_space_ga.json")
    assert config["study"]["algorithm"] == "ga" and config["model"]["type"] == "BENCHMARK"
    assert config["model"]["image"] is None and config["system"]["procs"] == 3
    assert config["study"]["expid"] == "EXP000"
    # the same call again: the next free EXPID, and turbine-output moves to it
    again = bash(home, "GA/test/test-1.sh", "sup", "local", PROCS="3", POPULATION_SIZE="4",
                 NUM_ITERATIONS="2", MODEL_PYTHON_DIR=str(MODELS))
    assert again.returncode == 0, again.stdout + again.stderr
    assert linked(home) == home / "data" / "sup" / "EXP001" and stored_rows(linked(home))


@pytest.mark.slow
def test_the_random_workflow_draws_its_settings_ranges_on_an_mpiexec_pool(home):
    # test.sh calls workflow.sh with 4 arguments; its cfg-prm file names the model (p1b1)
    done = bash(home, "random/test/test.sh", "local", PROCS="3", CANDLE_MODEL_IMPL="echo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "test: SUCCESS"
    expdir = linked(home)
    assert expdir == home / "data" / "p1b1" / "EXP000"
    rows = stored_rows(expdir)
    assert len(rows) == 12                                   # settings.json: samples.num [12]
    ranges = json.loads((home / "workflows" / "random" / "data" / "settings.json").read_text())
    for row in rows:
        assert row["status"] == "done" and row["rank"] in (1, 2)
        for name, (low, high) in ranges["parameters"].items():
            value = row["params"][name]
            assert low <= value <= high
            assert isinstance(value, int) == isinstance(low, int)   # randint, else uniform
        assert row["result"] == pytest.approx(sum(v ** 2 for v in row["params"].values()))
    assert len({r["params"]["learning_rate"] for r in rows}) == 12
    config = json.loads((expdir / "config.json").read_text())
    assert config["study"]["algorithm"] == "random" and config["study"]["budget"] == 12


@pytest.mark.slow
def test_the_uq_noise_workflow_sweeps_its_noise_levels_on_an_mpiexec_pool(home):
    # the call of Supervisor's workflows/uq-noise/test/test-1.sh (5 arguments, model nt3)
    test = home / "workflows" / "uq-noise" / "test"
    done = supervisor(home, "local", "-a", str(test / "cfg-sys-small.sh"),
                      str(test / "cfg-prm-1.sh"), "nt3", CANDLE_MODEL_IMPL="echo",
                      CANDLE_MODEL_TYPE="BENCHMARKS",
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "uq-noise"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "XCORR_DATA_DIR = " in done.stdout     # a setting uq-noise never reads, named
    assert linked(home) == home / "data" / "nt3" / "EXP000"
    rows = stored_rows(linked(home))
    levels = [3.0 * level for level in range(11)]            # its workflow.swift's [0:10] * 3.0
    assert sorted((r["params"]["x_noise_level"], r["params"]["y_noise_level"]) for r in rows) \
        == [(x, y) for x in levels for y in levels]
    for row in rows:
        assert row["status"] == "done" and row["rank"] in (1, 2) and row["params"]["epochs"] == 1
        assert row["result"] == row["params"]["x_noise_level"] ** 2 \
            + row["params"]["y_noise_level"] ** 2 + 1


@pytest.mark.slow
def test_the_pbt_workflow_trains_a_population_of_tc1_on_an_mpiexec_pool(home):
    # pbt_run.sh SITE EXP_ID PARAMS_FILE, its SITE.cfg explicit; tc1 on synthetic data
    import hashlib

    import emews
    from emews.inspect import _show as show
    from emews._space import Space

    params_file = SUPPORT / "supervisor" / "tc1_params_small.json"
    done = supervisor(home, "local", "-a", str(home / "workflows" / "pbt" / "scripts" /
                                              "local.cfg"), str(params_file), PROCS="4",
                      MODEL_PYTHON_DIR=str(MODELS),
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "pbt"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "EXP_DIR = '../experiments/-a' is not used" in done.stdout
    expdir = linked(home)
    assert expdir == home / "data" / "tc1" / "EXP000"      # tc1, as its local_submit.cfg
    config = json.loads((expdir / "config.json").read_text())
    assert config["study"]["algorithm"] == "pbt" and config["study"]["mode"] == "async"
    assert config["study"]["space"] == str(params_file.resolve())
    assert {k: config["algorithm"][k] for k in ("population_size", "max_steps",
                                                "perturbation_interval", "quantile",
                                                "factors", "resample_probability")} == {
        "population_size": 3, "max_steps": 5, "perturbation_interval": 2, "quantile": 0.2,
        "factors": [0.8, 1.2], "resample_probability": 0.0}   # PROCS - 1; epochs; tc1_pbt.py
    study = emews.load(expdir)
    segments = show.lineage(study)
    by_name = {s["name"]: s for s in segments}
    curves = study.curves()
    space = Space.from_file(params_file)
    assert study.final["stop_reason"] == "the algorithm has no more points to propose"
    assert {s["status"] for s in segments} == {"done"} and len(segments) == len(study.rows)
    assert sorted({s["member"] for s in segments}) == [0, 1, 2]
    assert all(max(s["until"] for s in segments if s["member"] == m) == 5 for m in range(3))
    # whether a member exploits another here depends on the order the three finish their
    # segments (async, as Supervisor's); tests/test_pbt.py checks exploitation in a
    # deterministic order: here every exploit that happened is checked below
    for segment in segments:
        (row,) = [r for r in study.rows if r["id"] == segment["id"]]
        started = json.loads((expdir / "run" / row["run_id"] / "started.json").read_text())
        start = segment["donor"] or segment["parent"]
        # the checkpoint the model found is exactly its start segment's (donor's on exploit)
        found = (expdir / "checkpoints" / "segments" / start / "tc1.npz").read_bytes() \
            if start else None
        assert started == {"epoch": segment["start"],
                           "sha256": found and hashlib.sha256(found).hexdigest()}, segment
        assert segment["start"] == (by_name[start]["until"] if start else 0)
        assert segment["until"] == min(segment["start"] + 2, 5)
        # its reports are the epochs it trained; its value the last of them
        assert sorted(curves[segment["id"]]) == list(range(segment["start"] + 1,
                                                           segment["until"] + 1))
        assert segment["value"] == curves[segment["id"]][segment["until"]]
        assert space.contains(segment["params"]), segment
        if segment["donor"]:   # explore: the donor's lr and drop times 0.8 or 1.2 (in bounds)
            donor = by_name[segment["donor"]]["params"]
            for name, (lower, upper) in (("lr", (0.0001, 0.01)), ("drop", (0.0, 0.9))):
                assert segment["params"][name] in [min(max(donor[name] * f, lower), upper)
                                                   for f in (0.8, 1.2)], (name, segment)


@pytest.mark.slow
def test_a_study_that_does_not_end_by_its_own_rule_fails_the_test_script(home):
    # drained at once (its walltime is over): the study stops, but not by its own rule
    done = bash(home, "random/test/test.sh", "local", PROCS="3", CANDLE_MODEL_IMPL="echo",
                EMEWS_DRAIN_AT="1")
    assert done.returncode == 1 and "SUCCESS" not in done.stdout
    output = (linked(home) / "output.txt").read_text()
    assert "the study did not end by its own rule: the job's walltime" in output
    assert "EXIT CODE: 1" in output and "EXIT CODE: 0" not in output


# --- the argument forms ------------------------------------------------------------------------

MERGED = """\
# A merged cfg file of sys and prm settings, in the form of Supervisor's bin/README.adoc
# quickstart and workflows/GA/test/cfg-uno-1.sh (one file for the supervisor tool).
export MODEL_NAME=sup
export PARAM_SET_FILE=sup_param_space_ga.json
export PROCS=3
export POPULATION_SIZE=4
export NUM_ITERATIONS=2
IGNORE_ERRORS=1
"""
STRUCTURED = """\
# A structured cfg file, as Supervisor's bin/README.adoc describes them: reusable cfg files
# found on SUPERVISOR_PATH with source_cfg, then this experiment's settings.
export MODEL_NAME=sup
source_cfg cfg-sys-1.sh
source_cfg cfg-prm-1.sh
find_cfg sup_param_space_ga.json
PARAM_SET_FILE=$REPLY
PROCS=4
"""


@pytest.mark.slow
def test_the_supervisor_tools_form_runs_a_merged_cfg_file_found_in_the_current_directory(home):
    (home / "run" / "cfg-1.sh").write_text(MERGED)
    done = supervisor(home, "local", "GA", "cfg-1.sh", SUPERVISOR_HOME=str(home),
                      MODEL_PYTHON_DIR=str(MODELS))
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = linked(home)
    rows = stored_rows(expdir)
    assert 4 <= len(rows) <= 6 and all(r["status"] == "done" for r in rows)
    config = json.loads((expdir / "config.json").read_text())
    assert config["system"]["procs"] == 3 and config["algorithm"]["population_size"] == 4
    assert config["failure"]["on_failure"] == "fail"          # IGNORE_ERRORS=1
    assert load_experiment(expdir).study.space == str(home / "workflows" / "GA" / "data"
                                                      / "sup_param_space_ga.json")


def dry_run(home, *args, **env):
    done = supervisor(home, "--dry-run", *args, **env)
    assert done.returncode == 0, done.stderr
    assert not (home / "data").exists() and not (home / "run" / "turbine-output").exists()
    return tomllib.loads(done.stdout)


def test_a_structured_cfg_file_sources_reusable_ones_found_on_supervisor_path(home):
    (home / "run" / "cfg-2.sh").write_text(STRUCTURED)
    study = dry_run(home, "local", "GA", "cfg-2.sh", SUPERVISOR_HOME=str(home))
    assert study["system"]["procs"] == 4 and study["system"]["ppn"] == 10   # cfg-sys-1.sh
    assert study["algorithm"]["generations"] == 5                           # cfg-prm-1.sh
    assert study["study"]["space"] == str(home / "workflows" / "GA" / "data"
                                          / "sup_param_space_ga.json")
    assert study["system"]["langs_app"] == str(home / "workflows" / "common" / "sh"
                                               / "langs-app-local.sh")


def test_workflow_sh_with_two_arguments_finds_its_cfg_file_on_supervisor_path(home):
    (home / "workflows" / "GA" / "data" / "cfg-1.sh").write_text(MERGED)
    study = dry_run(home, "local", "cfg-1.sh",
                    EMEWS_PROJECT_ROOT=str(home / "workflows" / "GA"))
    assert study["study"]["algorithm"] == "ga" and study["study"]["name"] == "sup"
    assert study["algorithm"]["population_size"] == 4


@pytest.mark.parametrize("tail, model", [
    (["sup"], {}),
    (["sup", "BENCHMARKS", "None"], {"type": "BENCHMARK"}),
    (["/images/Sup.sif", "SINGULARITY", "/images/Sup.sif"],
     {"type": "SINGULARITY", "image": "/images/Sup.sif"}),
], ids=["5", "7-benchmarks", "7-singularity"])
def test_workflow_sh_with_five_or_seven_arguments(home, tail, model):
    test = home / "workflows" / "GA" / "test"
    study = dry_run(home, "local", "-a", str(test / "cfg-sys-1.sh"), str(test / "cfg-prm-1.sh"),
                    *tail, EMEWS_PROJECT_ROOT=str(home / "workflows" / "GA"),
                    PARAM_SET_FILE="sup_param_space_ga.json")
    assert study["study"]["model_name"] == tail[0]
    assert study["study"]["name"] == Path(tail[0]).name.removesuffix(".sif")
    assert study.get("model", {}).get("type") == model.get("type")
    assert study.get("model", {}).get("image") == model.get("image")
    assert study["algorithm"]["generations"] == 5


@pytest.mark.slow
def test_site_files_are_sourced_as_they_are_for_the_study_and_the_model_shell(home):
    # upf's 5-argument form, a named EXPID; the model runs through the Model Shell (app)
    test = home / "workflows" / "upf" / "test"
    done = supervisor(home, "local", "EXP042", str(test / "cfg-sys-1.sh"),
                      str(test / "upf-1.txt"), "sup", CANDLE_MODEL_IMPL="app",
                      MODEL_PYTHON_DIR=str(MODELS), PYTHONPATH="/before",
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "upf"))
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = home / "data" / "sup" / "EXP042"
    assert linked(home) == expdir
    rows = stored_rows(expdir)
    assert sorted(r["result"] for r in rows) == [0.5, 1.5, 2.5]
    common = home / "workflows" / "common"
    seen = [json.loads(path.read_text())     # candle's output_dir: DATA/MODEL/Output/EXPID/RUN
            for path in (home / "data" / "sup" / "Output" / "EXP042").glob("*/env.json")]
    assert len(seen) == 3
    for env in seen:
        # env-local.sh, sourced before the study: its exports, after the cfg files (PROCS)
        assert env["LOCAL"] == "1" and env["CRAY"] == "0"
        assert env["RESIDENT_WORK_RANKS"] == "0" and env["SITE"] == "local"
        assert env["PYTHONPATH"].startswith(f"/before:{common}/python:")
        assert "CANDLE_MODEL_IMPL" not in env or env["CANDLE_MODEL_IMPL"] != "py"  # not exported
        # langs-app-local.sh, sourced by the Model Shell: $EMEWS_PROJECT_ROOT/../common/python
        assert f":{home / 'workflows' / 'upf'}/../common/python:" in env["PYTHONPATH"]


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args, env, message", [
    (["local", "-a", "s.sh", "p.sh", "m", "x"], {}, "emews supervisor: takes SITE WORKFLOW "
     "CFG (the supervisor tool), or workflow.sh's SITE CFG, SITE EXPID CFG_SYS CFG_PRM "
     "[MODEL_NAME [CANDLE_MODEL_TYPE CANDLE_IMAGE]]; got 6 arguments"),
    (["local", "cp-leaveout", "cfg.sh"], {}, "emews supervisor: names Supervisor's workflow "
     "'cp-leaveout', which does not fit emews's ask/tell model (see the supervisor docs); "
     "emews runs GA, mlrMBO, grid, random, uq-noise, async-search, pbt and upf"),
    (["local", "-a", "s.sh", "p.sh", "m"], {}, "emews supervisor: needs the workflow"),
    (["local", "GA", "no-such.sh"], {}, "emews supervisor CFG: must be a readable file, or one "
     "found on SUPERVISOR_PATH"),
    (["frontier", "GA", "cfg-1.sh"], {}, "emews supervisor SITE: must have Supervisor's "
     "env-SITE.sh or sched-SITE.sh on SUPERVISOR_PATH"),
    (["local", "-a", "pbt/scripts/local.cfg", "lr.json"], {"EMEWS_PROJECT_ROOT": "pbt"},
     "{workflows}/lr.json: epochs: must be a constant whole number of 1 or more (the epochs each member "
     "of the pbt workflow trains)"),
    (["local", "-a", "pbt/scripts/local.cfg", "tc1_params_small.json"],
     {"EMEWS_PROJECT_ROOT": "pbt", "PROCS": "2"}, "{workflows}/pbt/scripts/local.cfg: PROCS: must be 3 or "
     "more for the pbt workflow (a population of PROCS - 1, at least 2), got 2"),
], ids=["count", "unsupported", "no-workflow", "no-cfg", "no-site-files", "pbt-no-epochs",
        "pbt-procs"])
def test_bad_use_is_one_line_exit_status_2_and_makes_nothing(home, args, env, message):
    (home / "run" / "cfg-1.sh").write_text(MERGED)
    shutil.copy(SUPPORT / "supervisor" / "tc1_params_small.json", home / "workflows")
    (home / "workflows" / "lr.json").write_text(json.dumps(
        [{"name": "lr", "type": "float", "lower": 0.001, "upper": 0.1}]))
    args = [str(home / "workflows" / a) if a.endswith((".cfg", ".json")) else a
            for a in args]   # the tree's files
    env = {k: str(home / "workflows" / v) if k == "EMEWS_PROJECT_ROOT" else v
           for k, v in env.items()}
    done = supervisor(home, *args, SUPERVISOR_HOME=str(home), **env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0]
    workflows = home / "workflows"
    assert done.stderr.startswith(f"emews: error: {message.format(workflows=workflows)}")
    assert not (home / "data").exists() and not (home / "run" / "turbine-output").exists()


# --- Supervisor's models as they are -----------------------------------------------------------

def oned(x):
    """Supervisor's models/OneD function (oned_baseline_keras2.py's func)."""
    import math

    return 0.02 * x + 0.5 * math.sin(x + 0.1) + 0.75 * math.cos(0.25 * x - 0.3)


@pytest.mark.slow
def test_supervisors_oned_model_runs_through_the_model_runner_with_the_real_candle_lib(
        home, candle_lib):
    points = home / "run" / "oned-1.txt"
    points.write_text('{"x": 0.5}\n{"x": 2.0}\n')
    test = home / "workflows" / "upf" / "test"
    done = supervisor(home, "local", "-a", str(test / "cfg-sys-1.sh"), str(points), "oned",
                      MODEL_PYTHON_DIR=str(MODELS / "OneD"), PYTHONPATH=str(candle_lib),
                      TF_USE_LEGACY_KERAS="1", HOME=str(home), PROCS="2",
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "upf"))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = stored_rows(linked(home))
    assert sorted((r["params"]["x"], r["status"]) for r in rows) == [(0.5, "done"),
                                                                    (2.0, "done")]
    for row in rows:      # the last of the two epochs' val_loss that its History holds
        assert row["result"] == pytest.approx(oned(row["params"]["x"]))
    assert "Importing candle utils for Keras" in done.stdout + \
        (linked(home) / "out" / "out-1.txt").read_text()          # candle_lib's, not emews's
    assert (home / "improve_data_dir").is_dir()   # where OneD points CANDLE_DATA_DIR


SITES = Path(__file__).parent / "support" / "supervisor_sites"


def test_a_scheduled_sites_settings_are_read_as_emews_site_import_reads_them(home):
    (home / "run" / "cfg-1.sh").write_text(MERGED)
    done = supervisor(home, "--dry-run", "frontier", "GA", "cfg-1.sh", SUPERVISOR_HOME=str(home),
                      SUPERVISOR_PATH=str(SITES), PPN="8")
    assert done.returncode == 0, done.stderr
    site = done.stdout.splitlines()[-1]
    assert site == (f"# Site frontier ({SITES / 'sched-frontier.sh'}): scheduler slurm, launcher "
                    "srun, batch {'project': 'MED106', 'directives': {'constraint': 'nvme'}}")
    study = tomllib.loads(done.stdout)    # the Model Shell sources langs-app-frontier.sh
    assert study["system"]["langs_app"] == str(SITES / "langs-app-frontier.sh")
    assert not (home / "data").exists()


def test_a_named_expid_that_holds_a_study_is_refused_and_left_as_it_was(home):
    expdir = home / "data" / "sup" / "EXP001"
    expdir.mkdir(parents=True)
    (expdir / "config.json").write_text("{}")
    test = home / "workflows" / "GA" / "test"
    done = supervisor(home, "local", "EXP001", str(test / "cfg-sys-1.sh"),
                      str(test / "cfg-prm-1.sh"), "sup", PARAM_SET_FILE="sup_param_space_ga.json",
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "GA"))
    assert done.returncode == 2
    assert done.stderr == (f"emews: error: {expdir}: holds a study already: name another EXPID, "
                           "or -a for the next free one\n")
    assert sorted(p.name for p in expdir.iterdir()) == ["config.json"]
    assert not (home / "run" / "turbine-output").exists()


def test_a_numpy_per_epoch_val_loss_is_read_as_its_list_as_oned_returns_it():
    import numpy

    from emews.evaluate._model_output import extract_value

    assert extract_value({"val_loss": numpy.array([2.0, 1.0])}) == 1.0
    assert extract_value({"val_loss": numpy.array([2.0, 1.0])}, epoch="max") == 2.0
    assert extract_value({"val_loss": numpy.float32(0.5)}) == 0.5


@pytest.mark.slow
@pytest.mark.mpi
def test_a_slurm_sites_files_submit_the_study_and_the_job_sources_env_site(home, slurm):
    test = home / "workflows" / "upf" / "test"
    done = supervisor(home, "cluster", "-a", str(test / "cfg-sys-1.sh"), str(test / "upf-1.txt"),
                      "sup", MODEL_PYTHON_DIR=str(MODELS), HOME=str(home), PPN="2",
                      SLURM_CONF=slurm.env["SLURM_CONF"], EMEWS_TEST_SECONDS="0.4",
                      EMEWS_PROJECT_ROOT=str(home / "workflows" / "upf"))
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = linked(home)
    assert expdir == home / "data" / "sup" / "EXP000"
    (job,) = json.loads((expdir / "submit.json").read_text())["jobs"]
    assert f"emews: submitted job {job['id']} (slurm, site cluster)" in done.stdout
    slurm.wait_gone(job["id"])
    rows = stored_rows(expdir)
    assert sorted((r["params"]["x"], r["status"]) for r in rows) == [
        (0.5, "done"), (1.5, "done"), (2.5, "done")]
    seen = [json.loads(path.read_text())
            for path in (home / "data" / "sup" / "Output" / "EXP000").glob("*/env.json")]
    assert len(seen) == 3
    for env in seen:
        assert env["SITE_CLUSTER_ENV"] == "sourced" and env["SLURM_JOB_ID"] == str(job["id"])
        assert f"{home}/cluster/python" in env["PYTHONPATH"].split(":")
    assert f"source {home / 'workflows' / 'common' / 'sh' / 'env-cluster.sh'}" in \
        Path(job["script"]).read_text()
