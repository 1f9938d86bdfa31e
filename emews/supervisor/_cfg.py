"""CANDLE/Supervisor's ``cfg-sys-*.sh`` and ``cfg-prm-*.sh`` files as an emews study.

docs/src/coming-from-supervisor.md and docs/src/supervisor.md say what is read and how: a
``bash`` subprocess sources the files (:func:`sourced`; never ``eval``), and :func:`read` maps
the variables they leave (:class:`Settings`) to a study.
"""

import copy
import math
import os
import re
import subprocess
from pathlib import Path

from .._config import SCHEMA
from .._errors import ConfigError
from .._validation import Choice, Number, check, parse_json, read_text

REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
# Supervisor's utils.sh helpers that cfg files call, written for emews: a name without a
# leading / is looked up on SUPERVISOR_PATH (the first readable file wins)
HELPERS = r'''
__emews_find() {
  if [[ $1 == /* ]]; then [[ -r $1 ]] && REPLY=$1 && return 0
  else
    local dir IFS=:
    for dir in ${SUPERVISOR_PATH:-}; do [[ -r $dir/$1 ]] && REPLY=$dir/$1 && return 0; done
  fi
  echo "find_cfg: $1: not found on SUPERVISOR_PATH (${SUPERVISOR_PATH:-})" >&2; return 1
}
find_cfg() { while [[ ${1:-} == -v ]]; do shift; done; __emews_find "$1"; }
source_cfg() { while [[ ${1:-} == -v ]]; do shift; done; __emews_find "$1" && source "$REPLY"; }
sv_path_append() { SUPERVISOR_PATH=${SUPERVISOR_PATH:-}${SUPERVISOR_PATH:+:}$1; }
sv_path_prepend() { SUPERVISOR_PATH=$1${SUPERVISOR_PATH:+:}${SUPERVISOR_PATH:-}; }
log() { echo "$*" >&2; }
debug() { :; }; trace() { :; }; show() { :; }; log_path() { :; }; which_check() { :; }
'''
SOURCE = (HELPERS + 'set -{flags}\nwhile [ $# -gt 0 ]; do source "$1" >&2; shift; done\n'
          'printf "%s\\0" "{mark}"\nenv -0\n')
MARK = "emews: the cfg files were read"
BASH_OWN = {"SHLVL", "_", "PWD", "OLDPWD", "REPLY", "SUPERVISOR_PATH"}

# Variable: (table, key, kind). Kinds: int, float, str, path, file (a path; without a leading
# /, looked up on SUPERVISOR_PATH first), timeout (-1, 0 or empty: none), model_type
# (BENCHMARKS or BENCHMARK; SINGULARITY).
COMMON = {
    "PROCS": ("system", "procs", "int"), "PPN": ("system", "ppn", "int"),
    "WALLTIME": ("system", "walltime", "str"), "QUEUE": ("system", "queue", "str"),
    "PROJECT": ("system", "project", "str"),
    "MODEL_NAME": ("study", "model_name", "str"), "MODEL_RETURN": ("study", "model_return", "str"),
    "CANDLE_MODEL_IMPL": ("study", "impl", "str"), "CANDLE_DATA_DIR": ("study", "data_dir", "path"),
    "PARAM_SET_FILE": ("study", "space", "file"), "SEED": ("study", "seed", "int"),
    "SH_TIMEOUT": ("study", "timeout", "timeout"),
    "BENCHMARK_TIMEOUT": ("model", "benchmark_timeout", "timeout"),
    "FRAMEWORK": ("model", "framework", "str"), "MODEL_PYTHON_DIR": ("model", "python_dir", "path"),
    "MODEL_PYTHON_SCRIPT": ("model", "python_script", "str"),
    "CANDLE_MODEL_TYPE": ("model", "type", "model_type"),
    "CANDLE_IMAGE": ("model", "image", "path"),
    "MODEL_ACTION": ("model", "action", "str"),
    "APP_PYTHONPATH": ("model", "app_pythonpath", "str"),
    "CANDLE_DEFAULT_MODEL_FILE": ("model", "default_model", "file"),
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
        "INIT_PARAMS_FILE": ("algorithm", "population_file", "file"),
    }),
    "mlrMBO": ("mbo", {
        "MAX_BUDGET": ("study", "budget", "int"),
        "MAX_ITERATIONS": ("algorithm", "max_iterations", "int"),
        "DESIGN_SIZE": ("algorithm", "design_size", "int"),
        "PROPOSE_POINTS": ("algorithm", "propose_points", "int"),
    }),
    "grid": ("sweep", {}),
    "random": ("random", {}),
    "uq-noise": ("sweep", {}),
    "async-search": ("gp", {
        "MAX_EVALS": ("study", "budget", "int"),
        "INIT_SIZE": ("algorithm", "n_initial_points", "int"),
        "RANDOM_SEED": ("study", "seed", "int"),
        "N_JOBS": ("algorithm", "n_jobs", "int"),
    }),
    "pbt": ("pbt", {}),
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
# the Swift of Supervisor's uq-noise workflow: noise levels [0:10] * 3.0 on x and y, one trial
UQ_NOISE = {"x_noise_level": [3.0 * level for level in range(11)],
            "y_noise_level": [3.0 * level for level in range(11)], "epochs": [1]}
