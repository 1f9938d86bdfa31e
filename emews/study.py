"""Running a study: prepare its experiment directory, then execute it here or under mpiexec.

::

    emews run CONFIG       prepare(): validate everything, make EXPnnn/, write config.json
         |                 then, started alone with pool = "mpi" and procs > 1:
         +--> mpiexec -n PROCS python -m emews run --resume EXPnnn   (spawn())
         |                 or, under mpiexec / in-process:
         +--> execute(EXPnnn): rank 0 = master + ME thread, ranks 1.. = workers

A fresh experiment is executed exactly like a resumed one whose store is empty, so ``--resume``
and the spawned pool share one path.
"""

import functools
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import config as configuration
from . import experiment
from .core import eqpy
from .core.algorithm import Algorithm, Stopper, load
from .core.control import Control
from .core.failure import FailurePolicy
from .core.master import Master
from .core.replicas import check as check_replicas, summarize
from .errors import ConfigError, EmewsError, Interrupted, Reported
from .evaluate import Objective, Outcome
from .evaluate.deathsig import set_death_signal
from .inspect.progress import TERMINAL_VARIABLE, Progress
from .launch import gpus
from .pools.base import InProcessPool
from .space import Space
from .store import StudyLock, study_store
from .store.lock import TOKEN_VARIABLE
from .store.postgres import hide_password, is_url

MPI_ENVIRONMENT = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
SPAWNED_VARIABLE = "EMEWS_SPAWNED"   # set for a job that ``emews run`` started: it reports
CHECKPOINT = "me"                    # the ME driver's checkpoint in the store
LIMITS = ("budget", "max_iterations", "patience", "target", "max_time")
REPLICA_KEYS = ("replicas", "replica_objective", "replica_seed_param")
MAX_INTERRUPTIONS = 3                # a point interrupted this often is not run again


@dataclass
class Result:
    """What a study found."""

    best_point: dict | None
    best_value: float | None
    expdir: Path
    stop_reason: str | None = None
    evaluations: int = 0
    failed: int = 0

    @property
    def all_failed(self):
        """True when the study evaluated something and every evaluation failed."""
        return bool(self.evaluations) and self.failed == self.evaluations


def run(config, overrides=None, resume=None):
    """Run a study from Python or a notebook; return a :class:`Result`.

    ``config`` is a TOML path, a list of paths, or a dict shaped like the TOML file.
    ``overrides`` maps ``"table.key"`` to values (they win over everything). ``resume`` names an
    experiment directory to continue (``config`` may then be ``None``).
    """
    if under_mpiexec():
        return _run_under_mpiexec(lambda: prepare(config, overrides, resume))
    expdir, lock = prepare(config, overrides, resume)
    try:
        cfg = load_experiment(expdir)
        if cfg.system["pool"] == "mpi" and cfg.system["procs"] > 1:
            return spawn(expdir, cfg, lock)
        return execute(expdir, None)
    finally:
        lock.release()


def execute_prepared(expdir):
    """Execute an experiment that ``emews run`` prepared and spawned this job for."""
    return _run_under_mpiexec(lambda: (Path(expdir), StudyLock(expdir).acquire()))


