"""``emews submit``: prepare a study's experiment directory and queue the batch job(s) that run it.

Each job's process is ``bash EXPDIR/job-K.sh``, the complete batch script that
:mod:`.script` renders, submitted through psij-python's executor for the site's scheduler
(:func:`psij_job`), or run here, detached, on a ``local`` site (docs/src/sites.md).
"""

import math
import os
import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from .. import _config as configuration
from .. import _experiment as experiment
from .._prepare import prepare_run, validate
from .._errors import ConfigError, EmewsError, missing_extra
from ..pools._requests import Demand
from .._space import Space
from .._validation import Invalid
from ..service._keys import served_at
from ._jobs import JOBS, JOBS_FILE
from . import _script as scripts
from . import _site as sites

PSIJ_CONFIG = {"slurm": ("psij.executors.batch.slurm", "SlurmExecutorConfig"),
               "pbs": ("psij.executors.batch.pbs_base", "PBSExecutorConfig"),
               "lsf": ("psij.executors.batch.lsf", "LsfExecutorConfig")}
JOB_NAME = {"slurm": "job-name", "pbs": "N", "lsf": "J"}
# what the site may set for the study when neither the command line, the environment nor the
# study's files do: "table.key" -> the site's value
SITE_DEFAULTS = {"system.ppn": lambda s: s.ppn,
                 "system.walltime": lambda s: s.batch.get("walltime"),
                 "system.queue": lambda s: s.batch.get("queue"),
                 "system.project": lambda s: s.batch.get("project"),
                 "system.gpus_per_node": lambda s: s.gpus_per_node or None,
                 "model.container_runtime": lambda s: s.container_runtime}


def submit(config, site_name, overrides=None, resume=None, chain=0, dry_run=False, pools=0):
    """Submit the study of ``config`` (or the experiment ``resume``; with ``pools`` = K, K pool
    jobs for the study ``resume`` that ``emews serve`` runs) on site ``site_name`` (a name, a
    path or a :class:`~emews.launch._site.Site`). Returns the record of the jobs, kept in the
    store and ``EXPDIR/submit.json`` (``dry_run``: the rendered scripts; nothing is made)."""
    site = site_name if isinstance(site_name, sites.Site) else sites.load(site_name)
    if chain < 0:
        raise ConfigError("--chain", "must not be negative", chain)
    if chain and site.scheduler not in scripts.DEPENDENCY:
        raise ConfigError("--chain", f"needs a scheduler with job dependencies "
                          f"{sorted(scripts.DEPENDENCY)}; site {site.name} has "
                          f"{site.scheduler!r}", chain, show_value=False)
    if pools and (chain or not resume or served_at(resume) is None):
        raise ConfigError("--pools", "needs --resume EXPDIR of a study that emews serve runs "
                          "(its store records where), and no --chain", pools, show_value=False)
    overrides = _with_site_defaults(config, site, dict(overrides or {}), resume)
    # bad input fails here, before anything is made
    planned = _plan(config, site, overrides, resume, chain, pools)
    if dry_run:
        texts = [scripts.render(job) for job in planned]
        print("\n".join(texts), end="", flush=True)
        return {"dry_run": True, "scripts": texts}
    command = scripts.SUBMIT_COMMAND.get(site.scheduler)
    if command and shutil.which(command) is None:
        raise ConfigError(f"site {site.name}", f"submits with {command}, which is not on PATH "
                          f"(run emews submit where {site.scheduler} jobs are submitted)",
                          command, show_value=False)
    psij = None
    if site.scheduler != "local":
        try:
            import psij
        except ImportError as exc:
            raise missing_extra("emews submit", f"psij-python ({exc})", "submit") from None
    if pools:  # the served study is not prepared again: the service holds its lock
        expdir, lock = Path(resume).resolve(), None
        cfg = configuration.load([experiment.load_experiment(expdir).as_dict()],
                                 {k: v for k, v in overrides.items() if k.startswith("system.")},
                                 environ={})
        store = experiment.open_store(expdir, cfg)
    else:
        prepared = prepare_run(config, overrides, resume)
        expdir, lock, cfg, store = prepared.expdir, prepared.lock, prepared.spec, prepared.store
    try:
        try:
            record = _recorded(store, expdir)
            first = len(record["jobs"])
            jobs = [_job(cfg, site, expdir, first + i, pools > 0)
                    for i in range(max(pools, chain + 1))]
            if site.langs_app and not site.langs_app_file:
                (expdir / "langs-app.sh").write_text(scripts.langs_app(site))
        finally:
            if lock is not None:
                lock.release()  # the job's own ``emews run --resume`` takes it
        _submit_all(jobs, record, site, psij, store)
    finally:
        store.close()
    print(f"emews: experiment directory {expdir}", flush=True)
    return record