# Supervisor's pbt workflow, python/tc1_pbt.py: TC1PBTWorker.ready (every 2 epochs),
# truncation_select (bottom and top 20 %), update (lr * 0.8 or 1.2); its rank 0 is a datastore
PBT = {"perturbation_interval": 2, "quantile": 0.2, "explore": "perturb",
       "resample_probability": 0.0, "factors": [0.8, 1.2]}
# the [algorithm] options of the workflows that fix them (grid's and upf's come from files)
FIXED_OPTIONS = {"uq-noise": {"params": UQ_NOISE}, "async-search": ASYNC_SEARCH, "pbt": PBT}
PBT_MODEL = "tc1"   # its scripts/local_submit.cfg: tc1_pbt.py PARAMS_FILE EXP_DIR tc1 EXP_ID
# what a workflow's cfg files set that the workflow does not read, and why
IGNORED = {name: dict.fromkeys(GRID_IGNORES, f"Supervisor's {name} workflow does not read it "
                                             f"(it reads {GRID_FILE})")
           for name in ("grid", "random")}   # both read data/settings.json
IGNORED["uq-noise"] = dict.fromkeys(("CACHE_DIR", "XCORR_DATA_DIR"),   # left from cp-leaveout
                                    "Supervisor's uq-noise workflow does not read it")
IGNORED["pbt"] = {"EXP_DIR": "emews makes the experiment directory (CANDLE_DATA_DIR/MODEL_NAME/"
                             "EXPnnn)"}
OTHER_WORKFLOWS = ("cp1", "cp-leaveout", "one-shot", "dense-noise", "csg", "cmp-cv",
                   "simple_uq", "xcorr", "cross-study", "async-horovod", "async-local",
                   "test-horovod")
UNUSED = {  # set by Supervisor's files, and changing nothing under emews
    "NUM_BUFFER": "emews's async driver hands each free worker a point itself",
    "MAX_THRESHOLD": "emews's async driver hands each free worker a point itself",
    "TURBINE_RESIDENT_WORK_WORKERS": "emews lays out its own ranks",
    "RESIDENT_WORK_RANKS": "emews lays out its own ranks",
    "MAX_CONCURRENT_EVALUATIONS": "no Supervisor workflow reads it",
    "MAX_CONCURRET_EVALUATIONS": "no Supervisor workflow reads it",
}
MODEL_TYPES = {"BENCHMARKS": "BENCHMARK"}   # Supervisor's word; emews's
MODEL_TYPE = Choice(("BENCHMARK", "SINGULARITY"))
# Supervisor's workflow.sh: ${CANDLE_IMAGE:=NONE}, no image (MODEL_NAME names the SIF)
NO_IMAGE = {("CANDLE_IMAGE", "NONE"), ("CANDLE_IMAGE", "None")}
FROM_ENVIRONMENT = {s.env for table in SCHEMA.values() for s in table.values() if s.env}