def _run_under_mpiexec(open_experiment):
    """Rank 0 opens the experiment (``open_experiment() -> (expdir, lock)``) and tells the
    others where it is, or that it failed: then every rank exits non-zero."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    expdir, lock, error = None, None, None
    if comm.Get_rank() == 0:
        try:
            expdir, lock = open_experiment()
        except BaseException as exc:  # noqa: BLE001 - every rank must learn of any failure
            error = exc
    expdir, status = comm.bcast((expdir, exit_status(error) if error else 0), root=0)
    if error is not None:
        raise error
    if status:
        raise SystemExit(status)
    try:
        return execute(expdir, comm)
    finally:
        if lock is not None:
            lock.release()


def exit_status(error):
    """The exit status that an error ends a run with: 2 for bad input, else 1."""
    return 2 if isinstance(error, ConfigError) else 1


def under_mpiexec():
    """True when this process was started by an MPI launcher."""
    return any(name in os.environ for name in MPI_ENVIRONMENT)


def prepare(config, overrides=None, resume=None):
    """Validate the configuration and make (or reopen) the experiment directory.

    Returns ``(expdir, lock)``: the study's lock is held until the caller releases it.
    """
    if resume is not None:
        return _prepare_resume(Path(resume), config, overrides)
    cfg = configuration.load(config or [], overrides)
    validate(cfg)
    keep_password_out(cfg)
    expdir = experiment.create(cfg.study["data_dir"], cfg.study["name"],
                               cfg.study["experiment_numbering"])
    lock = StudyLock(expdir).acquire()
    experiment.write_json(expdir / "config.json", cfg.as_dict())
    store = study_store(expdir, cfg.system["storage"])
    store.set_meta("space_digest", space_digest(cfg))
    store.close()
    return expdir, lock


def _prepare_resume(expdir, config, overrides):
    if not (expdir / "config.json").is_file():
        raise ConfigError(str(expdir), "--resume needs an experiment directory holding "
                          "config.json", str(expdir), show_value=False)
    lock = StudyLock(expdir).acquire()
    try:
        stored = load_experiment(expdir)
        store = study_store(expdir, stored.system["storage"], create=False)
        try:
            sources = [stored.as_dict()]
            if config:
                sources += config if isinstance(config, list) else [config]
            cfg = configuration.load(sources, overrides)
            validate(cfg)
            keep_password_out(cfg)
            changes = resume_changes(stored, cfg, store.meta("space_digest"))
            if changes:
                store.set_meta("changes", store.meta("changes", []) + [
                    {"time": time.time(), "changes": changes}])
                store.commit()
        finally:
            store.close()
        experiment.write_json(expdir / "config.json", cfg.as_dict())
    except BaseException:
        lock.release()
        raise
    return expdir, lock


IDENTITY = (("study", "algorithm"), ("study", "space"), ("study", "objective"),
            ("study", "impl"), ("study", "app"), ("study", "model_name"),
            ("study", "model_return"))


def resume_changes(stored, cfg, digest):
    """What a resume changes: ``{"table.key": [old, new]}``.

    Raises a ConfigError naming the first difference that would make the resumed study a
    different study: the space (its file or its content), the algorithm or its options, the
    objective, or the model.
    """
    def refuse(what, old, new):
        raise ConfigError(f"--resume: {what}", "must be the same as in the stored study "
                          f"(stored {old!r}, now {new!r}); start a new study to change it",
                          None, show_value=False)

    for table, key in IDENTITY:
        if stored.study[key] != cfg.study[key]:
            refuse(f"[{table}].{key}", stored.study[key], cfg.study[key])
    if digest is not None and space_digest(cfg) != digest:
        refuse("the search space's content", digest[:12], space_digest(cfg)[:12])
    for table in ("algorithm", "model"):
        old, new = getattr(stored, table), getattr(cfg, table)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                refuse(f"[{table}].{key}", old.get(key), new.get(key))
    changes = {}
    for table in ("system", "study", "failure", "service"):
        old, new = getattr(stored, table), getattr(cfg, table)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                changes[f"{table}.{key}"] = [old.get(key), new.get(key)]
    return changes


def space_digest(cfg):
    """A SHA-256 of the search-space file's bytes (``None`` without a space)."""
    path = cfg.study["space"]
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None


def open_study_store(expdir):
    """The store of a prepared experiment (``results.db``, or its ``[system].storage``)."""
    return study_store(expdir, load_experiment(expdir).system["storage"], create=False)


def load_experiment(expdir):
    """The configuration as run, from ``EXPDIR/config.json`` (already resolved: the
    environment does not apply again)."""
    return configuration.load([experiment.read_json(Path(expdir) / "config.json")], environ={})


def keep_password_out(cfg):
    """Take the password out of ``[system].storage`` before it is written anywhere (see
    :func:`~emews.store.postgres.hide_password`)."""
    if cfg.system["storage"]:
        cfg.system["storage"] = hide_password(cfg.system["storage"])