def _submit_all(jobs, record, site, psij, store):
    """Submit ``jobs`` in turn (each after the one before, but pools), each recorded in
    ``record``, the study's ``store`` and ``EXPDIR/submit.json`` as it is submitted."""
    record["site"] = {"name": site.name, "path": str(site.path), "scheduler": site.scheduler}
    after = None
    for job in jobs:
        job.after = None if job.pool else after
        job.script.write_text(scripts.render(job))
        entry = {"index": job.index, "kind": "pool" if job.pool else "study",
                 "script": str(job.script), "stdout": str(job.stdout),
                 "stderr": str(job.stderr), "after": after, "time": time.time()}
        if site.scheduler == "local":
            entry.update(_run_locally(job))
        else:
            entry.update(_submit_psij(psij, job, job.expdir))
        after = entry["id"]
        record["jobs"].append(entry)
        store.set_meta(JOBS, record)
        store.commit()
        experiment.write_json(job.expdir / JOBS_FILE, record)
        print(f"emews: submitted job {entry['id']} ({site.scheduler}, site {site.name})"
              + (f" after job {job.after}" if job.after else "") + f": {job.script}",
              flush=True)


def _with_site_defaults(config, site, overrides, resume):
    """Add the site's values for the settings the study leaves unset (:data:`SITE_DEFAULTS`)."""
    if resume and not config:
        return overrides   # a resumed study keeps what it was prepared with
    cfg = None if resume else configuration.load(config or [], overrides)
    for name, value_of in SITE_DEFAULTS.items():
        value = value_of(site)
        if value is not None and name not in overrides and \
                (cfg is None or tuple(name.split(".")) not in cfg.origin):
            overrides[name] = value
    return overrides


def _plan(config, site, overrides, resume, chain, pools=0):
    """The jobs as they would be: the configuration validated, ``EXPnnn`` for a new study, and
    ``<job K>`` for the ids of jobs not yet submitted."""
    if resume:
        stored = experiment.load_experiment(resume)
        cfg = configuration.load([stored.as_dict()] + (list(config) if isinstance(config, list)
                                                       else [config] if config else []),
                                 overrides)
        expdir = Path(resume).resolve()
    else:
        cfg = configuration.load(config or [], overrides)
        validate(cfg)
        expdir = Path(cfg.study.data_dir) / cfg.study.name / "EXPnnn"
    first = len(experiment.read_store(expdir, lambda store: _recorded(store, expdir),
                                      stored)["jobs"]) if resume else 0
    jobs = []
    for index in range(first, first + max(pools, chain + 1)):
        jobs.append(_job(cfg, site, expdir, index, pools > 0))
        jobs[-1].after = f"<job {index - 1}>" if index > first and not pools else None
    return jobs


def _job(cfg, site, expdir, index, pool=False):
    system = cfg.system
    procs = system.procs
    ppn = min(system.ppn or site.ppn or procs, procs)
    walltime, margin = system.walltime, system.drain_margin
    if walltime is not None:
        seconds = sites.walltime_seconds(walltime, cfg.where("system", "walltime"))
    if margin is not None:
        where = cfg.where("system", "drain_margin")
        margin = sites.walltime_seconds(margin, where)
        if walltime is None or margin >= seconds:
            raise ConfigError(where, "must be shorter than the walltime", system.drain_margin)
    for key in ("queue", "project"):
        value = getattr(system, key)
        if value is not None and not sites.WORD.match(value):
            raise ConfigError(cfg.where("system", key), sites.WORD_RULE, value)
    return scripts.Job(site, Path(expdir), cfg.study.name, procs, ppn, walltime,
                       system.queue, system.project, index, pool=pool, margin=margin,
                       eval_nodes=eval_nodes(cfg, site))


