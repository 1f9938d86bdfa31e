"""Study configuration: TOML files, Supervisor's environment variables and the command line.

The files' tables are those of :data:`TABLES` and ``[algorithm]`` (the algorithm's options);
a later file's tables win; docs/src/settings.md lists every setting. Precedence: command line,
then environment, then config file, then defaults.

:func:`load` reads and checks them once into a frozen :class:`Config`, one dataclass per table,
read as attributes (``spec.study.budget``); a process started later (an MPI rank, a resume)
reads its ``config.json`` back into an equal object.
"""

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

from .core import _pruners as pruners
from .core._criteria import OBJECTIVE, Criteria, objective_names
from .core._pareto import minimized
from .core._failure import ACTIONS as FAILURE_ACTIONS
from .pools import _requests as requests
from ._errors import ConfigError
from ._validation import (Choice, Each, Flag, Number, Strings, Text, check, parse_json,
                         read_text, read_toml)

IMPLEMENTATIONS = ("py", "app", "container", "echo")   # [study].impl: emews.evaluate's kinds
RETURN_EPOCHS = ("last", "min", "max")                 # [model].return_epoch
# [model].container_runtime (default: the first installed); emews.evaluate._container runs each
CONTAINER_RUNTIMES = ("singularity", "apptainer", "charliecloud", "podman-hpc", "podman",
                      "shifter")
CONTAINER_GPUS = ("auto", "nvidia", "amd", "none")     # [model].container_gpus
KINDS = {"int": Number(integer=True, words=True), "float": Number(words=True), "bool": Flag(),
         "str": Text(), "path": Text(), "list": Strings(), "numbers": Each(Number()),
         # a number of each evaluation's ranks or nodes, or of its GPUs; or "$name"
         "int | $param": requests.PerEval(requests.RULES["ranks_per_eval"]),
         "number | $param": requests.PerEval(requests.RULES["gpus_per_eval"])}


@dataclass(frozen=True)
class Setting:
    """One known setting: its kind, default, environment variable and rule."""

    kind: str
    default: object = None
    env: str | None = None
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def rule(self):
        """The :mod:`emews._validation` rule a value of this setting must follow."""
        if self.choices:
            return Choice(self.choices)
        if self.minimum is not None:
            return Number(integer=self.kind == "int", minimum=self.minimum,
                          maximum=self.maximum, words=True)
        return KINDS[self.kind]


def _setting(kind, default=None, env=None, choices=(), minimum=None, maximum=None):
    """A field of a table's dataclass: its default, and its :class:`Setting` as metadata."""
    setting = Setting(kind, default, env, choices, minimum, maximum)
    if isinstance(default, list):
        return field(default_factory=list, metadata={"setting": setting})
    return field(default=default, metadata={"setting": setting})


def _positive(kind, default=None, env=None):
    return _setting(kind, default, env, minimum=1 if kind == "int" else 0)


@dataclass(frozen=True)
class System:
    """``[system]``: how to run the study."""

    procs: int = _positive("int", 4, "PROCS")   # MPI ranks: rank 0 the master, the others work
    pool: str = _setting("str", "mpi", choices=("mpi", "inprocess"))
    slots_per_worker: int = _positive("int", 1)
    mpiexec: str | None = _setting("path")
    mpiexec_args: list = _setting("list", [])
    python_path: list = _setting("list", [])
    ppn: int | None = _positive("int", None, "PPN")
    walltime: str | None = _setting("str", None, "WALLTIME")
    drain_margin: str | None = _setting("str", None, "EMEWS_DRAIN_MARGIN")  # else 10 %
    queue: str | None = _setting("str", None, "QUEUE")
    project: str | None = _setting("str", None, "PROJECT")
    progress_interval: float = _positive("float", 2.0)
    quiet: bool = _setting("bool", False)
    langs_app: str | None = _setting("path", None, "EMEWS_LANGS_APP")
    gpus_per_node: int = _setting("int", 0, "GPUS_PER_NODE", minimum=0)
    cuda_offset: int = _setting("int", 0, "CANDLE_CUDA_OFFSET", minimum=0)
    storage: str | None = _setting("str", None, "EMEWS_STORAGE")  # postgresql://; else SQLite

    @property
    def workers(self):
        """The ranks that evaluate: every rank but the master's, at least one."""
        return max(self.procs - 1, 1)

    @property
    def slots(self):
        """The evaluations the study's own workers hold at once."""
        return self.workers * self.slots_per_worker


