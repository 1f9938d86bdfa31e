"""Running a study: the composition root that wires the ME, the master, a pool and the store.

::

    emews run CONFIG       prepare_run() (emews._prepare): validate everything, make EXPnnn/,
         |                 write config.json; the algorithm is built there, once: the
         |                 study (OpenStudy: directory, lock, spec, store, algorithm)
         |                 then, started alone with pool = "mpi" and procs > 1:
         +--> mpiexec -n PROCS python -m emews run --execute EXPnnn   (emews.launch._spawn)
         |                 whose rank 0 reopen()s the study, or, under mpiexec / in-process:
         +--> execute(study): rank 0 = run_master(study, pool): master + ME thread + pool
                              ranks 1.. = run_worker() (emews._worker)

    emews serve CONFIG     serve(): prepare_run(), then run_master(study, pool) on a RemotePool
                           whose transport (zmq or PostgreSQL: emews.service._links) pool jobs
                           attach to
    mpiexec -n N emews pool EXPDIR
                           pool_job(): rank 0 attaches (emews.service._core.Attachment) and
                           hands tasks to ranks 1.. = run_worker()

A fresh experiment is executed exactly like a resumed one whose store is empty, so ``--resume``
and the spawned pool share one path (:mod:`emews.core._resume`). The modules below this one never
import it.
"""
import functools
import math
import os
import signal
import socket
import threading
import time
from pathlib import Path

from . import _experiment as experiment
from .core import _me as me, _queues as queues
from .core._algorithm import Algorithm, Stopper
from .core._control import Control
from .core._failure import FailurePolicy
from .core._master import Master
from .core._plan import MasterPlan
from .core._replicas import Gathered
from ._config import Config
from .core._resume import resume_unfinished, starting_state
from ._errors import ConfigError, EmewsError, Interrupted
from .inspect._progress import Progress
from .launch._spawn import spawn, under_mpiexec
from .pools._base import InProcessPool
from .pools._packed import with_packing
from ._prepare import prepare_run, reopen
from ._result import (best as best_found, final_record, interrupted, pareto, print_summary,
                     result_from)
from ._status import TOLD, Status
from ._worker import make_objective, python_path, run_worker


def run(config, overrides=None, resume=None):
    """Run a study (what :func:`emews.run` does, its arguments as they are here); return a
    :class:`~emews._result.Result`."""
    if under_mpiexec():
        return _run_under_mpiexec(lambda: prepare_run(config, overrides, resume))
    study = prepare_run(config, overrides, resume)
    try:
        cfg = study.spec
        if cfg.system.pool == "mpi" and cfg.system.procs > 1:
            study.store.close()   # the spawned job's rank 0 runs the study on it
            return spawn(study.expdir, cfg, study.lock)
        return execute(study)
    finally:
        study.release()


def serve(config, overrides=None, resume=None):
    """Run a study as a service until it ends; return its :class:`~emews._result.Result`.

    Pools attach over zmq, or through the study's PostgreSQL database when its ``[system]
    storage`` is one (:func:`pool_job`). The arguments are :func:`run`'s."""
    from .service._core import RemotePool
    from .service._links import service_link

    study = prepare_run(config, overrides, resume)
    try:
        cfg = study.spec
        slots = cfg.system.slots
        link, where = service_link(study.store, Path(study.expdir).resolve(), cfg, slots)
        print(f"emews: serving {study.expdir} {where}; attach pools with: mpiexec -n N "
              f"emews pool {study.expdir}", flush=True)
        pool = RemotePool(link, slots)
        link.share(study.store)   # PostgreSQL: the store's commit and the queue's exchange as one
        try:
            return run_master(study, pool)
        finally:
            pool.close()
    finally:
        study.release()


def pool_job(target, walltime=None, give_up=600.0, keys=None, workdir=None, eqsql=None,
             task_type=0):
    """``mpiexec -n N emews pool TARGET``: rank 0 attaches to the study, the others work.
    The arguments are the command's (``emews pool --help``; ``target`` and ``eqsql`` are read
    by :func:`emews.service._links.attach`, which says where run directories go). Returns why
    the pool left (on rank 0; ``None`` on the others)."""
    from mpi4py import MPI

    from .pools._mpi import MPIPool
    from .service._core import Attachment
    from .service._links import attach

    comm = MPI.COMM_WORLD
    link, study = None, None
    if comm.Get_rank() == 0:
        try:
            if comm.Get_size() < 2:
                raise EmewsError("emews pool needs at least 2 MPI ranks (rank 0 attaches, "
                                 "the others evaluate): mpiexec -n N with N >= 2")
            link, study = attach(target, keys, give_up, workdir, eqsql, task_type,
                                 comm.Get_size() - 1)
        except BaseException:
            comm.bcast(None)  # the workers must not wait for a study that never comes
            raise
    study = comm.bcast(study)
    if study is None:
        raise SystemExit(1)
    cfg = Config.from_dict(study["config"])
    python_path(cfg)
    if comm.Get_rank() > 0:
        return run_worker(Path(study["expdir"]), cfg, comm, comm.Get_rank(), study["label"])
    pool = MPIPool(comm, cfg.system.slots_per_worker)
    try:
        pool = with_packing(pool, cfg)
        return Attachment(link, pool, study["lease"], walltime).run()
    finally:
        link.close()
        pool.close()


def execute_prepared(expdir):
    """Execute an experiment that ``emews run`` prepared and spawned this job for."""
    return _run_under_mpiexec(lambda: reopen(expdir))


