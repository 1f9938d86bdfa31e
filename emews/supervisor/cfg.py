"""CANDLE/Supervisor's ``cfg-sys-*.sh`` and ``cfg-prm-*.sh`` files as an emews study.

Supervisor's workflows ``source`` the two files into their bash; emews does the same in a
``bash`` subprocess (never in its own process, and never with ``eval``): ``set -a -e -u``, as
Supervisor's ``workflow.sh`` runs them (every assignment exported, a failing command or an
unset variable an error), the cfg-sys file first, then the cfg-prm file, and reads the
environment back after each. ``EMEWS_PROJECT_ROOT`` defaults to the directory above the
cfg-prm file's (Supervisor's ``workflows/NAME/test/`` layout) and ``WORKFLOWS_ROOT`` to the one
above that. A file that fails (an ``exit``, an unset variable, a failing command) is one error
naming the file, with bash's exit status and the last line it printed (an ``echo`` before
``exit 1``, or bash's own ``FILE: line N: ...``).

:func:`read` maps what the files set to a study (a dict shaped like the TOML file)::

    PROCS, PPN, WALLTIME, QUEUE, PROJECT      [system] procs, ppn, walltime, queue, project
    MODEL_NAME                                [study] model_name and name (EXPnnn numbering;
                                              with CANDLE_MODEL_TYPE=SINGULARITY, the name
                                              is the image's, MODEL_NAME=/path/NAME.sif)
    CANDLE_MODEL_TYPE, CANDLE_IMAGE (NONE:    [model] type, image
        none), MODEL_ACTION                   [model] action
    PARAM_SET_FILE, SEED, MODEL_RETURN, ...   [study] space, seed, model_return, ...
    SH_TIMEOUT; BENCHMARK_TIMEOUT             [study] timeout; [model] benchmark_timeout
    IGNORE_ERRORS (0; 1)                      [failure] on_failure ("abort"; "fail"), as
                                              Supervisor's model.sh aborts the workflow or not
    GA: NUM_ITERATIONS, POPULATION_SIZE,      algorithm "ga", batch mode: [algorithm]
        STRATEGY (GA_STRATEGY), MUT_PROB, ... generations, population_size, strategy, ...;
                                              budget: the most points those generations hold
    mlrMBO: MAX_BUDGET, MAX_ITERATIONS,       algorithm "mbo", batch mode: [study] budget;
        DESIGN_SIZE, PROPOSE_POINTS           [algorithm] max_iterations, design_size, ...
    upf: a UPF file (JSON lines) instead of   algorithm "sweep" of that file, async mode (every
        a cfg-prm file                        point at once, as Supervisor's upf workflow)
    grid: EMEWS_PROJECT_ROOT/data/settings.json   algorithm "sweep", async mode: every
        ({"parameters": {NAME: [values]}})    combination of the values (strategy all_perm)
    async-search: MAX_EVALS, INIT_SIZE,       algorithm "gp" (skopt's Optimizer with a random
        RANDOM_SEED, N_JOBS                   forest, LCB, sampling, as async-search.py),
                                              async mode, on python/as_problem.py: budget,
                                              n_initial_points, seed, n_jobs

The workflow is the cfg-prm file's (``workflows/GA``, ``mlrMBO``, ``grid`` or ``async-search``), else the one
whose variables the files set; a second file whose name does not end in ``.sh`` is the UPF of
Supervisor's upf workflow (``workflow.sh SITE EXPID CFG_SYS UPF``). A variable emews reads
from the environment itself (``PROCS``, ``MODEL_NAME``, ...) takes the environment's value
first, as emews's precedence says, so the study printed is the study run. A variable the files
set that would change the study and that emews does not map is refused, never ignored; the few
that change nothing under emews (:data:`UNUSED`) are named in the study's notes. A variable
that the files' own text refers to (a helper such as ``POP_DEFAULT``) is no setting.
"""

import json
import os
import re
import subprocess
from pathlib import Path

from ..config import SCHEMA
from ..errors import ConfigError
from ..validation import Number, check

REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
SOURCE = 'set -aeu\nwhile [ $# -gt 0 ]; do source "$1" >&2; shift; done\nprintf "%s\\0" "{mark}"\nenv -0\n'
MARK = "emews: the cfg files were read"
BASH_OWN = {"SHLVL", "_", "PWD", "OLDPWD"}

