"""CANDLE/Supervisor's cfg-sys-*.sh and cfg-prm-*.sh files as an emews study
(emews.supervisor.cfg, ``emews run --supervisor-cfg``): parsed, never run.

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

from emews import config as configuration
from emews.errors import ConfigError
from emews.store import Store
from emews.study import validate
from emews.supervisor.cfg import Namespace, read

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


def test_references_resolve_against_earlier_lines_then_the_environment():
    namespace = Namespace({"PROCS": "7", "HOME": "/home/u"})
    path = CFG / "mlrMBO" / "test" / "cfg-sys-nightly.sh"
    namespace.read(path)
    assert namespace.values["RESIDENT_WORK_RANKS"] == "5"      # $(( PROCS - 2 ))
    assert namespace.where["RESIDENT_WORK_RANKS"] == f"{path}:27"
    assert namespace.values["SH_TIMEOUT"] == ""


def write(tmp_path, text, name="cfg-sys-1.sh"):
    path = tmp_path / "GA" / "test" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_text(tmp_path, text, environ=None):
    """The study of a cfg-sys file holding ``text`` and a cfg-prm file with a GA setting."""
    prm = write(tmp_path, "NUM_ITERATIONS=2\nPARAM_SET_FILE=space.json\n", "cfg-prm-1.sh")
    return read(write(tmp_path, text), prm, {"MODEL_NAME": "sup", **(environ or {})})


@pytest.mark.parametrize("text, environ, expected", [
    ("A='x y'\nB=\"$A\"z\\ w\nexport PROJECT=${B}\n", {}, {"project": "x yz w"}),
    ("PPN=${PPN-4}\nexport QUEUE=${QUEUE:=q}; WALLTIME=$QUEUE\n", {"PPN": ""},
     {"walltime": "q", "queue": "q"}),
    ("PROCS=$(( (PPN + 1) * 3 / 2 % 5 - -1 ))\n", {"PPN": "3"}, {"procs": 2, "ppn": 3}),
    ("N=2\nif [ $N = 1 ]; then PROCS=1\nelif [[ -z \"${X:-}\" ]]; then PROCS=5\n"
     "  if [ -n \"$N\" ]\n  then\n    PPN=6\n  fi\nelse PROCS=9\nfi\n", {}, {"procs": 5, "ppn": 6}),
    ("export PROCS # the environment's\nset -x\n: ${PPN:=2}\necho PPN: $PPN\nset +x\n",
     {"PROCS": "4"}, {"procs": 4, "ppn": 2}),
    ("if [ \"$MODEL_NAME\" != sup ]; then PROCS=$(nproc) ; fi\nPROCS=3\n", {}, {"procs": 3}),
], ids=["quotes", "defaults", "arithmetic", "if-elif-else", "export-colon-echo-set",
        "untaken-branch"])
def test_the_forms_supervisors_files_use_are_read(tmp_path, text, environ, expected):
    if "$(nproc)" in text:   # a command substitution is refused even where it would not run
        with pytest.raises(ConfigError, match="command substitution is never run"):
            read_text(tmp_path, text, environ)
        return
    study, _ = read_text(tmp_path, text, environ)
    assert study["system"] == expected


def test_a_helper_variable_that_later_lines_use_is_no_unknown_setting(tmp_path):
    study, _ = read_text(tmp_path, "POP_DEFAULT=8\nPOPULATION_SIZE=${POPULATION_SIZE:-"
                                   "${POP_DEFAULT}}\n")
    assert study["algorithm"]["population_size"] == 8


@pytest.mark.parametrize("text, line, rule", [
    ("PROCS=$(nproc)\n", 1, "command substitution is never run"),
    ("PROCS=`nproc`\n", 1, "command substitution is never run"),
    ("\nsource ../env.sh\n", 2, "is not one of the forms emews reads"),
    ("echo hi | tee log\n", 1, "'|' is a shell operator"),
    ("X=1\nPROCS=${X%.sh}\n", 2, "only ${NAME}, ${NAME:-WORD}"),
    ("PROCS=$UNSET_ANYWHERE\n", 1, "$UNSET_ANYWHERE is set neither by the cfg files"),
    ("PROCS='4\n", 1, "every quote must be closed"),
    ("for x in 1 2; do PROCS=$x; done\n", 1, "is not one of the forms emews reads"),
    ("if [ 1 = 1 ]\nPROCS=2\nfi\n", 2, "'then' must follow an if or elif test"),
    ("if [ 1 -lt 2 ]; then PROCS=2; fi\n", 1, "the test must be A = B"),
    ("PROCS=$(( 2 ** 3 ))\n", 1, "arithmetic must be a well-formed expression"),
    ("\nexport BENCHMARK_DIR=/data\n", 2, "BENCHMARK_DIR: is not a variable emews maps from a "
     "GA cfg file (APP_PYTHONPATH, BENCHMARK_TIMEOUT"),
    ("PPN=4\nif [ $PPN = 4 ]; then\n  echo \"PPN must not be\" $PPN\n  exit 1\nfi\n", 4,
     "the cfg file refuses these settings (exit 1: PPN must not be 4)"),
    ("echo unrelated\nPPN=1\nexit 3\n", 3, "the cfg file refuses these settings (exit 3)"),
    ("PROCS=four\n", 1, "PROCS: must be an integer, got 'four'"),
], ids=["dollar-paren", "backtick", "source", "pipe", "other-brace-form", "unset", "quote",
        "loop", "then", "test", "arithmetic", "unknown-variable", "exit", "exit-alone",
        "not-an-int"])
def test_anything_else_is_one_error_naming_the_file_line_and_rule(tmp_path, text, line, rule):
    with pytest.raises(ConfigError) as error:
        read_text(tmp_path, text)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'GA' / 'test' / 'cfg-sys-1.sh'}:{line}")
    assert rule in message and "\n" not in message


def test_an_if_never_closed_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cfg-sys-1.sh: every if must be closed by fi"):
        read_text(tmp_path, "if [ a = a ]; then\nPROCS=2\n")


def test_the_model_chain_refuses_a_model_it_does_not_know_as_supervisor_does():
    with pytest.raises(ConfigError) as error:
        read(*GA, {"MODEL_NAME": "nosuch"})
    assert str(error.value) == (f"{GA[1]}:36: the cfg file refuses these settings (exit 1: "
                                "Invalid model- nosuch)")
    with pytest.raises(ConfigError, match=r"cfg-prm-1.sh:26: \$MODEL_NAME is set neither"):
        read(*GA, {})


def test_the_files_are_never_run(tmp_path):
    prm = write(tmp_path, f"PARAM_SET_FILE=\"$(touch {tmp_path}/ran)\"\n", "cfg-prm-1.sh")
    for text in (f"PROCS=`touch {tmp_path}/ran`\n", f"touch {tmp_path}/ran\n"):
        with pytest.raises(ConfigError):
            read(write(tmp_path, text), prm, {"MODEL_NAME": "sup"})
    assert not (tmp_path / "ran").exists()


def test_cfg_files_of_a_workflow_emews_does_not_run_are_refused(tmp_path):
    for path in GA:
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "random" / "test").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a cfg file of Supervisor's random workflow; "
                                          "emews runs those of GA and mlrMBO"):
        read(GA[0], shutil.copy(GA[1], tmp_path / "random" / "test"), {"MODEL_NAME": "sup"})
    with pytest.raises(ConfigError, match="must be a cfg file of Supervisor's GA workflow"):
        read(GA[0], shutil.copy(GA[0], tmp_path / "prm.sh"), {"MODEL_NAME": "sup"})


# --- the command line --------------------------------------------------------------------------

def emews(*args, cwd, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PROCS", "MODEL_NAME", "CANDLE_DATA_DIR", "PMI_RANK", "PMI_SIZE")}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "emews", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300)


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
    (["--supervisor-cfg", *map(str, GA)], f"{GA[1]}:26: $MODEL_NAME is set neither"),
])
def test_bad_use_is_one_line_and_exit_status_2(tmp_path, args, message):
    done = emews("run", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0]
    assert done.stderr.startswith(f"emews: error: {message}")
    assert not (tmp_path / "experiments").exists()


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
    store = Store(expdir / "results.db", create=False)
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


def test_a_cfg_sys_file_and_a_upf_are_a_sweep_of_its_points_that_runs_under_mpiexec(tmp_path):
    study, notes = read(*UPF, {"MODEL_NAME": "sup"})
    assert study == {
        "system": {"procs": 2, "ppn": 2, "walltime": "1:00:00"},
        "study": {"algorithm": "sweep", "mode": "async", "experiment_numbering": "supervisor",
                  "model_name": "sup", "name": "sup"},
        "algorithm": {"file": str(UPF[1])},
        "model": {"benchmark_timeout": 3600.0}}
    done = emews("run", "--supervisor-cfg", *map(str, UPF), cwd=tmp_path, MODEL_NAME="sup",
                 PROCS="3", MODEL_PYTHON_DIR=str(MODELS), CANDLE_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stdout + done.stderr
    store = Store(tmp_path / "data" / "sup" / "EXP000" / "results.db", create=False)
    try:
        rows = store.rows()
    finally:
        store.close()
    points = [json.loads(line) for line in UPF[1].read_text().splitlines()]
    assert [row["params"] for row in rows] == points
    assert [(row["status"], row["result"]) for row in rows] == \
        [("done", pytest.approx(point["x"])) for point in points]


def test_the_mlrmbo_study_of_the_cfg_files_runs_its_budget_under_mpiexec(tmp_path):
    done = emews("run", "--supervisor-cfg", *map(str, MBO), "--set", "algorithm.n_trees=20",
                 cwd=tmp_path, MODEL_NAME="sup", PROCS="3", MAX_BUDGET="6", DESIGN_SIZE="4",
                 PROPOSE_POINTS="2", MODEL_PYTHON_DIR=str(MODELS),
                 CANDLE_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "emews: note: RESIDENT_WORK_RANKS = '1' is not used" in done.stderr
    store = Store(tmp_path / "data" / "sup" / "EXP000" / "results.db", create=False)
    try:
        rows = store.rows()
    finally:
        store.close()
    assert len(rows) == 6 and {row["status"] for row in rows} == {"done"}
    for row in rows:
        assert 0 <= row["params"]["x"] <= 4 and row["params"]["epochs"] == 3
        assert row["result"] == pytest.approx(row["params"]["x"])
