"""``emews site import``: a site file from CANDLE/Supervisor's ``env-``, ``sched-`` and
``langs-app-NAME.sh``.

bash reads the files in a subprocess: :data:`DRIVER` sources them as Supervisor does, with
``module`` and ``conda`` recorded rather than run, and writes every shell variable before and
after each file (an EXIT trap: even after an ``exit``). :func:`translate` maps what changed to
site keys (docs/src/sites.md says which variable gives which); what it cannot map is written as
a comment in the site file and named on the terminal.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from .._errors import ConfigError
from .._validation import problem
from . import _site as sites

DRIVER = r'''
__emews_out=$1; shift
__emews_stage=0
module() { printf '%s\0' "$__emews_stage" module "$#" "$@" >> "$__emews_out.calls"; }
conda() { printf '%s\0' "$__emews_stage" conda "$#" "$@" >> "$__emews_out.calls"; }
which_check() { :; }; show() { :; }; log_path() { :; }; log_script() { :; }
readonly -f module conda   # /etc/profile or a module init script cannot replace the recorders
__emews_dump() {
  local __emews_n __emews_r
  for __emews_n in $(compgen -v); do
    case $__emews_n in
      __emews*|BASH*|FUNCNAME|PIPESTATUS|LINENO|RANDOM|SRANDOM|SECONDS|EPOCH*|_|PWD|OLDPWD|\
      SHLVL|HISTCMD|OPTIND|OPTARG|OPTERR|GROUPS|DIRSTACK|PPID|UID|EUID|IFS|PS4|SHELLOPTS|\
      COLUMNS|LINES) continue ;;
    esac
    __emews_r="${__emews_n}[@]"
    local -a __emews_v=("${!__emews_r}")
    printf '%s\0%s\0%s\0' "$__emews_n" "${!__emews_n@a}" "${#__emews_v[@]}"
    printf '%s\0' "${__emews_v[@]}"
  done > "$__emews_out.$__emews_stage"
}
trap '__emews_dump' EXIT
__emews_dump
for __emews_file in "$@"; do
  __emews_stage=$((__emews_stage + 1))
  if [[ -f $__emews_file ]]; then
    source "$__emews_file"
  fi
  __emews_dump
done
trap - EXIT
'''
SCHEDULER_LAUNCHER = {"slurm": "srun", "pbs": "mpiexec", "lsf": "jsrun", "flux": "mpiexec",
                      "local": "mpiexec", "cray": "aprun", "theta": "aprun"}
SCHEDULER_NAMES = {"": "local", "slurm": "slurm", "pbs": "pbs", "lsf": "lsf", "flux": "flux"}
PREFIXES = {"#SBATCH": "slurm", "#PBS": "pbs", "#BSUB": "lsf", "#flux:": "flux"}
SLURM_LONG = {"C": "constraint", "q": "qos", "p": "partition", "A": "account",
              "G": "gpus", "S": "core-spec", "J": "job-name", "t": "time", "N": "nodes"}
PATH_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "MANPATH", "CPATH", "LIBRARY_PATH")
SYSTEM_DIRECTORIES = ("/usr/", "/bin", "/sbin", "/etc/", "/opt/")
BATCH = {"PROJECT": "project", "QUEUE": "queue", "WALLTIME": "walltime"}
HANDLED = {"MACHINE", "PPN", "PROCS", "TURBINE_DIRECTIVE", "TURBINE_LAUNCH_OPTIONS",
           "TURBINE_PRELAUNCH", *BATCH}
TIMEOUT = 60


def import_site(directory, name, output=None, ppn=1, force=False):
    """Write the site file of Supervisor site ``name`` from ``directory``; return its path."""
    directory = Path(directory)
    files = {kind: directory / f"{kind}-{name}.sh" for kind in ("env", "sched", "langs-app")}
    if not any(path.is_file() for path in files.values()):
        raise ConfigError(str(directory), f"must hold Supervisor's env-{name}.sh, "
                          f"sched-{name}.sh or langs-app-{name}.sh", name, show_value=False)
    output = Path(os.path.expanduser(output or f"{sites.USER_SITES}/{name}.toml"))
    if output.exists() and not force:
        raise ConfigError(str(output), "exists already; give --force to overwrite it", None,
                          show_value=False)
    # what Supervisor's files see: its usual variables, and a clean, predictable base
    workflows = directory.resolve().parent.parent
    environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.path.expanduser("~"),
               "USER": os.environ.get("USER", "user"), "LANG": "C.UTF-8",
               "WORKFLOWS_ROOT": str(workflows), "EMEWS_PROJECT_ROOT": str(workflows / "common"),
               "SUPERVISOR_HOME": str(workflows.parent), "PPN": str(ppn), "PROCS": str(ppn)}
    site, unmapped, notes = read_files(name, files, environ, directory)
    text = render_toml(site, unmapped, notes, files)
    sites.from_dict(tomllib.loads(text), output)  # what we write must be a valid site
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"emews: wrote site {output}", file=sys.stderr)
    if unmapped:
        print(f"emews: not mapped (listed as comments in {output.name}): "
              f"{', '.join(f'{k}={v}' for k, v in unmapped)}", file=sys.stderr)
    return output


def read_files(name, files, environ, cwd):
    """What Supervisor's site files ``files`` (``{"env": path, "sched": path, "langs-app":
    path}``; a missing one is skipped) set, read by bash, as :func:`translate` maps it."""
    job = run_bash([files["env"], files["sched"]], environ, cwd)
    sched = None
    if job["stages"][2] is None and files["sched"].is_file():
        sched = run_bash([files["sched"]], environ, cwd)  # env-NAME.sh exited early
    app = run_bash([files["langs-app"]], environ, cwd)
    return translate(name, files, job, app, sched)


def run_bash(files, environ, cwd):
    """Source ``files`` in one bash subprocess; return its snapshots and recorded calls.

    ``{"stages": [{name: (attributes, [values])}, ...], "calls": [(stage, command, args)],
    "status": exit status, "stderr": text}``: stage 0 is before the first file.
    """
    with tempfile.TemporaryDirectory(prefix="emews-import-") as tmp:
        out = Path(tmp) / "vars"
        try:
            done = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER,
                                   "emews-import", str(out), *map(str, files)], env=environ,
                                  cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ConfigError(", ".join(map(str, files)), f"must finish within {TIMEOUT} s when "
                              "bash reads them", None, show_value=False) from None
        stages = []
        for stage in range(len(files) + 1):
            path = out.with_name(f"vars.{stage}")
            stages.append({name: (attributes, values) for name, attributes, values
                           in _records(path)} if path.exists() else None)
        calls = [(int(stage), command, args)
                 for stage, command, args in _records(out.with_name("vars.calls"))]
    return {"stages": stages, "calls": calls, "status": done.returncode,
            "stderr": done.stderr}


def _records(path):
    """The driver's NUL-separated records in ``path`` (none when it is missing): each a
    variable's ``(name, attributes, values)`` or a call's ``(stage, command, args)``."""
    fields = iter(path.read_bytes().decode("utf-8", "replace").split("\0")
                  if path.exists() else ())
    for first in fields:
        if not first:
            return
        second, count = next(fields), int(next(fields))
        yield first, second, [next(fields) for _ in range(count)]


def _changes(run):
    """Variables that a bash ``run`` (of :func:`run_bash`) adds or changes between its first
    snapshot and its last: ``{name: (attributes, values)}``."""
    before = run["stages"][0] or {}
    after = next((s for s in reversed(run["stages"]) if s is not None), {})
    return {name: value for name, value in after.items() if before.get(name) != value}


def translate(name, files, job, app, sched=None):
    """Map what bash saw to a site table: ``(site, unmapped, notes)``. ``sched``: a run of
    ``sched-NAME.sh`` alone, made when ``env-NAME.sh`` exited before it."""
    site = {"description": f"imported from CANDLE/Supervisor's {name} site files",
            "batch": {}, "environment": {}, "langs_app": {}}
    unmapped, notes = [], []
    stages = job["stages"]
    if job["status"] and sched is not None:
        notes.append(f"{files['env'].name} exited (status {job['status']}) before its end; "
                     f"{files['sched'].name} was read on its own")
    elif job["status"]:
        stopped_in = (files["env"], files["sched"])[max(sum(s is not None for s in stages) - 2, 0)]
        notes.append(f"bash exited with status {job['status']} in "
                     f"{stopped_in.name}; what it had set by then is used")
    changed = _changes(job)
    if sched is not None:
        changed.update(_changes(sched))
        job = dict(job, calls=job["calls"] + sched["calls"])
    machine = _value(changed.pop("MACHINE", None)) or ""
    scheduler = SCHEDULER_NAMES.get(machine.strip().removeprefix("-m").strip())
    if scheduler is None:
        unmapped.append(("MACHINE", machine))
        scheduler = "local"
    site["scheduler"] = scheduler
    site["launcher"] = SCHEDULER_LAUNCHER[scheduler]
    for variable, key in BATCH.items():
        value = _value(changed.pop(variable, None))
        if value and value != "NONE":
            if problem(sites.SCHEMA["batch"][key], value):
                unmapped.append((variable, value))
            else:
                site["batch"][key] = value
    changed.pop("PPN", None)
    changed.pop("PROCS", None)
    directive = _value(changed.pop("TURBINE_DIRECTIVE", None))
    if directive:
        for line in directive.splitlines():
            mapped = _directive(line.strip(), scheduler)
            if mapped:
                site["batch"].setdefault("directives", {}).update(mapped)
            elif line.strip():
                unmapped.append(("TURBINE_DIRECTIVE", line.strip()))
    options = _value(changed.pop("TURBINE_LAUNCH_OPTIONS", None))
    if options:
        site["launcher_args"] = shlex.split(options)
        if any(a.startswith(("--gpus-per-task", "-g")) for a in site["launcher_args"]):
            site["gpu_binding"] = "launcher"
    prelaunch = _value(changed.pop("TURBINE_PRELAUNCH", None))
    if prelaunch:
        _prelaunch(prelaunch, site["environment"], unmapped)
    _calls(job["calls"], site["environment"], unmapped)
    _environment_changes(changed, site["environment"], unmapped, stages[0])
    app_changed = _changes(app)
    if app["status"]:
        notes.append(f"bash exited with status {app['status']} while reading "
                     f"{files['langs-app'].name}; what it had set by then is used")
    _calls(app["calls"], site["langs_app"], unmapped)
    _environment_changes(app_changed, site["langs_app"], unmapped, app["stages"][0],
                         prefix="langs-app: ")
    return site, unmapped, notes


def _value(entry):
    if entry is None:
        return None
    attributes, values = entry
    return " ".join(values) if "a" in attributes else (values[0] if values else "")


def _directive(line, scheduler):
    """``#SBATCH -C nvme`` -> ``{"constraint": "nvme"}`` (``None`` if it cannot map)."""
    words = shlex.split(line) if line else []
    if len(words) < 2 or PREFIXES.get(words[0]) != scheduler:
        return None
    option, rest = words[1], words[2:]
    if "=" in option and option.startswith("--"):
        option, value = option[2:].split("=", 1)
        rest = [value, *rest]
    elif option.startswith("--"):
        option = option[2:]
    elif option.startswith("-"):
        option = option[1:]
        if scheduler == "slurm":
            option = SLURM_LONG.get(option)
    value = " ".join(rest)
    if not option or not rest or problem(sites.SCHEMA["batch"]["directives"], {option: value}):
        return None
    return {option: value}


