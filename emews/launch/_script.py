"""Batch scripts: directives, the site's environment and the launch line of one job.

A rendered script is complete: it can be submitted by hand (``sbatch job-0.sh``). Every value
from a site or a study is quoted with ``shlex.quote`` in the shell part; directives, checked
when read (one line, no ``"``), are written bare when one word, else in double quotes.
"""

import math
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ..evaluate._launcher import default_mpiexec
from ._site import walltime_seconds

PREFIX = {"slurm": "#SBATCH", "pbs": "#PBS", "lsf": "#BSUB", "flux": "# flux:"}
# scheduler: (directive option, value of "run after job ID ends in any state")
DEPENDENCY = {"slurm": ("dependency", "afterany:{}"), "pbs": ("W", "depend=afterany:{}"),
              "lsf": ("w", "ended({})")}
# scheduler: its directives of the walltime, the queue, the project and any other option
FORMS = {"slurm": ("--time={}", "--partition={}", "--account={}", "--{}={}"),
         "pbs": ("-l walltime={}", "-q {}", "-A {}", "-{} {}"),
         "lsf": ("-W {}", "-q {}", "-P {}", "-{} {}"),
         "flux": ("-t {}m", "-q {}", "--bank={}", "--{}={}")}
SAFE = re.compile(r"[A-Za-z0-9_.@+:/=,%-]+$")
SUBMIT_COMMAND = {"slurm": "sbatch", "pbs": "qsub", "lsf": "bsub", "flux": "flux"}


@dataclass
class Job:
    """What one batch job of a study needs."""

    site: object            # emews.launch._site.Site
    expdir: Path
    name: str
    procs: int
    ppn: int
    walltime: str | None = None
    queue: str | None = None
    project: str | None = None
    index: int = 0          # 0: the first job; 1..N: follow-ups (--chain) or pools (--pools)
    after: str | None = None  # the job id this one waits for
    margin: int | None = None  # seconds before the walltime to drain; None: drain_margin's
    pool: bool = False      # a pool job for a served study (emews pool), not the study itself
    eval_nodes: int = 1     # the nodes the study's largest evaluation needs (submit sizes it)

    def drain(self, seconds):
        """How long before a walltime of ``seconds`` this job drains: its ``margin``, else
        :func:`drain_margin`'s."""
        return self.margin if self.margin is not None else drain_margin(seconds)

    @property
    def nodes(self):
        """Nodes to ask for: enough for ``procs`` ranks at ``ppn`` per node, and for the
        largest evaluation (``eval_nodes``)."""
        return max(math.ceil(self.procs / self.ppn), self.eval_nodes)

    @property
    def script(self):
        return Path(self.expdir) / f"job-{self.index}.sh"

    @property
    def stdout(self):
        return Path(self.expdir) / f"job-{self.index}.out"

    @property
    def stderr(self):
        return Path(self.expdir) / f"job-{self.index}.err"

    @property
    def python(self):
        return self.site.python or sys.executable

    @property
    def job_name(self):
        return "emews-" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)


def render(job):
    """The text of ``job``'s batch script."""
    site = job.site
    lines = ["#!/bin/bash"]
    lines += [f"{PREFIX[site.scheduler]} {d}" for d in directives(job)] \
        if site.scheduler in PREFIX else []
    lines += [f"# emews-hpo: study {job.expdir}, site {site.name} ({site.path}), "
              f"job {job.index}" + (f" after job {job.after}" if job.after else ""),
              "# written by emews submit; the study runs in the last line", ""]
    lines += ["# the site's environment"] + environment_lines(site.environment) + [""]
    lines += ["# emews", f"export EMEWS_GPU_BINDING={shlex.quote(site.gpu_binding)}",
              f"export EMEWS_LAUNCH={shlex.quote(site.eval_launcher().as_json())}"]
    langs_app = site.langs_app_file or (site.langs_app and str(Path(job.expdir) / "langs-app.sh"))
    if langs_app:
        lines.append(f"export EMEWS_LANGS_APP=${{EMEWS_LANGS_APP:-{shlex.quote(langs_app)}}}")
    seconds = walltime_seconds(job.walltime) if job.walltime else None
    if seconds and not job.pool:  # the study drains (takes no new work) before the walltime ends
        lines.append(f"export EMEWS_DRAIN_AT=$(( $(date +%s) + {seconds - job.drain(seconds)}"
                     " ))")
    lines.append(f"cd {shlex.quote(str(job.expdir))}")
    lines.append(shlex.join(launch_command(job)))
    return "\n".join(lines) + "\n"