@dataclass(frozen=True)
class Study:
    """``[study]``: what to run, what it optimizes, and when it stops."""

    name: str | None = _setting("str")
    algorithm: str = _setting("str", "auto")
    space: str | None = _setting("path")
    mode: str = _setting("str", "async", choices=("async", "batch", "sequential"))
    batch_size: int | None = _positive("int")
    seed: int | None = _setting("int")
    replicas: int = _positive("int", 1)
    replica_objective: str = _setting("str", "mean", choices=("mean", "worst"))
    replica_seed_param: str = _setting("str", "rng_seed")
    budget: int | None = _positive("int")
    max_iterations: int | None = _positive("int")
    tol: float = _setting("float", 0.0, minimum=0)
    patience: int | None = _positive("int")
    target: float | None = _setting("float")
    max_time: float | None = _positive("float")
    step_budget: int | None = _positive("int")
    pruner: str = _setting("str", pruners.AUTO, choices=(pruners.AUTO, *pruners.PRUNERS))
    no_limit: bool = _setting("bool", False)
    impl: str = _setting("str", "py", "CANDLE_MODEL_IMPL", choices=IMPLEMENTATIONS)
    objective: str | None = _setting("str")
    app: list | None = _setting("list")
    model_name: str = _setting("str", "model", "MODEL_NAME")
    model_return: str = _setting("str", OBJECTIVE, "MODEL_RETURN")  # "a,b": objectives
    objectives: list | None = _setting("list")
    directions: list | None = _setting("list")
    constraints: list = _setting("list", [])
    reference_point: list | None = _setting("numbers")
    timeout: float | None = _setting("float", None, "SH_TIMEOUT", minimum=-1)  # 0, -1: none
    isolate: bool = _setting("bool", True)
    data_dir: str = _setting("path", "experiments", "CANDLE_DATA_DIR")
    experiment_numbering: str = _setting("str", "emews", choices=("emews", "supervisor"))
    expid: str | None = _setting("str")   # the experiment directory's name (Supervisor's EXPID)
    ranks_per_eval: int | str | None = _setting("int | $param")   # emews.pools._requests
    gpus_per_eval: float | str | None = _setting("number | $param")
    nodes_per_eval: int | str | None = _setting("int | $param")


@dataclass(frozen=True)
class Model:
    """``[model]``: a CANDLE model's settings; each is handed to the model as its variable."""

    framework: str = _setting("str", "keras2", "FRAMEWORK")
    python_dir: str | None = _setting("path", None, "MODEL_PYTHON_DIR")
    python_script: str | None = _setting("str", None, "MODEL_PYTHON_SCRIPT")
    return_epoch: str = _setting("str", "last", "MODEL_RETURN_EPOCH", choices=RETURN_EPOCHS)
    default_model: str | None = _setting("path", None, "CANDLE_DEFAULT_MODEL_FILE")
    benchmark_timeout: float | None = _positive("float", None, "BENCHMARK_TIMEOUT")
    app_pythonpath: str | None = _setting("str", None, "APP_PYTHONPATH")
    type: str = _setting("str", "BENCHMARK", "CANDLE_MODEL_TYPE",
                         choices=("BENCHMARK", "SINGULARITY"))
    image: str | None = _setting("path", None, "CANDLE_IMAGE")
    action: str = _setting("str", "train", "MODEL_ACTION")
    container_runtime: str | None = _setting("str", None, "CANDLE_CONTAINER_RUNTIME",
                                             choices=CONTAINER_RUNTIMES)
    container_gpus: str = _setting("str", "auto", "CANDLE_CONTAINER_GPUS",
                                   choices=CONTAINER_GPUS)
    container_args: list = _setting("list", [])