def _prelaunch(text, environment, unmapped):
    for command in (c.strip() for c in text.split(";")):
        words = shlex.split(command) if command else []
        if words[:2] == ["module", "load"]:
            environment.setdefault("modules", []).extend(words[2:])
        elif words[:2] in (["source", "activate"], ["conda", "activate"]) and len(words) == 3:
            environment["conda"] = words[2]
        elif words:
            unmapped.append(("TURBINE_PRELAUNCH", command))


def _calls(calls, environment, unmapped):
    for _, command, args in calls:
        if command == "module" and args[:1] in (["load"], ["add"]):
            environment.setdefault("modules", []).extend(args[1:])
        elif command == "module" and args[:1] in (["unload"], ["rm"]):
            environment.setdefault("unload", []).extend(args[1:])
        elif command == "module" and args[:1] == ["use"]:
            environment.setdefault("module_use", []).extend(a for a in args[1:]
                                                            if not a.startswith("-"))
        elif command == "module" and args[:1] in (["list"], ["avail"], ["purge"]):
            continue
        elif command == "conda" and args[:1] == ["activate"] and len(args) == 2:
            environment["conda"] = args[1]
        else:
            unmapped.append((command, " ".join(args)))


def _environment_changes(changed, environment, unmapped, before, prefix=""):
    for name, (attributes, values) in sorted(changed.items()):
        value = _value((attributes, values))
        old = _value((before or {}).get(name))
        if name in PATH_VARIABLES and "x" in attributes:
            added, whole = _prepended(value, old)
            if added:
                environment.setdefault("prepend", {})[name] = added
            if not whole:
                unmapped.append((prefix + name, value))
        elif "x" in attributes and "a" not in attributes and name not in HANDLED \
                and not problem(sites.SCHEMA["environment"]["variables"], {name: value}):
            environment.setdefault("variables", {})[name] = value
        else:
            unmapped.append((prefix + name, value))


