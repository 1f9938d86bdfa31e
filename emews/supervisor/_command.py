"""``emews supervisor``: CANDLE/Supervisor's entry points on emews, as they are.

:func:`parse` tells the arguments apart by their count, as Supervisor does (:data:`USAGE`);
:func:`main` then follows Supervisor's order (docs/src/supervisor.md says each step and what it
leaves). The exit status is 0 only when the study ended by its own rule; bad input ends with 2.
"""

import dataclasses
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

from .. import _experiment as experiment
from .._config import Study
from ..core._control import REASONS
from .._errors import ConfigError, EmewsError
from . import _cfg as cfgfiles

USAGE = ("SITE WORKFLOW CFG (the supervisor tool), or workflow.sh's SITE CFG, SITE EXPID "
         "CFG_SYS CFG_PRM [MODEL_NAME [CANDLE_MODEL_TYPE CANDLE_IMAGE]]")
SITE_KINDS = ("env", "sched", "langs-app")
OUTPUT = "output.txt"
STUDY_FILE = "supervisor.toml"
LINK = "turbine-output"
# one call of emews supervisor: the site, the workflow, the EXPID (-a: the next free one), the
# cfg files (one, or CFG_SYS and CFG_PRM) and the environment they see
Call = namedtuple("Call", "site workflow expid files environ")


def parse(arguments, workflow=None, environ=None, cwd=None):
    """The :class:`Call` that ``arguments`` make, told apart by their count."""
    environ = dict(os.environ if environ is None else environ)
    cwd = Path(cwd or os.getcwd())
    count = len(arguments)
    if count not in (2, 3, 4, 5, 7):
        raise ConfigError("emews supervisor", f"takes {USAGE}; got {count} arguments",
                          " ".join(arguments) or None, show_value=False)
    site, *rest = arguments
    if count == 3:
        workflow = rest[0]
        _tool_paths(environ, workflow, cwd)
    project = environ.get("EMEWS_PROJECT_ROOT")
    workflow = workflow or (Path(project).name if project else None)
    if not workflow:
        raise ConfigError("emews supervisor", "needs the workflow: --workflow NAME, or "
                          "EMEWS_PROJECT_ROOT (the workflow's directory, as Supervisor's test "
                          "scripts export it)", None, show_value=False)
    cfgfiles.check_workflow(workflow, "emews supervisor")
    _workflow_paths(environ)
    environ["SITE"] = site
    if count in (2, 3):
        files = [_cfg(rest[-1], environ, cwd, "CFG")]
        expid = environ.get("EXPID") or "-a"
    else:
        expid, cfg_sys, cfg_prm, *model = rest
        if workflow == "pbt":
            environ["EXP_ID"] = expid   # pbt_run.sh: export EXP_ID=$2 (its SITE.cfg reads it)
        if model:
            environ["MODEL_NAME"] = model[0]
        if len(model) == 3:
            environ["CANDLE_MODEL_TYPE"], environ["CANDLE_IMAGE"] = model[1:]
        files = [_cfg(cfg_sys, environ, cwd, "CFG_SYS"), _cfg(cfg_prm, environ, cwd, "CFG_PRM")]
    return Call(site, workflow, expid, files, environ)


def _tool_paths(environ, workflow, cwd):
    """What Supervisor's ``supervisor`` tool and the workflow's ``supervisor`` script set."""
    _path_add(environ, str(cwd), first=True)
    home = environ.get("SUPERVISOR_HOME")
    if home and (Path(home) / "workflows" / workflow).is_dir():
        environ["EMEWS_PROJECT_ROOT"] = str(Path(home) / "workflows" / workflow)
        _path_add(environ, str(Path(home) / "workflows" / workflow / "test"))


def _workflow_paths(environ):
    """What Supervisor's workflow.sh appends: its data directory and the common shell files."""
    project = environ.get("EMEWS_PROJECT_ROOT")
    if project:
        environ.setdefault("WORKFLOWS_ROOT", str(Path(project).parent))
        _path_add(environ, str(Path(project) / "data"))
    if environ.get("WORKFLOWS_ROOT"):
        _path_add(environ, str(Path(environ["WORKFLOWS_ROOT"]) / "common" / "sh"))


def _path_add(environ, directory, first=False):
    """``directory`` added to SUPERVISOR_PATH: last, or ``first``."""
    parts = [environ.get("SUPERVISOR_PATH"), directory]
    environ["SUPERVISOR_PATH"] = ":".join(filter(None, parts[::-1] if first else parts))


def _cfg(name, environ, cwd, what):
    """A cfg file: the path given, else found on SUPERVISOR_PATH (Supervisor's find_cfg)."""
    given = cwd / name
    found = given if given.is_file() else cfgfiles.find(name, environ.get("SUPERVISOR_PATH", ""))
    if found is None:
        raise ConfigError(f"emews supervisor {what}", "must be a readable file, or one found "
                          f"on SUPERVISOR_PATH ({environ.get('SUPERVISOR_PATH', '')})", name)
    return found.resolve()


def site_files(call):
    """``{kind: path}`` of the site's env-, sched- and langs-app-SITE.sh found on
    SUPERVISOR_PATH (a missing one is left out)."""
    search = call.environ.get("SUPERVISOR_PATH", "")
    found = {kind: cfgfiles.find(f"{kind}-{call.site}.sh", search) for kind in SITE_KINDS}
    found = {kind: path.resolve() for kind, path in found.items() if path is not None}
    if not found and call.site != "local":
        raise ConfigError("emews supervisor SITE", "must have Supervisor's env-SITE.sh or "
                          f"sched-SITE.sh on SUPERVISOR_PATH ({search}); site local needs "
                          "none", call.site)
    return found


