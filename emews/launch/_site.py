"""Site files: one TOML file per machine, validated key by key (:data:`SCHEMA`; every key,
with an example file: docs/src/sites.md).

Every value is data: the batch script quotes it (``shlex.quote``). Only ``setup`` holds shell
lines, written by the site's author and run as they are.
"""

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .._config import CONTAINER_RUNTIMES
from .._errors import ConfigError
from ..evaluate._launcher import DEVICE_VARIABLES, Launcher
from .._validation import Choice, Mapping, Number, Strings, Text, check_keys, read_toml

SCHEDULERS = ("local", "slurm", "pbs", "lsf", "flux")
LAUNCHERS = ("mpiexec", "srun", "jsrun", "aprun", "flux")
GPU_BINDINGS = (*DEVICE_VARIABLES, "launcher", "none")
USER_SITES = Path("~/.config/emews/sites")

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
WORD = re.compile(r"[A-Za-z0-9_.@+:/=-]+$")           # queue, project, module, option names
WALLTIME = re.compile(r"(?:(\d+)-)?(\d+):(\d{2}):(\d{2})$|(\d+)$")
OPTION = re.compile(r"[A-Za-z][A-Za-z0-9_-]*$")


WALLTIME_RULE = "must be HH:MM:SS, D-HH:MM:SS or whole minutes"
WORD_RULE = "must be one word of letters, digits and _ . @ + : / = -"
LINE = Text(one_line=True)
ENVIRONMENT = {
    "modules": Strings(WORD, f"each module {WORD_RULE}", one_line=True),
    "unload": Strings(WORD, f"each module {WORD_RULE}", one_line=True),
    "module_use": Strings(one_line=True),
    "conda": LINE,
    "venv": LINE,
    "prepend": Mapping(NAME, "each key must be a variable name", lists=True),
    "variables": Mapping(NAME, "each key must be a variable name"),
    "setup": Strings(one_line=True),
}
SCHEMA = {
    "": {
        "description": LINE,
        "scheduler": Choice(SCHEDULERS),
        "launcher": Choice(LAUNCHERS),
        "launcher_command": LINE,
        "launcher_args": Strings(one_line=True),
        "ppn_flag": Text(WORD, WORD_RULE, one_line=True),
        "python": LINE,
        "ppn": Number(integer=True, minimum=1, words=True),
        "gpus_per_node": Number(integer=True, minimum=0, words=True),
        "gpu_binding": Choice(GPU_BINDINGS),
        "container_runtime": Choice(CONTAINER_RUNTIMES),
    },
    "batch": {
        "queue": Text(WORD, WORD_RULE, one_line=True),
        "project": Text(WORD, WORD_RULE, one_line=True),
        "walltime": Text(WALLTIME, WALLTIME_RULE, one_line=True),
        "directives": Mapping(OPTION, "each key must be an option name", lists=True),
    },
    "environment": ENVIRONMENT,
    "langs_app": dict(ENVIRONMENT, file=LINE),
    "launch": {"command": Strings(one_line=True), "hosts": Strings(one_line=True),
               "gpus": Strings(one_line=True)},
}
REQUIRED = ("scheduler", "launcher")


@dataclass
class Site:
    """A validated site: the file's values with defaults filled in."""

    name: str
    path: Path
    scheduler: str
    launcher: str
    description: str = ""
    launcher_command: str | None = None
    launcher_args: list = field(default_factory=list)
    ppn_flag: str | None = None
    python: str | None = None
    ppn: int | None = None
    gpus_per_node: int = 0
    gpu_binding: str = "CUDA_VISIBLE_DEVICES"
    container_runtime: str | None = None
    batch: dict = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    langs_app: dict = field(default_factory=dict)
    launch: dict = field(default_factory=dict)

    def eval_launcher(self):
        """How this site starts an evaluation of several ranks (a
        :class:`~emews.evaluate._launcher.Launcher`)."""
        args = [] if "command" in self.launch else self.launcher_args
        return Launcher.of(self.launcher, self.launch.get("command"), self.launch.get("hosts"),
                           self.launch.get("gpus"), args, self.launcher_command,
                           self.gpu_binding)

    @property
    def langs_app_file(self):
        """The langs-app shell file the site names (absolute), or ``None``."""
        name = self.langs_app.get("file")
        return str((self.path.parent / os.path.expanduser(name)).resolve()) if name else None


def shipped_directory():
    """The directory of the site files that come with emews."""
    return Path(str(resources.files("emews.sites")))


def shipped_sites():
    """The names of the sites that come with emews, sorted."""
    return sorted(p.stem for p in shipped_directory().glob("*.toml"))


def find(name):
    """The path of site ``name``: a path to a file, else ``~/.config/emews/sites/NAME.toml``,
    else a shipped site."""
    text = str(name)
    if "/" in text or text.endswith(".toml"):
        path = Path(os.path.expanduser(text))
        if not path.is_file():
            raise ConfigError(f"site {text}", "must be a readable site file", text,
                              show_value=False)
        return path
    if not NAME.match(text.replace("-", "_")):
        raise ConfigError("--site", "must be a site name or a path to a site file", text)
    for directory in (Path(os.path.expanduser(str(USER_SITES))), shipped_directory()):
        if (directory / f"{text}.toml").is_file():
            return directory / f"{text}.toml"
    raise ConfigError("--site", f"must name a site in {USER_SITES}/ or one of "
                      f"{shipped_sites()}, or be a path to a site file", text)


def load(name):
    """Find, read and validate a site; return a :class:`Site`."""
    path = find(name)
    return from_dict(read_toml(path, "the site file"), path)


def from_dict(data, path):
    """Validate the contents of a site file (``path`` names it in errors)."""
    top = {k: v for k, v in data.items() if k not in SCHEMA or k == ""}
    tables = {"": top, **{t: data.get(t, {}) for t in SCHEMA if t}}
    known = ", ".join(sorted(SCHEMA[""]) + sorted(t for t in SCHEMA if t))
    for table, values in tables.items():
        if table and not isinstance(values, dict):
            raise ConfigError(f"{path}: {table}", "must be a table", values)
        check_keys(values, SCHEMA[table], lambda key: f"{path}: "
                   f"{f'[{table}].' if table else ''}{key}", "is not a site setting; known: "
                   f"{', '.join(sorted(SCHEMA[table])) if table else known}",
                   required=() if table else REQUIRED)
    if top.get("launcher") == "srun" and top.get("scheduler") != "slurm":
        raise ConfigError(f"{path}: launcher", "srun needs scheduler = \"slurm\" (scheduler is "
                          f"{top.get('scheduler')!r})", "srun")
    if "file" in tables["langs_app"] and len(tables["langs_app"]) > 1:
        raise ConfigError(f"{path}: [langs_app]", "either names a file or lists settings, "
                          "not both", sorted(tables["langs_app"]))
    return Site(name=Path(path).stem, path=Path(path).resolve(), **top,
                **{table: dict(tables[table]) for table in SCHEMA if table})


def walltime_seconds(text, where="walltime"):
    """Seconds of a walltime: ``HH:MM:SS``, ``D-HH:MM:SS`` or whole minutes."""
    match = WALLTIME.match(str(text)) if text is not None else None
    if not match:
        raise ConfigError(where, WALLTIME_RULE, text)
    days, hours, minutes, seconds, only_minutes = match.groups()
    if only_minutes is not None:
        return int(only_minutes) * 60
    return ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)