# Variable: (table, key, kind). Kinds: int, float, str, path, timeout (-1, 0 or empty: none).
COMMON = {
    "PROCS": ("system", "procs", "int"), "PPN": ("system", "ppn", "int"),
    "WALLTIME": ("system", "walltime", "str"), "QUEUE": ("system", "queue", "str"),
    "PROJECT": ("system", "project", "str"),
    "MODEL_NAME": ("study", "model_name", "str"), "MODEL_RETURN": ("study", "model_return", "str"),
    "CANDLE_MODEL_IMPL": ("study", "impl", "str"), "CANDLE_DATA_DIR": ("study", "data_dir", "path"),
    "PARAM_SET_FILE": ("study", "space", "path"), "SEED": ("study", "seed", "int"),
    "SH_TIMEOUT": ("study", "timeout", "timeout"),
    "BENCHMARK_TIMEOUT": ("model", "benchmark_timeout", "timeout"),
    "FRAMEWORK": ("model", "framework", "str"), "MODEL_PYTHON_DIR": ("model", "python_dir", "path"),
    "MODEL_PYTHON_SCRIPT": ("model", "python_script", "str"),
    "CANDLE_MODEL_TYPE": ("model", "type", "str"), "CANDLE_IMAGE": ("model", "image", "path"),
    "MODEL_ACTION": ("model", "action", "str"),
    "APP_PYTHONPATH": ("model", "app_pythonpath", "str"),
    "CANDLE_DEFAULT_MODEL_FILE": ("model", "default_model", "path"),
}
WORKFLOWS = {
    "GA": ("ga", {
        "NUM_ITERATIONS": ("algorithm", "generations", "int"),
        "POPULATION_SIZE": ("algorithm", "population_size", "int"),
        "GA_STRATEGY": ("algorithm", "strategy", "str"),
        "STRATEGY": ("algorithm", "strategy", "str"),   # what Supervisor's GA reads; wins
        "OFFSPRING_PROPORTION": ("algorithm", "offspring_proportion", "float"),
        "MUT_PROB": ("algorithm", "mutation_prob", "float"),
        "CX_PROB": ("algorithm", "crossover_prob", "float"),
        "MUT_INDPB": ("algorithm", "mutation_indpb", "float"),
        "CX_INDPB": ("algorithm", "crossover_indpb", "float"),
        "TOURNSIZE": ("algorithm", "tournament_size", "int"),
        "INIT_PARAMS_FILE": ("algorithm", "population_file", "path"),
    }),
    "mlrMBO": ("mbo", {
        "MAX_BUDGET": ("study", "budget", "int"),
        "MAX_ITERATIONS": ("algorithm", "max_iterations", "int"),
        "DESIGN_SIZE": ("algorithm", "design_size", "int"),
        "PROPOSE_POINTS": ("algorithm", "propose_points", "int"),
    }),
    "grid": ("sweep", {}),
    "async-search": ("gp", {
        "MAX_EVALS": ("study", "budget", "int"),
        "INIT_SIZE": ("algorithm", "n_initial_points", "int"),
        "RANDOM_SEED": ("study", "seed", "int"),
        "N_JOBS": ("algorithm", "n_jobs", "int"),
    }),
}
# Supervisor's async-search.py: skopt's Optimizer on its python/as_problem.py, asked whenever
# results come back
ASYNC_SEARCH = {"base_estimator": "RF", "acq_func": "LCB", "acq_optimizer": "sampling"}
ASYNC_SEARCH_SPACE = Path("python", "as_problem.py")
# Supervisor's grid workflow reads its grid from here, and its cfg-prm file not at all
GRID_FILE = Path("data", "settings.json")
GRID_IGNORES = ("PROPOSE_POINTS", "MAX_CONCURRENT_EVALUATIONS", "MAX_ITERATIONS", "MAX_BUDGET",
                "DESIGN_SIZE", "PARAM_SET_FILE")
# Supervisor's GA workflow.sh: ": ${NUM_ITERATIONS:=3} ${POPULATION_SIZE:=3} ..."
GA_DEFAULTS = {"NUM_ITERATIONS": "3", "POPULATION_SIZE": "3"}
OTHER_WORKFLOWS = ("random", "upf", "cp1", "cp-leaveout", "uq-noise",
                   "dense-noise", "csg", "cmp-cv", "simple_uq")