def sourced(paths, environ, flags="aeu", what="the cfg file"):
    """The environment after a ``bash`` subprocess sources ``paths`` in order, with
    :data:`HELPERS`, under ``set -FLAGS`` (``-aeu``, as Supervisor's workflow.sh), or a
    ConfigError naming the last of ``paths`` when bash fails."""
    script = SOURCE.replace("{mark}", MARK).replace("{flags}", flags)
    try:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script, "bash",
                               *map(str, paths)],
                              env=environ, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise ConfigError(str(paths[-1]), "reading a cfg file needs bash on PATH", None,
                          show_value=False) from None
    out, said = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    if done.returncode or not out.startswith(MARK + "\0"):
        last = [line for line in said.splitlines() if line.strip()][-1:]
        raise ConfigError(str(paths[-1]), f"{what} refuses these settings under bash (exit "
                          f"{done.returncode}{': ' + last[0].strip() if last else ''})", None,
                          show_value=False)
    return dict(entry.split("=", 1) for entry in out[len(MARK) + 1:].split("\0") if "=" in entry)


class Settings:
    """What the cfg files set: ``values`` (the environment they leave), ``where`` (the file that
    set or changed each variable) and ``referenced`` (the names their text refers to)."""

    def __init__(self, environ):
        self.environ, self.values = environ, dict(environ)
        self.where, self.referenced, self.paths = {}, set(), []

    def read(self, path):
        """Source ``path`` after the files read so far."""
        text = read_text(path, "the cfg file")
        self.paths.append(path)
        self.referenced |= set(REFERENCE.findall(text))
        after = sourced(self.paths, self.environ)
        for name, value in after.items():
            if name not in BASH_OWN and self.values.get(name) != value:
                self.where[name] = str(path)
        self.values = after


SUPPORTED = (*WORKFLOWS, "upf")
SUPPORTED_TEXT = f"{', '.join(WORKFLOWS)} and upf"   # as a sentence's list


def check_workflow(name, where):
    """``name`` if emews runs Supervisor's workflow of that name; else one error at ``where``."""
    if name in SUPPORTED:
        return name
    why = ("does not fit emews's ask/tell model (see the supervisor docs)"
           if name in OTHER_WORKFLOWS else "is not one of Supervisor's workflows emews knows")
    raise ConfigError(where, f"names Supervisor's workflow {name!r}, which {why}; emews runs "
                      f"{SUPPORTED_TEXT}", name, show_value=False)


def workflow(cfg_prm, namespace, name=None):
    """``(Supervisor's workflow name, emews algorithm, its variables)`` for these files:
    ``name``'s if given, else the project directory's, else the one whose variables they set."""
    project = name or Path(namespace.values.get("EMEWS_PROJECT_ROOT")).name
    if name or project in WORKFLOWS:
        check_workflow(project, str(cfg_prm))
        return (project, *WORKFLOWS.get(project, ("sweep", {})))
    if project in OTHER_WORKFLOWS:
        raise ConfigError(str(cfg_prm), f"is a cfg file of Supervisor's {project} workflow; "
                          f"emews runs those of {SUPPORTED_TEXT} (upf's: CFG_SYS and a UPF "
                          "file)", project)
    found = [name for name, (_, variables) in WORKFLOWS.items()
             if set(variables) & set(namespace.where)]
    if len(found) != 1:
        raise ConfigError(str(cfg_prm), "must be a cfg file of Supervisor's GA workflow "
                          "(NUM_ITERATIONS, POPULATION_SIZE, ...) or its mlrMBO workflow "
                          "(MAX_BUDGET, DESIGN_SIZE, ...)", found or None)
    return (found[0], *WORKFLOWS[found[0]])


