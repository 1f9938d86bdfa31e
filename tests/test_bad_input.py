"""The mistakes users make, through the real ``emews`` command: each one is one ``emews:
error:`` line naming the file or field, the rule and the value, exit status 2, no traceback,
and nothing written where it should not be."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import emews

from conftest import SUPPORT

ROOT = Path(emews.__file__).parent.parent
GOOD = {"study": {"objective": "toy_models:quadratic", "budget": 2}}
RULE = "must name one directory (not empty, '.' or '..', no '/', at most 255 bytes)"


def emews(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def one_error_line(done):
    """The one error line of a refused command."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("emews: error: "), done.stderr
    return lines[0][len("emews: error: "):]


@pytest.mark.parametrize("argv, expected", [
    (["--name", "../escape"], f"[study].name: {RULE}, got '../escape'"),
    (["--name", ""], f"[study].name: {RULE}, got ''"),
    (["--name", "n" * 300], f"[study].name: {RULE}, got '{'n' * 40}...'"),
    (["--set", "study.expid=a/b"], f"[study].expid: {RULE}, got 'a/b'"),
    (["--data-dir", "a-file/data"], "{tmp_path}/a-file/data/study: the experiment directory "
     "must be creatable there (Not a directory)"),
    (["--budget", "ten"], "emews run: argument --budget: invalid int value: 'ten'"),
])
def test_a_study_s_mistake_is_one_line_and_makes_nothing(study, tmp_path, argv, expected):
    path = study(**GOOD)
    (tmp_path / "a-file").write_text("a file where a directory should be\n")
    before = sorted(p.name for p in tmp_path.parent.iterdir())
    line = one_error_line(emews("run", path, *argv, cwd=tmp_path))
    assert line == expected.format(tmp_path=tmp_path)
    assert not (tmp_path / "experiments").exists() and not (tmp_path / "escape").exists()
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run emews as a user who may not write there")
def test_a_data_directory_the_user_may_not_write_is_one_line(study):
    shared = Path(tempfile.mkdtemp(prefix="emews-ro-"))  # /tmp/pytest-of-root is private
    try:
        shared.chmod(0o755)
        path = study(**GOOD)
        shutil.copy(path, shared / "study.toml")
        shutil.copy(path.parent / "space.json", shared / "space.json")
        readonly = shared / "readonly"
        readonly.mkdir()
        readonly.chmod(0o555)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-m", "emews", "run", "study.toml", "--data-dir", str(readonly)], cwd=shared,
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, HOME=str(shared), PYTHONPATH=f"{SUPPORT}:{ROOT}"))
        line = one_error_line(done)
        assert line == (f"{readonly}/study: the experiment directory must be creatable there "
                        "(Permission denied)")
        assert list(readonly.iterdir()) == []
    finally:
        shutil.rmtree(shared)


BASE = 'objective = "toy_models:quadratic"\nbudget = 2\nspace = "space.json"\n'
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0}]
KNOWN = ("algorithm, app, batch_size, budget, constraints, data_dir, directions, "
         "experiment_numbering, expid, gpus_per_eval, impl, isolate, max_iterations, max_time, "
         "mode, model_name, model_return, name, no_limit, nodes_per_eval, objective, objectives, "
         "patience, pruner, ranks_per_eval, reference_point, replica_objective, "
         "replica_seed_param, replicas, seed, space, step_budget, target, timeout, tol")