UNUSED = {  # set by Supervisor's files, and changing nothing under emews
    "NUM_BUFFER": "emews's async driver hands each free worker a point itself",
    "MAX_THRESHOLD": "emews's async driver hands each free worker a point itself",
    "TURBINE_RESIDENT_WORK_WORKERS": "emews lays out its own ranks",
    "RESIDENT_WORK_RANKS": "emews lays out its own ranks",
    "MAX_CONCURRENT_EVALUATIONS": "no Supervisor workflow reads it",
    "MAX_CONCURRET_EVALUATIONS": "no Supervisor workflow reads it",
}
# Supervisor's workflow.sh: ${CANDLE_IMAGE:=NONE}, no image (MODEL_NAME names the SIF)
NO_IMAGE = {("CANDLE_IMAGE", "NONE"), ("CANDLE_IMAGE", "None")}
FROM_ENVIRONMENT = {s.env for table in SCHEMA.values() for s in table.values() if s.env}


def sourced(paths, environ):
    """The environment after a ``bash`` subprocess sources ``paths`` in order (see the module's
    docstring), or a ConfigError naming the last of ``paths`` when bash fails."""
    try:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c",
                               SOURCE.replace("{mark}", MARK), "bash", *map(str, paths)],
                              env=environ, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise ConfigError(str(paths[-1]), "reading a cfg file needs bash on PATH", None,
                          show_value=False) from None
    out, said = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    if done.returncode or not out.startswith(MARK + "\0"):
        last = [line for line in said.splitlines() if line.strip()][-1:]
        raise ConfigError(str(paths[-1]), "the cfg file refuses these settings under bash (exit "
                          f"{done.returncode}{': ' + last[0].strip() if last else ''})", None,
                          show_value=False)
    return dict(entry.split("=", 1) for entry in out[len(MARK) + 1:].split("\0") if "=" in entry)