def eval_nodes(cfg, site):
    """The fewest nodes that hold the study's largest evaluation: its ``nodes_per_eval``, and
    enough nodes for its GPUs at the GPUs per node."""
    demand = Demand.from_config(cfg)
    if demand.trivial:
        return 1
    gpus_per_node = cfg.system.gpus_per_node or site.gpus_per_node
    space = Space.from_file(cfg.study.space) if cfg.study.space else None
    try:
        requests = demand.extremes(space)
    except Invalid as invalid:
        raise ConfigError(invalid.field, invalid.rule, invalid.value) from None
    return max(max(request.nodes or 1, math.ceil(request.gpus / gpus_per_node)
                   if request.gpus and gpus_per_node else 1) for request in requests)


def psij_job(psij, job, expdir):
    """psij's executor for the site's scheduler and the psij Job that runs ``job``'s script."""
    site = job.site
    work = Path(expdir) / "psij"
    if site.scheduler in PSIJ_CONFIG:
        module, name = PSIJ_CONFIG[site.scheduler]
        config_class = getattr(__import__(module, fromlist=[name]), name)
        config = config_class(work_directory=work, keep_files=True)
    else:
        config = psij.JobExecutorConfig(work_directory=work)
    executor = psij.JobExecutor.get_instance(site.scheduler, config=config)
    custom = {}
    for key, value in site.batch.get("directives", {}).items():
        values = value if isinstance(value, list) else [value]
        if site.scheduler == "pbs" and key == "l":  # psij writes its own "-l place=..."
            values = [v for v in values if not v.startswith("place=")]
        if values:
            custom[f"{site.scheduler}.{key}"] = ",".join(values)
    if job.after:
        option, value = scripts.DEPENDENCY[site.scheduler]
        custom[f"{site.scheduler}.{option}"] = value.format(job.after)
    if site.scheduler in JOB_NAME:  # psij 0.9's templates read job.name, which Job lacks
        custom.setdefault(f"{site.scheduler}.{JOB_NAME[site.scheduler]}", job.job_name)
    seconds = sites.walltime_seconds(job.walltime) if job.walltime else 600
    attributes = psij.JobAttributes(duration=timedelta(seconds=seconds),
                                    queue_name=job.queue, account=job.project,
                                    custom_attributes=custom or None)
    spec = psij.JobSpec(executable="/bin/bash", arguments=[str(job.script)],
                        directory=Path(job.expdir), name=job.job_name,
                        inherit_environment=True, stdout_path=job.stdout,
                        stderr_path=job.stderr, launcher="single", attributes=attributes,
                        resources=psij.ResourceSpecV1(node_count=job.nodes,
                                                      processes_per_node=job.ppn))
    return executor, psij.Job(spec)


def _submit_psij(psij, job, expdir):
    """Submit ``job`` through psij's executor for the site's scheduler; return its record."""
    site = job.site
    executor, handle = psij_job(psij, job, expdir)
    try:
        executor.submit(handle)
    except psij.SubmitException as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise EmewsError(f"site {site.name}: {scripts.SUBMIT_COMMAND[site.scheduler]} refused "
                         f"job {job.index} ({lines[-1] if lines else 'no message'}); the study "
                         f"is prepared: submit it again with: emews submit --resume "
                         f"{job.expdir} --site {site.name}") from None
    native, where = str(handle.native_id), Path(executor.work_directory)
    return {"id": native, "psij_script": str(where / f"{handle.id}.job"),
            "scheduler_output": str(where / f"{native}.out")}


def _run_locally(job):
    """Start the script here, in its own session, detached from this process."""
    with open(job.stdout, "ab") as out, open(job.stderr, "ab") as err:
        process = subprocess.Popen(["/bin/bash", str(job.script)], stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, cwd=job.expdir,
                                   start_new_session=True, env=dict(os.environ))
    return {"id": str(process.pid), "scheduler_output": str(job.stdout)}


def _recorded(store, expdir):
    """The jobs ``emews submit`` queued for the study in ``expdir`` so far, as its ``store``
    records them."""
    return store.meta(JOBS) or {"expdir": str(expdir), "jobs": []}
