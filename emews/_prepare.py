"""Preparing an experiment: validate the study, make ``EXPnnn/`` (or reopen it), diff a resume.

::

    prepare_run(CONFIG)        load + validate (space, algorithm built, objective imported)
                               -> EXPnnn/ config.json, the store with the space's digest
    prepare_run(resume=EXPnnn) the stored config.json + CONFIG + overrides, validated; what
                               changed is recorded in the store, a different study refused

    reopen(EXPnnn)             a process started for a prepared study (the spawned job's rank
                               0, Swift/T's ME rank): the stored config.json, the algorithm
                               built with the seed of the study's next run

Each returns the :class:`OpenStudy`; nothing is written before the whole configuration is checked.
"""

import hashlib
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from . import _config as configuration
from . import _experiment as experiment
from .core._algorithm import load
from .core._me import build_algorithm
from .core._replicas import check as check_replicas
from .core._resume import search_seed, search_settings
from ._errors import ConfigError
from .pools._requests import Demand
from ._space import Space
from .store import Store, StudyLock, study_store
from .store._postgres import hide_password, is_url
from ._validation import Invalid
from ._worker import make_objective, python_path

LIMITS = ("budget", "max_iterations", "patience", "target", "max_time", "step_budget")
IDENTITY = ("algorithm", "objective", "impl", "app", "model_name", "model_return")  # [study]


class OpenStudy(NamedTuple):
    """The one object of a study in this process: its experiment directory, its held lock, its
    :class:`~emews._config.Config` as ``config.json`` holds it, its open store and the algorithm
    built for its next run (an :class:`~emews.core._algorithm.Algorithm`, or a classic EQ/Py
    module). Made by :func:`prepare_run` or :func:`reopen`; a run in this process goes on with
    these objects: it reads back neither file, opens the store no second time and builds no
    second algorithm."""

    expdir: Path
    lock: StudyLock
    spec: configuration.Config
    store: Store
    algorithm: object

    def release(self):
        """Close the store (safe when it was closed already) and release the lock."""
        self.store.close()
        self.lock.release()


def prepare_run(config, overrides=None, resume=None):
    """Validate the configuration and make (or reopen) the experiment directory: the
    :class:`OpenStudy`, holding its lock and open store until its ``release()``, with the
    algorithm that validation built, with the seed of the experiment's next run."""
    if resume is not None:
        return _prepare_resume(Path(resume), config, overrides)
    cfg = configuration.load(config or [], overrides)
    algorithm = validate(cfg)
    cfg = keep_password_out(cfg)
    expdir = experiment.create(cfg.study.data_dir, cfg.study.name,
                               cfg.study.experiment_numbering, cfg.study.expid)
    lock = StudyLock(expdir).acquire()
    experiment.write_json(expdir / "config.json", cfg.as_dict(expdir))
    store = study_store(expdir, cfg.system.storage)
    store.set_meta("space_digest", space_digest(cfg))
    store.commit()
    return OpenStudy(expdir, lock, cfg, store, algorithm)


def reopen(expdir, algorithm=None):
    """The prepared study in ``expdir``, opened by a process started to run it (the job that
    ``emews run`` spawned, at rank 0; Swift/T's ME rank) as a resume opens it: its lock
    (inherited from a launcher that holds it), its ``config.json``, its store, and its
    algorithm built with the seed of its next run, or ``algorithm`` (a classic EQ/Py module
    that Swift/T's ``EMEWS_ME`` names)."""
    def built(stored, store):
        python_path(stored)
        return stored, algorithm or build(stored, search_seed(stored, store))

    return _opened(Path(expdir), built)


def _prepare_resume(expdir, config, overrides):
    if not (expdir / "config.json").is_file():
        raise ConfigError(str(expdir), "--resume needs an experiment directory holding "
                          "config.json", str(expdir), show_value=False)

    def resumed(stored, store):
        sources = [stored.as_dict()]
        if config:
            sources += config if isinstance(config, list) else [config]
        cfg = configuration.load(sources, overrides)
        algorithm = validate(cfg, search_seed(cfg, store))
        cfg = keep_password_out(cfg)
        changes = resume_changes(stored, cfg, store.meta("space_digest"))
        if changes:
            store.set_meta("changes", store.meta("changes", []) + [
                {"time": time.time(), "changes": changes}])
            store.commit()
        experiment.write_json(expdir / "config.json", cfg.as_dict(expdir))
        return cfg, algorithm

    return _opened(expdir, resumed)