def _run_under_mpiexec(open_study):
    """Rank 0 opens the study (``open_study() -> OpenStudy``) and tells the others where it
    is, or that it failed: then every rank exits non-zero. The others read its
    ``config.json`` and work."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    study, error = None, None
    if comm.Get_rank() == 0:
        try:
            study = open_study()
        except BaseException as exc:  # noqa: BLE001 - every rank must learn of any failure
            error = exc
    expdir, status = comm.bcast((study.expdir if study else None,
                                 exit_status(error) if error else 0), root=0)
    if error is not None:
        raise error
    if status:
        raise SystemExit(status)
    if study is None:   # ranks 1..
        expdir = Path(expdir)
        return run_worker(expdir, experiment.load_experiment(expdir), comm, comm.Get_rank())
    try:
        return execute(study, comm)
    finally:
        study.release()


def exit_status(error):
    """The exit status that an error ends a run with: 2 for bad input, else 1."""
    return 2 if isinstance(error, ConfigError) else 1


def execute(study, comm=None):
    """Run ``study`` (the :class:`~emews._prepare.OpenStudy` of this process) on rank 0 of
    ``comm``, whose other ranks work (``None``, or one rank: a pool in this process); returns
    a Result."""
    cfg = study.spec
    if comm is not None and comm.Get_size() > 1:
        from .pools._mpi import MPIPool

        pool = MPIPool(comm, cfg.system.slots_per_worker)
    else:
        pool = InProcessPool(make_objective(cfg, study.expdir), cfg.system.workers
                             if cfg.system.pool == "inprocess" else 1)
    status = 1
    try:
        pool = with_packing(pool, cfg)
        result = run_master(study, pool)
        status = 0
    finally:
        pool.close(status)
    return result


def run_master(study, pool):
    """Rank 0: the ME thread and the master of ``study`` (the
    :class:`~emews._prepare.OpenStudy` of this process, whose store and algorithm they use) on
    ``pool``; returns a Result. An ask/tell algorithm runs in the ME driver, which gets its
    settings, the algorithm and the master's limits as objects; a classic EQ/Py module reads
    ``settings.json`` at the handshake."""
    expdir, cfg, store, algorithm = study.expdir, study.spec, study.store, study.algorithm
    progress = None
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        classic = not isinstance(algorithm, Algorithm)
        policy = FailurePolicy.from_config(cfg.failure)
        requeue = resume_unfinished(store)
        starting = starting_state(cfg, store, pool.slots, classic, requeue, policy)
        experiment.write_json(expdir / "settings.json", starting.settings)
        control = Control.of_job(store)   # a new run starts running: before it says it runs
        store.set_meta("started", time.time())
        store.set_meta("master", {"host": socket.gethostname(), "pid": os.getpid()})
        if not classic and algorithm.describe() is not None:
            store.set_meta("search", algorithm.describe())   # what auto chose (emews status)
        pruner, why = cfg.pruner_choice
        if why is not None and pruner != "none":   # what pruner = "auto" chose
            store.set_meta("pruner", {"pruner": pruner, "why": why})
            if not cfg.system.quiet:
                print(f"emews: pruner auto chose {pruner}: {why}", flush=True)
        store.commit()
        progress = _progress(cfg, store)
        limits = Stopper(**cfg.stop)
        if starting.restored is not None:
            limits.restore(starting.restored)
        else:
            limits.record(starting.earlier_values)
        master = Master(pool, store, MasterPlan(
            mode=starting.settings["mode"], first_id=store.next_id(),
            first_seq=starting.settings["put_base"] if starting.restored is not None
            else store.next_seq(),
            policy=policy, limits=limits,
            requeue=tuple((row["id"], row["params"], row["attempt"]) for row in requeue),
            stored_answers=tuple(starting.stored_answers), control=control,
            pruner=cfg.make_pruner(),
            criteria=cfg.criteria, progress=progress))
        master.resume_reports(store.reports(), [(row["id"], row["attempt"])
                                                for row in store.rows(Status.DONE)],
                              [(row["id"], row["attempt"]) for row in store.attempts()
                               if row["status"] == Status.INTERRUPTED])
        queues.init(algorithm if classic else functools.partial(
            me.run, starting.settings, algorithm, me.Limits(limits.verdict())))
        try:
            final = master.run(str(expdir / "settings.json"))
        except (KeyboardInterrupt, Interrupted) as exc:
            master.cancel_all(Interrupted.REASON)
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            raise interrupted(expdir, signum, store.finished_count()) from None
        if progress is not None:
            progress.show()
        final = final_record(final, store, cfg.study)
        store.set_meta("final", final)
        store.commit()
        result = result_from(expdir, store, final)
        experiment.write_json(expdir / "final.json", final)
    finally:
        if progress is not None:
            progress.close()
        queues.stop()  # an ME still waiting (the study ended without its DONE) gives up
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if not cfg.system.quiet:
        print_summary(result)
    return result


def _progress(cfg, store):
    """The study's :class:`~emews.inspect._progress.Progress`, going on from what ``store``
    holds; ``None`` in a study with ``[system] quiet``."""
    if cfg.system.quiet:
        return None
    study, counts = cfg.study, store.counts()
    _, best = best_found(store, study)
    return Progress(study.budget, cfg.system.progress_interval,
                    done=sum(counts.get(status, 0) for status in TOLD),
                    failed=counts.get(Status.FAILED, 0),
                    pruned=counts.get(Status.PRUNED, 0),
                    best=math.inf if best is None else best,
                    max_time=study.max_time, step_budget=study.step_budget,
                    directions=cfg.criteria.directions if cfg.criteria.vector else None,
                    pareto=[entry["values"] for entry in pareto(store, cfg.criteria.directions)]
                    if cfg.criteria.vector else (),
                    replicas=Gathered(study.replicas, study.replica_objective,
                                      study.replica_seed_param)
                    if study.replicas > 1 else None)


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)