def validate(cfg):
    """Check what can be checked before anything is written: space, algorithm, objective."""
    study = cfg.study
    python_path(cfg)
    storage = cfg.system["storage"]
    if storage and not is_url(storage):
        raise ConfigError(cfg.where("system", "storage"), "must be a postgresql:// URL (or "
                          "empty for the experiment's SQLite results.db)", storage)
    space = Space.from_file(study["space"]) if study["space"] else None
    for key in ("seed", "space"):
        if key in cfg.algorithm:
            raise ConfigError(cfg.where("algorithm", key), "is a setting of [study], not of "
                              "[algorithm]", cfg.algorithm[key])
    algorithm = load(study["algorithm"], cfg.where("study", "algorithm"))
    if isinstance(algorithm, type):
        if space is None and algorithm.needs_space:
            raise ConfigError(cfg.where("study", "space"), "the algorithm needs a search-space "
                              "file", None)
        try:
            algorithm(space, seed=study["seed"], **cfg.algorithm)
        except TypeError as exc:
            raise ConfigError("[algorithm]", f"options do not fit {algorithm.__name__} ({exc})",
                              cfg.algorithm, show_value=False) from None
        if study["replicas"] > 1:
            check_replicas(space, study["replica_seed_param"],
                           cfg.where("study", "replica_seed_param"))
            if study["budget"] is not None and study["budget"] % study["replicas"]:
                raise ConfigError(cfg.where("study", "budget"), "must be a multiple of "
                                  f"[study].replicas ({study['replicas']}), so that the budget "
                                  "cuts no point's replicas short", study["budget"])
    elif study["replicas"] > 1:
        raise ConfigError(cfg.where("study", "replicas"), "needs an ask/tell algorithm (a "
                          "classic EQ/Py module proposes its points itself)", study["replicas"])
    if not study["no_limit"] and not any(study[key] is not None for key in LIMITS) \
            and not getattr(algorithm, "finite", False):
        raise ConfigError("[study]", "needs a stopping rule (one of "
                          f"{', '.join(LIMITS)}), or --no-limit to run until stopped", None,
                          show_value=False)
    make_objective(cfg, Path("."))
    return algorithm


def make_objective(cfg, expdir):
    """The configured :class:`Objective` for runs under ``expdir``."""
    python_path(cfg)
    return Objective.from_config(cfg, expdir)


def python_path(cfg):
    """Make ``[system].python_path`` importable (by default the configuration's directory)."""
    for directory in reversed(cfg.system["python_path"]):
        if directory not in sys.path:
            sys.path.insert(0, directory)


def spawn(expdir, cfg, lock):
    """Run the prepared experiment under ``mpiexec -n procs``, holding its lock meanwhile.

    SIGINT and SIGTERM are passed on to the job as one SIGINT (the launcher's clean Ctrl-C),
    which stores what it can and stops; then this raises :class:`~emews.errors.Interrupted`.
    The job runs in its own session, so a terminal's Ctrl-C reaches it once, through here, and
    it gets SIGINT too if this process dies. A job that ends before its study did (a rank
    died or was killed) raises an :class:`~emews.errors.EmewsError` saying how to resume.
    """
    mpiexec = cfg.system["mpiexec"] or _default_mpiexec()
    command = [mpiexec, *cfg.system["mpiexec_args"], "-n", str(cfg.system["procs"]),
               sys.executable, "-m", "emews", "run", "--execute", str(expdir)]
    env = dict(os.environ, **{TOKEN_VARIABLE: lock.token, SPAWNED_VARIABLE: "1"})
    if sys.stdout.isatty():
        env[TERMINAL_VARIABLE] = "1"
    process = subprocess.Popen(command, env=env, start_new_session=True,
                               preexec_fn=functools.partial(set_death_signal, os.getpid(),
                                                            signal.SIGINT))
    received = []

    def pass_on(signum, frame):
        if not received:
            process.send_signal(signal.SIGINT)
        received.append(signum)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received or code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
        raise interrupted(expdir, received[0] if received else code - 128)
    if code == 0:
        return result_of(expdir)
    if _final_recorded(expdir):
        result = result_of(expdir)
        if result.all_failed:
            return result  # the caller reports it
        raise Reported(code)
    raise EmewsError(f"the MPI job ended with status {code} before the study did (a rank died "
                     f"or was killed); {stored_count(expdir)} evaluations are stored; resume "
                     f"with: emews run --resume {expdir}")


def _final_recorded(expdir):
    store = open_study_store(expdir)
    try:
        return store.meta("final") is not None
    finally:
        store.close()


def stored_count(expdir):
    """How many evaluations of ``expdir`` have a final result in its store."""
    store = open_study_store(expdir)
    try:
        return store.finished_count()
    finally:
        store.close()


def interrupted(expdir, signum):
    """The :class:`~emews.errors.Interrupted` error of ``expdir``, with its stored count."""
    error = Interrupted(signum)
    error.expdir, error.stored = Path(expdir), stored_count(expdir)
    return error


def _default_mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        raise ConfigError("[system].mpiexec", "no mpiexec found beside the Python interpreter or "
                          "on PATH; install the 'mpich' wheel", None, show_value=False)
    return found