@dataclass(frozen=True)
class Failure:
    """``[failure]``: retries, then ``on_failure`` ("fail", told the penalty, or "abort")."""

    retries: int = _setting("int", 0, minimum=0)
    on_failure: str = _setting("str", "fail", choices=FAILURE_ACTIONS)
    penalty: float | None = _setting("float")


@dataclass(frozen=True)
class PrunerOptions:
    """``[pruner]``: the options of ``[study] pruner`` (:mod:`emews.core._pruners` says which
    pruner takes which)."""

    min_resource: int | None = _positive("int")
    max_resource: int | None = _positive("int")
    reduction_factor: int | None = _setting("int", None, minimum=2)
    percentile: float | None = _setting("float", None, minimum=0)
    n_startup_trials: int | None = _setting("int", None, minimum=0)
    n_warmup_steps: int | None = _setting("int", None, minimum=0)
    interval_steps: int | None = _positive("int")
    n_min_trials: int | None = _positive("int")
    pause: bool | None = _setting("bool")


@dataclass(frozen=True)
class Service:
    """``[service]`` (emews serve): where pools attach, how long a pool's task lease lasts."""

    bind: str = _setting("str", "127.0.0.1")
    port: int = _setting("int", 0, minimum=0, maximum=65535)   # 0: any free one
    lease: float = _positive("float", 60.0)


TABLES = {"system": System, "study": Study, "model": Model, "failure": Failure,
          "pruner": PrunerOptions, "service": Service}
SCHEMA = {table: {f.name: f.metadata["setting"] for f in fields(cls)}
          for table, cls in TABLES.items()}
STOP_KEYS = ("budget", "max_iterations", "tol", "patience", "target", "max_time", "step_budget",
             "reference_point")