MISTAKES = {   # name: (the study file's text, its space file's, the arguments, the error line)
    "a misspelled setting": (
        "[study]\n" + BASE + "budjet = 3\n", SPACE, [],
        f"s.toml: [study].budjet: is not a setting of [study]; known: {KNOWN}; did you mean "
        "'budget'?"),
    "a misspelled --set": (
        "[study]\n" + BASE, SPACE, ["--set", "study.budjet=3"],
        f"command line: study.budjet: is not a setting of [study]; known: {KNOWN}; did you "
        "mean 'budget'?"),
    "a negative budget": (
        "[study]\n" + BASE.replace("2", "-3"), SPACE, [],
        "s.toml: [study].budget: must be positive, got -3"),
    "a fractional budget": (
        "[study]\n" + BASE.replace("2", "2.5"), SPACE, [],
        "s.toml: [study].budget: must be an integer, got 2.5"),
    "an unknown mode": (
        "[study]\n" + BASE + 'mode = "sometimes"\n', SPACE, [],
        "s.toml: [study].mode: must be one of ['async', 'batch', 'sequential'], got 'sometimes'"),
    "procs as a word": (
        '[system]\nprocs = "four"\n[study]\n' + BASE, SPACE, [],
        "s.toml: [system].procs: must be an integer, got 'four'"),
    "no procs": (
        "[system]\nprocs = 0\n[study]\n" + BASE, SPACE, [],
        "s.toml: [system].procs: must be positive, got 0"),
    "no slots": (
        "[system]\nslots_per_worker = 0\n[study]\n" + BASE, SPACE, [],
        "s.toml: [system].slots_per_worker: must be positive, got 0"),
    "an unknown table": (
        "[study]\n" + BASE + "[stuff]\na = 1\n", SPACE, [],
        "s.toml: [stuff]: must be one of the tables ['algorithm', 'failure', 'model', 'pruner', "
        "'service', 'study', 'system']"),
    "a misspelled table": (
        "[studdy]\n" + BASE, SPACE, [],
        "s.toml: [studdy]: must be one of the tables ['algorithm', 'failure', 'model', "
        "'pruner', 'service', 'study', 'system']; did you mean 'study'?"),
    "a table twice": (
        "[study]\n" + BASE + "[study\n", SPACE, [],
        "s.toml: must be valid TOML (Cannot declare ('study',) twice (at line 5, column 7))"),
    "an unknown algorithm": (
        "[study]\n" + BASE + 'algorithm = "nosuch"\n', SPACE, [],
        "s.toml: [study].algorithm: must be one of ['auto', 'bohb', 'ga', 'ga_async', 'gp', "
        "'mbo', 'nsga2', 'nsga2_async', 'nsga3', 'nsga3_async', 'optuna', 'pbt', 'random', "
        "'sweep'], a "
        "dotted path such as 'package.module:Class', or an EQ/Py module (no module 'nosuch' in "
        "{tmp}, {support}), got 'nosuch'"),
    "an unknown algorithm option": (
        "[study]\n" + BASE + "[algorithm]\nnosuchoption = 1\n", SPACE, [],
        "s.toml: [algorithm].nosuchoption: is not an option of Auto (options: thresholds), got 1"),
    "the seed among the algorithm's options": (
        "[study]\n" + BASE + "[algorithm]\nseed = 1\n", SPACE, [],
        "s.toml: [algorithm].seed: is a setting of [study], not of [algorithm], got 1"),
    "an objective's missing module": (
        "[study]\n" + BASE.replace("toy_models:quadratic", "nosuchmod:train"), SPACE, [],
        "s.toml: [study].objective: must be an importable 'module:attribute' path (no module "
        "'nosuchmod' in {tmp}, {support}), got 'nosuchmod:train'"),
    "an objective's missing function": (
        "[study]\n" + BASE.replace("quadratic", "nosuchfunc"), SPACE, [],
        "s.toml: [study].objective: must be an importable 'module:attribute' path (module "
        "'toy_models' ({support}/toy_models.py) has no attribute 'nosuchfunc'), got "
        "'toy_models:nosuchfunc'"),
    "an objective without its function": (
        "[study]\n" + BASE.replace(":quadratic", ""), SPACE, [],
        "s.toml: [study].objective: must name a callable, got 'toy_models'"),
    "an unknown model kind": (
        "[study]\n" + BASE + 'impl = "weird"\n', SPACE, [],
        "s.toml: [study].impl: must be one of ['py', 'app', 'container', 'echo'], got 'weird'"),
    "a timeout as a word": (
        "[study]\n" + BASE + 'timeout = "soon"\n', SPACE, [],
        "s.toml: [study].timeout: must be a number, got 'soon'"),
    "no stopping rule": (
        "[study]\n" + BASE.replace("budget = 2\n", ""), SPACE, [],
        "[study]: needs a stopping rule (one of budget, max_iterations, patience, target, "
        "max_time, step_budget), or --no-limit to run until stopped"),
    "an unknown failure action": (
        "[study]\n" + BASE + '[failure]\non_failure = "retry"\n', SPACE, [],
        "s.toml: [failure].on_failure: must be one of ['fail', 'abort'], got 'retry'"),
    "an unknown pruner": (
        "[study]\n" + BASE + 'pruner = "nosuch"\n', SPACE, [],
        "s.toml: [study].pruner: must be one of ['auto', 'none', 'median', 'percentile', "
        "'asha', 'hyperband'], got 'nosuch'"),
    "a storage that is not PostgreSQL": (
        '[system]\nstorage = "mysql://x"\n[study]\n' + BASE, SPACE, [],
        "s.toml: [system].storage: must be a postgresql:// URL (or empty for the experiment's "
        "SQLite results.db), got 'mysql://x'"),
    "a missing mpiexec": (
        '[system]\nmpiexec = "/no/such/mpiexec"\n[study]\n' + BASE, SPACE, [],
        "s.toml: [system].mpiexec: must name a program that exists, got '/no/such/mpiexec'"),
    "a missing app program": (
        "[study]\n" + BASE.replace('objective = "toy_models:quadratic"',
                                   'impl = "app"\napp = ["/no/such/prog", "--epochs", "3"]'),
        SPACE, [], "s.toml: [study].app: must start with a program that exists, got "
        "'/no/such/prog'"),
    "a reference point for one objective": (
        "[study]\n" + BASE + "reference_point = [1.0]\n", SPACE, [],
        "s.toml: [study].reference_point: applies to a study of several objectives or "
        "constraints only, got [1.0]"),
    "too few directions": (
        "[study]\n" + BASE + 'objectives = ["a", "b"]\ndirections = ["minimize"]\n', SPACE, [],
        "s.toml: [study].directions: must give one direction per objective (2: a, b), got "
        "['minimize']"),
    "an unknown direction": (
        "[study]\n" + BASE + 'objectives = ["a", "b"]\ndirections = ["minimize", "up"]\n',
        SPACE, [], "s.toml: [study].directions: must each be one of minimize, maximize, got 'up'"),
    "a target for two objectives": (
        "[study]\n" + BASE + 'objectives = ["a", "b"]\ntarget = 1.0\n', SPACE, [],
        "s.toml: [study].target: cannot be used in a study of several objectives or "
        "constraints (a, b): it has no single value to reach, got 1.0"),
    "GPUs on nodes without any": (
        "[study]\n" + BASE + "gpus_per_eval = 4\n", SPACE, [],
        "s.toml: [study].gpus_per_eval: asks for GPUs, but [system] gpus_per_node is 0, got "
        "4.0"),
    "a missing space file": (
        "[study]\n" + BASE.replace("space.json", "nospace.json"), SPACE, [],
        "{tmp}/nospace.json: the search-space file must be readable, got 'No such file or "
        "directory'"),
    "a space that is not JSON": (
        "[study]\n" + BASE, "[{", [],
        "{tmp}/space.json:1: must be valid JSON (Expecting property name enclosed in double "
        "quotes)"),
    "an empty space": (
        "[study]\n" + BASE, [], [],
        "{tmp}/space.json: must be a non-empty JSON list of parameters, got 'list'"),
    "bounds the wrong way round": (
        "[study]\n" + BASE, [dict(SPACE[0], lower=2, upper=-2)], [],
        "{tmp}/space.json: parameter #0 (x): lower <= upper must hold, got (2.0, -2.0)"),
    "an unknown parameter type": (
        "[study]\n" + BASE, [dict(SPACE[0], type="complex")], [],
        "{tmp}/space.json: parameter #0 (x).type: must be one of ['categorical', 'constant', "
        "'float', 'int', 'logical', 'ordered'], got 'complex'"),
    "a parameter twice": (
        "[study]\n" + BASE, SPACE * 2, [],
        "{tmp}/space.json: parameter names must be unique, got ['x']"),
    "a parameter without a name": (
        "[study]\n" + BASE, [{"type": "float", "lower": -1, "upper": 1}], [],
        "{tmp}/space.json: parameter #0.name: must be a non-empty string, got None"),
    "a categorical without values": (
        "[study]\n" + BASE, [{"name": "a", "type": "categorical", "values": []}], [],
        "{tmp}/space.json: parameter #0 (a).values: must be a non-empty list, got []"),
    "a negative bound on a log scale": (
        "[study]\n" + BASE, [dict(SPACE[0], lower=-1, log=True)], [],
        "{tmp}/space.json: parameter #0 (x).lower: must be > 0 on a log scale, got -1.0"),
    "a condition on an unknown parameter": (
        "[study]\n" + BASE, SPACE + [dict(SPACE[0], name="m", condition={"opt": ["sgd"]})], [],
        "{tmp}/space.json: m.condition: must test parameters of the space, got 'opt'"),
    "conditions in a cycle": (
        "[study]\n" + BASE, [dict(SPACE[0], name="a", condition={"b": {">": 0}}),
                             dict(SPACE[0], name="b", condition={"a": {">": 0}})], [],
        "{tmp}/space.json: conditions must not form a cycle, got ['a', 'b']"),
    "a condition on a value the parent lacks": (
        "[study]\n" + BASE, [{"name": "opt", "type": "categorical", "values": ["sgd", "adam"]},
                             dict(SPACE[0], condition={"opt": ["nadam"]})], [],
        "{tmp}/space.json: x.condition: must use values that opt takes, got 'nadam'"),
    "a forbidden clause on an unknown parameter": (
        "[study]\n" + BASE, {"parameters": SPACE, "forbidden": [{"y": [1]}]}, [],
        "{tmp}/space.json: forbidden[0]: must test parameters of the space, got 'y'"),
    "a --set without a value": (
        "[study]\n" + BASE, SPACE, ["--set", "study.budget"],
        "command line: --set study.budget: must be TABLE.KEY=VALUE"),
    "a --set of an unknown table": (
        "[study]\n" + BASE, SPACE, ["--set", "foo.bar=1"],
        "command line: foo.bar: must be TABLE.KEY with TABLE one of ['algorithm', 'failure', "
        "'model', 'pruner', 'service', 'study', 'system']"),
    "a missing study file": (
        "[study]\n" + BASE, SPACE, ["--", "nosuch.toml"],
        "nosuch.toml: the configuration file must be readable"),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_is_one_line_exit_status_2_and_writes_nothing(tmp_path, name):
    text, space, argv, expected = MISTAKES[name]
    (tmp_path / "s.toml").write_text(text)
    (tmp_path / "space.json").write_text(space if isinstance(space, str) else json.dumps(space))
    before = sorted(tmp_path.iterdir())
    line = one_error_line(emews("run", *(argv[1:] if argv[:1] == ["--"] else ["s.toml", *argv]),
                                cwd=tmp_path))
    assert line == expected.format(tmp=tmp_path, support=SUPPORT)
    assert sorted(tmp_path.iterdir()) == before


COMMANDS = {   # name: (the arguments, the error line), in a directory with s.toml, space.json
    "serve on a port past 65535": (
        ["serve", "s.toml", "--set", "service.port=99999"],
        "command line: service.port: must be from 0 to 65535, got 99999"),
    "serve on a negative port": (
        ["serve", "s.toml", "--set", "service.port=-1"],
        "command line: service.port: must be from 0 to 65535, got -1"),
    "run without a study": (["run"], "emews run: needs a CONFIG file or --resume EXPDIR"),
    "the status of a missing study": (
        ["status", "nosuch/EXP001"],
        "nosuch/EXP001: must be an experiment directory (EXPDIR/results.db); no such directory"),
    "show a missing study": (
        ["show", "nosuch/EXP001"],
        "nosuch/EXP001: must be an experiment directory (EXPDIR/results.db); no such directory"),
    "a report of a missing study": (
        ["report", "nosuch/EXP001"],
        "nosuch/EXP001: must be an experiment directory (EXPDIR/results.db); no such directory"),
    "stop a missing study": (
        ["stop", "nosuch/EXP001"], "nosuch/EXP001: must be an experiment directory (holding "
        "config.json)"),
    "resume a missing study": (
        ["run", "--resume", "nosuch/EXP001"],
        "nosuch/EXP001: --resume needs an experiment directory holding config.json"),
    "resume a directory that holds no study": (
        ["run", "--resume", "."], ".: --resume needs an experiment directory holding config.json"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_s_mistake_is_one_line_exit_status_2_and_writes_nothing(study, tmp_path,
                                                                           name):
    argv, expected = COMMANDS[name]
    study(name="s.toml", **GOOD)
    before = sorted(tmp_path.iterdir())
    assert one_error_line(emews(*argv, cwd=tmp_path)) == expected
    assert sorted(tmp_path.iterdir()) == before


RESUMES = {   # name: (the arguments after --resume EXPDIR, the error line)
    "another algorithm": (
        ["--set", "study.algorithm='ga'"], "--resume: [study].algorithm: must be the same as in "
        "the stored study (stored 'auto', now 'ga'); start a new study to change it"),
    "another space": (
        ["--space", "other.json"], "--resume: the search space's content: must be the same as in "
        "the stored study (stored '{old}', now '{new}'); start a new study to change it"),
    "a misspelled setting": (
        ["--set", "study.budjet=3"], f"command line: study.budjet: is not a setting of [study]; "
        f"known: {KNOWN}; did you mean 'budget'?"),
    "a budget as a word": (
        ["--budget", "ten"], "emews run: argument --budget: invalid int value: 'ten'"),
    "a negative budget": (
        ["--budget", "-1"], "command line: study.budget: must be positive, got -1"),
    "another objective": (
        ["--set", "study.objective='toy_models:flaky'"], "--resume: [study].objective: must be "
        "the same as in the stored study (stored 'toy_models:quadratic', now "
        "'toy_models:flaky'); start a new study to change it"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished study of 2 evaluations: its experiment directory (a copy for each test)."""
    home = tmp_path_factory.mktemp("finished")
    (home / "s.toml").write_text('[system]\nprocs = 2\npool = "inprocess"\n[study]\n' + BASE)
    (home / "space.json").write_text(json.dumps(SPACE + [
        {"name": "n", "type": "int", "lower": 0, "upper": 3},
        {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]))
    done = emews("run", "s.toml", cwd=home)
    assert done.returncode == 0, done.stderr
    return home


@pytest.mark.parametrize("name", sorted(RESUMES))
def test_a_resume_s_mistake_is_one_line_and_loses_nothing(finished, tmp_path, name):
    argv, expected = RESUMES[name]
    home = tmp_path / "home"
    shutil.copytree(finished, home)
    (home / "other.json").write_text(json.dumps([dict(SPACE[0], upper=3.0)]))
    expdir = home / "experiments/s/EXP001"
    def files():   # but the lock, which each command takes
        return {path: path.read_bytes() for path in sorted(expdir.rglob("*"))
                if path.is_file() and path.name != "lock"}

    before = files()
    line = one_error_line(emews("run", "--resume", expdir, *argv, cwd=home))
    digest = [hashlib.sha256((home / name).read_bytes()).hexdigest()[:12]
              for name in ("space.json", "other.json")]
    assert line == expected.format(old=digest[0], new=digest[1])
    assert files() == before and expdir / "results.db" in before