def study_environment(call, files):
    """The study's environment: the call's, with what ``env-SITE.sh`` exports when it is
    sourced after the cfg files (``set -eu``), as Supervisor's workflow.sh sources them."""
    if "env" not in files:
        return dict(call.environ)
    cfg_files = call.files[:1] + [path for path in call.files[1:] if path.suffix == ".sh"]
    return cfgfiles.sourced([*cfg_files, files["env"]], call.environ, flags="eu",
                            what="the site file")


def scheduled_site(call, files):
    """The :class:`~emews.launch._site.Site` that ``sched-SITE.sh`` describes, read as
    ``emews site import`` reads it (in memory), or ``None`` when it schedules nothing."""
    if "sched" not in files:
        return None
    from ..launch import _site as sites
    from ..launch._importer import read_files

    nowhere = Path(os.devnull)
    table, unmapped, _ = read_files(call.site, {"env": files.get("env", nowhere),
                                                "sched": files["sched"], "langs-app": nowhere},
                                    call.environ, Path.cwd())
    if table["scheduler"] == "local":
        return None
    for name, value in unmapped:
        print(f"emews: note: {files['sched'].name}: {name}={value!r} has no emews setting",
              file=sys.stderr)
    table["environment"] = {"setup": [f"source {shlex.quote(str(files['env']))}"]} \
        if "env" in files else {}
    table["langs_app"] = {"file": str(files["langs-app"])} if "langs-app" in files else {}
    site = sites.from_dict(table, files["sched"])
    return dataclasses.replace(site, name=call.site)


def prepare_study(call, files):
    """The study (a dict shaped like the TOML file) and its notes, with the site's langs-app
    file, and the data directory and name made explicit."""
    cfg_prm = call.files[1] if len(call.files) == 2 else None
    study, notes = cfgfiles.read(call.files[0], cfg_prm, call.environ, call.workflow)
    tables = {table: study.setdefault(table, {}) for table in ("system", "study")}
    if "langs-app" in files and not call.environ.get("EMEWS_LANGS_APP"):
        tables["system"]["langs_app"] = str(files["langs-app"])
    tables["study"]["data_dir"] = str(Path(tables["study"].get("data_dir")
                                           or call.environ.get("CANDLE_DATA_DIR")
                                           or Study.data_dir).resolve())
    tables["study"].setdefault("name", tables["study"].get("model_name", Study.model_name))
    return study, notes


def child_environment(environ, expid):
    """The environment of ``emews run`` of experiment ``expid``: the study's, less the
    variables whose values the study already holds (they were read first; Supervisor's
    spelling of some would not load)."""
    held = {var for var in cfgfiles.COMMON if var in cfgfiles.FROM_ENVIRONMENT}
    return {**{k: v for k, v in environ.items() if k not in held}, "EXPID": expid}


def run_here(expdir, environ, notes):
    """``python -m emews run EXPDIR/supervisor.toml``; its output to the terminal and
    ``EXPDIR/output.txt``. Returns its exit status."""
    with open(expdir / OUTPUT, "ab") as output:
        for note in notes:
            _both(f"emews: note: {note}\n".encode(), output)
        child = subprocess.Popen([sys.executable, "-m", "emews", "run", str(expdir / STUDY_FILE)],
                                 env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: child.terminate())
        try:
            for chunk in iter(lambda: os.read(child.stdout.fileno(), 65536), b""):
                _both(chunk, output)
            status = child.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
        status = status or _own_rule(expdir, output)
        _both(f"EXIT CODE: {status}\n".encode(), output)
        return status


def _both(data, output):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    output.write(data)
    output.flush()


NO_END = "it recorded no end (no final record in its store)"


def _own_rule(expdir, output):
    """0 when the finished study ended by its own rule (its store's final record says so);
    else 1, said on both outputs."""
    try:
        final = experiment.read_store(expdir, lambda store: store.meta("final"))
    except EmewsError:
        final = None   # no study, or no store: it never started
    reason = final.get("stop_reason") if final is not None else NO_END
    if reason in (*REASONS.values(), NO_END):
        _both(f"emews supervisor: the study did not end by its own rule: {reason}\n".encode(),
              output)
        return 1
    return 0


def main(arguments, workflow=None, dry_run=False):
    """``emews supervisor ARGUMENTS``: returns the exit status."""
    call = parse(arguments, workflow)
    files = site_files(call)
    study, notes = prepare_study(call, files)
    site = scheduled_site(call, files)
    if dry_run:
        sys.stdout.write(cfgfiles.render(study, notes, call.files))
        if site is not None:
            print(f"# Site {site.name} ({files['sched']}): scheduler {site.scheduler}, "
                  f"launcher {site.launcher}, batch {site.batch}")
        return 0
    tables = study["study"]   # the study being written: the TOML file's [study] table
    # EXPID -a: the next free EXPnnn, as Supervisor numbers them
    expdir = experiment.create(tables["data_dir"], tables["name"], "supervisor",
                               None if call.expid == "-a" else call.expid)
    tables["expid"] = expdir.name
    (expdir / STUDY_FILE).write_text(cfgfiles.render(study, notes, call.files))
    link = Path.cwd() / LINK   # a symlink to the experiment, as Supervisor's workflow.sh leaves
    if link.is_symlink():
        link.unlink()
    link.symlink_to(expdir)
    if site is not None:   # the job sources env-SITE.sh where it runs (the site's setup)
        from ..launch._submit import submit

        os.environ.clear()
        os.environ.update(child_environment(call.environ, expdir.name))
        submit(str(expdir / STUDY_FILE), site)
        return 0
    status = run_here(expdir, child_environment(study_environment(call, files), expdir.name),
                      notes)
    if status == 2 and not (expdir / "config.json").exists():   # bad input: nothing was run
        shutil.rmtree(expdir)
        link.unlink()
    return status