def read(cfg_sys, cfg_prm=None, environ=None, name=None):
    """The study that Supervisor's cfg files describe: ``(study, notes)``; ``study`` is a
    dict shaped like the TOML file, ``notes`` the lines worth telling (variables unused).
    ``cfg_prm`` ``None``: ``cfg_sys`` is the one cfg file of the ``supervisor`` tool's form.
    ``name`` names the workflow (else :func:`workflow` finds it)."""
    environ = dict(os.environ if environ is None else environ)
    root = Path(environ.get("EMEWS_PROJECT_ROOT")
                or Path(cfg_prm or cfg_sys).resolve().parent.parent)
    environ.setdefault("EMEWS_PROJECT_ROOT", str(root))
    environ.setdefault("WORKFLOWS_ROOT", str(root.parent))
    namespace = Settings(environ)
    namespace.read(cfg_sys)
    if cfg_prm is not None and not str(cfg_prm).endswith(".sh"):
        name, algorithm, variables = ("pbt", "pbt", {}) if name == "pbt" else \
            ("upf", "sweep", {})
    else:
        if cfg_prm is not None:
            namespace.read(cfg_prm)
        name, algorithm, variables = workflow(cfg_prm or cfg_sys, namespace, name)
    if name == "upf" and cfg_prm is None:
        variables = {"UPF": ("algorithm", "file", "file")}
    unused = {**UNUSED, **IGNORED.get(name, {})}
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
    project = Path(namespace.values.get("EMEWS_PROJECT_ROOT"))
    options = copy.deepcopy(FIXED_OPTIONS.get(name, {}))
    if name == "upf" and cfg_prm is not None:
        options = {"file": str(Path(cfg_prm).resolve())}
    elif name == "grid":
        options = {"params": grid(project / GRID_FILE)}
    study = {"system": {}, "study": {"algorithm": algorithm,
                                     "mode": "batch" if name in ("GA", "mlrMBO") else "async",
                                     "experiment_numbering": "supervisor"},
             "algorithm": options, "model": {}, "failure": {}}
    if name == "async-search":
        study["study"]["space"] = str(project / ASYNC_SEARCH_SPACE)
    if name == "random":
        study["study"]["space"] = str(project / GRID_FILE)
        study["study"]["budget"] = random_samples(project / GRID_FILE)
    search = namespace.values.get("SUPERVISOR_PATH") or ""
    for var, (table, key, kind) in mapping.items():
        value = environ.get(var) if var in FROM_ENVIRONMENT and environ.get(var) else \
            namespace.values.get(var) or (GA_DEFAULTS.get(var) if name == "GA" else None)
        if value not in (None, "") and (var, value) not in NO_IMAGE:
            where = namespace.where.get(var, f"environment variable {var}")
            converted = convert(value, kind, f"{where}: {var}", search)
            if converted is not None:
                study[table][key] = converted
    if ignore := namespace.values.get("IGNORE_ERRORS"):
        where = f"{namespace.where.get('IGNORE_ERRORS', 'environment variable')}: IGNORE_ERRORS"
        study["failure"]["on_failure"] = "abort" if convert(ignore, "int", where) == 0 else "fail"
    if name == "pbt":
        if cfg_prm is not None:
            study["study"]["space"] = str(Path(cfg_prm).resolve())
        pbt_settings(study, cfg_prm or cfg_sys,
                     f"{namespace.where.get('PROCS', 'environment variable')}: PROCS")
    if "model_name" in study["study"]:
        study["study"]["name"] = study["study"]["model_name"]
        if study["model"].get("type") == "SINGULARITY":  # workflow.sh: basename $MODEL_NAME .sif
            study["study"]["name"] = Path(study["study"]["model_name"]).name.removesuffix(".sif")
    if name == "GA":
        study["study"]["budget"] = ga_budget(study["algorithm"])
    if name == "upf" and "file" not in study["algorithm"]:
        raise ConfigError(str(cfg_sys), "must name the UPF file of Supervisor's upf workflow "
                          "(UPF=FILE)", None, show_value=False)
    return {table: values for table, values in study.items() if values}, notes