def execute(expdir, comm):
    """Execute the experiment in ``expdir`` on ``comm`` (``None``: in this process only).

    The caller holds the study's lock.
    """
    expdir = Path(expdir)
    cfg = load_experiment(expdir)
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    if rank > 0:
        return run_worker(expdir, cfg, comm, rank)
    if size > 1:
        from .pools.mpi import MPIPool

        pool = MPIPool(comm, cfg.system["slots_per_worker"])
    else:
        pool = InProcessPool(make_objective(cfg, expdir), max(cfg.system["procs"] - 1, 1)
                             if cfg.system["pool"] == "inprocess" else 1)
    status = 1
    try:
        result = run_master(expdir, cfg, pool)
        status = 0
    finally:
        pool.close(status)
    return result


def run_worker(expdir, cfg, comm, rank, label=None):
    """Rank ``rank`` >= 1: evaluate what rank 0 sends; output to ``out/out-[LABEL-]RANK.txt``."""
    from .pools.mpi import redirect_output, serve

    redirect_output(expdir / "out" / f"out-{label + '-' if label else ''}{rank}.txt")
    gpus.assign(rank, cfg.system["gpus_per_node"], cfg.system["cuda_offset"])
    status = serve(comm, make_objective(cfg, expdir))
    if status:
        raise SystemExit(status)


def run_master(expdir, cfg, pool):
    """Rank 0: the ME thread and the master on ``pool``, with the store; returns a Result."""
    study = cfg.study
    store = study_store(expdir, cfg.system["storage"], create=False)
    progress = None
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        python_path(cfg)
        module = load(study["algorithm"])
        classic = not isinstance(module, type) or not issubclass(module, Algorithm)
        policy = FailurePolicy.from_config(cfg.failure)
        requeue = _resume_unfinished(store)
        mode = "batch" if classic else study["mode"]
        restore = not classic and _restorable(store, mode)
        told = {} if restore else None
        settings = _settings(cfg, store, pool.slots, classic, requeue, policy, told)
        experiment.write_json(expdir / "settings.json", settings)
        control = Control.of_job(expdir)   # a new run starts running: before it says it runs
        store.set_meta("started", time.time())
        store.set_meta("master", {"host": socket.gethostname(), "pid": os.getpid()})
        store.commit()
        counts = store.counts()
        best = store.best()
        done = counts.get("done", 0) + counts.get("failed", 0)
        progress = Progress(study["budget"], cfg.system["progress_interval"], done=done,
                            failed=counts.get("failed", 0),
                            best=best["result"] if best else math.inf,
                            max_time=study["max_time"])
        limits = Stopper(**cfg.stop)
        limits.record([math.nan] * done)
        limits.best = best["result"] if best else math.inf
        master = Master(pool, store, mode, progress, first_id=store.next_id(), policy=policy,
                        limits=limits,
                        requeue=[(row["id"], row["params"], row["attempt"]) for row in requeue],
                        known=told.values() if restore else (),
                        first_seq=settings["put_base"] if restore else store.next_seq(),
                        control=control)
        eqpy.init(module if classic else "emews.core.me")
        try:
            final = master.run(str(expdir / "settings.json"))
        except (KeyboardInterrupt, Interrupted) as exc:
            master.cancel_all("cancelled: the study was interrupted")
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            raise interrupted(expdir, signum) from None
        progress.show()
        final = final_record(final, store, study)
        store.set_meta("final", final)
        store.commit()
        result = _result(expdir, store, final)
        experiment.write_json(expdir / "final.json", final)
    finally:
        if progress is not None:
            progress.close()
        eqpy.stop()  # an ME still waiting (the study ended without its DONE) gives up
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        store.close()
    print_summary(result)
    return result


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def _resume_unfinished(store):
    """Mark what a killed run left unfinished ``interrupted``; fail for good the points that
    were interrupted :data:`MAX_INTERRUPTIONS` times; return the others, to run again."""
    rows = store.interrupt_unfinished()
    given_up = [row for row in rows if row["interruptions"] >= MAX_INTERRUPTIONS]
    store.finish([(row["id"], row["rank"], Outcome(
        math.nan, "failed", f"interrupted {row['interruptions']} times (its worker or the "
        "whole job died each time); not run again"), row["attempt"], "failed")
        for row in given_up])
    store.commit()
    return [row for row in rows if row["interruptions"] < MAX_INTERRUPTIONS]


def _restorable(store, mode):
    """True when the search resumes from its checkpoint: in batch mode, where a checkpoint
    (taken after each tell) covers every point proposed before it."""
    return mode == "batch" and store.checkpoint(CHECKPOINT) is not None