@dataclass(frozen=True)
class Config:
    """A study's resolved, checked and frozen specification: one object per table of
    :data:`TABLES`, and ``algorithm``, a read-only mapping of the algorithm's options.
    :func:`load` builds it; :meth:`from_dict` and :meth:`read` read :meth:`as_dict` back."""

    system: System = field(default_factory=System)
    study: Study = field(default_factory=Study)
    algorithm: Mapping = field(default_factory=lambda: MappingProxyType({}))
    base_dir: Path = field(default_factory=Path.cwd, compare=False)
    origin: Mapping = field(default_factory=lambda: MappingProxyType({}), compare=False,
                            repr=False)
    model: Model = field(default_factory=Model)
    failure: Failure = field(default_factory=Failure)
    service: Service = field(default_factory=Service)
    pruner: PrunerOptions = field(default_factory=PrunerOptions)

    def where(self, table, key):
        """Where a setting came from, for error messages (``file: [table].key``)."""
        return self.origin.get((table, key), f"[{table}].{key}")

    def as_dict(self, relative_to=None):
        """The configuration as run (JSON-serializable, paths absolute; with ``relative_to``,
        the experiment directory keeping it as ``config.json``, the paths inside the project,
        the data directory's parent, relative to it, so that a moved project resumes)."""
        data = {table: asdict(getattr(self, table)) for table in TABLES} | {
            "algorithm": dict(self.algorithm)}
        if relative_to is None:
            return data
        project = Path(self.study.data_dir).parent

        def relative(path, *_):
            inside = os.path.isabs(path) and Path(path).is_relative_to(project)
            return os.path.relpath(path, Path(relative_to).resolve()) if inside else path

        return _map_paths(data, relative)

    @classmethod
    def from_dict(cls, data):
        """The configuration :meth:`as_dict` gave, read back (checked again; the environment
        does not apply: it was resolved when the study was prepared)."""
        return load([data], environ={})

    @classmethod
    def read(cls, path):
        """The configuration in a ``config.json`` file, read as :meth:`from_dict` reads it."""
        data = parse_json(read_text(path, "the study's configuration"), path)
        if not isinstance(data, dict):
            raise ConfigError(str(path), "must hold a JSON object", type(data).__name__)
        base = Path(path).resolve().parent
        return load([_map_paths(data, lambda value, *_: value if os.path.isabs(value)
                                else str((base / value).resolve()))],
                    environ={}, label=str(path))

    @property
    def pruner_choice(self):
        """``(pruner, why)``: ``[study] pruner``, or what ``auto`` chooses
        (:func:`emews.core._pruners.choose`; ``why`` is None for a named one)."""
        if self.study.pruner != pruners.AUTO:
            return self.study.pruner, None
        return pruners.choose(asdict(self.pruner), self.criteria.vector)

    def make_pruner(self):
        """The study's :class:`~emews.core._pruners.Pruner` (:attr:`pruner_choice` with the
        ``[pruner]`` options)."""
        name, why = self.pruner_choice
        options = asdict(self.pruner)
        given = [key for key, value in options.items() if value is not None]
        if self.study.pruner == pruners.AUTO and name == "none" and given:
            raise ConfigError(self.where("pruner", given[0]), f"does not apply: pruner 'auto' "
                              f"prunes nothing here ({why})", options[given[0]])
        return pruners.make(name, options, where=lambda key: self.where("pruner", key))

    @property
    def criteria(self):
        """The study's :class:`~emews.core._criteria.Criteria`: its objectives, their
        directions and its constraints."""
        return Criteria.from_study(self.study, lambda key: self.where("study", key))

    @property
    def algorithm_options(self):
        """The options the study's algorithm is built with: ``[algorithm]``, and
        ``objectives=k`` in a study of ``k > 1`` objectives; ``auto`` is given the settings
        it chooses by too (:meth:`_auto_settings`)."""
        k = len(self.criteria.names)
        options = dict(self.algorithm, objectives=k) if k > 1 else dict(self.algorithm)
        return options | self._auto_settings() if self.study.algorithm == "auto" else options

    def _auto_settings(self):
        """What ``auto`` chooses by: the study's budget, mode, batch size, slots (the
        workers' slots), constraints and pruner, and whether it prints (``quiet``)."""
        study, system = self.study, self.system
        return {"budget": study.budget, "mode": study.mode, "batch_size": study.batch_size,
                "slots": system.slots, "constraints": len(self.criteria.constraints),
                "pruner": self.pruner_choice[0], "quiet": system.quiet}

    @property
    def stop(self):
        """The stopping rules (keyword arguments of :class:`emews.core._algorithm.Stopper`; the
        reference point with each objective to minimize)."""
        stop = {k: getattr(self.study, k) for k in STOP_KEYS
                if getattr(self.study, k) is not None}
        if "reference_point" in stop:
            stop["reference_point"] = minimized(stop["reference_point"],
                                                self.criteria.directions)
        return stop