def _opened(expdir, finish):
    """The :class:`OpenStudy` of the study stored in ``expdir``: its lock taken, its
    ``config.json`` read, its store opened, then ``finish(stored spec, store) -> (spec,
    algorithm)``; on any failure the store is closed and the lock released."""
    lock = StudyLock(expdir).acquire()
    store = None
    try:
        stored = experiment.load_experiment(expdir)
        store = study_store(expdir, stored.system.storage, create=False)
        spec, algorithm = finish(stored, store)
    except BaseException:
        if store is not None:
            store.close()
        lock.release()
        raise
    return OpenStudy(expdir, lock, spec, store, algorithm)


def resume_changes(stored, cfg, digest):
    """What a resume changes: ``{"table.key": [old, new]}``. A ConfigError names the first
    difference that would make the resumed study a different study: the space (its content;
    its file where no digest was stored: a moved file with the same content is the same
    space), the algorithm or its options, the objective, what it optimizes (objectives,
    directions, constraints), or the model."""
    def refuse(what, old, new):
        raise ConfigError(f"--resume: {what}", "must be the same as in the stored study "
                          f"(stored {old!r}, now {new!r}); start a new study to change it",
                          None, show_value=False)

    for key in IDENTITY:
        old, new = getattr(stored.study, key), getattr(cfg.study, key)
        if old != new:
            refuse(f"[study].{key}", old, new)
    if stored.criteria != cfg.criteria:
        refuse("[study] objectives, directions and constraints", stored.criteria, cfg.criteria)
    if digest is None and stored.study.space != cfg.study.space:
        refuse("[study].space", stored.study.space, cfg.study.space)
    if digest is not None and space_digest(cfg) != digest:
        refuse("the search space's content", digest[:12], space_digest(cfg)[:12])
    before, after, changes = stored.as_dict(), cfg.as_dict(), {}
    for table in ("algorithm", "model", "system", "study", "failure", "service"):
        old, new = before[table], after[table]
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if table in ("algorithm", "model"):
                    refuse(f"[{table}].{key}", old.get(key), new.get(key))
                changes[f"{table}.{key}"] = [old.get(key), new.get(key)]
    return changes


def space_digest(cfg):
    """A SHA-256 of the search-space file's bytes (``None`` without a space)."""
    path = cfg.study.space
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None


def keep_password_out(cfg):
    """``cfg`` with the password taken out of ``[system].storage``, before it is written
    anywhere (see :func:`~emews.store._postgres.hide_password`)."""
    if not cfg.system.storage:
        return cfg
    return replace(cfg, system=replace(cfg.system, storage=hide_password(cfg.system.storage)))