def _settings(cfg, store, slots, classic, requeue, policy, told=None):
    """What the ME reads at the handshake.

    A search restored from its checkpoint (``told`` is a dict) is told nothing: the points it
    proposed after the checkpoint are filled into ``told`` (id -> ``(id, params, value)``) for
    the master to answer from the store when the search proposes them again. Otherwise the
    search is told every finished point (``history``) and proposes the unfinished ones again
    first (``pending``).
    """
    study = cfg.study
    finished = store.rows("done", "failed")
    settings = {"algorithm": study["algorithm"], "options": cfg.algorithm,
                "space": study["space"], "seed": study["seed"],
                "mode": "batch" if classic else study["mode"], "slots": slots,
                "batch_size": study["batch_size"], "stop": cfg.stop, "history": [],
                "replicas": {k: study[k] for k in REPLICA_KEYS},
                "pending": [], "checkpoint": {"store": store.path, "name": CHECKPOINT,
                                              "restore": told is not None}}
    if told is not None:
        _, driver = store.checkpoint(CHECKPOINT)
        settings["put_base"] = driver["put"]
        told.update((row["id"], (row["id"], row["params"], told_value(row, policy)))
                    for row in finished if row["seq"] is not None and row["seq"] >= driver["put"])
        return settings
    settings["history"] = [[row["params"], None if math.isnan(value) else value]
                           for row in finished for value in [told_value(row, policy)]]
    settings["pending"] = [row["params"] for row in requeue]
    resumes = store.meta("resumes", 0) + (1 if finished or requeue else 0)
    store.set_meta("resumes", resumes)
    if study["seed"] is not None and resumes:
        settings["seed"] += 7919 * resumes  # a resumed search must not replay its proposals
    return settings


def told_value(row, policy):
    """What the search was told of a finished point: its result, or the policy's value for a
    failure (its penalty, else NaN)."""
    if row["status"] == "done":
        return row["result"]
    return math.nan if policy.penalty is None else policy.penalty


def final_record(text, store, replicas=None):
    """The study's final record: the ME's final message ``text`` (a JSON object, else kept as
    its ``message``) with the best point and value as ``store`` has them (never a failed one;
    with ``replicas`` settings of more than one replica, the point whose replicas' mean or
    worst value is best)."""
    try:
        final = json.loads(text)
    except (TypeError, ValueError):
        final = None
    final = final if isinstance(final, dict) else {"message": text}
    point, value = _best(store, replicas or {})
    return dict(final, best_point=point, best_value=value)


def _best(store, study):
    """``(point, value)`` of the best finished evaluation, or ``(None, None)``; a study with
    ``replicas`` > 1 is judged per point, by the value its search was told (a point whose
    replicas a limit cut short was never told, and is not a candidate)."""
    if study.get("replicas", 1) > 1:
        summary = [s for s in summarize(store.rows("done", "failed"),
                                        study["replica_seed_param"], study["replica_objective"],
                                        study["replicas"])
                   if s["value"] is not None]
        return (summary[0]["point"], summary[0]["value"]) if summary else (None, None)
    best = store.best()
    return (best["params"], best["result"]) if best else (None, None)


def _result(expdir, store, final):
    """The :class:`Result` of ``final`` (the stored final message, with its best point)."""
    counts = store.counts()
    if "best_point" in final:
        point, value = final["best_point"], final["best_value"]
    else:
        point, value = _best(store, {})
    return Result(point, value, Path(expdir), final.get("stop_reason"),
                  counts.get("done", 0) + counts.get("failed", 0), counts.get("failed", 0))


def result_of(expdir):
    """The :class:`Result` of a finished experiment, read from its store."""
    store = open_study_store(expdir)
    try:
        return _result(expdir, store, store.meta("final", {}))
    finally:
        store.close()


def failure_reasons(expdir):
    """The most common failure reasons of ``expdir``: ``[(reason, count), ...]``."""
    store = open_study_store(expdir)
    try:
        return store.failure_reasons()
    finally:
        store.close()


def print_summary(result, stream=None):
    """Print the stop reason, the counts and the best point."""
    stream = stream or sys.stdout
    lines = [f"emews: stopped: {result.stop_reason or 'the ME sent DONE'}",
             f"emews: {result.evaluations} evaluations ({result.failed} failed)"]
    if result.best_point is not None:
        lines.append(f"emews: best value {result.best_value:.6g} at "
                     f"{json.dumps(result.best_point, ensure_ascii=False)}")
    lines.append(f"emews: experiment directory {result.expdir}")
    print("\n".join(lines), file=stream, flush=True)