def pbt_settings(study, where, procs_where):
    """Complete the study of Supervisor's pbt workflow as docs/src/supervisor.md says; its
    budget is twice the segments its members train (an async member may go back to a donor's
    step: the search ends by itself once every member has trained them all)."""
    from .._space import Constant, Space

    space_file = study["study"].get("space")
    if not space_file:
        raise ConfigError(str(where), "must come with the pbt workflow's parameter file "
                          "(emews supervisor SITE EXP_ID SITE.cfg PARAMS_FILE, or "
                          "PARAM_SET_FILE)", None, show_value=False)
    epochs = {p.name: p for p in Space.from_file(space_file).params}.get("epochs")
    if not isinstance(epochs, Constant) or not isinstance(epochs.value, int) \
            or isinstance(epochs.value, bool) or epochs.value < 1:
        raise ConfigError(f"{space_file}: epochs", "must be a constant whole number of 1 or "
                          "more (the epochs each member of the pbt workflow trains)",
                          getattr(epochs, "value", None), show_value=epochs is not None)
    procs = study["system"].get("procs")
    if procs is None or procs < 3:
        raise ConfigError(procs_where, "must be 3 or more for the pbt workflow (a "
                          "population of PROCS - 1, at least 2)", procs)
    options = study["algorithm"]
    options["population_size"], options["max_steps"] = procs - 1, epochs.value
    segments = (procs - 1) * math.ceil(epochs.value / options["perturbation_interval"])
    study["study"].setdefault("budget", 2 * segments)
    study["study"].setdefault("model_name", PBT_MODEL)


def find(name, search):
    """Where Supervisor's ``find_cfg`` finds ``name``: itself if absolute, else the first
    readable ``DIR/name`` of ``search`` (``SUPERVISOR_PATH``); ``None`` if none is."""
    candidates = [Path(name)] if os.path.isabs(name) else \
        [Path(directory, name) for directory in filter(None, search.split(":"))]
    return next((path for path in candidates if os.access(path, os.R_OK)), None)


def settings_json(path, workflow):
    """The JSON object of Supervisor's ``data/settings.json`` of ``workflow`` (grid, random)."""
    settings = parse_json(read_text(path, f"the {workflow} workflow's settings file"), path)
    return settings if isinstance(settings, dict) else {}


def grid(path):
    """The table of values per parameter of Supervisor's grid workflow (its
    ``data/settings.json``: ``{"parameters": {NAME: [values], ...}}``)."""
    table = settings_json(path, "grid").get("parameters")
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


def convert(value, kind, where, search=""):
    """``value`` (text) as the setting's kind; ``None`` for an empty or negative timeout. A
    ``file`` without a leading ``/`` is looked up on ``search`` (``SUPERVISOR_PATH``) first,
    then taken from the current directory."""
    if kind in ("int", "float", "timeout"):
        rule = Number(integer=kind == "int")
        number = check(where, rule, rule.from_text(value))
        return None if kind == "timeout" and number <= 0 else number
    if kind == "model_type":
        return check(where, MODEL_TYPE, MODEL_TYPES.get(value, value))
    if kind == "file":
        return str((find(value, search) or Path(value)).resolve())
    return str(Path(value).resolve()) if kind == "path" else value


def random_samples(path):
    """``samples.num[0]`` of the random workflow's ``data/settings.json``: the points it draws."""
    samples = settings_json(path, "random").get("samples")
    num = samples.get("num") if isinstance(samples, dict) else None
    if not (isinstance(num, list) and num and isinstance(num[0], int) and num[0] > 0):
        raise ConfigError(f"{path}: samples.num", "must be a list whose first value is the "
                          "positive number of points to draw", num)
    return num[0]


def render(study, notes, files):
    """The study as the text of an emews TOML file, with the files and notes as comments."""
    from ..launch._importer import _key, _toml

    lines = ["# The study of CANDLE/Supervisor's cfg files (emews run --supervisor-cfg):"]
    lines += [f"#   {Path(path).resolve()}" for path in files]
    lines += [f"# Note: {note}" for note in notes]
    for table, values in study.items():
        lines += ["", f"[{table}]"]
        lines += [f"{_key(key)} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"