def validate(cfg, seed=None):
    """Check what can be checked before anything is written: space, algorithm, objective.
    Returns the algorithm, built with ``seed`` (default: the study's) as a run of the study
    builds it, or the classic EQ/Py module the study names."""
    study = cfg.study
    python_path(cfg)
    storage = cfg.system.storage
    if storage and not is_url(storage):
        raise ConfigError(cfg.where("system", "storage"), "must be a postgresql:// URL (or "
                          "empty for the experiment's SQLite results.db)", storage)
    space = Space.from_file(study.space) if study.space else None
    for key in ("seed", "space"):
        if key in cfg.algorithm:
            raise ConfigError(cfg.where("algorithm", key), "is a setting of [study], not of "
                              "[algorithm]", cfg.algorithm[key])
    algorithm = load(study.algorithm, cfg.where("study", "algorithm"))
    names = cfg.criteria.names
    if isinstance(algorithm, type) and len(names) > 1 and not algorithm.multiobjective:
        raise ConfigError(cfg.where("study", "algorithm"), f"searches one objective only; the "
                          f"study has {len(names)} ({', '.join(names)}): choose one that "
                          "searches several (multiobjective = True)", study.algorithm)
    if isinstance(algorithm, type):
        if space is None and algorithm.needs_space:
            raise ConfigError(cfg.where("study", "space"), "the algorithm needs a search-space "
                              "file", None)
        if study.replicas > 1:
            check_replicas(space, study.replica_seed_param,
                           cfg.where("study", "replica_seed_param"))
            if study.budget is not None and study.budget % study.replicas:
                raise ConfigError(cfg.where("study", "budget"), "must be a multiple of "
                                  f"[study].replicas ({study.replicas}), so that the budget "
                                  "cuts no point's replicas short", study.budget)
        try:
            algorithm = build_algorithm(search_settings(
                cfg, study.seed if seed is None else seed), algorithm, space)
        except ConfigError as exc:
            raise in_file(cfg, exc) from None
        except TypeError as exc:
            raise ConfigError("[algorithm]", f"options do not fit {algorithm.__name__} ({exc})",
                              cfg.algorithm, show_value=False) from None
    elif study.replicas > 1:
        raise ConfigError(cfg.where("study", "replicas"), "needs an ask/tell algorithm (a "
                          "classic EQ/Py module proposes its points itself)", study.replicas)
    if not study.no_limit and not any(getattr(study, key) is not None for key in LIMITS) \
            and not getattr(algorithm, "finite", False):
        raise ConfigError("[study]", "needs a stopping rule (one of "
                          f"{', '.join(LIMITS)}), or --no-limit to run until stopped", None,
                          show_value=False)
    check_demand(cfg, space)
    if study.impl == "app" and study.app and os.path.isabs(study.app[0]) \
            and not os.path.exists(study.app[0]):
        raise ConfigError(cfg.where("study", "app"), "must start with a program that exists",
                          study.app[0])
    mpiexec = cfg.system.mpiexec
    if mpiexec and cfg.system.pool == "mpi" and cfg.system.procs > 1 \
            and shutil.which(mpiexec) is None:
        raise ConfigError(cfg.where("system", "mpiexec"), "must name a program that exists",
                          mpiexec)
    try:
        make_objective(cfg, Path("."))
    except ConfigError as exc:
        raise in_file(cfg, exc) from None
    return algorithm


def in_file(cfg, exc):
    """``exc``, a ConfigError naming a setting as ``[table].key`` (or ``[table].key.more``),
    naming the file or variable that set it too (``s.toml: [table].key``)."""
    table, _, rest = exc.where.removeprefix("[").partition("]")
    key, dot, more = rest.removeprefix(".").partition(".")
    if not exc.where.startswith("[") or (table, key) not in cfg.origin:
        return exc
    shown = str(exc).endswith(f", got {exc.value!r}")
    return type(exc)(cfg.where(table, key) + dot + more, exc.rule, exc.value,
                     show_value=shown)


def check_demand(cfg, space):
    """Refuse, before anything runs, evaluations that could never fit the study's pool
    (``[study] ranks_per_eval``, ``gpus_per_eval``, ``nodes_per_eval``: emews.pools._requests)."""
    demand = Demand.from_config(cfg)
    if demand.trivial:
        return
    if cfg.system.slots_per_worker != 1:
        raise ConfigError(cfg.where("system", "slots_per_worker"), "must be 1 when [study] "
                          "ranks_per_eval, gpus_per_eval or nodes_per_eval is set",
                          cfg.system.slots_per_worker)
    try:
        demand.refuse_beyond(space, cfg.system.workers, cfg.system.gpus_per_node,
                             f"[system] procs = {cfg.system.procs}")
    except Invalid as invalid:
        raise ConfigError(invalid.field, invalid.rule, invalid.value) from None


def build(cfg, seed):
    """The study's algorithm built with ``seed`` (as :func:`validate` builds it, unchecked),
    or the classic EQ/Py module it names."""
    found = load(cfg.study.algorithm, cfg.where("study", "algorithm"))
    if not isinstance(found, type):
        return found
    return build_algorithm(search_settings(cfg, seed), found)