def load(sources=(), overrides=None, environ=None, label="config"):
    """Build a :class:`Config` from ``sources`` (a path, a list of paths, or a dict shaped like
    the TOML file, named ``label`` in error messages), the environment and ``overrides``
    (``{"table.key": value}`` from the command line)."""
    environ = os.environ if environ is None else environ
    if isinstance(sources, (str, os.PathLike, dict)):
        sources = [sources]
    tables = {table: {} for table in (*SCHEMA, "algorithm")}
    origin, bases = {}, {}   # (table, key) -> where its value was set, and paths' base there
    base_dir = Path.cwd()

    def put(table, key, value, where, base=None):
        tables[table][key] = value
        origin[(table, key)] = where
        bases[(table, key)] = Path.cwd() if base is None else base

    for source in sources:
        if isinstance(source, dict):
            data, name, base = source, label, Path.cwd()
        else:
            path = Path(source)
            data, name = read_toml(path, "the configuration file"), str(path)
            base = base_dir = path.resolve().parent
        for table, values in data.items():
            if table not in tables:
                raise ConfigError(f"{name}: [{table}]", "must be one of the tables "
                                  f"{sorted(tables)}{_guess(table, tables)}", table,
                                  show_value=False)
            if not isinstance(values, dict):
                raise ConfigError(f"{name}: {table}", "must be a table", values)
            for key, value in values.items():
                put(table, key, value, f"{name}: [{table}].{key}", base)
    for table, schema in SCHEMA.items():
        for key, setting in schema.items():
            if setting.env and environ.get(setting.env) not in (None, ""):
                put(table, key, environ[setting.env], f"environment variable {setting.env}")
    for dotted, value in (overrides or {}).items():
        table, _, key = dotted.partition(".")
        if table not in tables or not key:
            raise ConfigError(f"command line: {dotted}", "must be TABLE.KEY with TABLE one of "
                              f"{sorted(tables)}", dotted, show_value=False)
        put(table, key, value, f"command line: {dotted}")

    def where(table, key):
        return origin.get((table, key), f"[{table}].{key}")

    values = {}
    for table, schema in SCHEMA.items():
        unknown = sorted(set(tables[table]) - set(schema))
        if unknown:
            key = unknown[0]
            raise ConfigError(where(table, key), f"is not a setting of [{table}]; "
                              f"known: {', '.join(sorted(schema))}{_guess(key, schema)}", key,
                              show_value=False)
        values[table] = {
            key: _check(setting, tables[table].get(key, setting.default), where(table, key),
                        origin.get((table, key), "").startswith("environment"))
            for key, setting in schema.items()}

    def resolved(path, table, key):   # against the directory of the file that set it
        base = bases.get((table, key), Path.cwd())
        return path if os.path.isabs(path) else str((base / path).resolve())

    values = _map_paths({**values, "algorithm": tables["algorithm"]}, resolved)
    study, system = values["study"], values["system"]
    _resolve_objectives(study, where)
    first = next((Path(s) for s in sources if not isinstance(s, dict)), None)
    if study["name"] is None:
        study["name"] = first.stem if first is not None else "study"
    if first is not None and str(base_dir) not in system["python_path"]:
        system["python_path"].append(str(base_dir))   # user modules beside the study's file
    config = Config(algorithm=MappingProxyType(values["algorithm"]),
                    base_dir=base_dir, origin=MappingProxyType(origin),
                    **{table: TABLES[table](**values[table]) for table in TABLES})
    config.make_pruner()   # its options checked together: contradictions are refused now
    _check_criteria(config)
    if config.study.algorithm == "auto":
        for key in config._auto_settings():
            if key in config.algorithm:
                raise ConfigError(config.where("algorithm", key), "is set from the study's "
                                  "settings for auto, not in [algorithm]", config.algorithm[key])
    return config


def _guess(name, known):
    """``; did you mean 'budget'?`` for the known name nearest to ``name`` (else nothing)."""
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.7)
    return f"; did you mean '{close[0]}'?" if close else ""


def _resolve_objectives(study, where):
    """``MODEL_RETURN``'s list form (``"val_loss,params"``) as ``[study] objectives``, and
    ``model_return`` as the first objective (in the ``[study]`` values, not yet frozen)."""
    if "," in study["model_return"]:
        names = objective_names(study["model_return"])
        if study["objectives"] is not None and study["objectives"] != names:
            raise ConfigError(where("study", "objectives"), "must be the same list as "
                              f"[study].model_return (MODEL_RETURN) {names}, or left out",
                              study["objectives"])
        study["objectives"] = names
    if study["objectives"]:
        study["model_return"] = study["objectives"][0]


