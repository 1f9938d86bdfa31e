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

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import config as configuration
from . import eqpy, experiment, gpus
from .algorithm import Algorithm, load
from .errors import ConfigError, EmewsError
from .failure import FailurePolicy
from .master import Master
from .evaluate import Objective
from .pool import InProcessPool
from .progress import Progress
from .space import Space
from .store import Store

MPI_ENVIRONMENT = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")


@dataclass
class Result:
    """What a study found."""

    best_point: dict | None
    best_value: float | None
    expdir: Path
    stop_reason: str | None = None
    evaluations: int = 0
    failed: int = 0


def run(config, overrides=None, resume=None):
    """Run a study from Python or a notebook; return a :class:`Result`.

    ``config`` is a TOML path, a list of paths, or a dict shaped like the TOML file.
    ``overrides`` maps ``"table.key"`` to values (they win over everything). ``resume`` names an
    experiment directory to continue (``config`` may then be ``None``).
    """
    if under_mpiexec():
        return _run_under_mpiexec(config, overrides, resume)
    expdir = prepare(config, overrides, resume)
    cfg = load_experiment(expdir)
    if cfg.system["pool"] == "mpi" and cfg.system["procs"] > 1:
        code = spawn(expdir, cfg)
        if code != 0:
            raise EmewsError(f"the MPI run of {expdir} exited with status {code}; "
                             f"see {expdir / 'out'}")
        return result_of(expdir)
    return execute(expdir, None)


def _run_under_mpiexec(config, overrides, resume):
    """Rank 0 prepares the experiment and tells the others where it is."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    expdir, error = None, None
    if comm.Get_rank() == 0:
        try:
            expdir = prepare(config, overrides, resume)
        except EmewsError as exc:
            error = exc
    expdir, failed = comm.bcast((expdir, error is not None), root=0)
    if error is not None:
        raise error
    if failed:
        raise SystemExit(2)
    return execute(expdir, comm)


def under_mpiexec():
    """True when this process was started by an MPI launcher."""
    return any(name in os.environ for name in MPI_ENVIRONMENT)


def prepare(config, overrides=None, resume=None):
    """Validate the configuration and make (or reopen) the experiment directory."""
    if resume is not None:
        expdir = Path(resume)
        if not (expdir / "config.json").is_file():
            raise ConfigError(str(expdir), "--resume needs an experiment directory holding "
                              "config.json", str(expdir), show_value=False)
        sources = [experiment.read_json(expdir / "config.json")]
        if config:
            sources += config if isinstance(config, list) else [config]
        cfg = configuration.load(sources, overrides)
        validate(cfg)
        experiment.write_json(expdir / "config.json", cfg.as_dict())
        return expdir
    cfg = configuration.load(config or [], overrides)
    validate(cfg)
    expdir = experiment.create(cfg.study["data_dir"], cfg.study["name"])
    experiment.write_json(expdir / "config.json", cfg.as_dict())
    return expdir


def load_experiment(expdir):
    """The configuration as run, from ``EXPDIR/config.json``."""
    return configuration.load([experiment.read_json(Path(expdir) / "config.json")])


def validate(cfg):
    """Check what can be checked before anything is written: space, algorithm, objective."""
    study = cfg.study
    python_path(cfg)
    space = Space.from_file(study["space"]) if study["space"] else None
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


def spawn(expdir, cfg):
    """Run the experiment under ``mpiexec -n procs``; return mpiexec's exit status."""
    mpiexec = cfg.system["mpiexec"] or _default_mpiexec()
    command = [mpiexec, *cfg.system["mpiexec_args"], "-n", str(cfg.system["procs"]),
               sys.executable, "-m", "emews", "run", "--resume", str(expdir)]
    return subprocess.run(command, check=False).returncode


def _default_mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        raise ConfigError("[system].mpiexec", "no mpiexec found beside the Python interpreter or "
                          "on PATH; install the 'mpich' wheel", None, show_value=False)
    return found


def execute(expdir, comm):
    """Execute the experiment in ``expdir`` on ``comm`` (``None``: in this process only)."""
    expdir = Path(expdir)
    cfg = load_experiment(expdir)
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    if rank > 0:
        return _work(expdir, cfg, comm, rank)
    objective = make_objective(cfg, expdir)
    if size > 1:
        from .mpi_pool import MPIPool

        pool = MPIPool(comm, cfg.system["slots_per_worker"])
    else:
        pool = InProcessPool(objective, max(cfg.system["procs"] - 1, 1)
                             if cfg.system["pool"] == "inprocess" else 1)
    try:
        return _master(expdir, cfg, pool)
    finally:
        pool.close()


def _work(expdir, cfg, comm, rank):
    from .mpi_pool import redirect_output, serve

    redirect_output(expdir / "out" / f"out-{rank}.txt")
    gpus.assign(rank, cfg.system["gpus_per_node"], cfg.system["cuda_offset"])
    serve(comm, make_objective(cfg, expdir))
    return None


def _master(expdir, cfg, pool):
    study = cfg.study
    store = Store(expdir / "results.db")
    try:
        python_path(cfg)
        module = load(study["algorithm"])
        classic = not isinstance(module, type) or not issubclass(module, Algorithm)
        settings = _settings(cfg, store, pool.slots, classic)
        experiment.write_json(expdir / "settings.json", settings)
        store.set_meta("started", time.time())
        counts = store.counts()
        best = store.best()
        progress = Progress(study["budget"], cfg.system["progress_interval"],
                            done=counts.get("done", 0) + counts.get("failed", 0),
                            failed=counts.get("failed", 0),
                            best=best["result"] if best else math.inf)
        mode = "batch" if classic else study["mode"]
        master = Master(pool, store, mode, progress, first_id=store.next_id(),
                        policy=FailurePolicy.from_config(cfg.failure))
        eqpy.init(module if classic else "emews.me")
        final = master.run(str(expdir / "settings.json"))
        progress.show()
        final = _parse_final(final)
        store.set_meta("final", final)
        store.commit()
        result = _result(expdir, store, final)
        experiment.write_json(expdir / "final.json", final)
    finally:
        store.close()
    print_summary(result)
    return result


def _settings(cfg, store, slots, classic):
    study = cfg.study
    finished = store.rows("done", "failed")
    history = [[row["params"], row["result"]] for row in finished]
    pending = store.forget_unfinished()
    resumes = store.meta("resumes", 0) + (1 if history or pending else 0)
    store.set_meta("resumes", resumes)
    seed = study["seed"]
    if seed is not None and resumes:
        seed += 7919 * resumes  # a resumed search must not replay its first proposals
    return {"algorithm": study["algorithm"], "options": cfg.algorithm, "space": study["space"],
            "seed": seed, "mode": "batch" if classic else study["mode"], "slots": slots,
            "batch_size": study["batch_size"], "stop": cfg.stop, "history": history,
            "pending": pending}


def _parse_final(text):
    try:
        final = json.loads(text)
    except (TypeError, ValueError):
        final = None
    return final if isinstance(final, dict) else {"message": text}


def _result(expdir, store, final):
    best = store.best()
    counts = store.counts()
    return Result(best["params"] if best else None, best["result"] if best else None,
                  Path(expdir), final.get("stop_reason"),
                  counts.get("done", 0) + counts.get("failed", 0), counts.get("failed", 0))


def result_of(expdir):
    """The :class:`Result` of a finished experiment, read from its store."""
    store = Store(Path(expdir) / "results.db")
    try:
        return _result(expdir, store, store.meta("final", {}))
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