def _prepended(value, old):
    """The new entries put before a path variable's old value, and whether that is all the
    change (``False``: the file also reset or reordered it, as ``source /etc/profile`` does)."""
    parts, old_parts = value.split(":"), [p for p in (old or "").split(":") if p]
    whole = not old_parts or parts[len(parts) - len(old_parts):] == old_parts
    added = []
    for part in parts[:len(parts) - len(old_parts)] if whole else parts:
        if not whole and (part in old_parts or part.startswith(SYSTEM_DIRECTORIES)):
            break  # the leading entries the file put first
        if part and part not in added:
            added.append(part)
    return added, whole


def _toml(value):
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _key(key):
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml(key)


def render_toml(site, unmapped, notes, files):
    """The text of the site file: mapped settings, then the unmapped ones as comments."""
    lines = ["# Imported by `emews site import` from CANDLE/Supervisor's files:"]
    lines += [f"#   {path}" + ("" if path.is_file() else " (not found)")
              for path in files.values()]
    lines += [f"# Note: {note}" for note in notes]
    if unmapped:
        lines.append("# Not mapped (set by those files; no site setting means the same):")
        lines += [f"#   {name} = {value!r}" for name, value in unmapped]
    lines.append("")
    for key in ("description", "scheduler", "launcher", "launcher_args", "gpu_binding"):
        if key in site:
            lines.append(f"{key} = {_toml(site[key])}")
    for table in ("batch", "environment", "langs_app"):
        if site[table]:
            lines += ["", f"[{table}]"]
            lines += [f"{key} = {_toml(value)}" for key, value in site[table].items()]
    return "\n".join(lines) + "\n"