class Settings:
    """What the cfg files set: ``values`` (the environment they leave), ``where`` (the file that
    set or changed each variable) and ``referenced`` (the names their text refers to)."""

    def __init__(self, environ):
        self.environ = environ
        self.values = dict(environ)
        self.where = {}
        self.referenced = set()
        self.paths = []

    def get(self, name):
        """The value of ``name`` after the files (``None``: unset)."""
        return self.values.get(name)

    def read(self, path):
        """Source ``path`` after the files read so far."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(str(path), "the cfg file must be readable UTF-8 text",
                              getattr(exc, "strerror", None) or str(exc),
                              show_value=False) from None
        self.paths.append(path)
        self.referenced |= set(REFERENCE.findall(text))
        after = sourced(self.paths, self.environ)
        for name, value in after.items():
            if name not in BASH_OWN and self.values.get(name) != value:
                self.where[name] = str(path)
        self.values = after


def workflow(cfg_prm, namespace):
    """``(Supervisor's workflow name, emews algorithm, its variables)`` for these files."""
    project = Path(namespace.get("EMEWS_PROJECT_ROOT")).name
    if project in WORKFLOWS:
        return (project, *WORKFLOWS[project])
    if project in OTHER_WORKFLOWS:
        *others, last = WORKFLOWS
        raise ConfigError(str(cfg_prm), f"is a cfg file of Supervisor's {project} workflow; "
                          f"emews runs those of {', '.join(others)} and {last} (and upf's: "
                          "CFG_SYS and a UPF file)", project)
    found = [name for name, (_, variables) in WORKFLOWS.items()
             if set(variables) & set(namespace.where)]
    if len(found) != 1:
        raise ConfigError(str(cfg_prm), "must be a cfg file of Supervisor's GA workflow "
                          "(NUM_ITERATIONS, POPULATION_SIZE, ...) or its mlrMBO workflow "
                          "(MAX_BUDGET, DESIGN_SIZE, ...)", found or None)
    return (found[0], *WORKFLOWS[found[0]])


def read(cfg_sys, cfg_prm, environ=None):
    """The study that Supervisor's two cfg files describe: ``(study, notes)``; ``study`` is a
    dict shaped like the TOML file, ``notes`` the lines worth telling (variables unused)."""
    environ = dict(os.environ if environ is None else environ)
    root = Path(environ.get("EMEWS_PROJECT_ROOT") or Path(cfg_prm).resolve().parent.parent)
    environ.setdefault("EMEWS_PROJECT_ROOT", str(root))
    environ.setdefault("WORKFLOWS_ROOT", str(root.parent))
    namespace = Settings(environ)
    namespace.read(cfg_sys)
    upf = not str(cfg_prm).endswith(".sh")
    if upf:
        name, algorithm, variables = "upf", "sweep", {}
    else:
        namespace.read(cfg_prm)
        name, algorithm, variables = workflow(cfg_prm, namespace)
    unused = dict(UNUSED)
    if name == "grid":
        unused.update((var, f"Supervisor's grid workflow does not read it (its grid is "
                            f"{GRID_FILE})") for var in GRID_IGNORES)
    mapping = {var: to for var, to in {**COMMON, **variables}.items() if var not in unused}
    known = {*mapping, *unused, "IGNORE_ERRORS"}
    notes = [f"{var} = {namespace.values[var]!r} is not used: {why}"
             for var, why in unused.items() if var in namespace.where]
    for var, where in namespace.where.items():
        if var not in known and var not in namespace.referenced:
            raise ConfigError(f"{where}: {var}", "is not a variable emews maps from the cfg "
                              f"files of Supervisor's {name} workflow "
                              f"({', '.join(sorted(known - set(unused)))})",
                              namespace.values[var])
    options = {}
    if name == "upf":
        options = {"file": str(Path(cfg_prm).resolve())}
    elif name == "grid":
        options = {"params": grid(Path(namespace.get("EMEWS_PROJECT_ROOT")) / GRID_FILE)}
    elif name == "async-search":
        options = dict(ASYNC_SEARCH)
    study = {"system": {}, "study": {"algorithm": algorithm,
                                     "mode": "batch" if name in ("GA", "mlrMBO") else "async",
                                     "experiment_numbering": "supervisor"},
             "algorithm": options, "model": {}, "failure": {}}
    if name == "async-search":
        study["study"]["space"] = str(Path(namespace.get("EMEWS_PROJECT_ROOT"))
                                      / ASYNC_SEARCH_SPACE)
    for var, (table, key, kind) in mapping.items():
        value = environ.get(var) if var in FROM_ENVIRONMENT and environ.get(var) else \
            namespace.get(var) or (GA_DEFAULTS.get(var) if name == "GA" else None)
        if value not in (None, "") and (var, value) not in NO_IMAGE:
            where = namespace.where.get(var, f"environment variable {var}")
            converted = convert(value, kind, f"{where}: {var}")
            if converted is not None:
                study[table][key] = converted
    ignore = namespace.get("IGNORE_ERRORS")
    if ignore not in (None, ""):
        where = f"{namespace.where.get('IGNORE_ERRORS', 'environment variable')}: IGNORE_ERRORS"
        study["failure"]["on_failure"] = "abort" if convert(ignore, "int", where) == 0 else "fail"
    if "model_name" in study["study"]:
        study["study"]["name"] = study["study"]["model_name"]
        if study["model"].get("type") == "SINGULARITY":  # workflow.sh: basename $MODEL_NAME .sif
            study["study"]["name"] = Path(study["study"]["model_name"]).name.removesuffix(".sif")
    if name == "GA":
        study["study"]["budget"] = ga_budget(study["algorithm"])
    return {table: values for table, values in study.items() if values}, notes


def grid(path):
    """The table of values per parameter of Supervisor's grid workflow (its
    ``data/settings.json``: ``{"parameters": {NAME: [values], ...}}``)."""
    try:
        settings = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(str(path), "the grid workflow's settings file must be readable",
                          exc.strerror) from None
    except ValueError as exc:
        raise ConfigError(str(path), "must be JSON", str(exc), show_value=False) from None
    table = settings.get("parameters") if isinstance(settings, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, list) and v for v in table.values()):
        raise ConfigError(f"{path}: parameters", "must be an object of non-empty lists of "
                          "values, one per parameter", table)
    return table


def ga_budget(options):
    """The most points the GA's generations can hold: its stopping rule under emews."""
    population, generations = options["population_size"], options["generations"]
    if options.get("strategy", "mu_plus_lambda") == "simple":
        return population * generations
    offspring = max(1, round(options.get("offspring_proportion", 0.5) * population))
    return population + (generations - 1) * offspring


def convert(value, kind, where):
    """``value`` (text) as the setting's kind; ``None`` for an empty or negative timeout."""
    if kind in ("int", "float", "timeout"):
        rule = Number(integer=kind == "int")
        number = check(where, rule, rule.from_text(value))
        return None if kind == "timeout" and number <= 0 else number
    return str(Path(value).resolve()) if kind == "path" else value


def render(study, notes, files):
    """The study as the text of an emews TOML file, with the files and notes as comments."""
    from ..launch.importer import _key, _toml

    lines = ["# The study of CANDLE/Supervisor's cfg files (emews run --supervisor-cfg):"]
    lines += [f"#   {Path(path).resolve()}" for path in files]
    lines += [f"# Note: {note}" for note in notes]
    for table, values in study.items():
        lines += ["", f"[{table}]"]
        lines += [f"{_key(key)} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"