def _check_criteria(config):
    """The criteria checked; what does not go with several objectives refused."""
    study, criteria = config.study, config.criteria
    if not criteria.vector:
        if study.reference_point is not None:
            raise ConfigError(config.where("study", "reference_point"), "applies to a study of "
                              "several objectives or constraints only", study.reference_point)
        return
    several = f"a study of several objectives or constraints ({', '.join(criteria.names)})"
    for table, key, rule in (
            ("study", "target", "has no single value to reach"),
            ("failure", "penalty", "tells a failure as NaN (a penalty is one number)")):
        if getattr(getattr(config, table), key) is not None:
            raise ConfigError(config.where(table, key), f"cannot be used in {several}: it "
                              f"{rule}", getattr(getattr(config, table), key))
    if study.pruner not in ("none", pruners.AUTO):
        raise ConfigError(config.where("study", "pruner"), f"must be 'none' in {several}: a "
                          "pruner compares one value", study.pruner)
    if study.replicas > 1:
        raise ConfigError(config.where("study", "replicas"), f"must be 1 in {several}: "
                          "replicas are gathered into one value", study.replicas)
    if "objectives" in config.algorithm:
        raise ConfigError(config.where("algorithm", "objectives"), "is set from [study] "
                          "objectives (their number), not in [algorithm]",
                          config.algorithm["objectives"])
    if study.reference_point is not None and \
            len(study.reference_point) != len(criteria.names):
        raise ConfigError(config.where("study", "reference_point"), "must give one number "
                          f"per objective ({len(criteria.names)})", study.reference_point)


def _check(setting, value, where, from_env):
    if value is None or (value == "" and setting.kind == "float"):  # Supervisor's empty: none
        return None
    rule = setting.rule
    value = check(where, rule, rule.from_text(value) if from_env else value)
    return float(value) if setting.kind == "float" else value


def _map_paths(data, convert):
    """``data``, a configuration's tables, with ``convert(path, table, key)`` applied to each
    relative or absolute path it names: the path settings, ``[system] python_path``, the
    ``[algorithm]`` options ending in ``file`` and the arguments of ``[study] app`` that are
    files (absolute, or existing once converted); other values as they are."""
    tables = {table: dict(values) if isinstance(values, dict) else values
              for table, values in data.items()}

    def each(value, table, key):
        return convert(value, table, key) if isinstance(value, str) else value

    for table, schema in SCHEMA.items():
        values = tables.get(table)
        if not isinstance(values, dict):
            continue
        for key, setting in schema.items():
            if setting.kind == "path" and key in values:
                values[key] = each(values[key], table, key)
    system, study, algorithm = (tables.get(name) for name in ("system", "study", "algorithm"))
    if isinstance(system, dict) and isinstance(system.get("python_path"), list):
        system["python_path"] = [each(p, "system", "python_path")
                                 for p in system["python_path"]]
    if isinstance(study, dict) and isinstance(study.get("app"), list):
        apps = study["app"]
        study["app"] = [new if new == arg or os.path.isabs(arg) or os.path.exists(new) else arg
                        for arg, new in zip(apps, [each(a, "study", "app") for a in apps])]
    if isinstance(algorithm, dict):
        for key, value in algorithm.items():
            if key.endswith("file"):
                algorithm[key] = each(value, "algorithm", key)
    return tables


def parse_override(text):
    """``table.key=value`` from the command line; the value is read as TOML, else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"command line: --set {text}", "must be TABLE.KEY=VALUE", text,
                          show_value=False)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


# The command-line options that set a setting (``emews run``, ``serve`` and ``submit`` each
# have some of them): option -> "table.key".
OPTION_SETTINGS = {"bind": "service.bind", "port": "service.port", "lease": "service.lease",
                   "procs": "system.procs", "ppn": "system.ppn", "walltime": "system.walltime",
                   "queue": "system.queue", "project": "system.project",
                   "budget": "study.budget", "seed": "study.seed",
                   "algorithm": "study.algorithm", "mode": "study.mode", "impl": "study.impl",
                   "name": "study.name", "data_dir": "study.data_dir", "space": "study.space"}


def command_overrides(command, args):
    """The overrides a study command's arguments make: every ``--set TABLE.KEY=VALUE``, then
    each option of :data:`OPTION_SETTINGS` that the command has and was given. A command with
    neither a CONFIG file nor ``--resume`` is a ConfigError."""
    if not args.config and not args.resume:
        raise ConfigError(command, "needs a CONFIG file or --resume EXPDIR", None,
                          show_value=False)
    overrides = dict(parse_override(text) for text in args.set)
    for option, dotted in OPTION_SETTINGS.items():
        if getattr(args, option, None) is not None:
            overrides[dotted] = getattr(args, option)
    return overrides
