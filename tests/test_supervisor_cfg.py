"""CANDLE/Supervisor's cfg-sys-*.sh and cfg-prm-*.sh files as an emews study
(emews.supervisor._cfg, ``emews run --supervisor-cfg``): sourced by a bash subprocess, as
Supervisor's workflows source them, and mapped to a study.

The files in tests/support/supervisor_cfg/ mirror Supervisor's workflows/GA/test/cfg-*-1.sh and
workflows/mlrMBO/test/cfg-*-nightly.sh (each names the file it mirrors); the bad ones below are
written here, each a line of the kind Supervisor's files hold or one they must not.
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from emews import _config as configuration
from emews._errors import ConfigError
from emews._prepare import validate
from emews.store import SQLiteStore
from emews.supervisor._cfg import Settings, read

CFG = Path(__file__).parent / "support" / "supervisor_cfg"
MODELS = Path(__file__).parent / "support" / "supervisor_models"
GA = (CFG / "GA" / "test" / "cfg-sys-1.sh", CFG / "GA" / "test" / "cfg-prm-1.sh")
MBO = (CFG / "mlrMBO" / "test" / "cfg-sys-nightly.sh",
       CFG / "mlrMBO" / "test" / "cfg-prm-nightly.sh")


def test_the_ga_files_are_a_ga_study_with_supervisors_settings():
    study, notes = read(*GA, {"MODEL_NAME": "sup"})
    assert study == {
        "system": {"procs": 10, "ppn": 10},
        "study": {"algorithm": "ga", "mode": "batch", "experiment_numbering": "supervisor",
                  "model_name": "sup", "name": "sup", "seed": 1,
                  "space": str(CFG / "GA" / "data" / "sup_param_space_ga.json"),
                  "budget": 16 + 4 * 8},   # the first generation, then 4 of 0.5 * 16 children
        "algorithm": {"generations": 5, "population_size": 16, "strategy": "mu_plus_lambda",
                      "offspring_proportion": 0.5, "mutation_prob": 0.8,
                      "crossover_prob": 0.2, "mutation_indpb": 0.5, "crossover_indpb": 0.5,
                      "tournament_size": 4},
        "model": {"benchmark_timeout": 3600.0},
        "failure": {"on_failure": "abort"},     # IGNORE_ERRORS=0: model.sh aborts the workflow
    }
    assert notes == []
    validate(configuration.load(study, environ={}))


def test_the_environment_wins_where_the_files_say_name_colon_dash():
    env = {"MODEL_NAME": "sup", "PROCS": "3", "POPULATION_SIZE": "4", "STRATEGY": "simple",
           "NUM_ITERATIONS": "2", "SH_TIMEOUT": "90", "BENCHMARK_TIMEOUT": "-1",
           "IGNORE_ERRORS": "1", "PARAM_SET_FILE": "other.json"}
    study, _ = read(*GA, env)
    assert study["system"]["procs"] == 3 and study["study"]["timeout"] == 90.0
    assert study["algorithm"]["population_size"] == 4
    assert study["algorithm"]["strategy"] == "simple" and study["study"]["budget"] == 4 * 2
    assert "model" not in study                         # BENCHMARK_TIMEOUT=-1: none
    # cfg-sys-1.sh sets IGNORE_ERRORS=0 unconditionally, as in Supervisor: the file wins
    assert study["failure"] == {"on_failure": "abort"}
    # "${PARAM_SET_FILE:-...}" keeps the environment's value, a name relative to the cwd
    assert study["study"]["space"] == str(Path("other.json").resolve())


def test_the_mlrmbo_files_are_an_mbo_study_and_name_what_they_set_in_vain():
    study, notes = read(*MBO, {"MODEL_NAME": "sup"})
    assert study["system"] == {"procs": 3, "ppn": 1, "walltime": "00:60:00",
                               "queue": "debug-scaling"}
    assert study["study"]["algorithm"] == "mbo" and study["study"]["budget"] == 180
    assert study["study"]["space"] == str(CFG / "mlrMBO" / "data" / "sup_nightly.R")
    assert study["algorithm"] == {"max_iterations": 3, "design_size": 5, "propose_points": 5}
    assert notes == ["TURBINE_RESIDENT_WORK_WORKERS = '1' is not used: emews lays out its own "
                     "ranks", "RESIDENT_WORK_RANKS = '1' is not used: emews lays out its own "
                     "ranks", "MAX_CONCURRENT_EVALUATIONS = '1' is not used: no Supervisor "
                     "workflow reads it"]
    validate(configuration.load(study, environ={}))


def test_each_variable_is_named_by_the_file_that_set_it_and_its_value_as_bash_left_it():
    settings = Settings({"PROCS": "7", "HOME": "/home/u", "PATH": os.environ["PATH"]})
    path = CFG / "mlrMBO" / "test" / "cfg-sys-nightly.sh"
    settings.read(path)
    assert settings.values["RESIDENT_WORK_RANKS"] == "5"      # $(( PROCS - 2 ))
    assert settings.where["RESIDENT_WORK_RANKS"] == str(path)
    assert settings.values["SH_TIMEOUT"] == "" and "PROCS" not in settings.where  # unchanged


def write(tmp_path, text, name="cfg-sys-1.sh"):
    path = tmp_path / "GA" / "test" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_text(tmp_path, text, environ=None):
    """The study of a cfg-sys file holding ``text`` and a cfg-prm file with a GA setting."""
    prm = write(tmp_path, "NUM_ITERATIONS=2\nPARAM_SET_FILE=space.json\n", "cfg-prm-1.sh")
    return read(write(tmp_path, text), prm,
                {"MODEL_NAME": "sup", "PATH": os.environ["PATH"], **(environ or {})})


@pytest.mark.parametrize("text, environ, expected", [
    ("A='x y'\nB=\"$A\"z\\ w\nexport PROJECT=${B}\n", {}, {"project": "x yz w"}),
    ("PPN=${PPN-4}\nexport QUEUE=${QUEUE:=q}; WALLTIME=$QUEUE\n", {"PPN": ""},
     {"walltime": "q", "queue": "q"}),
    ("PROCS=$(( (PPN + 1) * 3 / 2 % 5 - -1 ))\n", {"PPN": "3"}, {"procs": 2, "ppn": 3}),
    ("N=2\nif [ $N = 1 ]; then PROCS=1\nelif [[ -z \"${X:-}\" ]]; then PROCS=5\n"
     "  if [ -n \"$N\" ]\n  then\n    PPN=6\n  fi\nelse PROCS=9\nfi\n", {}, {"procs": 5, "ppn": 6}),
    ("export PROCS # the environment's\nset -x\n: ${PPN:=2}\necho PPN: $PPN\nset +x\n",
     {"PROCS": "4"}, {"procs": 4, "ppn": 2}),
    ("PROCS=$(echo 3)\nPPN=`expr $PROCS - 1`\nfor n in 1 2; do WALLTIME=0$n:00:00; done\n", {},
     {"procs": 3, "ppn": 2, "walltime": "02:00:00"}),
], ids=["quotes", "defaults", "arithmetic", "if-elif-else", "export-colon-echo-set",
        "commands-and-loops"])
def test_the_files_are_read_as_bash_reads_them(tmp_path, text, environ, expected):
    study, _ = read_text(tmp_path, text, environ)
    assert study["system"] == expected


def test_a_helper_variable_the_files_refer_to_is_no_unknown_setting(tmp_path):
    study, _ = read_text(tmp_path, "POP_DEFAULT=8\nPOPULATION_SIZE=${POPULATION_SIZE:-"
                                   "${POP_DEFAULT}}\n")
    assert study["algorithm"]["population_size"] == 8


@pytest.mark.parametrize("text, rule", [
    ("PROCS=$UNSET_ANYWHERE\n", "(exit 1: {path}: line 1: UNSET_ANYWHERE: unbound variable)"),
    ("\nsource ./no-such-env.sh\n", "(exit 1: {path}: line 2: ./no-such-env.sh: No such file"),
    ("PROCS=2\nfalse\n", "under bash (exit 1)"),
    ("if [ 1 = 1 ]; then\nPROCS=2\n", "syntax error: unexpected end of file"),
    ("PPN=4\nif [ $PPN = 4 ]; then\n  echo \"PPN must not be\" $PPN\n  exit 1\nfi\n",
     "the cfg file refuses these settings under bash (exit 1: PPN must not be 4)"),
    ("echo unrelated\nPPN=1\nexit 0\n", "under bash (exit 0: unrelated)"),
    ("\nexport BENCHMARK_DIR=/data\n", ": BENCHMARK_DIR: is not a variable emews maps from the "
     "cfg files of Supervisor's GA workflow (APP_PYTHONPATH, BENCHMARK_TIMEOUT"),
    ("PROCS=four\n", ": PROCS: must be an integer, got 'four'"),
], ids=["unset", "source", "failing-command", "if-unclosed", "exit", "exit-early",
        "unknown-variable", "not-an-int"])
def test_a_file_that_fails_or_sets_what_emews_cannot_use_is_one_error_naming_it(
        tmp_path, text, rule):
    path = tmp_path / "GA" / "test" / "cfg-sys-1.sh"
    with pytest.raises(ConfigError) as error:
        read_text(tmp_path, text)
    message = str(error.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert rule.format(path=path) in message


def test_the_model_chain_refuses_a_model_it_does_not_know_as_supervisor_does():
    with pytest.raises(ConfigError) as error:
        read(*GA, {"MODEL_NAME": "nosuch"})
    assert str(error.value) == (f"{GA[1]}: the cfg file refuses these settings under bash "
                                "(exit 1: Invalid model- nosuch)")
    with pytest.raises(ConfigError, match=r"cfg-prm-1.sh: line 26: MODEL_NAME: unbound"):
        read(*GA, {})


def test_the_files_run_in_bash_never_in_the_emews_process(tmp_path):
    before = (os.getcwd(), dict(os.environ))
    study, _ = read_text(tmp_path, f"touch {tmp_path}/ran\ncd /\nexport PROCS=2 PPN=1\n")
    assert study["system"] == {"procs": 2, "ppn": 1}
    assert (tmp_path / "ran").exists()                  # bash ran the file's command
    assert (os.getcwd(), dict(os.environ)) == before    # and emews is as it was


def test_cfg_files_of_a_workflow_emews_does_not_run_are_refused(tmp_path):
    for path in GA:
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "cp-leaveout" / "test").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a cfg file of Supervisor's cp-leaveout workflow; "
                                          "emews runs those of GA, mlrMBO, grid, random, uq-noise, "
                                          "async-search, pbt and upf"):
        read(GA[0], shutil.copy(GA[1], tmp_path / "cp-leaveout" / "test"), {"MODEL_NAME": "sup"})
    with pytest.raises(ConfigError, match="must be a cfg file of Supervisor's GA workflow"):
        read(GA[0], shutil.copy(GA[0], tmp_path / "prm.sh"), {"MODEL_NAME": "sup"})


# --- the command line --------------------------------------------------------------------------

def emews(*args, cwd, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PROCS", "MODEL_NAME", "CANDLE_DATA_DIR", "PMI_RANK", "PMI_SIZE")}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "emews", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_dry_run_prints_the_study_as_toml_that_emews_loads(tmp_path):
    done = emews("run", "--supervisor-cfg", *map(str, MBO), "--dry-run", cwd=tmp_path,
                 MODEL_NAME="sup")
    assert done.returncode == 0, done.stderr
    printed = tomllib.loads(done.stdout)
    assert printed == read(*MBO, {"MODEL_NAME": "sup"})[0]
    assert f"#   {MBO[0]}" in done.stdout and "# Note: RESIDENT_WORK_RANKS" in done.stdout
    (tmp_path / "study.toml").write_text(done.stdout)
    validate(configuration.load(tmp_path / "study.toml", environ={}))
    assert not (tmp_path / "experiments").exists()
    done = emews("run", "--supervisor-cfg", *map(str, MBO), "--dry-run", "--budget", "12",
                 "--set", "algorithm.n_trees=20", cwd=tmp_path, MODEL_NAME="sup")
    printed = tomllib.loads(done.stdout)   # the command line's settings win, as in a run
    assert printed["study"]["budget"] == 12 and printed["algorithm"]["n_trees"] == 20


@pytest.mark.parametrize("args, message", [
    (["--dry-run"], "emews run --supervisor-cfg: takes CFG_SYS CFG_PRM"),
    (["--supervisor-cfg", *map(str, GA), "study.toml"], "emews run --supervisor-cfg: takes"),
    (["--supervisor-cfg", *map(str, GA)], f"{GA[1]}: the cfg file refuses these settings under "
     f"bash (exit 1: {GA[1]}: line 26: MODEL_NAME: unbound variable)"),
])
def test_bad_use_is_one_line_and_exit_status_2(tmp_path, args, message):
    done = emews("run", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0]
    assert done.stderr.startswith(f"emews: error: {message}")
    assert not (tmp_path / "experiments").exists()


def run_study(files, tmp_path, *options, **env):
    """``emews run --supervisor-cfg FILES`` of the toy model ``sup`` (stored under
    ``tmp_path/data``, Supervisor's numbering); returns the run and its stored rows."""
    done = emews("run", "--supervisor-cfg", *map(str, files), *options, cwd=tmp_path,
                 MODEL_NAME="sup", MODEL_PYTHON_DIR=str(MODELS),
                 CANDLE_DATA_DIR=str(tmp_path / "data"), **env)
    assert done.returncode == 0, done.stdout + done.stderr
    store = SQLiteStore(tmp_path / "data" / "sup" / "EXP000" / "results.db", create=False)
    try:
        return done, store.rows()
    finally:
        store.close()


@pytest.mark.slow
def test_the_ga_study_of_the_cfg_files_runs_under_mpiexec_and_stores_every_evaluation(tmp_path):
    # Supervisor's test scripts name the model and let the environment shrink the study.
    space = tmp_path / "space.json"
    space.write_text(json.dumps([
        {"name": "x", "type": "float", "lower": 0.0, "upper": 4.0, "sigma": "0.4"},
        {"name": "dense", "type": "categorical", "element_type": "string",
         "values": ["8 4", "16 8", "32 16"]}]))
    done = emews("run", "--supervisor-cfg", *map(str, GA), cwd=tmp_path, MODEL_NAME="sup",
                 PROCS="3", POPULATION_SIZE="4", NUM_ITERATIONS="3", PARAM_SET_FILE=str(space),
                 MODEL_PYTHON_DIR=str(MODELS), CANDLE_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stdout + done.stderr
    expdir = tmp_path / "data" / "sup" / "EXP000"     # Supervisor's numbering
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        rows = store.rows()
    finally:
        store.close()
    assert 4 <= len(rows) <= 4 + 2 * 2                 # 3 generations: 4, then 2 children each
    for row in rows:
        assert row["status"] == "done" and row["rank"] in (1, 2)
        assert 0 <= row["params"]["x"] <= 4 and row["params"]["dense"] in ("8 4", "16 8", "32 16")
        assert row["result"] == pytest.approx(row["params"]["x"])   # the toy's last val_loss
    config = json.loads((expdir / "config.json").read_text())
    assert config["study"]["algorithm"] == "ga" and config["algorithm"]["generations"] == 3
    assert config["failure"]["on_failure"] == "abort" and config["system"]["procs"] == 3


UPF = (CFG / "upf" / "test" / "cfg-sys-1.sh", CFG / "upf" / "test" / "upf-1.txt")


@pytest.mark.slow
def test_a_cfg_sys_file_and_a_upf_are_a_sweep_of_its_points_that_runs_under_mpiexec(tmp_path):
    study, notes = read(*UPF, {"MODEL_NAME": "sup"})
    assert study == {
        "system": {"procs": 2, "ppn": 2, "walltime": "1:00:00"},
        "study": {"algorithm": "sweep", "mode": "async", "experiment_numbering": "supervisor",
                  "model_name": "sup", "name": "sup"},
        "algorithm": {"file": str(UPF[1])},
        "model": {"benchmark_timeout": 3600.0}}
    _, rows = run_study(UPF, tmp_path, PROCS="3")
    points = [json.loads(line) for line in UPF[1].read_text().splitlines()]
    assert [row["params"] for row in rows] == points
    assert [(row["status"], row["result"]) for row in rows] == \
        [("done", pytest.approx(point["x"])) for point in points]


GRID = (CFG / "grid" / "test" / "cfg-sys-1.sh", CFG / "grid" / "test" / "cfg-prm-1.sh")


@pytest.mark.slow
def test_the_grid_workflow_is_a_sweep_of_every_combination_of_its_settings_json(tmp_path):
    study, notes = read(*GRID, {"MODEL_NAME": "sup"})
    table = json.loads((CFG / "grid" / "data" / "settings.json").read_text())["parameters"]
    assert study["study"]["algorithm"] == "sweep" and study["study"]["mode"] == "async"
    assert study["algorithm"] == {"params": table} and "space" not in study["study"]
    assert [n.split(" = ")[0] for n in notes] == ["PROPOSE_POINTS", "MAX_ITERATIONS",
                                                  "PARAM_SET_FILE"]
    _, rows = run_study(GRID, tmp_path)
    assert sorted((r["params"]["x"], r["params"]["epochs"]) for r in rows) == sorted(
        (x, epochs) for x in table["x"] for epochs in table["epochs"])
    assert all(r["status"] == "done" and r["result"] == pytest.approx(r["params"]["x"])
               for r in rows)


def test_a_grid_settings_file_without_a_table_of_values_is_one_error_naming_it(tmp_path):
    root = tmp_path / "grid"
    shutil.copytree(CFG / "grid", root)
    (root / "data" / "settings.json").write_text('{"parameters": {"x": []}}')
    with pytest.raises(ConfigError, match=r"grid/data/settings.json: parameters: must be an "
                                          r"object of non-empty lists"):
        read(root / "test" / "cfg-sys-1.sh", root / "test" / "cfg-prm-1.sh", {"MODEL_NAME": "s"})


ASYNC = (CFG / "async-search" / "test" / "cfg-sys-1.sh",
         CFG / "async-search" / "test" / "cfg-prm-1.sh")


@pytest.mark.slow
def test_the_async_search_workflow_is_skopts_forest_search_on_its_problem_file(tmp_path):
    study, notes = read(*ASYNC, {"MODEL_NAME": "sup"})
    assert study["study"] | {"space": None} == {
        "algorithm": "gp", "mode": "async", "experiment_numbering": "supervisor",
        "model_name": "sup", "name": "sup", "budget": 6, "seed": 0, "space": None}
    assert study["study"]["space"] == str(CFG / "async-search" / "python" / "as_problem.py")
    assert study["algorithm"] == {"base_estimator": "RF", "acq_func": "LCB",
                                  "acq_optimizer": "sampling", "n_initial_points": 3,
                                  "n_jobs": 1}
    assert [n.split(" = ")[0] for n in notes] == ["NUM_BUFFER", "MAX_THRESHOLD"]
    _, rows = run_study(ASYNC, tmp_path)
    assert len(rows) == 6 and {row["status"] for row in rows} == {"done"}
    for row in rows:
        params = row["params"]
        assert 0 <= params["x"] <= 4 and params["epochs"] in (1, 2, 3)
        assert params["dense"] in ("8 4", "16 8")
        assert row["result"] == pytest.approx(params["x"])


@pytest.mark.slow
def test_the_mlrmbo_study_of_the_cfg_files_runs_its_budget_under_mpiexec(tmp_path):
    done, rows = run_study(MBO, tmp_path, "--set", "algorithm.n_trees=20", PROCS="3",
                           MAX_BUDGET="6", DESIGN_SIZE="4", PROPOSE_POINTS="2")
    assert "emews: note: RESIDENT_WORK_RANKS = '1' is not used" in done.stderr
    assert len(rows) == 6 and {row["status"] for row in rows} == {"done"}
    for row in rows:
        assert 0 <= row["params"]["x"] <= 4 and row["params"]["epochs"] == 3
        assert row["result"] == pytest.approx(row["params"]["x"])


def test_supervisor_s_sif_form_names_the_study_after_the_image(tmp_path):
    # cfg-prm-gdrp-1.sh in Supervisor's GA tests: MODEL_NAME=/path/GraphDRP.sif with
    # CANDLE_MODEL_TYPE=SINGULARITY; workflow.sh's CANDLE_IMAGE=NONE means none
    study, _ = read_text(tmp_path, "", {"MODEL_NAME": "/images/GraphDRP.sif",
                                        "CANDLE_MODEL_TYPE": "SINGULARITY",
                                        "CANDLE_IMAGE": "NONE"})
    assert study["study"]["model_name"] == "/images/GraphDRP.sif"
    assert study["study"]["name"] == "GraphDRP"
    assert study["model"] == {"type": "SINGULARITY"}