def langs_app(site):
    """The langs-app shell file rendered from a site's ``[langs_app]`` settings."""
    return "\n".join([f"# langs-app settings of site {site.name} ({site.path}), written by "
                      "emews submit; sourced by the Model Shell before each app run",
                      *environment_lines(site.langs_app)]) + "\n"


def environment_lines(env):
    """Shell lines that prepare an ``[environment]`` (or ``[langs_app]``) table."""
    q = shlex.quote
    lines = [f"module use {q(path)}" for path in env.get("module_use", [])]
    if env.get("unload"):
        lines.append("module unload " + " ".join(map(q, env["unload"])))
    if env.get("modules"):
        lines.append("module load " + " ".join(map(q, env["modules"])))
    if env.get("conda"):
        lines.append(f"conda activate {q(env['conda'])}")
    if env.get("venv"):
        lines.append(f"source {q(str(Path(env['venv']) / 'bin' / 'activate'))}")
    for name, value in env.get("variables", {}).items():
        lines.append(f"export {name}={q(value)}")
    for name, paths in env.get("prepend", {}).items():
        paths = [paths] if isinstance(paths, str) else paths
        lines.append(f"export {name}={q(':'.join(paths))}${{{name}:+:${name}}}")
    lines += env.get("setup", [])
    return lines


def directives(job):
    """The scheduler's directives for ``job`` (without their prefix)."""
    site, q = job.site, _directive_value
    extra = dict(site.batch.get("directives", {}))
    if job.after:
        option, value = DEPENDENCY[site.scheduler]
        extra[option] = value.format(job.after)
    seconds = walltime_seconds(job.walltime) if job.walltime else None
    name, out, err = q(job.job_name), q(str(job.stdout)), q(str(job.stderr))
    lines = {"slurm": [f"--job-name={name}", f"--nodes={job.nodes}",
                       f"--ntasks-per-node={job.ppn}", f"--output={out}", f"--error={err}"],
             "pbs": [f"-N {q(job.job_name[:15])}",
                     f"-l select={job.nodes}:ncpus={job.ppn}:mpiprocs={job.ppn}",
                     f"-o {out}", f"-e {err}"],
             "lsf": [f"-J {name}", f"-nnodes {job.nodes}", f"-o {out}", f"-e {err}"],
             "flux": [f"--job-name={name}", f"-N {job.nodes}", f"-n {job.procs}",
                      f"--output={out}", f"--error={err}"]}[site.scheduler]
    walltime, queue, project, option = FORMS[site.scheduler]
    if seconds:   # Slurm and PBS take HH:MM:SS, LSF and Flux minutes
        hours, rest = divmod(seconds, 3600)
        lines.append(walltime.format(f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
                                     if site.scheduler in ("slurm", "pbs")
                                     else math.ceil(seconds / 60)))
    lines += [queue.format(q(job.queue))] if job.queue else []
    lines += [project.format(q(job.project))] if job.project else []
    return lines + [option.format(k, q(v)) for k, v in _pairs(extra)]


def _directive_value(value):
    value = str(value)
    return value if SAFE.match(value) else f'"{value}"'


def _pairs(table):
    for key, value in table.items():
        for item in value if isinstance(value, list) else [value]:
            yield key, item


def drain_margin(seconds):
    """How long before a walltime of ``seconds`` the study stops taking new work: a tenth of
    it, between 30 s and 10 minutes (and never more than half of it)."""
    return int(min(max(seconds / 10, 30), 600, seconds / 2))


def launch_command(job):
    """The argument list that starts the study's ranks inside the job."""
    site = job.site
    procs, ppn = str(job.procs), str(job.ppn)
    if site.launcher == "mpiexec":
        command = [site.launcher_command or default_mpiexec(job.python), "-n", procs]
        command += [site.ppn_flag, ppn] if site.ppn_flag else []
    elif site.launcher == "srun":
        command = [site.launcher_command or "srun", "-n", procs, f"--ntasks-per-node={ppn}"]
    elif site.launcher == "jsrun":
        command = [site.launcher_command or "jsrun", "-n", procs]
    elif site.launcher == "flux":
        command = [site.launcher_command or "flux", "run", "-n", procs, "-N", str(job.nodes)]
    else:
        command = [site.launcher_command or "aprun", "-n", procs, "-N", ppn]
    emews = ["run", "--resume", str(job.expdir)]
    if job.pool:
        seconds = walltime_seconds(job.walltime) if job.walltime else None
        emews = ["pool", str(job.expdir)] + \
            (["--walltime", str(seconds - job.drain(seconds))] if seconds else [])
    return [*command, *site.launcher_args, job.python, "-m", "emews", *emews]
